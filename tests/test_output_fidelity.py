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


def test_the_tqdm_normaliser_keeps_the_postfix_a_bar_shows(pytester: pytest.Pytester) -> None:
    """tqdm's elapsed time and rate are brittle; the loss it shows is the cell's output."""
    bar = "import sys\nprint('100%|##| 10/10 [00:00<00:00, 2491.09it/s, loss=0.523, acc=0.910]')"
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran(bar, stdout("100%|##| 10/10 [00:01<00:00,  9.87it/s, loss=0.523, acc=0.910]\n")),
            ran(bar, stdout("100%|##| 10/10 [00:01<00:00,  9.87it/s, loss=5.230, acc=0.110]\n")),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "--ntdd-outputs-normalize=tqdm", "nb.ipynb")
    assert found == {"outputs_of_cell_1": "PASSED", "outputs_of_cell_2": "FAILED"}
    got.stdout.fnmatch_lines(["  -100%|##| 10/10 [<elapsed>, loss=5.230, acc=0.110]"])


def test_a_sanitize_pattern_that_backtracks_fails_its_check_at_the_timeout(
    pytester: pytest.Pytester,
) -> None:
    """A check's comparison is C code (`re`) that holds the interpreter: its timeout must
    still land. Without it this run never ends (pytester's own limit fails it)."""
    pytester.path.joinpath("sanitize.cfg").write_text("regex: (a+)+$\nreplace: X\n")
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran("print('a' * 40 + 'b')", stdout("a" * 40 + "b\n"))],
    )
    got = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--ntdd-outputs",
        "--ntdd-outputs-sanitize-with=sanitize.cfg",
        "--ntdd-timeout=1",
        "nb.ipynb",
        timeout=120,
    )
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(
        [
            "cell 1 (id *): nb.ipynb::outputs_of_cell_1 timed out after 1 s (ntdd timeout) "
            "while its saved and fresh outputs were cleaned and compared*"
        ]
    )
