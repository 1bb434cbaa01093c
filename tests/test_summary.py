"""`--ntdd-summary FILE`: the results as Markdown, for GitHub Actions' job summary."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from conftest import run

from ntdd.plugin.results.summary import Problem, render

CELLS = [
    "x = 1",
    "# TEST: passes\nassert x == 1",
    "# TEST: fails\nassert x == 2, 'x | y'",
    "# TEST: skipped @skip('later')\nassert False",
    "# TEST: expected @xfail\nassert False",
]


def test_the_summary_counts_outcomes_and_lists_failures_with_their_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(CELLS)
    (pytester.path / "summary.md").write_text("earlier steps wrote this\n")
    result = run(pytester, "--ntdd", "--ntdd-summary=summary.md")
    result.assert_outcomes(passed=1, failed=1, skipped=1, xfailed=1)
    text = (pytester.path / "summary.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "earlier steps wrote this"  # appended, as GitHub expects
    assert lines[1].startswith("### ❌ ntdd: 1 failed, 1 passed, 1 skipped, 1 xfailed in ")
    assert lines[3:5] == ["| test | outcome | where | message |", "|---|---|---|---|"]
    failure = lines[5]
    assert failure.startswith("| `nb.ipynb::test_fails` | failed | nb.ipynb, cell 3 (id ")
    assert "AssertionError: x \\| y" in failure  # the pipe cannot end the cell
    assert lines[6:] == [""]  # a blank line ends the table


def test_a_setup_error_and_a_collection_error_are_listed(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["1 / 0", "# TEST: t\nassert True"], name="setup.ipynb")
    (pytester.path / "broken.ipynb").write_text("")
    run(pytester, "--ntdd", "--ntdd-summary", "s.md", ".")
    text = (pytester.path / "s.md").read_text()
    assert text.startswith("### ❌ ntdd: 2 errors in ")  # as pytest's tally words it
    assert "| `broken.ipynb` | error | collection | ntdd: broken.ipynb: empty file" in text
    assert "| `setup.ipynb::test_t` | error |" in text and "ZeroDivisionError" in text


def test_a_green_run_is_one_line(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(CELLS[:2])
    run(pytester, "--ntdd", "--ntdd-summary=s.md", "nb.ipynb")
    text = (pytester.path / "s.md").read_text()
    assert text.startswith("### ✅ ntdd: 1 passed in ") and text.count("\n") == 2


@pytest.mark.slow
def test_under_xdist_only_the_controller_writes_it(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    for name in "ab":
        notebook(CELLS, name=f"{name}.ipynb")
    result = run(
        pytester,
        "--ntdd",
        "-n",
        "2",
        "--ntdd-shard=1/1",
        "--ntdd-summary=s.md",
        plugins=["xdist"],
        subprocess=True,
    )
    result.assert_outcomes(passed=2, failed=2, skipped=2, xfailed=2)
    text = (pytester.path / "s.md").read_text()
    assert text.count("###") == 1
    assert text.startswith("### ❌ ntdd, shard 1/1: 2 failed, 2 passed, 2 skipped, 2 xfailed")
    assert text.count("| failed |") == 2


def test_a_long_list_of_failures_is_cut_short() -> None:
    problems = [Problem(f"nb.ipynb::test_{i}", "failed", "", "boom") for i in range(60)]
    text = render("ntdd", Counter(failed=60), problems, 1.0)
    assert text.count("| failed |") == 50
    assert "… and 10 more; see the JUnit report." in text


def test_the_summary_option_is_in_pytest_help(pytester: pytest.Pytester) -> None:
    run(pytester, "--help").stdout.fnmatch_lines(["*--ntdd-summary=FILE*"])
