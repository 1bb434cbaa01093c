"""Every code cell runs, as Run All runs it, or the run says why not.

Cells below a notebook's last test run in one more test at the end of the
module, `test_notebook_runs_to_the_end`; a first line that looks like a test
marker but is not one is a warning naming the cell; and a setup cell that
fails above an `@xfail` test is an error, not the expected failure.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from conftest import code, export, run

from ntdd.commands.cli import main
from ntdd.format.module import parse_regions
from ntdd.notebook import markers
from ntdd.values import Cell

END = "test_notebook_runs_to_the_end"


# -- cells below the last test -------------------------------------------------------


def test_a_failing_assert_after_the_last_test_fails_the_run_naming_its_cell(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = 1", "# TEST\nassert x == 1", "assert x == 2, 'x is not two'"])
    result = run_notebook()
    result.assert_outcomes(passed=1, failed=1)  # the check the end test is there for
    result.stdout.fnmatch_lines(
        [
            f"*_ {END} _*",
            "E   AssertionError: x is not two",
            "nb.ipynb*(setup cell 3, id *",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_crash_after_the_last_test_fails_the_run_with_its_traceback(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = 1", "# TEST\nassert x", "def boom():\n    return 1 / 0\n\nboom()"])
    result = run_notebook()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*    return 1 / 0",
            "E *ZeroDivisionError: division by zero",
            # exported: the cell's own name; collected: the notebook's line, then the cell
            "nb.ipynb*:*: ZeroDivisionError*",
        ]
    )


def test_cells_after_the_last_test_that_pass_run_in_one_passing_test(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "x = 1",
            "# TEST\nassert x == 1",
            "y = x + 1",
            "with open('ran.txt', 'w') as f:\n    f.write(str(y))",
        ]
    )
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"*::{END} PASSED - Runs cells 3 and 4, which no test*"])
    assert (pytester.path / "ran.txt").read_text() == "2"  # in the notebook's folder


@pytest.mark.parametrize(
    "last",
    [
        "# NTDD: skip\nraise RuntimeError('a long training run')",
        "# NBVAL_SKIP\nraise RuntimeError",
        code("raise RuntimeError", tags=["ntdd-skip"]),
        "%pip install no-such-package",
        "# only a comment",
    ],
    ids=["ntdd-skip", "nbval-skip", "skip-tag", "install", "comment"],
)
def test_cells_after_the_last_test_that_do_not_run_under_test_add_no_test(
    notebook: Any, run_notebook: Any, last: Any
) -> None:
    notebook(["x = 1", "# TEST\nassert x", last])
    result = run_notebook("nb.ipynb", "-v", "-W", "ignore::UserWarning")
    result.assert_outcomes(passed=1)
    assert END not in result.stdout.str()


def test_a_notebook_whose_last_cell_is_a_test_has_no_end_test(notebook: Any) -> None:
    path = notebook(["x = 1", "# TEST\nassert x", "y = 2", "# TEST\nassert y == 2"])
    assert export(path) == 0
    assert END not in path.with_name("test_nb.py").read_text()


def test_cells_above_a_skipped_last_test_run_too(notebook: Any, run_notebook: Any) -> None:
    """pytest skips a `@skip` test before its fixtures run: nothing reaches the cells above it
    but the end test, which fails where they raise, as after a last test that runs."""
    notebook(["x = 1", "# TEST\nassert x", "assert x == 2", "# TEST @skip\nassert True"])
    result = run_notebook()
    result.assert_outcomes(passed=1, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["E   AssertionError", "nb.ipynb*setup cell 3*"])


def test_reports_place_a_failure_of_the_end_test_at_the_cell_that_raised(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    trailing = code("assert x == 2")
    trailing.id = "trailing"
    notebook(["x = 1", "# TEST\nassert x", trailing])
    run(pytester, "--ntdd", "nb.ipynb", "--ntdd-summary=s.md", "--junitxml=j.xml")
    summary = (pytester.path / "s.md").read_text()
    assert f"| `nb.ipynb::{END}` | failed | nb.ipynb, cell 3 (id trailing) |" in summary
    junit = (pytester.path / "j.xml").read_text()
    assert '<property name="cell" value="3" /><property name="cell_id" value="trailing" />' in junit


def test_junit_says_failure_for_a_cell_below_the_tests_and_error_for_one_above_them(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The end test's own cells are its check; a cell above the tests broke them all."""
    notebook(["x = 1", "# TEST\nassert x", "assert x == 2"], name="below.ipynb")
    notebook(["x = 1 / 0", "# TEST\nassert True", "y = 2"], name="above.ipynb")
    result = run(pytester, "--ntdd", "below.ipynb", "above.ipynb", "--junitxml=j.xml")
    result.assert_outcomes(passed=1, failed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            f"FAILED below.ipynb::{END} - AssertionError*",
            f"ERROR above.ipynb::{END} - ZeroDivisionError*",
        ]
    )
    verdicts = {
        (case.get("classname"), case.get("name")): [c.tag for c in case if c.tag != "properties"]
        for case in ET.parse(pytester.path / "j.xml").getroot().iter("testcase")
    }
    assert verdicts[("below.ipynb", END)] == ["failure"]
    assert verdicts[("above.ipynb", END)] == ["error"]


def test_the_end_test_carries_the_marks_every_test_carries(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = 1", "# TEST @slow\nassert x", "assert False"])
    run_notebook("nb.ipynb", "-m", "not slow").assert_outcomes(deselected=2)
    run_notebook("nb.ipynb", "-m", "slow").assert_outcomes(passed=1, failed=1)


def test_marks_every_test_carries_leave_the_cells_above_the_last_test_to_it(
    notebook: Any,
) -> None:
    """Where the end test would run, so does the last test: nothing is left for it to run."""
    path = notebook(["x = 1", "# TEST @slow\nassert x", "y = 2", "# TEST @slow\nassert y"])
    assert export(path) == 0
    assert END not in path.with_name("test_nb.py").read_text()


def test_the_end_test_runs_once_per_device(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nassert device", "print('on', device)"])
    result = run(pytester, "--ntdd", "nb.ipynb", "--ntdd-devices", "cpu", "-v", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"nb.ipynb::{END}[[]cpu[]] on cpu", "PASSED*"])


def test_a_setup_failure_above_the_tests_also_errors_the_end_test(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1 / 0", "# TEST\nassert True", "y = 2"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            f"*_ ERROR at setup of {END} _*",
            "nb.ipynb (setup cell 1, id *) raised ZeroDivisionError; its traceback is under *",
        ]
    )


def test_the_end_test_is_no_test_region_to_sync_or_check(
    notebook: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    path = notebook(["x = 1", "# TEST: x\nassert x == 1", "assert x < 2"])
    assert export(path) == 0
    module = path.with_name("test_nb.py")
    text = module.read_text()
    assert [r.kind for r in parse_regions(text)][-2:] == ["setup", "end"]
    assert "# %% ntdd end: after cell 3\n" in text
    assert main(["export", "--check", str(path)]) == 0
    module.write_text(text.replace("assert x == 1", "assert x == 1 and x"))
    assert main(["sync", str(path)]) == 0
    cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
    assert cells == ["x = 1", "# TEST: x\nassert x == 1 and x", "assert x < 2"]
    assert main(["export", "--check", str(path)]) == 0, capsys.readouterr()


# -- first lines that look like a marker -------------------------------------------------


@pytest.mark.parametrize(
    ("first_line", "says"),
    [
        ("# Test: x is one", "looks like a test marker but is not one"),
        ("# TESTS: x is one", "looks like a test marker but is not one"),
        ("#test", "looks like a test marker but is not one"),
        ("# tests", "looks like a test marker but is not one"),
        ("\ufeff# TEST: x is one", "starts with an invisible character (U+FEFF"),
    ],
    ids=["Test:", "TESTS:", "#test", "tests", "byte order mark"],
)
def test_a_near_miss_marker_is_a_warning_naming_the_cell(
    notebook: Any,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    first_line: str,
    says: str,
) -> None:
    path = notebook(["x = 1", f"{first_line}\nassert x == 1"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.stdout.fnmatch_lines([f"ntdd: warning: nb.ipynb: cell 2 (id *): *{says}*"])
    assert export(path) == 1  # no tests: nothing written
    assert "nb.ipynb: cell 2 (id " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("\u200b# TEST\nassert x", "(U+200B ZERO WIDTH SPACE)"),
        ("\n\n#| slow\n#Tests: x\nassert x", "'#Tests: x' looks like a test marker"),
        ("# TEST: x\nassert x", None),
        ("# test_helpers\nx = 1", None),
        ("# Test mul() function\nprint(mul(2, 3))", None),
        ("# test\nresult = model(x)\nassert result", None),
        ("# Test cases\nassert mul(2, 3) == 6\nnp.testing.assert_equal(1, 1)", "'# Test cases'"),
    ],
    ids=[
        "zero-width space",
        "below directives",
        "the grammar",
        "an identifier",
        "a teaching notebook's heading",
        "a cell that does more than check",
        "a cell of checks",
    ],
)
def test_near_miss_reads_the_line_a_marker_would_be_on(source: str, says: str | None) -> None:
    found = markers.near_miss(Cell(2, "code", source))
    assert (found is None) if says is None else (found is not None and says in found)


def test_a_marker_behind_a_byte_order_mark_fails_as_in_a_kernel(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """IPython refuses the cell (`invalid non-printable character U+FEFF`): Run All is red."""
    notebook(["x = 1", "\ufeff# TEST\nassert x == 1", "# TEST\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["SyntaxError: invalid non-printable character U+FEFF"])


@pytest.mark.parametrize(
    ("line", "tests"),
    [("# TEST", 2), ("#TEST: x", 2), ("# testing the loader", 1), ("# the tests", 1)],
)
def test_markers_and_comments_that_mean_no_test_are_not_warned_about(
    notebook: Any, pytester: pytest.Pytester, line: str, tests: int
) -> None:
    notebook([f"{line}\nx = 1", "# TEST\nassert True"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=tests, warnings=0)  # read as the grammar says, unwarned
    assert "ntdd: warning" not in result.stdout.str()


# -- an expected failure below a failed setup cell -------------------------------------------


def test_an_xfail_test_below_a_failing_setup_cell_errors_with_the_cells_traceback(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "x = 1 / 0",
            '# TEST: known bug @xfail("issue 12")\nassert False',
            '# TEST: another @xfail("issue 13")\nassert False',
        ]
    )
    result = run_notebook()
    result.assert_outcomes(errors=2)
    output = result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*x = 1 / 0", "E   ZeroDivisionError: division by zero", "nb.ipynb*setup cell 1, id *"]
    )
    assert "issue 12" not in output and "XFAIL" not in output


def test_an_xfail_test_that_fails_itself_is_still_expected(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = 1", '# TEST: known bug @xfail("issue 12")\nassert x == 2'])
    run_notebook().assert_outcomes(xfailed=1)
