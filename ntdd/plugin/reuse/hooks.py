"""The plugin of `--ntdd-reuse DIR`: notebooks whose verdicts stand are not run again.

Where tests run (the one process, or each xdist worker), once the items are
final (`pytest_collection_finish`, after `-k`, `-m`, shards), each notebook
collected from its own file gets its key (`key`), and a notebook whose key
the store holds is reused: each of its tests is skipped at setup, before a
fixture or a cell runs, the way a skip mark is, with the run it reuses in
the message and a `ntdd_reused` property; its reports count as `reused`,
not `skipped` or `passed` (`pytest_report_teststatus`, as
pytest-rerunfailures counts `rerun`), and `-v` says `REUSED`.

Where reports come together (the one process, or xdist's controller), each
notebook's reports are tallied from their records (its key, how many of its
tests the run selected, all or none); when its last test's teardown is in
and none of its reports failed, errored or timed out, its entry is written.
A notebook some of whose tests were deselected (`-k`, `--lf`), or whose run
was cut short (`-x`, Ctrl-C, a crash), is never written.
"""

from __future__ import annotations

import secrets
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from ntdd.plugin.items import runtime_of
from ntdd.plugin.results.record import record_of
from ntdd.plugin.reuse.key import notebook_key, run_part
from ntdd.plugin.reuse.store import Entry, Store
from ntdd.settings.typed import Settings

PROPERTY = "ntdd_reused"  # the JUnit property of a reused test: the run it reuses
_NOTEBOOK = pytest.StashKey[str]()  # the notebook an item is a test of, where it is reusable


@dataclass
class _Tally:
    """A notebook's reports so far, where reports come together."""

    key: str
    expected: int  # its tests in the run; 0: not all of them were selected
    done: int = 0  # teardowns in
    failed: bool = False
    written: bool = False


@dataclass
class _Reused:
    tests: int = 0
    notebooks: set[str] = field(default_factory=set)
    runs: dict[str, None] = field(default_factory=dict)  # their labels, in order met


class Reuse:
    """Reuses the verdicts the store holds, and stores each notebook that passed whole."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        assert settings.reuse is not None
        self.config = config
        self.settings = settings
        self.store = Store(settings.reuse.path, settings.reuse.said)
        self.started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
        self.run_id = secrets.token_hex(4)
        # Where tests run: each notebook's key, count, and the entry it reuses.
        self.cut: set[str] = set()  # notebooks some of whose tests were deselected
        self.keys: dict[str, tuple[str, int]] = {}
        self.entries: dict[str, Entry] = {}
        self.notes: dict[str, str] = {}  # by notebook
        # Where reports come together.
        self.tallies: dict[str, _Tally] = {}
        self.reused = _Reused()
        self.stored = 0
        self.said: dict[str, None] = {}  # the one-line notes, once each

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        for item in items:
            notebook = _notebook_of(item)
            if notebook is not None:
                self.cut.add(notebook)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Each notebook's key, and the entry it reuses, once the items are final."""
        counts: dict[str, int] = {}
        for item in session.items:
            notebook = _notebook_of(item)
            if notebook is not None:
                item.stash[_NOTEBOOK] = notebook
                counts[notebook] = counts.get(notebook, 0) + 1
        if not counts:
            return
        run = run_part(self.config, self.settings)
        measured = _coverage_measured(self.config)
        if measured:
            self.said[
                "ntdd: --ntdd-reuse: coverage is measured (--cov): every notebook runs, so that "
                "its lines count; the passing ones are stored for the next run"
            ] = None
        for notebook, count in counts.items():
            key = notebook_key(run, self.config.rootpath, Path(notebook))
            if key is None:
                continue
            self.keys[notebook] = (key, 0 if notebook in self.cut else count)
            if measured:
                continue
            entry, note = self.store.read(key)
            if note:
                self.notes[notebook] = note
            if entry is not None:
                self.entries[notebook] = entry

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A reused notebook's test is skipped before any fixture or cell, as a skip mark
        skips it."""
        entry = self.entries.get(item.stash.get(_NOTEBOOK, ""))
        if entry is not None:
            item.user_properties.append((PROPERTY, entry.label))
            reason = f"passed in the run of {entry.label}; nothing it depends on changed"
            # At the test's own line where it has one (the end test of a notebook without
            # tests has none): where JUnit and `-rs` place a skip.
            at_item = item.reportinfo()[1] is not None
            raise pytest.skip.Exception(reason, _use_item_location=at_item)

    def pytest_ntdd_record(self, item: pytest.Item, call: Any, report: Any) -> dict[str, Any]:
        notebook = item.stash.get(_NOTEBOOK, "")
        if notebook not in self.keys:
            return {}
        key, count = self.keys[notebook]
        entry = self.entries.get(notebook)
        return {
            "reuse_key": key,
            "reuse_tests": count,
            "reused": entry.label if entry is not None else "",
            "reuse_note": self.notes.get(notebook, "") if call.when == "setup" else "",
        }

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: Any, config: pytest.Config) -> Any:
        record = record_of(report)
        if record is None or not record.reused:
            return None
        if report.when == "setup" and report.skipped:
            return "reused", "R", ("REUSED", {"cyan": True})
        return "", "", ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Tallied where reports come together; a notebook complete and green is stored."""
        if hasattr(self.config, "workerinput"):
            return
        record = record_of(report)
        if record is None or not record.reuse_key:
            return
        if record.reuse_note and record.reuse_note not in self.said:
            self.said[record.reuse_note] = None
        if record.reused:
            if report.when == "setup":
                self.reused.tests += 1
                self.reused.notebooks.add(record.notebook)
                self.reused.runs[record.reused] = None
            return
        tally = self.tallies.setdefault(
            record.notebook, _Tally(record.reuse_key, record.reuse_tests)
        )
        tally.failed = tally.failed or report.failed
        tally.done += report.when == "teardown"
        complete = tally.expected and tally.done == tally.expected
        if complete and not tally.failed and not tally.written:
            tally.written = True
            self._store(record.notebook, tally)

    def _store(self, notebook: str, tally: _Tally) -> None:
        shown = _shown(notebook, self.config.rootpath)
        entry = Entry(tally.key, shown, tally.expected, self.started, self.run_id)
        note = self.store.write(entry)
        if note:
            self.said[note] = None
        else:
            self.stored += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for note in self.said:
            terminalreporter.write_line(note, yellow=True)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self) -> Generator[None, None, None]:
        """The run the reused verdicts came from, in one line under pytest's totals."""
        yield
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        line = self.line()
        if terminal is not None and line and not hasattr(self.config, "workerinput"):
            terminal.write_line(line)

    def line(self) -> str:
        """What was reused and from which run, in words; "" where nothing was."""
        if not self.reused.tests:
            return ""
        runs = list(self.reused.runs)
        source = f"the run of {runs[0]}"
        if len(runs) > 1:
            source = f"{len(runs)} earlier runs, the first {runs[0]}"
        notebooks = len(self.reused.notebooks)
        return (
            f"ntdd: {self.reused.tests} reused: the verdicts of {notebooks} "
            f"notebook{'s' * (notebooks != 1)} from {source} (--ntdd-reuse)"
        )

    def markdown(self) -> str:
        """The line, for `--ntdd-summary`."""
        line = self.line()
        return f"{line.removeprefix('ntdd: ')}.\n\n" if line else ""


def _notebook_of(item: pytest.Item) -> str | None:
    """The notebook *item* tests, where it was collected from the notebook itself (not a
    module `ntdd export` wrote, whose own text would need a key too)."""
    runtime = runtime_of(item)
    if runtime is None or not runtime.points_at_cells:
        return None
    notebook = Path(runtime.cells.notebook)
    return str(notebook) if Path(item.path).resolve() == notebook.resolve() else None


def _coverage_measured(config: pytest.Config) -> bool:
    """Whether pytest-cov measures this run: a reused notebook's lines would count as
    never run, and a `--cov-fail-under` that passed would fail."""
    return config.pluginmanager.has_plugin("_cov") and bool(
        getattr(config.option, "cov_source", None)
    )


def _shown(notebook: str, root: Path) -> str:
    try:
        return Path(notebook).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return notebook
