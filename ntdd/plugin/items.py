"""Which pytest items are a notebook's, and the runtime that runs their cells.

A module ntdd generated (exported, or compiled from a notebook) holds its
runtime as `__ntdd__`: a `NotebookRuntime`, or the kernel extension's,
which tests a live kernel's namespace.
"""

from __future__ import annotations

from typing import Any

import pytest


def runtime_of(item: pytest.Item) -> Any:
    module = notebook_module(item)
    return module.__ntdd__ if module is not None else None


def notebook_module(item: pytest.Item) -> Any:
    module = getattr(item, "module", None)
    return module if module is not None and hasattr(module, "__ntdd__") else None
