"""`-n auto`: as many xdist workers as the recorded work pays for, never more.

Every worker starts pytest and imports the notebooks' libraries again, so on a
few seconds of work `-n 2` is slower than `-n 0`. The count comes from what
earlier runs measured: the durations file when one is named
(`--ntdd-durations`), else what every `pytest --ntdd` run keeps in pytest's
cache (key `ntdd/cpu_seconds`: CPU seconds, as `--ntdd-store-durations` keeps
wall seconds in a file). Only
the files this run names count. With nothing recorded yet, xdist counts (a
worker per core), and the run says so.

xdist asks for the count in `pytest_cmdline_main`, before pytest's cache is
made: the count reads the cache's file where pytest keeps it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import ConfigError
from ntdd.plugin.results.record import record_of
from ntdd.plugin.scale.balance import (
    SECONDS_PER_WORKER,
    _is_seconds,
    load_durations,
    partition,
    workers_that_pay,
)
from ntdd.plugin.scale.shards import DurationsRecorder
from ntdd.plugin.scale.threads import cores
from ntdd.settings.typed import Settings

KEY = "ntdd/cpu_seconds"  # the pytest cache's key for each file's CPU seconds


class CachedDurations(DurationsRecorder):
    """Records each file's CPU seconds in pytest's cache, for the next `-n auto`: quietly,
    merged as a durations file is (files that ran replace their entries).

    CPU seconds, where a durations file keeps wall seconds: a run on a busy machine
    takes longer on the clock, and would have the next run start workers that do not
    pay; the work, and a worker's start-up, cost the same CPU either way.
    """

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(config, cache_file(config), "pytest's cache")
        self.phase_began = time.process_time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self) -> None:
        self.phase_began = time.process_time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self) -> None:
        self.phase_began = time.process_time()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self) -> None:
        self.phase_began = time.process_time()

    def pytest_ntdd_record(self, item: pytest.Item) -> dict[str, Any]:
        """The phase's CPU seconds, where it ran: under xdist, on its worker."""
        cpu = time.process_time() - self.phase_began
        return {**super().pytest_ntdd_record(item), "cpu": cpu}

    def seconds_of(self, report: pytest.TestReport) -> float:
        record = record_of(report)
        if record is not None and record.cpu is not None:
            return record.cpu
        return super().seconds_of(report)  # a crashed worker's test: its wall time

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is None or hasattr(self.config, "workerinput"):
            return
        seconds = self.measured(exitstatus)
        if seconds:
            old = _valid(cache.get(KEY, None)) or {}
            new = {unit: round(s, 3) for unit, s in seconds.items()}
            cache.set(KEY, {**old, **new})

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Nothing to say: the cache is pytest's, and `-n auto` says what it read."""


def cached_durations(config: pytest.Config) -> CachedDurations | None:
    """The recorder, where pytest's cache is on (`-p no:cacheprovider` turns it off)."""
    if not config.pluginmanager.has_plugin("cacheprovider"):
        return None
    return CachedDurations(config)


def cache_file(config: pytest.Config) -> Path:
    """Where pytest's cache keeps *KEY*: `cache_dir` read as pytest reads it."""
    given = os.path.expandvars(os.path.expanduser(str(config.getini("cache_dir"))))
    return config.rootpath.joinpath(given, "v", *KEY.split("/"))


def auto_workers(config: pytest.Config, settings: Settings) -> int | None:
    """`-n auto`'s worker count; None: xdist's own (nothing is recorded yet)."""
    if settings.durations is not None:
        path = settings.durations.path
        if not path.exists():
            return _said(config, 0, "the durations file is not recorded yet: no workers")
        try:
            recorded = load_durations(path, settings.durations.said)
        except ConfigError as e:
            raise pytest.UsageError(f"ntdd: {e}") from e
        source = settings.durations.said
    else:
        cached = _read(cache_file(config))
        if cached is None:
            _said(config, None, "nothing recorded yet: a worker per core, as xdist counts")
            return None
        recorded, source = cached, "CPU time, pytest's cache"
    named = {unit: recorded[unit] for unit in _named(config, recorded)}
    if not named and settings.durations is None:  # files never recorded (new ones, --pyargs)
        _said(config, None, "nothing recorded yet: a worker per core, as xdist counts")
        return None
    if settings.shard is not None:  # this shard's files, dealt out as the shard deals them
        mine = partition(named, settings.shard.count)[settings.shard.index - 1]
        named = {unit: named[unit] for unit in mine}
    available = cores()
    workers = workers_that_pay(list(named.values()), available)
    seconds = sum(named.values())
    pays = (
        f"{seconds:.1f} s of recorded work in {_files(len(named))} ({source}) on {available} cores"
    )
    rule = f"each worker past the first must take {SECONDS_PER_WORKER:g} s off the longest share"
    if workers:
        return _said(config, workers, f"{workers} workers for {pays}")
    return _said(config, 0, f"no workers: {pays} pays for none ({rule})")


class _Counted:
    """Says in the header how `-n auto` counted."""

    def __init__(self, line: str) -> None:
        self.line = line

    def pytest_report_header(self) -> str:
        return self.line


def _said(config: pytest.Config, workers: int | None, how: str) -> int | None:
    if not config.pluginmanager.has_plugin("ntdd-auto"):
        config.pluginmanager.register(_Counted(f"ntdd: -n auto: {how}"), "ntdd-auto")
    return workers


def _files(count: int) -> str:
    return f"{count} file{'s' if count != 1 else ''}"


def _read(path: Path) -> dict[str, float] | None:
    """The cache's durations; None where absent or not ours to read (the cache is
    pytest's scratch space: a damaged entry is no error, only nothing recorded)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return _valid(data)


def _valid(data: object) -> dict[str, float] | None:
    if not isinstance(data, dict) or not all(_is_seconds(v) for v in data.values()):
        return None
    return {str(unit): float(seconds) for unit, seconds in data.items()}


def _named(config: pytest.Config, recorded: Mapping[str, float]) -> list[str]:
    """The recorded files this run names: under one of its arguments (a folder, a file,
    a test of it), as units are named, relative to the rootdir."""
    here = config.invocation_params.dir
    named = [(here / str(arg).split("::")[0]).resolve() for arg in config.args]
    root = config.rootpath.resolve()
    return [
        unit for unit in recorded if any(_within(root / unit, place) for place in named or [root])
    ]


def _within(path: Path, place: Path) -> bool:
    return path == place or place in path.parents
