"""What a pytest session tells the notebooks it runs: settings, baselines, counters.

Everything here travels in `config.stash`, under the keys below. The settings
are `ntdd.settings`' (resolved once a run, from the command line and
configuration); a generated module's runtime reads them through
`request.config` with `settings_of`. A module run without the plugin
(autoloading switched off) gets the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

from ntdd.settings.typed import SETTINGS as SETTINGS
from ntdd.settings.typed import Settings as Settings
from ntdd.settings.typed import settings_of as settings_of


@dataclass
class RunCounts:
    """What the runtimes did in this session, for the terminal summary."""

    replays: int = 0  # times a notebook was run again from its start
    replayed_tests: list[str] = field(default_factory=list)


class Injection(Protocol):
    """Something that changes a notebook's namespace as its cells run and its tests reach them.

    `ntdd faults` injects its faults this way; *namespace* is the notebook's
    state for *device*: `cell_ran` after each setup cell (a fault acts where
    the notebook makes its objects), `apply` at the cell a test sits at.
    """

    def cell_ran(self, namespace: dict[str, Any], device: str) -> None: ...

    def apply(self, namespace: dict[str, Any], device: str) -> None: ...


COUNTS = pytest.StashKey[RunCounts]()
INJECTION = pytest.StashKey[Injection]()


def counts_of(config: pytest.Config) -> RunCounts:
    return config.stash.setdefault(COUNTS, RunCounts())


def injection_of(config: pytest.Config) -> Injection | None:
    return config.stash.get(INJECTION, None)
