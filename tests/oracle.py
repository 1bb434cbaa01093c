"""The parity oracle: what a real Jupyter kernel says about each test of a notebook.

A kernel runs the notebook top to bottom with nbclient, going on after errors
(as `--nbval-lax` does). A test *raised* in the kernel when its cell raised,
or, for a cell of `def test_*` functions, when calling the function (in a
cell added right after it) raised; or when a setup cell above it raised
unexpectedly, since ntdd errors the tests below a failing setup cell (Run All
would have stopped there). The module's end test, which runs the cells below
the tests, raised when any setup cell did: Run All did not reach the end.
Cells ntdd never runs (skip-marked setup cells, skipped tests) are left out
of the kernel's run too; not those marked `#| eval: false`, which nbdev's and
Quarto's runners leave out but a kernel's Run All runs (the line is a comment).

ntdd's verdict for the same test: failed, errored or xfailed is *raised*;
passed or xpassed is not; skipped tests are not compared.

For a notebook without tests (`--ntdd-run-untested`), the oracle is Run All
itself (`run_all`): the cells in order, stopping at the first that raises
(one tagged `raises-exception` may), and ntdd's verdict is the cell its one
test names as the one that raised (`first_failures`).
"""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ntdd.commands.cli import main as ntdd_main
from ntdd.format.paths import module_path
from ntdd.notebook import markers
from ntdd.notebook.read import read_notebook
from ntdd.pipeline import end
from ntdd.pipeline.plan import make_plan
from ntdd.runtime.devices import device_unavailable
from ntdd.values import TestKind

FAILED_LINE = "NTDD-ORACLE-FAILED "
_CALLS = """\
import inspect as _ntdd_inspect
_ntdd_failed = []
for _ntdd_name in {names!r}:
    try:
        _ntdd_f = globals()[_ntdd_name]
        _ntdd_args = _ntdd_inspect.signature(_ntdd_f).parameters
        _ntdd_r = _ntdd_f(**({{"device": device}} if "device" in _ntdd_args else {{}}))
        if _ntdd_inspect.iscoroutine(_ntdd_r):
            await _ntdd_r
    except BaseException:
        _ntdd_failed.append(_ntdd_name)
print({marker!r} + repr(_ntdd_failed))
"""


def kernel_verdicts(path: Path, timeout: int = 120) -> dict[str, bool]:
    """Test name -> whether it raised, as a kernel's Run All has it."""
    import nbclient

    plan = make_plan(read_notebook(path))
    nb = nbformat.read(str(path), as_version=4)
    run = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.metadata))
    tests = {t.cell.index: t for t in plan.tests}
    skipped = {s.cell.index for s in plan.skipped if s.reason != markers.EVAL_FALSE}
    origin: list[int | None] = []  # the original cell index of each cell run
    for index, cell in enumerate(nb.cells, 1):
        if cell.cell_type != "code":
            continue
        test = tests.get(index)
        if index in skipped or (test is not None and _never_runs(test.marks)):
            continue
        run.cells.append(nbformat.v4.new_code_cell(cell.source, metadata=cell.metadata))
        origin.append(index)
        if test is not None and test.kind is TestKind.FUNCTIONS:
            written = [{e: w for w, e in test.renames}.get(n, n) for n in test.names]
            calls = _CALLS.format(names=written, marker=FAILED_LINE)
            run.cells.append(nbformat.v4.new_code_cell(calls))
            origin.append(None)
    client = nbclient.NotebookClient(
        run,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return _verdicts(plan, run.cells, origin)


def _verdicts(plan: Any, cells: list[Any], origin: list[int | None]) -> dict[str, bool]:
    tests = {t.cell.index: t for t in plan.tests}
    setup = {s.cell.index: s for s in plan.setup}
    verdicts: dict[str, bool] = {}
    broken_above = False
    for position, (cell, index) in enumerate(zip(cells, origin, strict=True)):
        if index is None:
            continue
        raised = any(o.get("output_type") == "error" for o in cell.get("outputs", []))
        raised = raised or _usage_error(cell)
        if index in setup:
            broken_above |= raised and not setup[index].expects_exception
            continue
        test = tests.get(index)
        if test is None:
            continue  # an empty cell
        if test.kind is not TestKind.FUNCTIONS:
            verdicts[test.names[0]] = raised or broken_above
            continue
        failed = _failed_calls(cells[position + 1])
        for emitted in test.names:
            written = {e: w for w, e in test.renames}.get(emitted, emitted)
            verdicts[emitted] = raised or broken_above or written in failed
    if plan.end is not None and not _never_runs(plan.end.marks):
        verdicts[plan.end.name] = broken_above
    return verdicts


def _usage_error(cell: Any) -> bool:
    """A magic IPython does not know: the kernel prints a UsageError and stops the cell.

    nbclient records no error for it, but the rest of the cell never ran; for
    ntdd that is the test failing.
    """
    return any(
        o.get("name") == "stderr" and str(o.get("text", "")).startswith("UsageError")
        for o in cell.get("outputs", [])
    )


def _failed_calls(cell: Any) -> list[str]:
    """The functions the calls cell saw raise; it always prints them, so a cell that
    printed nothing broke itself, and no function may pass for it."""
    for output in cell.get("outputs", []):
        for line in str(output.get("text", "")).splitlines():
            if line.startswith(FAILED_LINE):
                return list(json.loads(line[len(FAILED_LINE) :].replace("'", '"')))
    raise AssertionError(f"the kernel's calls cell printed no verdicts: {cell.get('outputs')}")


def covers_every_test_cell(path: Path, verdicts: dict[str, bool]) -> bool:
    """Whether *verdicts* has a test for each `# TEST` cell of *path*, counted without
    ntdd's plan: a test the plan lost is missing from both verdicts, which still agree."""
    nb = nbformat.read(str(path), as_version=4)
    written = sum(
        cell.cell_type == "code" and cell.source.lstrip().startswith("# TEST") for cell in nb.cells
    )
    return len(verdicts.keys() - {end.NAME}) >= written


def _never_runs(marks: Any) -> bool:
    for mark in marks:
        if mark.name == "skip" and markers.EVAL_FALSE not in str(mark.kwargs):
            return True
        if mark.name == "cuda" and device_unavailable("cuda"):
            return True
    return False


def ntdd_verdicts(reprec: pytest.HookRecorder) -> dict[str, bool]:
    """Test name -> whether it raised, from one pytest run's reports.

    A test run on several devices raised if it raised on any; a device that
    is not available (a skip) does not count.
    """
    verdicts: dict[str, bool] = {}
    for report in reprec.getreports("pytest_runtest_logreport"):
        name = re.sub(r"\[.*\]$", "", report.nodeid.split("::")[-1])
        xfailed = report.skipped and hasattr(report, "wasxfail")
        if report.failed or xfailed:
            verdicts[name] = True
        elif report.passed and report.when == "call":
            verdicts.setdefault(name, False)
    return verdicts


def junit_verdicts(junit: Path) -> dict[str, dict[str, bool]]:
    """Notebook file name -> test name -> whether it raised, from a run's JUnit XML,
    as `ntdd_verdicts` reads a run's reports."""
    found: dict[str, dict[str, bool]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = re.sub(r"^.*\.(?=[^.]+\.ipynb$)", "", case.get("classname", ""))
        verdicts = found.setdefault(file, {})
        name = re.sub(r"\[.*\]$", "", case.get("name", ""))
        skipped = case.find("skipped")
        xfailed = skipped is not None and skipped.get("type") == "pytest.xfail"
        if case.find("failure") is not None or case.find("error") is not None or xfailed:
            verdicts[name] = True
        elif skipped is None:
            verdicts.setdefault(name, False)
    return found


def ntdd_run(pytester: pytest.Pytester, *args: str, in_a_process: bool) -> dict[str, bool]:
    """Test name -> whether it raised, from `pytest *args` (with ntdd's plugin only).

    *in_a_process*: in a pytest process of its own, as a user's run is. A
    notebook that imports matplotlib needs one: once an in-process run has put
    `sys.modules` back, matplotlib's extension modules cannot be imported again
    in this process, and the next run's figures fail in them.
    """
    if not in_a_process:
        return ntdd_verdicts(pytester.inline_run(*_ALONE, *args))
    by_notebook = ntdd_run_by_notebook(pytester, *args)
    return {name: v for tests in by_notebook.values() for name, v in tests.items()}


def ntdd_run_by_notebook(pytester: pytest.Pytester, *args: str) -> dict[str, dict[str, bool]]:
    """Notebook file name -> test name -> whether it raised, from `pytest *args` in a
    process of its own (with ntdd's plugin only), read from its JUnit XML: what earlier
    tests left in this worker is no part of the verdicts."""
    junit = pytester.path / "verdicts.xml"
    pytester.runpytest_subprocess(*_ALONE, f"--junitxml={junit}", *args)
    return junit_verdicts(junit)


_ALONE = ("-p", "no:cacheprovider", "-p", "no:randomly")  # no cache, no shuffling


def as_tests(nb: Any, every: int = 1) -> Any:
    """A copy of *nb* in which every *every*-th code cell is a `# TEST` cell.

    A cell that ntdd skips (`# NTDD: skip`, a skip tag) stays as it is: its author
    kept it out of every test run (failure_modes' long training run).
    """
    nb = copy.deepcopy(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    for n, cell in enumerate(code):
        kept_out = markers.skip_reason(_cell(cell)) is not None
        if n % every == 0 and not kept_out and not markers.is_test_cell(_cell(cell)):
            cell.source = f"# TEST: cell {n}\n{cell.source}"
    return nb


def _cell(cell: Any) -> Any:
    from ntdd.values import Cell

    return Cell(0, "code", cell.source, None, tuple(cell.get("metadata", {}).get("tags", ())))


def run_all(path: Path, timeout: int = 120) -> int | None:
    """The cell where a kernel's Run All of *path* stops, or None when it runs to the end.

    Cells are numbered as ntdd numbers them (every cell counts, from 1). The
    saved outputs are cleared first; cells tagged `skip-execution` are not run,
    as nbclient (and Jupyter) leave them; one tagged `raises-exception` may
    raise. The notebook's folder is the kernel's working directory. A cell
    that runs past *timeout* seconds is where it stops.
    """
    import nbclient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    raised: list[int] = []

    def on_error(cell: Any, cell_index: int, execute_reply: Any) -> None:
        if not markers.RAISES_TAGS.intersection(cell.get("metadata", {}).get("tags", ())):
            raised.append(cell_index + 1)

    started: list[int] = []
    client = nbclient.NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_error=on_error,
        on_cell_start=lambda cell, cell_index: started.append(cell_index + 1),
    )
    try:
        client.execute()
    except CellExecutionError:
        pass
    except CellTimeoutError:
        return started[-1]
    return raised[0] if raised else None


def first_failures(junit: Path) -> dict[str, int | None]:
    """Notebook file name -> the cell its test names as the one that raised (None: it
    passed), from a `pytest --ntdd --ntdd-run-untested --junitxml` run. A notebook
    with nothing to run has no test, and is not in it."""
    found: dict[str, int | None] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = Path(case.get("classname", "")).name
        failed = case.find("error") is not None or case.find("failure") is not None
        cell = next(
            (p.get("value") for p in case.iter("property") if p.get("name") == "cell"), None
        )
        found[name] = int(cell) if failed and cell is not None else (0 if failed else None)
    return found


def assert_ntdd_agrees_with_a_kernel(
    pytester: pytest.Pytester, path: Path, only_under_ntdd: frozenset[str] = frozenset()
) -> None:
    """A kernel's Run All judges *path*; `pytest --ntdd` and the exported module give
    the same verdict on each test, but for *only_under_ntdd*: tests the docs list as
    failing under ntdd where a kernel raises nothing."""
    kernel = kernel_verdicts(path)
    assert covers_every_test_cell(path, kernel), kernel
    for name in only_under_ntdd:
        assert kernel[name] is False
        kernel[name] = True
    in_a_process = "matplotlib" in path.read_text(encoding="utf-8")  # see `ntdd_run`
    assert ntdd_run(pytester, "--ntdd", str(path), in_a_process=in_a_process) == kernel
    assert ntdd_main(["export", str(path)]) == 0
    exported = ntdd_run(pytester, str(module_path(path)), in_a_process=in_a_process)
    assert exported == kernel
