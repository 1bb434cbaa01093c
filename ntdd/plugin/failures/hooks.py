"""What a notebook test's report says: its cell, its notebook's line, its description.

A report names the cell a test came from (JUnit properties, the `-v`
line's description, a note on the error), points a failure at the line of
the notebook's file (and annotates it on GitHub Actions), reports a setup
cell's failure as an error even under `@xfail` (but as the end test's failure
where the cell was its own to run), and lets the frames of a failure go once
its report is written.
"""

from __future__ import annotations

import dataclasses
import inspect
import linecache
import types
from collections.abc import Generator
from typing import Any

import pytest

from ntdd.errors import NotebookOutOfTime, SetupError
from ntdd.format.locate import CellLocation
from ntdd.plugin.beside import nbval as beside_nbval
from ntdd.plugin.failures import places
from ntdd.plugin.failures.places import failing_line
from ntdd.plugin.failures.tracebacks import notebook_failure
from ntdd.plugin.items import notebook_module, runtime_of
from ntdd.plugin.results.record import ATTRIBUTE, made, record_of
from ntdd.plugin.running.budget import one_line, out_of_time
from ntdd.runtime import timeout
from ntdd.runtime.fixtures import device_under_test
from ntdd.runtime.protocol import Runtime

_cell_key = pytest.StashKey["CellLocation | None"]()
_description_key = pytest.StashKey[str]()
WHERE_NOTE = "in notebook "  # a failure's note: its place, where the frames are the module's


class ReportHooks:
    """Points a notebook test's report at its cell and at its notebook's line, and puts
    ntdd's one record on it (`record`): the run's one `pytest_runtest_makereport` wrapper."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._annotated: set[object] = set()  # GitHub annotations written, once each

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        timeout.phase_ended()  # the phase is over: its deadline goes no further (tryfirst)
        runtime = runtime_of(item)
        ours = runtime if runtime is not None and runtime.points_at_cells else None
        where = cell_of_test(item)
        if where is not None and call.when == "setup":
            item.user_properties.extend(
                [("notebook", where.notebook), ("cell", where.index), ("cell_id", where.id or "")]
            )
        if where is None and call.when == "setup" and runtime is None:  # nbval's, beside
            item.user_properties.extend(beside_nbval.cell_properties(item, _shown(item)))
        if where is None and ours is not None and _setup_cell_failed(call):
            _name_the_cell(item, ours, call)  # the end test: the cell that raised is its place
        if where is not None and call.excinfo is not None and call.when == "call":
            if ours is not None:
                _name_assigned_below(call.excinfo.value, ours, where.index, "this test")
            _add_note(call.excinfo.value, item)
        if _setup_cell_failed(call) and ours is not None:
            error = call.excinfo.value if call.excinfo is not None else None
            cause = error.__cause__ if isinstance(error, SetupError) else None
            if cause is not None and isinstance(error, SetupError):
                _name_assigned_below(cause, ours, error.index, "this cell")
        failure = call.excinfo
        if failure is not None and ours is not None and _expected_failure(item, failure.value):
            _keep_notebook_frames(failure, ours)
        report = yield
        beside_nbval.at_the_cell(item, report)
        if ours is not None and _setup_cell_failed(call):
            _not_expected(report)
            if where is None and _its_own_cell(call):
                report.when = "call"  # the end test's run of its cells is its check: failed
        if report.failed and ours is not None and call.excinfo is not None:
            report.longrepr = notebook_failure(item, ours, call.excinfo) or report.longrepr
        if out_of_time(item) and call.excinfo is not None:  # failed, or taken for an xfail
            _failed_for_the_budget(report, call.excinfo.value)
        values: dict[str, Any] = {}
        if ours is not None:
            values["notebook"] = str(ours.cells.notebook)
            values["device"] = device_under_test(item) or ""
            values["cell"] = where.index if where is not None else None
        if where is not None or ours is not None:  # the end test too
            values["description"] = _description_of(item, where)
        if report.failed and ours is not None and ours.cells.file_lines:
            line = failing_line(ours, call.excinfo.value) if call.excinfo else None
            places.point_at_notebook(report, ours, line)
            # A failure at its line; a setup cell's once, for the test that ran the cell.
            error = call.excinfo.value if call.excinfo else None
            below = isinstance(error, SetupError) and error.__cause__ is None
            # Once, at the line that ran out of the notebook's time; not at each test after.
            values["annotate"] = not below and not isinstance(error, NotebookOutOfTime)
        contributors = self.config.hook.pytest_ntdd_record  # ntdd's features: no conftest's
        read = bool(contributors.get_hookimpls())  # else only the `-v` line reads the record
        if read:
            for contributed in contributors(item=item, call=call, report=report):
                values.update(contributed or {})
        if values and (read or call.when == "call" or not report.passed):
            made(report, values)  # a passed setup or teardown with no reader gets none
        if call.excinfo is not None and runtime is not None:
            runtime.hold_failure(call.excinfo.tb)  # the report is written: frames may go
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On GitHub Actions, a notebook test's failure is annotated at the notebook's line."""
        record = record_of(report)
        if not (record is not None and record.annotate and places.annotates(self.config)):
            return
        key = (report.location[:2], str(getattr(report.longrepr, "reprcrash", "")))
        if key not in self._annotated:  # a setup cell's failure errors every test below it
            self._annotated.add(key)
            places.annotate(report, self.config)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """nbval's failures beside ntdd's, named as ntdd names cells (`beside.nbval`)."""
        stats = terminalreporter.stats
        failed = [*stats.get("failed", ()), *stats.get("error", ())]
        for line in beside_nbval.cells_as_ntdd_counts(failed):
            terminalreporter.write_line(line, yellow=True)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        result = yield
        # Only the live `-v` line shows the description: the first ask for a
        # report's status comes from it, the later ones from the summaries.
        record = record_of(report)
        description = record.description if record is not None else ""
        if record is not None and description:
            setattr(report, ATTRIBUTE, dataclasses.replace(record, description=""))
        if not (description and config.get_verbosity() > 0 and isinstance(result, tuple)):
            return result
        category, letter, word = result
        if not word or (report.when != "call" and report.passed):
            return result
        if isinstance(word, tuple):
            return category, letter, (f"{word[0]} - {description}", word[1])
        return category, letter, f"{word} - {description}"


def cell_of_test(item: pytest.Item) -> CellLocation | None:
    """The cell a test came from, found once per test; None for a test in no cell of its own
    (the test of the cells below the last test, an nbval item)."""
    if _cell_key in item.stash:
        return item.stash[_cell_key]
    module = notebook_module(item)
    function = getattr(item, "function", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if function else None
    where = None
    if module is not None and code is not None:
        runtime = module.__ntdd__
        where = runtime.cells.layout.locate(code.co_firstlineno, runtime.display_path)
    item.stash[_cell_key] = where
    return where


def _add_note(error: BaseException, item: pytest.Item) -> None:
    module = notebook_module(item)
    runtime = module.__ntdd__ if module is not None else None
    where = None
    if runtime is not None and runtime.points_at_cells:  # the kernel's has no file to quote
        where = places.broken_cell_line(runtime, error)
    if where is None and module is not None:
        where = _failure_location(module, error.__traceback__)
    if where is None:
        return
    _note(error, f"{WHERE_NOTE}{where.describe()}")


def _name_assigned_below(error: BaseException, runtime: Runtime, index: int, reader: str) -> None:
    """A NameError for a name that a cell below assigns says which: Run All has not
    reached that cell yet."""
    name = getattr(error, "name", None) if isinstance(error, NameError) else None
    found = runtime.cells.assigned_below(name, index) if isinstance(name, str) else None
    if found is not None:
        _note(error, f"`{name}` is assigned in cell {found}, below {reader}")


def _note(error: BaseException, note: str) -> None:
    notes = getattr(error, "__notes__", None)
    if notes is None:
        try:
            error.__notes__ = notes = []  # type: ignore[attr-defined]
        except AttributeError:
            return
    if note not in notes:
        notes.append(note)


def _failure_location(module: Any, tb: types.TracebackType | None) -> CellLocation | None:
    """The deepest frame of *tb* that runs a line of one of *module*'s test cells."""
    runtime = module.__ntdd__
    found: CellLocation | None = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == runtime.cells.filename:
            found = runtime.cells.layout.locate(tb.tb_lineno, runtime.display_path) or found
        elif filename in runtime.cells.cell_files:  # a test cell run as notebook code
            index, cell_id = runtime.cells.cell_files[filename]
            text = linecache.getline(filename, tb.tb_lineno).strip()
            found = CellLocation(runtime.display_path, index, cell_id, tb.tb_lineno, "", text)
        tb = tb.tb_next
    return found


def _setup_cell_failed(call: pytest.CallInfo[None]) -> bool:
    """A setup cell above the test raised: the notebook's failure, not the test's."""
    return (
        call.when == "setup" and call.excinfo is not None and call.excinfo.errisinstance(SetupError)
    )


def _its_own_cell(call: pytest.CallInfo[None]) -> bool:
    """Whether the setup cell that raised was the end test's to run: no test before it
    ran the cell (one below every test, any cell of a notebook run without tests with
    `--ntdd-run-untested`).

    Running such cells is all the end test does, as nbmake's and nbval's test of a
    notebook does: one that raises fails it (a final plain `assert` is a check that
    failed), and JUnit, the summary and the report say failed. A cell a test above
    already ran and errored on errors the end test too, as it errors every test
    below it: the notebook broke before they could check anything.
    """
    error = call.excinfo.value if call.excinfo is not None else None
    return isinstance(error, SetupError) and error.first


def _name_the_cell(item: pytest.Item, runtime: Runtime, call: pytest.CallInfo[None]) -> None:
    """Report properties naming the setup cell that raised, for a test in no cell."""
    assert call.excinfo is not None
    error = call.excinfo.value
    assert isinstance(error, SetupError)
    item.user_properties.extend(
        [
            ("notebook", runtime.display_path),
            ("cell", error.index),
            ("cell_id", error.cell_id or ""),
        ]
    )


def _failed_for_the_budget(report: pytest.TestReport, error: BaseException) -> None:
    """A failure, whatever phase ran out of the notebook's time (`running.budget`), and
    whatever the test's `@xfail` says; a test that ran no cell says so in one line."""
    _not_expected(report)
    report.when = "call"
    if isinstance(error, NotebookOutOfTime):
        report.longrepr = one_line(error)  # type: ignore[assignment]


def _not_expected(report: pytest.TestReport) -> None:
    """An error, whatever the test's `@xfail` says: the reason names another failure.

    pytest counts any error of an xfail test's setup as the expected failure;
    the failure here is a setup cell's, which the reason does not speak of.
    """
    if hasattr(report, "wasxfail"):
        del report.wasxfail
        report.outcome = "failed"


def _expected_failure(item: pytest.Item, error: BaseException) -> bool:
    """Whether pytest will report *error* as an xfail: the test's first xfail mark
    has no condition, and its `raises`, if any, is a class the error is an instance of.

    Marks with conditions, and `raises` given as a matcher, are left to pytest
    (this answers no), as is everything under `--runxfail`.
    """
    if item.config.getoption("runxfail", False) or isinstance(error, SetupError):
        return False
    mark = item.get_closest_marker("xfail")
    if mark is None or mark.args or "condition" in mark.kwargs:
        return False
    raises = mark.kwargs.get("raises")
    if raises is None:
        return True
    classes = raises if isinstance(raises, tuple) else (raises,)
    return all(isinstance(c, type) for c in classes) and isinstance(error, classes)


def _keep_notebook_frames(excinfo: pytest.ExceptionInfo[BaseException], runtime: Runtime) -> None:
    """An expected failure's report keeps the notebook's frames only.

    pytest writes every failure's report, an xfail's too, though it never
    prints an xfail's; formatting a frame reads and parses its whole source
    file, and for a frame in torch that is a 7,000-line module (a quarter of
    a second for one xfail). The notebook's frames still say where it failed;
    `hold_failure` still gets the original traceback, whose frames it frees.
    """
    kept = []
    tb: types.TracebackType | None = excinfo.tb
    while tb is not None:
        if runtime.runs_code_of(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    # A chain of its own: pytest cuts a traceback at the test's frame and
    # follows `tb_next` from there, which in the original leads into torch.
    chain: types.TracebackType | None = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    if chain is not None:
        excinfo.traceback = type(excinfo.traceback)(chain)


def _description_of(item: pytest.Item, where: CellLocation | None) -> str:
    """The test's description, worked out once for its three phases."""
    if _description_key not in item.stash:
        item.stash[_description_key] = _description(item, where)
    return item.stash[_description_key]


def _description(item: pytest.Item, where: CellLocation | None) -> str:
    """What `-v` shows beside the test: its docstring's first line, or its marker's
    title where the title says more than the name made of it (`x > 0` beside
    `test_x_0`, not `clean rows` beside `test_clean_rows`)."""
    doc = getattr(getattr(item, "function", None), "__doc__", None)
    if isinstance(doc, str) and doc.strip():
        return doc.strip().splitlines()[0]
    title = where.title if where is not None else ""
    name = getattr(item, "originalname", item.name)
    return "" if name.removeprefix("test_") == "_".join(title.lower().split()) else title


def _shown(item: pytest.Item) -> str:
    """An item's file as its node id names it (relative to rootdir)."""
    return item.nodeid.partition("::")[0]
