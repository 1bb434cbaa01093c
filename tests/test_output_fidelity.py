"""`--ntdd-outputs`: a check compares what the cell showed, all of it, and nothing else.

No output ntdd makes itself (a test's docstring) stands for a cell's; a
stream too long to keep whole is compared whole, by digest, never tail
against tail; the `tqdm` normaliser leaves a progress bar's numbers alone;
a check cannot hang the run past its timeout.
"""

from __future__ import annotations

import pytest
from conftest import write_notebook
from test_output_checks import ran, stdout, verdicts


def test_a_last_test_a_mark_may_leave_out_gives_its_cell_no_output_of_ntdds_own(
    pytester: pytest.Pytester,
) -> None:
    """The test that runs the cells no test is sure to reach is not the last cell's test:
    its docstring is no `Out[n]` of that cell, in the check or the report."""
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("x = 1", count=1),
            ran("# TEST: first\nassert x == 1", count=2),
            ran("print(x)", stdout("1\n"), count=3),
            ran("# TEST: it learned @full_run\nassert x == 1", count=4),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "--ntdd-report=r.html", "nb.ipynb")
    assert found == dict.fromkeys(
        ["outputs_of_cell_1", "outputs_of_cell_2", "outputs_of_cell_3", "outputs_of_cell_4"],
        "PASSED",
    )
    got.assert_outcomes(passed=7)
    assert "which no test is sure to reach" not in (pytester.path / "r.html").read_text()
