"""A plugin that several of ntdd's options need, registered by whichever comes first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def registered(config: pytest.Config, name: str, make: Callable[[pytest.Config], T]) -> T:
    """The plugin registered as *name*, made by *make* the first time it is asked for."""
    found: Any = config.pluginmanager.get_plugin(name)
    if found is None:
        found = make(config)
        config.pluginmanager.register(found, name)
    return found  # type: ignore[no-any-return]
