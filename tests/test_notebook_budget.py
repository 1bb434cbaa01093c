"""`--ntdd-notebook-timeout`: a notebook past its time budget fails, the test running then and
every test after it with one message; the next notebook gets a budget of its own."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import line_of, run

from ntdd.runtime.timeout import HARD_END_STATUS

SLEEPS = "import time\ntime.sleep(30)"  # stopped by the budget long before its end
# A retry loop that catches everything, the timeout too (as in tests/test_timeouts.py).
RETRIES = """\
import time
while True:
    try:
        time.sleep(30)
    except:
        time.sleep(30)"""
# A loop that catches every raise: only ending the process stops it.
SWALLOWS = """\
import time
while True:
    try:
        time.sleep(30)
    except:
        pass"""
BUDGET = "notebook a.ipynb ran out of its time budget of 1 s (--ntdd-notebook-timeout)"


@pytest.fixture
def next_notebook(notebook: Any) -> Path:
    """A quick notebook that runs after the slow one, with a budget of its own."""
    return notebook(["x = 2", "# TEST: runs after\nassert x == 2"], name="z_next.ipynb")


def slow_notebook(notebook: Any, slow_test: str = SLEEPS) -> Path:
    """A notebook whose third cell's test runs past the budget, with tests and a cell below."""
    return notebook(
        [
            "x = 1",
            "# TEST: quick\nassert x == 1",
            f"# TEST: slow\n{slow_test}",
            "# TEST: later\nassert x == 1",
            "y = x + 1",  # below every test: the end test runs it
        ],
        name="a.ipynb",
    )


def test_past_its_budget_a_notebook_fails_the_running_test_and_every_later_one(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    slow_notebook(notebook)
    args = ("--ntdd-write-notebooks", "out", "a.ipynb", "z_next.ipynb", "-rf")
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", *args)
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_slow _*",
            ">*time.sleep(30)",
            f"E*NtddTimeout: {BUDGET} in test_slow; slowest cells: cell 3 (id *) * s",
            "*_ test_later _*",
            f"{BUDGET} in test_slow; slowest cells: cell 3 (id *) * s",
            "*_ test_notebook_runs_to_the_end _*",
            f"{BUDGET} in test_slow; slowest cells: cell 3 (id *) * s",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "FAILED a.ipynb::test_slow - *NtddTimeout*",
            "FAILED a.ipynb::test_later - *NotebookOutOfTime*",
            "FAILED a.ipynb::test_notebook_runs_to_the_end - *NotebookOutOfTime*",
        ]
    )
    result.stdout.no_fnmatch_line("*ERROR*")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Stopped by its budget, the notebook is not written back as a complete run.
    assert (pytester.path / "out" / "z_next.ipynb").is_file()
    assert not (pytester.path / "out" / "a.ipynb").exists()


def test_a_setup_cell_past_the_budget_fails_the_test_that_ran_it_and_the_rest(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    notebook([SLEEPS, "# TEST: t1\nassert True", "# TEST: t2\nassert True"], name="a.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", "a.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_t1 _*",
            f"E*NtddTimeout: {BUDGET} in test_t1; slowest cells: cell 1 (id *) * s",
            "*_ test_t2 _*",
            f"{BUDGET} in test_t1; slowest cells: cell 1 (id *) * s",
        ]
    )


@pytest.mark.slow
def test_a_bare_except_that_catches_the_stop_does_not_outlast_the_budget(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    slow_notebook(notebook, RETRIES)
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", "a.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [f"E*NtddTimeout: {BUDGET} in test_slow; *", f"{BUDGET} in test_slow; *"]
    )


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="processes are read from /proc")
def test_a_child_process_past_the_budget_is_stopped_with_its_cell(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    child = "import os, time; open('child.pid', 'w').write(str(os.getpid())); time.sleep(30)"
    slow_notebook(
        notebook, f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {child!r}])"
    )
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", "a.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines([f"E*NtddTimeout: {BUDGET} in test_slow; *"])
    pid = pytester.path / "child.pid"
    assert pid.is_file() and not alive(int(pid.read_text()))


def test_each_test_runs_within_the_smaller_of_its_timeout_and_what_is_left(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The test's own timeout strikes first, and says so; the notebook's time left runs the
    rest."""
    notebook(["x = 1", f"# TEST: slow\n{SLEEPS}", "# TEST: later\nassert x"], name="a.ipynb")
    args = ("--ntdd-timeout", "0.5", "--ntdd-notebook-timeout", "20", "a.ipynb")
    result = run(pytester, "--ntdd", *args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["E*NtddTimeout: a.ipynb::test_slow timed out after 0.5 s*"])
    result.stdout.no_fnmatch_line("*time budget*")


@pytest.mark.slow
def test_under_xdist_each_notebook_has_its_budget_on_its_worker(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    slow_notebook(notebook)
    notebook(["import time\ntime.sleep(30)", "z = 1"], name="untested.ipynb")  # its end test
    args = ("--ntdd-run-untested", "--ntdd-notebook-timeout", "1", "-n", "2", ".")
    result = run(pytester, "--ntdd", *args, plugins=["xdist"], subprocess=True)
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines_random(
        [
            f"E*NtddTimeout: {BUDGET} in test_slow; *",
            f"{BUDGET} in test_slow; *",
            "E*NtddTimeout: notebook untested.ipynb ran out of its time budget of 1 s*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("ini", "ini ntdd_notebook_timeout"),
        ("pyproject", "*pyproject.toml [[]tool.ntdd[]] notebook_timeout"),
    ],
)
def test_the_budget_from_the_ini_or_pyproject_names_where_it_was_given(
    notebook: Any, pytester: pytest.Pytester, config: str, said: str
) -> None:
    if config == "ini":
        pytester.makeini("[pytest]\nntdd_notebook_timeout = 1\n")
    else:
        pytester.makepyprojecttoml("[tool.ntdd]\nnotebook_timeout = 1\n")
    notebook(["x = 1", f"# TEST: slow\n{SLEEPS}", "# TEST: later\nassert x"], name="a.ipynb")
    result = run(pytester, "--ntdd", "a.ipynb")
    result.assert_outcomes(failed=2)
    budget = f"notebook a.ipynb ran out of its time budget of 1 s ({said})"
    result.stdout.fnmatch_lines([f"E*NtddTimeout: {budget} in test_slow*", f"{budget} in *"])


def test_none_on_the_command_line_turns_off_the_ini_budget(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makeini("[pytest]\nntdd_notebook_timeout = 0.2\n")
    notebook(["import time", "# TEST: a while\ntime.sleep(0.4)"], name="a.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "none", "a.ipynb")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("place", "says"),
    [
        ("flag", "--ntdd-notebook-timeout: notebook_timeout must be a number of seconds*"),
        ("ini", "ini ntdd_notebook_timeout: notebook_timeout must be a number of seconds*"),
        ("pyproject", "*pyproject.toml [[]tool.ntdd[]]: notebook_timeout must be a number*"),
    ],
)
def test_a_bad_budget_is_a_usage_error_naming_where_it_came_from(
    notebook: Any, pytester: pytest.Pytester, place: str, says: str
) -> None:
    notebook(["# TEST\nassert True"])
    args = ["--ntdd-notebook-timeout", "soon"] if place == "flag" else []
    if place == "ini":
        pytester.makeini("[pytest]\nntdd_notebook_timeout = -1\n")
    if place == "pyproject":
        pytester.makepyprojecttoml('[tool.ntdd]\nnotebook_timeout = "nan"\n')
    result = run(pytester, "--ntdd", *args, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: ntdd: {says}, or none; got *"])


@pytest.mark.slow
def test_the_summary_junit_and_report_show_the_budgets_message(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("nbconvert")
    slow_notebook(notebook)
    files = ("--ntdd-summary", "s.md", "--ntdd-report", "r.html", "--junit-xml", "j.xml")
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", *files, ".")
    result.assert_outcomes(passed=2, failed=3)
    summary = (pytester.path / "s.md").read_text()
    for test in ("test_slow", "test_later", "test_notebook_runs_to_the_end"):
        assert f"| `a.ipynb::{test}` | failed |" in summary
    assert summary.count(f"{BUDGET} in test_slow; slowest cells: cell 3 (id ") == 3
    failures = [
        failure.get("message", "") for failure in ET.parse(pytester.path / "j.xml").iter("failure")
    ]
    assert len(failures) == 3
    assert all(f"{BUDGET} in test_slow; slowest cells: cell 3" in m for m in failures)
    page = (pytester.path / "r.html").read_text()
    assert page.count(f"{BUDGET} in test_slow; slowest cells: cell 3 (id ") >= 3


@pytest.mark.slow  # the budget, then the grace before the end
def test_a_loop_that_swallows_every_stop_ends_the_process_naming_the_budget(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    slow_notebook(notebook, SWALLOWS)
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", ".", subprocess=True)
    assert result.ret == HARD_END_STATUS
    result.stderr.fnmatch_lines(
        [f"ntdd: {BUDGET}, and it went on for 5 s after NtddTimeout was raised*"]
    )


@pytest.mark.slow
def test_on_github_actions_the_budget_is_annotated_once_at_the_line_it_ran_out(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    path = slow_notebook(notebook)
    result = run(pytester, "--ntdd", "--ntdd-notebook-timeout", "1", "a.ipynb")
    result.assert_outcomes(passed=1, failed=3)
    found = [line for line in result.stderr.lines if line.startswith("::error ")]
    assert [line.split("::")[1] for line in found] == [
        f"error file=a.ipynb,line={line_of(path, 'time.sleep(30)')},title=a.ipynb%3A%3Atest_slow"
    ]
