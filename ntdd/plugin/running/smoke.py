"""`--ntdd-smoke`: the session's smoke mode, around each notebook test, said where users look.

Each notebook test runs inside the session's `SmokeRun` (its DataLoader cap
and the notes of what was cut); tests marked `@full_run` are skipped with
that reason. The header says the caps; the terminal's summary and the HTML
report say what was capped, at which cell and line. Under `-n` the notes
travel from the workers on each report's record (`record`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Generator
from typing import Any

import pytest

from ntdd.config import Smoke
from ntdd.plugin.items import runtime_of
from ntdd.plugin.results.record import record_of
from ntdd.runtime.smoke_run import LEFT_ALONE, SmokeRun

FULL_RUN = "full_run"
NEEDS_THE_FULL_RUN = "needs the full run: skipped in smoke mode (--ntdd-smoke)"
NOTHING_CAPPED = "ntdd: smoke mode was on and capped nothing: every loop and DataLoader ran in full"


class SmokeNotes:
    """What the run's smoke mode cut, where: gathered from every report."""

    def __init__(self, caps: Smoke) -> None:
        self.caps = caps
        self.counts: Counter[tuple[str, str]] = Counter()

    def lines(self, left_alone: bool = False) -> list[str]:
        """One line a place, in the notebooks' order: where, what was cut (or, with
        *left_alone*, what training was left alone and why), how many times."""
        return [
            f"{where}: {what.removeprefix(LEFT_ALONE)}" + (f" ({count} times)" if count > 1 else "")
            for (where, what), count in sorted(self.counts.items(), key=_in_order)
            if what.startswith(LEFT_ALONE) == left_alone
        ]


def _in_order(note: tuple[tuple[str, str], int]) -> list[tuple[str, int]]:
    """A note's place as text and numbers: cell 2 before cell 10, line 9 before line 16."""
    (where, what), _ = note
    return [(text, int(number or 0)) for text, number in re.findall(r"(\D*)(\d*)", where + what)]


NOTES = pytest.StashKey[SmokeNotes]()


def _needs_the_full_run(item: pytest.Item) -> bool:
    return item.get_closest_marker(FULL_RUN) is not None and runtime_of(item) is not None


class SmokeHooks:
    """The session's smoke mode: registered with ntdd's session when it is on."""

    def __init__(self, config: pytest.Config, caps: Smoke) -> None:
        self.run = SmokeRun(caps)
        self.notes = config.stash.setdefault(NOTES, SmokeNotes(caps))
        self.announced = False  # the header said smoke mode is on

    def header(self) -> str:
        return f"ntdd: smoke mode: {self.run.caps.describe()}; tests marked @full_run are skipped"

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        self.announced = True
        return [self.header()]

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Where ntdd woke after the header (exported modules without `--ntdd`): say it now."""
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if self.announced or reporter is None or hasattr(session.config, "workerinput"):
            return
        self.announced = True
        if reporter.showheader and not reporter.no_header:
            reporter.write_line(self.header())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        runtime = runtime_of(item)
        if runtime is None or not runtime.points_at_cells:  # not a live kernel's cells
            return (yield)
        with self.run.running(runtime.cells):
            return (yield)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if _needs_the_full_run(item):
                item.add_marker(pytest.mark.skip(reason=NEEDS_THE_FULL_RUN))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Where the session woke after collection (an exported module without `--ntdd`)."""
        marked = any(
            m.kwargs.get("reason") == NEEDS_THE_FULL_RUN for m in item.iter_markers("skip")
        )
        if _needs_the_full_run(item) and not marked:
            pytest.skip(NEEDS_THE_FULL_RUN)

    def pytest_ntdd_record(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> dict[str, Any] | None:
        taken = self.run.take()
        return {"smoke": tuple((where, what) for where, what in taken)} if taken else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        for where, what in record.smoke if record is not None else ():
            self.notes.counts[(where, what)] += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(terminalreporter.config, "workerinput"):
            return
        lines, alone = self.notes.lines(), self.notes.lines(left_alone=True)
        if lines:
            terminalreporter.write_line("ntdd: smoke mode capped:")
        else:
            terminalreporter.write_line(NOTHING_CAPPED)
        for line in lines:
            terminalreporter.write_line(f"  {line}")
        if alone:
            terminalreporter.write_line("ntdd: smoke mode left alone, where it saw training:")
        for line in alone:
            terminalreporter.write_line(f"  {line}")

    def pytest_sessionfinish(self) -> None:
        self.run.close()  # DataLoader is torch's own again
