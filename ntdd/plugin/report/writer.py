"""`--ntdd-report FILE.html`: the run as the notebooks, with each test's verdict at its cell.

Where tests run (a worker under `-n`, or the one process), each report's
record (`record`) gets what only that process knows of a failure: the
notebook's part of its traceback, the setup cell that raised. Where the
reports come together, the page takes each test's verdict from its report
and record, and each notebook's cells from the run's ledger (`ledger`);
at the end it writes the page (`report_html`). Under `--ntdd-shard` each
shard's run writes its own.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import NtddError, SetupError
from ntdd.notebook.read import notebook_of_bytes, unreadable
from ntdd.plugin.failures.hooks import WHERE_NOTE
from ntdd.plugin.items import runtime_of
from ntdd.plugin.report.pins import pinned_cells
from ntdd.plugin.report.values import NotebookResults, OtherFailure, RunResults, TestResult
from ntdd.plugin.results import files as results_files
from ntdd.plugin.results.ledger import NotebookRun, ledger
from ntdd.plugin.results.record import SetupCellError, TestRecord, record_of
from ntdd.plugin.results.summary import _message as message_of
from ntdd.plugin.results.summary import category_of, terminal_line
from ntdd.plugin.running.smoke import NOTES as SMOKE_NOTES
from ntdd.runtime.cell_log import COPY_CAP, CellRun, capped_note, notebook_traceback
from ntdd.runtime.protocol import Runtime
from ntdd.runtime.settings import settings_of
from ntdd.values import Notebook


class ReportWriter:
    """Gathers the reports of a run and writes the page when the session ends."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.ledger = ledger(config, keep=True)
        self.read: dict[str, tuple[Notebook | None, str]] = {}  # each notebook, read again
        self.path = path
        self.order: dict[str, int] = {}  # node ids in collection order
        self.notebooks: dict[str, NotebookResults] = {}
        self.first_seen: dict[str, str] = {}  # a notebook's first node id
        self.counts: Counter[str] = Counter()
        self.collection_errors: list[tuple[str, str]] = []
        self.others: list[OtherFailure] = []
        self.ran: dict[str, list[int]] = {}  # the setup cells each test ran
        self.started = time.monotonic()

    # -- where the tests run -------------------------------------------------

    def pytest_ntdd_record(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> dict[str, Any] | None:
        """What only the process that ran the test knows of its failure, for the page."""
        runtime = _runtime(item)
        if runtime is None:
            return None
        fields: dict[str, Any] = {}
        if call.when == "setup":  # the cells the run's parameters pinned, as the run pinned them
            fields["pinned"] = pinned_cells(runtime, settings_of(self.config))
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, SetupError):  # its cell shows the traceback
            fields |= {"message": str(error), "setup_cell": SetupCellError.of(error)}
        elif error is not None:
            fields["traceback"] = notebook_traceback(error, runtime.cells.place_of, _where_note)
        return fields

    # -- where the results come together ---------------------------------------

    def pytest_ntdd_notebook_complete(self, session: pytest.Session, run: NotebookRun) -> None:
        """The notebook as the run's end finds it, for its cells' sources on the page."""
        try:
            self.read[str(run.path)] = (notebook_of_bytes(run.read_again(), run.path), "")
        except NtddError as e:
            self.read[str(run.path)] = (None, str(e))
        except OSError as e:
            self.read[str(run.path)] = (None, unreadable(run.path, e))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.order = {item.nodeid: n for n, item in enumerate(session.items)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.order:  # every worker collects the same tests
            self.order = {nodeid: n for n, nodeid in enumerate(ids)}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.counts["error"] += 1
            self.collection_errors.append((report.nodeid, message_of(report)))

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.counts["deselected"] += len(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = record_of(report)
        if record is None or not record.notebook:
            self._other(report)
            return
        results = self.notebooks.setdefault(record.notebook, NotebookResults(Path(record.notebook)))
        self.first_seen.setdefault(record.notebook, report.nodeid)
        results.pinned.update(record.pinned)
        ran = self.ran.setdefault(report.nodeid, [])
        ran += [run.index for run in record.cells if not run.test]
        if report.when == "teardown":
            del self.ran[report.nodeid]
        outcome = category_of(self.config, report)
        if not outcome:
            return
        self.counts[outcome] += 1
        results.tests.append(_result(report, record, outcome, ran))

    def _other(self, report: pytest.TestReport) -> None:
        """Another plugin's failure (nbval's cell, a plain test): listed with ntdd's."""
        outcome = category_of(self.config, report)
        if not report.failed or not outcome:
            return
        props = dict(report.user_properties)
        cell = props.get("cell")
        self.others.append(
            OtherFailure(
                report.nodeid,
                outcome,
                message_of(report),
                str(props.get("notebook", "")),
                cell if isinstance(cell, int) else None,
            )
        )

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return  # the controller has every report and writes the page
        from ntdd.plugin.report.html import write_report

        results = self.results()
        results_files.write(
            session, "--ntdd-report", self.path, lambda: write_report(self.path, results)
        )

    def results(self) -> RunResults:
        """What the run did, each notebook in collection order."""
        last = len(self.order)

        def place(notebook: str) -> int:
            return self.order.get(self.first_seen[notebook], last)

        ordered = [self.notebooks[n] for n in sorted(self.notebooks, key=place)]
        for notebook in ordered:
            notebook.read, notebook.unread = self.read.get(str(notebook.path), (None, ""))
            run = self.ledger.run_of(str(notebook.path))
            devices = run.devices() if run is not None else []
            notebook.cells = (
                [_capped(cell) for device in devices for cell in run.cells(device).values()]
                if run is not None
                else []
            )
        tests = [test for notebook in ordered for test in notebook.tests]
        return RunResults(
            notebooks=ordered,
            counts=self.counts,
            collection_errors=self.collection_errors,
            options=_options(self.config, tests),
            seconds=time.monotonic() - self.started,
            totals=terminal_line(self.config),
            others=self.others,
        )


def report_writer(config: pytest.Config) -> ReportWriter:
    """The plugin for `--ntdd-report`; nbconvert renders the page, so it must be there."""
    report = settings_of(config).report
    assert report is not None
    try:
        import nbconvert  # noqa: F401
    except ImportError as e:
        raise pytest.UsageError(
            f"ntdd: {report.said} {report.given}: the report is rendered with nbconvert, "
            "which is not installed; install it with: pip install 'ntdd[nbconvert]'"
        ) from e
    return ReportWriter(config, report.path)


def _runtime(item: pytest.Item) -> Runtime | None:
    runtime = runtime_of(item)
    return runtime if runtime is not None and runtime.points_at_cells else None


def _where_note(note: str) -> bool:
    """The note naming a failure's cell and line, for the terminal: the page's frames say it."""
    return note.startswith(WHERE_NOTE)


def _result(
    report: pytest.TestReport, record: TestRecord, outcome: str, ran: list[int]
) -> TestResult:
    problem = outcome not in ("passed", "xpassed")
    return TestResult(
        nodeid=report.nodeid,
        outcome=outcome,
        device=record.device,
        cell=record.cell,
        message=_reason(report, record) if problem else "",
        traceback=record.traceback if outcome in ("failed", "error") else "",
        stdout=_cap(_section(report, "stdout")),
        stderr=_cap(_section(report, "stderr")),
        seconds=report.duration if report.when == "call" else 0.0,
        ran=tuple(dict.fromkeys(ran)),
        setup_cell=record.setup_cell,
        checks_outputs=record.checks_outputs,
        figures=record.figures,
    )


def _reason(report: pytest.TestReport, record: TestRecord) -> str:
    """Why a test did not pass: the error, a skip's reason, an xfail's reason."""
    if hasattr(report, "wasxfail"):
        reason = f" ({report.wasxfail})" if report.wasxfail else ""
        return f"expected to fail{reason}: {message_of(report)}"
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return record.message or message_of(report)


def _section(report: pytest.TestReport, stream: str) -> str:
    """What the test itself printed: pytest's capture of its call."""
    title = f"Captured {stream} call"
    return "".join(text for name, text in report.sections if name == title)


def _capped(run: CellRun) -> CellRun:
    """The run as the page shows it: each stream cut at `COPY_CAP` characters, as its copy
    of stdout and stderr already is."""
    outputs = [
        {**o, "text": _cap(o["text"])} if o["output_type"] == "stream" else o for o in run.outputs
    ]
    return replace(run, outputs=outputs)


def _cap(text: str) -> str:
    if len(text) <= COPY_CAP:
        return text
    return text[:COPY_CAP] + capped_note(len(text) - COPY_CAP)


def _options(config: pytest.Config, tests: list[TestResult]) -> list[tuple[str, str]]:
    """The run's options, as the page's header lists them."""
    settings = settings_of(config)
    parameters = [f"{name}={value}" for name, value in settings.parameters.common]
    for path, values in settings.parameters.by_notebook:
        parameters += [f"{path.name}: {name}={value}" for name, value in values]
    return [
        ("devices", devices_run(settings.devices, tests)),
        ("parameters", ", ".join(parameters) or "none"),
        ("shard", str(settings.shard or "none (the whole run)")),
        *_smoke(config),
    ]


def devices_run(asked: tuple[str, ...], tests: list[TestResult]) -> str:
    """The devices tests ran on, and those asked for whose every test was skipped, with
    the reason (`cpu; cuda skipped: torch.cuda.is_available() is False`)."""
    used = {test.device for test in tests if test.device}
    if not used:
        return f"no test used a device ({', '.join(asked)} asked for)"
    ran = [d for d in asked if any(t.device == d and t.outcome != "skipped" for t in tests)]
    parts = [", ".join(ran) or "none ran"]
    for device in (d for d in asked if d in used and d not in ran):
        reason = next((t.message for t in tests if t.device == device and t.message), "")
        reason = reason.removeprefix(f"{device}: ")
        parts.append(f"{device} skipped" + (f": {reason}" if reason else ""))
    return "; ".join(parts)


def _smoke(config: pytest.Config) -> list[tuple[str, str]]:
    """Smoke mode's caps, and what they cut where, when the run was a smoke run."""
    notes = config.stash.get(SMOKE_NOTES, None)
    if notes is None:
        return []
    capped = "; ".join(notes.lines()) or "nothing"
    said = [("smoke mode", notes.caps.describe()), ("smoke mode capped", capped)]
    alone = "; ".join(notes.lines(left_alone=True))
    return [*said, ("smoke mode left alone", alone)] if alone else said
