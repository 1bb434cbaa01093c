"""The run's one ledger: each notebook's run, rebuilt once from its tests' records.

Where reports come together (xdist's controller, or the one process), the
ledger reads each report's `TestRecord` and keeps, per notebook, the cells
each device ran (a later cell's `update_display` applied, once), what a
complete run runs, the bytes the run read, and the first reason it did not
complete. The report page, the notebooks written back and the output checks
read it; none of them rebuilds a notebook's cells on its own.

Where tests run under `-n`, a worker's ledger holds its own notebooks for
their output checks, and lets a notebook go after its last check; the
controller keeps every notebook only for a reader that asked it to
(`keep`: the page, the written notebooks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ntdd.plugin.once import registered
from ntdd.plugin.results.cell_records import cell_records
from ntdd.plugin.results.record import TestRecord, record_of
from ntdd.runtime.cell_log import CellRun, settled


@dataclass
class NotebookRun:
    """What the records said of one notebook's run."""

    path: Path
    first_nodeid: str  # the notebook's first report: where it sits in the run's order
    device_runs: dict[str, list[CellRun]] = field(default_factory=dict)  # in the order run
    cells_run: tuple[int, ...] = ()  # the cells a complete run runs
    read_digest: str | None = None  # of the bytes the run was collected from
    problem: str = ""  # the first reason the run did not complete
    _settled: dict[str, dict[int, CellRun]] = field(default_factory=dict)
    _at_end: bytes | OSError | None = None  # the file as the run's end found it

    def read_again(self) -> bytes:
        """The notebook's bytes as the run's end finds them (raises `OSError`): read once
        for every reader there, and let go after the last."""
        if self._at_end is None:
            try:
                self._at_end = self.path.read_bytes()
            except OSError as e:
                self._at_end = e
        if isinstance(self._at_end, OSError):
            raise self._at_end
        return self._at_end

    def add(self, report: pytest.TestReport, record: TestRecord) -> None:
        for run in record.cells:
            self.device_runs.setdefault(run.device, []).append(run)
            self._settled.pop(run.device, None)
        self.cells_run = record.runs_cells or self.cells_run
        self.read_digest = record.read_digest or self.read_digest
        failed = report.failed or hasattr(report, "wasxfail")
        if not self.problem and failed and not record.checks_outputs:  # a difference is no
            test = report.nodeid.rsplit("::", 1)[-1]  # failed run: outputs may be refreshed
            self.problem = f"{test} {'failed' if report.when == 'call' else 'errored'}"

    def devices(self) -> list[str]:
        return list(self.device_runs)

    def cells(self, device: str) -> dict[int, CellRun]:
        """The device's cells as its run left them, by number: each cell's latest run, with
        the `update_display`s of the cells run after it applied; settled once."""
        found = self._settled.get(device)
        if found is None:
            found = {run.index: run for run in settled(self.device_runs.get(device, []))}
            self._settled[device] = found
        return found

    def ran(self) -> dict[int, CellRun]:
        """The cells of the device run that ran the most of them (the first device on a tie)."""
        return max((self.cells(d) for d in self.device_runs), key=len, default={})

    def incomplete(self) -> str:
        """Why the run does not stand for a Run All to the end; "" when it does."""
        if self.problem:
            return self.problem
        missing = [index for index in self.cells_run if index not in self.ran()]
        if missing:
            return f"cell{'s' * (len(missing) > 1)} {_listed(missing)} did not run"
        return ""


class Ledger:
    """Each notebook's run, from the records of the reports as they come in."""

    def __init__(self, config: pytest.Config) -> None:
        self.notebooks: dict[str, NotebookRun] = {}
        self.keeps = False  # a reader reads every notebook at the end: none is let go
        self.checks = False  # output checks read it in this process, as the tests run
        cell_records(config)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every report with a notebook's record, for a reader here: on xdist's controller
        (reports from workers, `report.node`) one that keeps them, where tests run one
        that keeps them or the output checks."""
        record = record_of(report)
        if record is None or not record.notebook:
            return
        from_worker = getattr(report, "node", None) is not None
        if not (self.keeps or (self.checks and not from_worker)):
            return
        run = self.notebooks.get(record.notebook)
        if run is None:
            run = self.notebooks[record.notebook] = NotebookRun(
                Path(record.notebook), report.nodeid
            )
        run.add(report, record)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Each notebook's run, complete, to the readers that keep them: once each, in the
        order the run first reported them, before any of them writes its file."""
        if not self.keeps or hasattr(session.config, "workerinput"):
            return
        for run in self.notebooks.values():
            session.config.hook.pytest_ntdd_notebook_complete(session=session, run=run)
            run._at_end = None

    def run_of(self, notebook: str) -> NotebookRun | None:
        return self.notebooks.get(notebook)

    def release(self, notebook: str) -> None:
        """A notebook's last reader in the run is done with it: it goes, unless kept."""
        if not self.keeps:
            self.notebooks.pop(notebook, None)


def ledger(config: pytest.Config, keep: bool = False, checks: bool = False) -> Ledger:
    """The run's one ledger (the run records cells from then on). *keep*: the reader reads
    every notebook at the session's end, where the run's results come together; *checks*:
    the output checks read each notebook where it runs."""
    found = registered(config, "ntdd-ledger", Ledger)
    found.keeps = found.keeps or (keep and not hasattr(config, "workerinput"))
    found.checks = found.checks or checks
    return found


def _listed(numbers: list[int]) -> str:
    return ", ".join(map(str, numbers[:-1])) + " and " * (len(numbers) > 1) + str(numbers[-1])
