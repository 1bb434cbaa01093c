"""`pytest --ntdd --nbval-lax`: red where either alone is red, and the cells agree.

nbval's kernel runs the `# TEST` cells too, so the cells below them see what
they did; whether a `# TEST` cell raised is ntdd's verdict, once. Each run is
in a child process: nbval's kernels leave a file to the garbage collector,
whose ResourceWarning this suite's warning filters would turn into errors.
"""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from conftest import code, run

pytestmark = pytest.mark.slow  # nbval starts a kernel
pytest.importorskip("nbval")


def beside_nbval(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run(
        pytester,
        "--ntdd",
        *args,
        "nb.ipynb",
        "-v",
        "-W",
        "ignore",
        plugins=["nbval"],
        subprocess=True,
    )


def ran(cell: Any, *printed: str) -> Any:
    """*cell* as the notebook saved it after a run that printed *printed*."""
    cell.execution_count = 1
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in printed]
    return cell


def test_the_cells_below_a_test_cell_see_what_it_assigned_in_nbvals_kernel(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: assigns\ny = x + 1\nassert y == 2", "assert y == 2"])
    result = beside_nbval(pytester, "--nbval-lax")
    result.assert_outcomes(passed=4, skipped=1)  # ntdd's end test runs the last cell too
    result.stdout.fnmatch_lines(
        [
            "nb.ipynb::test_assigns PASSED*",
            "nb::ipynb::Cell 1 SKIPPED (run by ntdd)*",
            "nb::ipynb::Cell 2 PASSED*",
        ]
    )


def test_a_failing_test_cell_fails_once_and_the_cells_below_still_see_its_effects(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: fails\nz = 3\nassert x == 2", "assert z == 3"])
    result = beside_nbval(pytester, "--nbval-lax")
    result.assert_outcomes(passed=3, failed=1, skipped=1)  # ntdd's end test among them
    result.stdout.fnmatch_lines(
        [
            "nb.ipynb::test_fails FAILED*",
            "nb::ipynb::Cell 1 SKIPPED (run by ntdd)*",
            "nb::ipynb::Cell 2 PASSED*",
        ]
    )


def test_an_xfail_test_cell_is_red_for_neither(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST: known bug @xfail\nassert False", "assert True"])
    beside_nbval(pytester, "--nbval-lax").assert_outcomes(passed=2, skipped=1, xfailed=1)


def test_under_strict_nbval_a_test_cells_outputs_are_compared(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([ran(code("# TEST: prints\nprint('new')"), "old\n")])
    result = beside_nbval(pytester, "--nbval")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["nb.ipynb::test_prints PASSED*", "nb::ipynb::Cell 0 FAILED*"])
    result.stdout.fnmatch_lines(["*Cell outputs differ*"])


def test_under_strict_nbval_a_raising_test_cell_is_ntdds_failure_alone(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([ran(code("# TEST: fails\nprint('same')\nassert False"), "same\n")])
    result = beside_nbval(pytester, "--nbval")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["nb.ipynb::test_fails FAILED*", "nb::ipynb::Cell 0 SKIPPED*"])


def test_nbvals_cell_timeout_in_a_test_cell_stays_nbvals_failure(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST: slow\nimport time\ntime.sleep(3)"])
    result = beside_nbval(pytester, "--nbval-lax", "--nbval-cell-timeout", "1")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["nb::ipynb::Cell 0 FAILED*"])


def test_a_setup_cell_that_raises_is_named_as_one_cell_by_both(
    pytester: pytest.Pytester,
) -> None:
    """nbval calls the cell `Cell 1` (code cells from 0), ntdd `setup cell 3` (every cell
    from 1): one failure read as two; a line under the totals says they are one cell."""
    cells = [nbformat.v4.new_markdown_cell("# Title"), code("x = 1"), code("y = 1 / 0")]
    cells += [code("# TEST\nassert x == 1")]
    notebook = nbformat.v4.new_notebook(cells=cells)
    for n, cell in enumerate(cells):
        cell.id = f"c{n}"
    nbformat.write(notebook, pytester.path / "nb.ipynb")
    result = beside_nbval(pytester, "--nbval-lax")
    result.stdout.fnmatch_lines(
        [
            "ntdd: nbval's nb.ipynb::Cell 1 is cell 3 (id c2) of nb.ipynb as ntdd counts cells "
            "(nbval counts code cells from 0, ntdd every cell from 1)",
            "*ERROR nb.ipynb::test_cell_4 - ZeroDivisionError in setup cell 3*",
        ]
    )
