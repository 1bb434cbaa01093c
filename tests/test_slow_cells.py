"""`--ntdd-slow-cells N`: the slowest cells, setup and test, named after the run, and each
cell's timing in the notebooks written back, as Jupyter records it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import code, run


def _with_id(source: str, cell_id: str) -> Any:
    cell = code(source)
    cell.id = cell_id
    return cell


SLOW = [
    _with_id("import time\nx = 1", "quick-setup"),
    _with_id("time.sleep(0.3)\ny = 2", "the-slow-one"),
    _with_id("# TEST: adds\nassert x + y == 3", "the-test"),
]
SECTION = "ntdd: slowest 2 notebook cells"
# Under xdist a run is a child process and two workers, seconds apiece: the first
# test's xdist case is in the quick run, the others' in the slow tier.
XDIST_SLOW = pytest.mark.slow


def _listed(result: pytest.RunResult) -> list[str]:
    """The lines of the slow cells' section."""
    lines = result.outlines
    start = next(n for n, line in enumerate(lines) if SECTION in line)
    return [line for line in lines[start + 1 :] if not line.startswith("=")][:2]


@pytest.mark.parametrize("place", ["serial", "xdist"])
@pytest.mark.slow
def test_the_slowest_cell_is_named_first_with_its_notebook_number_and_id(
    notebook: Any, pytester: pytest.Pytester, place: str
) -> None:
    notebook(SLOW)
    xdist = ("-n", "2") if place == "xdist" else ()
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-slow-cells=2",
        *xdist,
        plugins=("xdist",) if xdist else (),
        subprocess=bool(xdist),
    )
    result.assert_outcomes(passed=1)
    first, second = _listed(result)
    assert re.fullmatch(r"\d+\.\d\ds nb\.ipynb cell 2 \(id the-slow-one\) setup", first)
    assert second.endswith(("(id quick-setup) setup", "(id the-test) test"))


def test_a_threshold_hides_the_quick_cells_and_says_how_many(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(SLOW)
    result = run(pytester, "--ntdd", "--ntdd-slow-cells=3", "--ntdd-slow-cells-min=0.2")
    result.stdout.fnmatch_lines(
        [
            "*ntdd: slowest 3 notebook cells*",
            "*s nb.ipynb cell 2 (id the-slow-one) setup",
            "(2 cells under 0.2s hidden)",
        ]
    )


@pytest.mark.slow
def test_the_ini_and_pyproject_keys_ask_for_it_too(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(SLOW)
    pytester.makeini("[pytest]\nntdd_slow_cells = 1\n")
    run(pytester, "--ntdd").stdout.fnmatch_lines(["*ntdd: slowest notebook cell*"])
    (pytester.path / "tox.ini").unlink()
    pytester.makepyprojecttoml("[tool.ntdd]\nslow_cells = 1\nslow_cells_min = 0.2\n")
    result = run(pytester, "--ntdd")
    result.stdout.fnmatch_lines(["*ntdd: slowest notebook cell*", "*(id the-slow-one) setup"])


def test_a_run_without_it_lists_no_cells(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(SLOW)
    result = run(pytester, "--ntdd")
    assert "slowest" not in result.stdout.str()


def test_a_count_below_one_is_refused_by_name(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(SLOW)
    result = run(pytester, "--ntdd", "--ntdd-slow-cells=0")
    assert result.ret != 0
    assert "--ntdd-slow-cells: slow_cells must be a whole number >= 1, got '0'" in (
        result.stdout.str() + result.stderr.str()
    )


def test_a_bad_least_time_is_refused_naming_its_setting(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(SLOW)
    result = run(pytester, "--ntdd", "--ntdd-slow-cells=3", "--ntdd-slow-cells-min=soon")
    assert result.ret != 0
    said = result.stdout.str() + result.stderr.str()
    assert "--ntdd-slow-cells-min: slow_cells_min must be a number of seconds >= 0" in said


@pytest.mark.parametrize("place", ["serial", pytest.param("xdist", marks=XDIST_SLOW)])
def test_a_notebook_written_back_carries_each_cells_timing_as_jupyter_writes_it(
    notebook: Any, pytester: pytest.Pytester, place: str
) -> None:
    notebook(SLOW)
    xdist = ("-n", "2") if place == "xdist" else ()
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-write-notebooks=out",
        *xdist,
        plugins=("xdist",) if xdist else (),
        subprocess=bool(xdist),
    )
    result.assert_outcomes(passed=1)
    cells = json.loads((pytester.path / "out" / "nb.ipynb").read_text())["cells"]
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"  # nbclient's `timestamp()`
    keys = ["iopub.status.busy", "iopub.execute_input", "shell.execute_reply", "iopub.status.idle"]
    for cell in cells:
        execution = cell["metadata"]["execution"]
        assert list(execution) == keys
        assert all(re.fullmatch(stamp, value) for value in execution.values())
        assert execution["iopub.execute_input"] <= execution["shell.execute_reply"]
    slow = cells[1]["metadata"]["execution"]
    assert slow["shell.execute_reply"] > slow["iopub.execute_input"]


@pytest.mark.parametrize("place", ["serial", pytest.param("xdist", marks=XDIST_SLOW)])
def test_the_job_summary_lists_the_slowest_cells_when_asked(
    notebook: Any, pytester: pytest.Pytester, place: str
) -> None:
    notebook(SLOW)
    xdist = ("-n", "2") if place == "xdist" else ()
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-summary=s.md",
        "--ntdd-slow-cells=1",
        *xdist,
        plugins=("xdist",) if xdist else (),
        subprocess=bool(xdist),
    )
    result.assert_outcomes(passed=1)
    text = (pytester.path / "s.md").read_text()
    assert "<summary>Slowest cells</summary>" in text
    assert re.search(r"\| \d+\.\d\d \| `nb\.ipynb cell 2 \(id the-slow-one\) setup` \|", text)
    run(pytester, "--ntdd", "--ntdd-summary=plain.md")
    assert "Slowest" not in (pytester.path / "plain.md").read_text()
