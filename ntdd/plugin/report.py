"""`--ntdd-report FILE.html`: the run as the notebooks, with each test's verdict at its cell.

Where tests run (a worker under `-n`, or the one process), each report gets
what only that process knows, as plain attributes that xdist carries to the
controller: the notebook, the device, the notebook's part of a failure's
traceback, and the setup cells run in that phase (`ntdd.runtime.cell_log`).
The controller gathers them and, at the end, writes the page
(`report_html`). Under `--ntdd-shard` each shard's run writes its own.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import SetupError
from ntdd.plugin import results_files
from ntdd.plugin.cell_records import cell_records
from ntdd.plugin.items import runtime_of
from ntdd.plugin.report_hooks import WHERE_NOTE
from ntdd.plugin.report_pins import pinned_cells
from ntdd.plugin.report_values import (
    NotebookResults,
    OtherFailure,
    RunResults,
    SetupCellError,
    TestResult,
)
from ntdd.plugin.smoke import NOTES as SMOKE_NOTES
from ntdd.plugin.summary import _message as message_of
from ntdd.plugin.summary import category_of, terminal_line
from ntdd.runtime.cell_log import COPY_CAP, CellRun, capped_note, notebook_traceback
from ntdd.runtime.protocol import Runtime
from ntdd.runtime.settings import settings_of


class ReportWriter:
    """Gathers the reports of a run and writes the page when the session ends."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
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

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """What only the process that ran the test knows of its failure (the notebook, the
        device and the cells it ran go on the report by `CellRecords`)."""
        report = yield
        runtime = _runtime(item)
        if runtime is None:
            return report
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, SetupError):  # its cell shows the traceback
            report.ntdd_message = str(error)
            report.ntdd_setup_cell = asdict(SetupCellError.of(error))
        elif error is not None:
            report.ntdd_traceback = notebook_traceback(error, runtime.cells.place_of, _where_note)
        return report

    # -- where the results come together ---------------------------------------

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
        notebook = getattr(report, "ntdd_notebook", None)
        if notebook is None:
            self._other(report)
            return
        results = self.notebooks.setdefault(notebook, NotebookResults(Path(notebook)))
        self.first_seen.setdefault(notebook, report.nodeid)
        runs = [_capped(CellRun(**run)) for run in getattr(report, "ntdd_cells", ())]
        results.cells += runs
        ran = self.ran.setdefault(report.nodeid, [])
        ran += [run.index for run in runs if not run.test]
        if report.when == "teardown":
            del self.ran[report.nodeid]
        outcome = category_of(self.config, report)
        if not outcome:
            return
        self.counts[outcome] += 1
        results.tests.append(_result(report, outcome, ran))

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
        from ntdd.plugin.report_html import write_report

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
        settings = settings_of(self.config)
        for notebook in ordered:
            values = settings.parameters.for_notebook(notebook.path)
            notebook.pinned = pinned_cells(notebook.path, values) if values else {}
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
    cell_records(config)
    return ReportWriter(config, report.path)


def _runtime(item: pytest.Item) -> Runtime | None:
    runtime = runtime_of(item)
    return runtime if runtime is not None and runtime.points_at_cells else None


def _where_note(note: str) -> bool:
    """The note naming a failure's cell and line, for the terminal: the page's frames say it."""
    return note.startswith(WHERE_NOTE)


def _result(report: pytest.TestReport, outcome: str, ran: list[int]) -> TestResult:
    cell = getattr(report, "ntdd_cell", None)
    problem = outcome not in ("passed", "xpassed")
    setup_cell = getattr(report, "ntdd_setup_cell", None)
    return TestResult(
        nodeid=report.nodeid,
        outcome=outcome,
        device=getattr(report, "ntdd_device", ""),
        cell=cell if isinstance(cell, int) else None,
        message=_reason(report) if problem else "",
        traceback=getattr(report, "ntdd_traceback", "") if outcome in ("failed", "error") else "",
        stdout=_cap(_section(report, "stdout")),
        stderr=_cap(_section(report, "stderr")),
        seconds=report.duration if report.when == "call" else 0.0,
        ran=tuple(dict.fromkeys(ran)),
        setup_cell=SetupCellError(**setup_cell) if setup_cell else None,
        checks_outputs=getattr(report, "ntdd_checks_outputs", False),
        figures=tuple(getattr(report, "ntdd_figures", ())),
    )


def _reason(report: pytest.TestReport) -> str:
    """Why a test did not pass: the error, a skip's reason, an xfail's reason."""
    if hasattr(report, "wasxfail"):
        reason = f" ({report.wasxfail})" if report.wasxfail else ""
        return f"expected to fail{reason}: {message_of(report)}"
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return getattr(report, "ntdd_message", "") or message_of(report)


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
    return [("smoke mode", notes.caps.describe()), ("smoke mode capped", capped)]
