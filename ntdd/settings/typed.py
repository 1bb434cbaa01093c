"""The run's settings, resolved: one frozen `Settings`, kept in `config.stash`.

`ntdd.settings.resolve` builds it once a run, from the command line, the ini
file and `[tool.ntdd]`; every feature reads it with `settings_of(config)`. A
module run without the plugin (autoloading switched off) gets the defaults.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ntdd.config import Smoke
from ntdd.defaults import DEFAULT_DEVICES, DEFAULT_TIMEOUT
from ntdd.outputs.cleaning import Cleaning
from ntdd.parameters import Parameters


@dataclass(frozen=True)
class Shard:
    """The *index*-th (1-based) of *count* shards (`--ntdd-shard K/N`)."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class OutputChecking:
    """How a run checks outputs: which cells (`strict`), and how texts and figures compare."""

    strict: bool  # every cell not marked to be ignored, as `--nbval`; else marked ones only
    cleaning: Cleaning = dataclasses.field(default_factory=Cleaning)
    image_tolerance: float | None = None  # None: the default; inf: size only; IMAGES_OFF: none


@dataclass(frozen=True)
class File:
    """A file a setting names: where it is, as it was given, and where it was given."""

    path: Path  # relative to where it was given: the working directory, the ini's folder...
    given: str  # as written
    said: str  # the flag, `ini <key>` or `<pyproject.toml> [tool.ntdd] <key>`


@dataclass(frozen=True)
class Writing:
    """Notebooks written as they ran: into a folder, or over themselves."""

    folder: Path | None  # None: in place (`--ntdd-overwrite`)
    option: str  # the option the user gave, which errors about the writing name
    incomplete: bool = False  # notebooks whose run did not complete are written too


@dataclass(frozen=True)
class Settings:
    """ntdd's settings for one pytest run: command line, then ini, then `[tool.ntdd]`."""

    enabled: bool = False  # `--ntdd`: notebooks are collected
    devices: tuple[str, ...] = DEFAULT_DEVICES
    timeout: float | None = DEFAULT_TIMEOUT  # None: no limit
    notebook_timeout: float | None = None  # each notebook's budget, every test of it; None: none
    parameters: Parameters = field(default_factory=Parameters)  # test-only overrides
    template: Path | None = None  # `[tool.ntdd] template`: a module template of the user's own
    smoke: Smoke | None = None  # `--ntdd-smoke`: what a smoke run caps; None: a full run
    run_untested: bool = False  # a notebook without tests is one test: it runs to its end
    skip_eval_false: bool = False  # cells marked `#| eval: false` are left out, as nbdev's are
    outputs: OutputChecking | None = None  # `--ntdd-outputs`; None: outputs are not checked
    shard: Shard | None = None  # `--ntdd-shard K/N`; None: the whole run
    durations: File | None = None  # the durations file that balances the shards
    store_durations: File | None = None  # where the run records its durations
    summary: File | None = None  # where the run appends its Markdown summary
    slow_cells: int | None = None  # `--ntdd-slow-cells N`: the cells listed; None: none
    slow_cells_min: float = 0.0  # the least seconds a listed cell took
    report: File | None = None  # where the run writes its HTML report
    writing: Writing | None = None  # notebooks written back as they ran; None: not written
    threads: int | None = None  # `--ntdd-threads N`: each xdist worker's; None: auto
    reuse: File | None = None  # `--ntdd-reuse DIR`: the store of earlier verdicts; None: off
    sources: tuple[tuple[str, str], ...] = ()  # (setting, where its value came from)

    def said(self, name: str) -> str:
        """Where the value of setting *name* came from, as the user gave it: its flag,
        `ini <key>`, or `<pyproject.toml> [tool.ntdd] <key>`; "" for its default."""
        return dict(self.sources).get(name, "")

    def results_files(self) -> list[File]:
        """The files the run writes its results to, checked before it runs."""
        given = (self.summary, self.store_durations, self.report)
        return [file for file in given if file is not None]


SETTINGS = pytest.StashKey[Settings]()


def settings_of(config: pytest.Config) -> Settings:
    """The run's settings; the defaults where the plugin did not resolve any."""
    return config.stash.get(SETTINGS, None) or Settings()
