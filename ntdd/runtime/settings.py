"""What a pytest session tells the notebooks it runs: settings, baselines, counters.

Everything here travels in `config.stash`, under the keys below: the plugin
puts it there from the command line and configuration, and a generated
module's runtime reads it through `request.config`. A module run without the
plugin (autoloading switched off) gets the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from ntdd.config import Smoke
from ntdd.defaults import DEFAULT_DEVICES, DEFAULT_TIMEOUT
from ntdd.parameters import Parameters


@dataclass(frozen=True)
class Settings:
    """The options of `pytest --ntdd`, resolved: command line, ini, `[tool.ntdd]`."""

    enabled: bool = False
    devices: tuple[str, ...] = DEFAULT_DEVICES
    timeout: float | None = DEFAULT_TIMEOUT  # None: no limit
    parameters: Parameters = field(default_factory=Parameters)  # test-only overrides
    template: Path | None = None  # `[tool.ntdd] template`: a module template of the user's own
    smoke: Smoke | None = None  # `--ntdd-smoke`: what a smoke run caps; None: a full run
    run_untested: bool = False  # a notebook without tests is one test: it runs to its end
    skip_eval_false: bool = False  # cells marked `#| eval: false` are left out, as nbdev's are


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


SETTINGS = pytest.StashKey[Settings]()
COUNTS = pytest.StashKey[RunCounts]()
INJECTION = pytest.StashKey[Injection]()


def settings_of(config: pytest.Config) -> Settings:
    return config.stash.get(SETTINGS, None) or Settings()


def counts_of(config: pytest.Config) -> RunCounts:
    return config.stash.setdefault(COUNTS, RunCounts())


def injection_of(config: pytest.Config) -> Injection | None:
    return config.stash.get(INJECTION, None)
