"""`--ntdd-shard K/N` and `--ntdd-store-durations FILE`: one run split over machines.

Two plugin objects, registered from `ntdd.plugin.pytest_configure` when their
option is given; everything they need arrives through their constructors.

Under pytest-xdist each worker collects and shards by itself. The partition
depends only on the collected items and the durations file, so every worker
(and every machine of a CI matrix) deselects the same items. Reports reach
the controller, so durations are written there, and only there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import ConfigError
from ntdd.notebook.files import replaceable, write_atomic
from ntdd.plugin.results import files as results_files
from ntdd.plugin.results.record import record_of
from ntdd.plugin.scale.balance import (
    Weights,
    dump_durations,
    load_durations,
    partition,
    weigh,
)
from ntdd.settings.typed import Shard, settings_of

# What a worker tells the xdist controller, in its `workeroutput`: the controller
# collects nothing itself, yet reports on the shard and sets the exit status.
_EMPTY = "ntdd_shard_empty"  # this shard got no unit, by design
_PICKED = "ntdd_shard_picked"  # what it got, in words


class ShardPlugin:
    """Deselects every test outside this shard's units."""

    def __init__(
        self, config: pytest.Config, shard: Shard, durations: Path | None, source: str
    ) -> None:
        self.config = config
        self.shard = shard
        self.durations_path = durations
        self.source = source  # how the durations file was named: an option or an ini key
        self.recorded = self._load() if durations is not None else None
        self.picked = ""  # what this shard got, in words, once collected
        self.empty_by_design = False  # fewer units than shards left this one nothing

    def _load(self) -> dict[str, float] | None:
        assert self.durations_path is not None
        if not self.durations_path.exists():
            return None  # a first run, before any durations were recorded: say so, go on
        return load_durations(self.durations_path, self.source)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        line = f"ntdd: shard {self.shard}"
        if self.durations_path is None:
            return [f"{line}, balanced by test count"]
        shown = _shown(self.durations_path, config)
        if self.recorded is not None:
            return [f"{line}, balanced by the durations in {shown}"]
        return [
            f"{line}, balanced by test count",
            f"ntdd: warning: {self.source}: {shown} not found; "
            "record it with --ntdd-store-durations",
        ]

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Keep this shard's units; after -k and -m, so shards balance what is selected."""
        units = _units(items, config.rootpath)
        weights = weigh({unit: len(tests) for unit, tests in units.items()}, self.recorded)
        mine = set(partition(weights.of, self.shard.count)[self.shard.index - 1])
        keep = [item for unit, tests in units.items() if unit in mine for item in tests]
        kept = set(map(id, keep))
        if len(keep) < len(items):
            config.hook.pytest_deselected(items=[i for i in items if id(i) not in kept])
            items[:] = [item for item in items if id(item) in kept]
        self.picked = self._describe(mine, weights, len(keep))
        self.empty_by_design = bool(units) and not mine
        workeroutput = getattr(config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput.update({_EMPTY: self.empty_by_design, _PICKED: self.picked})

    def _describe(self, mine: set[str], weights: Weights, tests: int) -> str:
        """What this shard got, in words, and by what it was weighed."""
        text = f"{len(mine)} of {len(weights.of)} notebooks and test files, {tests} tests"
        if weights.by_durations:
            share = sum(weights.of[unit] for unit in mine)
            text += f" (about {share:.1f} s of {sum(weights.of.values()):.1f} s recorded)"
        elif self.recorded is not None:
            text += " (the durations file has none of them: balanced by test count)"
        return text

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the xdist controller: learn from the workers what the shard got."""
        output = getattr(node, "workeroutput", None) or {}
        self.empty_by_design = self.empty_by_design or bool(output.get(_EMPTY))
        self.picked = self.picked or str(output.get(_PICKED, ""))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """A shard left empty because there are fewer units than shards has passed.

        In a CI matrix this is the common case on a pull request that touches
        one notebook; exit status 5 ("no tests collected") would fail the job.
        """
        if self.empty_by_design and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.empty_by_design:
            terminalreporter.write_line(
                f"ntdd: shard {self.shard} has nothing to run: there are fewer "
                "notebooks and test files than shards"
            )
        elif self.picked:
            terminalreporter.write_line(f"ntdd: shard {self.shard}: {self.picked}")


class DurationsRecorder:
    """Sums each unit's setup, call and teardown seconds; writes them at the end."""

    def __init__(self, config: pytest.Config, path: Path, where: str) -> None:
        self.config = config
        self.path = path
        self.where = where
        self.seconds: dict[str, float] = {}
        self.started: dict[str, float] = {}  # node id: when it started, for a crashed worker's
        self.finished: set[str] = set()  # node ids whose every phase reported

    def pytest_ntdd_record(self, item: pytest.Item) -> dict[str, Any]:
        """Name the unit on the record: under xdist it travels to the controller with it."""
        return {"unit": _unit(item.path, self.config.rootpath)}

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started[nodeid] = time.monotonic()

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self.finished.add(nodeid)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is not None and record.reused:
            return  # not run (`--ntdd-reuse`): the unit's recorded seconds stay as they were
        unit = record.unit if record is not None else None
        if unit is None:  # a report no phase made: a hard end's, a crashed worker's
            unit = _unit_of(self.config, report.nodeid)
        self.seconds[unit] = self.seconds.get(unit, 0.0) + self.seconds_of(report)

    def seconds_of(self, report: pytest.TestReport) -> float:
        """What the phase took: its duration, or a crashed worker's test its wall time."""
        if str(report.when) == "???":  # pytest-xdist's report of a test whose worker died
            return time.monotonic() - self.started.get(report.nodeid, time.monotonic())
        return float(report.duration)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Merge into the file: units that ran replace their entries, the rest stay.

        After any end, so that the file says what this run did: a hard end keeps
        its test's time (the timeout and its grace, at least), a crashed
        worker's its wall time; a run interrupted (Ctrl-C) leaves out the units
        it was in the middle of, whose partial times would unbalance the next
        shards.
        """
        if _is_worker(self.config):
            return
        seconds = self.measured(exitstatus)
        if not seconds:
            return
        old = load_durations(self.path, self.where) if _merged_into(self.path) else {}
        text = dump_durations({**old, **seconds})
        results_files.write(session, self.where, self.path, lambda: write_atomic(self.path, text))

    def measured(self, exitstatus: int) -> dict[str, float]:
        """Each unit's seconds in this run, less the units Ctrl-C cut short."""
        seconds = dict(self.seconds)
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            cut = {_unit_of(self.config, n) for n in self.started if n not in self.finished}
            seconds = {unit: s for unit, s in seconds.items() if unit not in cut}
        return seconds

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.seconds and not _is_worker(self.config):
            terminalreporter.write_line(
                f"ntdd: durations of {len(self.seconds)} notebooks and test files "
                f"recorded in {_shown(self.path, self.config)}"
            )


def _unit_of(config: pytest.Config, nodeid: str) -> str:
    """The unit of a test known by its node id only."""
    return _unit(config.rootpath / nodeid.split("::")[0], config.rootpath)


def shard_plugin(config: pytest.Config) -> ShardPlugin | None:
    """The plugin for `--ntdd-shard`, or None without it."""
    settings = settings_of(config)
    if settings.shard is None:
        return None
    durations = settings.durations
    try:
        if durations is None:
            return ShardPlugin(config, settings.shard, None, "")
        return ShardPlugin(config, settings.shard, durations.path, durations.said)
    except ConfigError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e


def durations_recorder(config: pytest.Config) -> DurationsRecorder | None:
    """The plugin for `--ntdd-store-durations`, or None without it."""
    stored = settings_of(config).store_durations
    if stored is None:
        return None
    try:
        if _merged_into(stored.path):  # refuse now, not after the run, to merge into junk
            load_durations(stored.path, stored.said)
        return DurationsRecorder(config, stored.path, stored.said)
    except ConfigError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e


def _units(items: list[pytest.Item], root: Path) -> dict[str, list[pytest.Item]]:
    """Items by the file they come from, in collection order."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit(item.path, root), []).append(item)
    return units


def _unit(path: Path, root: Path) -> str:
    """A file's name in durations files and partitions: relative to the rootdir, POSIX."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return Path(os.path.relpath(path, root)).as_posix()


def _shown(path: Path, config: pytest.Config) -> str:
    """*path* as the user would type it: relative to the working directory when inside."""
    try:
        return path.relative_to(config.invocation_params.dir).as_posix()
    except ValueError:
        return str(path)


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _merged_into(path: Path) -> bool:
    """Whether the durations file holds earlier runs' seconds to merge with: a file, not
    a device or a FIFO (whose read would wait for a writer), which are only written to."""
    return path.exists() and replaceable(path)
