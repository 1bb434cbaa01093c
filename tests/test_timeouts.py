"""Nothing outlives its timeout: whatever a cell catches or ignores, its test ends, red."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import run, write_notebook

from ntdd.errors import NtddTimeout
from ntdd.runtime.timeout import HARD_END_STATUS, Deadline, Overrun

# A retry loop that catches everything, the timeout too; its back-off is
# where the timeout, raised again, lands outside the `try`.
RETRIES = """\
import time
while True:  # retries a flaky service, catching everything
    try:
        time.sleep(30)  # the call: the timeout lands here, and is caught
    except:
        time.sleep(30)  # backs off before the next try"""

# A loop that catches every raise: only ending the process stops it.
SWALLOWS = """\
import time
while True:
    try:
        time.sleep(30)
    except:
        pass"""


@pytest.fixture
def next_notebook(notebook: Any) -> Path:
    """A well-behaved notebook that runs after the misbehaving one."""
    return notebook(["x = 2", "# TEST: runs after\nassert x == 2"], name="z_next.ipynb")


def test_a_retry_loop_that_catches_the_timeout_still_fails_its_test(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    notebook(
        ["x = 1", f"# TEST: retries\n{RETRIES}", "# TEST: fine\nassert x == 1"], name="a.ipynb"
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "1", "a.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NtddTimeout: a.ipynb::test_retries timed out after 1 s (ntdd timeout)",
            "*in notebook a.ipynb, cell 2 (id *), line 7: time.sleep(30)  # backs off*",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_a_retry_loop_in_a_setup_cell_errors_its_tests(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    notebook([RETRIES, "# TEST: t1\nassert True", "# TEST: t2\nassert True"], name="a.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-timeout", "1", "a.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "E   *NtddTimeout: a.ipynb::test_t1 timed out after 1 s (ntdd timeout)",
            "a.ipynb*: NtddTimeout (setup cell 1, id *, line *)",
        ]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow  # the timeout, then the grace before the end
def test_a_loop_that_catches_every_raise_ends_the_run_with_the_stacks(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    notebook(
        ["x = 1", f"# TEST: swallows\nprint('looping')\n{SWALLOWS}", "# TEST: fine\nassert x"],
        name="a.ipynb",
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "1", ".", subprocess=True)
    assert result.ret == HARD_END_STATUS
    result.stderr.fnmatch_lines(
        [
            "ntdd: a.ipynb::test_swallows timed out after 1 s (ntdd timeout), and it went on "
            "for 5 s after NtddTimeout was raised (its code catches it: a bare `except:`?), "
            "in a.ipynb, cell 2 (id *), line 6: time.sleep(30)",
            "*Captured stdout*",
            "looping",
            f"ntdd: ending the process (exit status {HARD_END_STATUS}); the stacks of its "
            "threads follow",
            "Thread 0x*",
            '  File "a.ipynb (ntdd module)", line * in test_swallows',
        ]
    )


@pytest.mark.slow  # the timeout, the grace, and xdist's workers
def test_under_xdist_the_end_fails_that_test_and_the_others_run(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    notebook([f"# TEST: swallows\n{SWALLOWS}"], name="a.ipynb")
    args = ("--ntdd", "--ntdd-timeout", "1", "-n", "2", ".")
    result = run(pytester, *args, plugins=["xdist"], subprocess=True)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*worker 'gw*' crashed while running 'a.ipynb::test_swallows'*"])
    result.stderr.fnmatch_lines(["ntdd: a.ipynb::test_swallows timed out after 1 s*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_a_cell_that_ignores_sigalrm_still_times_out_and_keeps_its_setting(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """ntdd wakes a sleeping cell with a signal of its own: the cell's SIGALRM stays
    as the cell set it, for the cells below, as in a kernel."""
    notebook(
        [
            "import signal, time",
            "# TEST: ignores\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(100)",
            "# TEST: keeps it\nassert signal.getsignal(signal.SIGALRM) is signal.SIG_IGN",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "1", "nb.ipynb", subprocess=True)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*NtddTimeout: nb.ipynb::test_ignores timed out after 1 s*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(("in_a_cell", "raised_again"), [(True, True), (False, False)])
def test_the_timeout_is_raised_again_only_while_a_notebook_cell_runs(
    in_a_cell: bool, raised_again: bool
) -> None:
    """Raised again outside the notebook's cells, it could land in pytest's own code."""
    assert threading.current_thread() is threading.main_thread()
    overrun = Overrun(cell_of=lambda frame: "a cell" if in_a_cell else None, grace=None)
    caught = 0
    with pytest.raises(NtddTimeout), Deadline(0.1, "t", overrun).running():
        end = time.monotonic() + 2.0  # the first raise, and then three more chances
        while time.monotonic() < end:
            try:
                time.sleep(0.01)
            except NtddTimeout:
                caught += 1
    assert (caught > 1) is raised_again, caught


@pytest.mark.slow
def test_after_a_timeout_the_process_profiles_code_that_raises(pytester: pytest.Pytester) -> None:
    """A timeout left no "exception pending" flag behind: with one, a profiled frame that
    raised (cProfile under `%prun`) spun for ever in every later test of the process."""
    write_notebook(pytester.path / "nb.ipynb", ["# TEST: hangs\nimport time\ntime.sleep(30)"])
    script = pytester.makepyfile(
        after="""
        import cProfile, sys
        import pytest

        args = ["-p", "no:randomly", "-p", "no:cacheprovider", "-q", "--ntdd"]
        assert pytest.main([*args, "--ntdd-timeout", "0.5", "nb.ipynb"]) == 1
        try:
            cProfile.Profile().runctx("assert x == 2", {"x": 1}, {})
        except AssertionError:
            print("profiled and raised")
        """
    )
    result = pytester.run(sys.executable, str(script), timeout=60)
    result.stdout.fnmatch_lines(["profiled and raised"])


@pytest.mark.slow  # the timeout, then the grace before the end
def test_after_a_hard_end_the_results_files_say_what_this_run_did(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Not what an earlier, green run left: JUnit, the summary, the report, the durations
    file and pytest's last failures."""
    notebook(["x = 1", "# TEST: fine\nassert x", "# TEST: swallows\nassert x"], name="a.ipynb")
    files = (
        "--junitxml=junit.xml",
        "--ntdd-summary=summary.md",
        "--ntdd-report=report.html",
        "--ntdd-store-durations=d.json",
        "-p",
        "cacheprovider",
    )
    green = run(pytester, "--ntdd", *files, ".", subprocess=True)
    assert green.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "d.json").read_text())["a.ipynb"] < 1.0
    notebook(["x = 1", "# TEST: fine\nassert x", f"# TEST: swallows\n{SWALLOWS}"], name="a.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-timeout", "1", *files, ".", subprocess=True)
    assert result.ret == HARD_END_STATUS
    junit = (pytester.path / "junit.xml").read_text()
    assert 'failures="1"' in junit and "timed out after 1 s" in junit
    summary = (pytester.path / "summary.md").read_text()
    assert summary.rstrip().rsplit("### ", 1)[1].startswith("❌ ntdd: 1 failed, 1 passed")
    assert json.loads((pytester.path / "d.json").read_text())["a.ipynb"] >= 1.0  # the timeout
    page = (pytester.path / "report.html").read_text()
    assert "1 failed, 1 passed" in page and "timed out after 1 s" in page
    result.stdout.fnmatch_lines(["*1 failed, 1 passed*"])
    again = run(pytester, "--ntdd", "--lf", "-p", "cacheprovider", "--co", "-q", ".")
    again.stdout.fnmatch_lines(["a.ipynb::test_swallows", "1 test collected*"])


@pytest.mark.slow
def test_after_ctrl_c_the_results_files_say_what_ran_and_keep_the_rest(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The notebook the run was in the middle of keeps its earlier time (a partial one would
    unbalance the next shards); the one that ran gets its own; the page and JUnit are written."""
    notebook(["x = 1", "# TEST: fine\nassert x"], name="a.ipynb")
    started = pytester.path / "started"
    notebook(
        [
            f"import time, pathlib\npathlib.Path({str(started)!r}).touch()\ntime.sleep(60)",
            "# TEST: never\nassert 1",
        ],
        name="b.ipynb",
    )
    (pytester.path / "d.json").write_text('{"a.ipynb": 5.0, "b.ipynb": 7.0, "c.ipynb": 1.0}')
    files = ("--junitxml=junit.xml", "--ntdd-report=report.html", "--ntdd-store-durations=d.json")
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ntdd", *files, "."]
    process = pytester.popen(command, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)  # and its pipes closed
    assert process.returncode == pytest.ExitCode.INTERRUPTED
    durations = json.loads((pytester.path / "d.json").read_text())
    assert durations["a.ipynb"] < 5.0 and durations["b.ipynb"] == 7.0 and durations["c.ipynb"]
    assert "1 passed" in (pytester.path / "report.html").read_text()
    assert 'tests="1"' in (pytester.path / "junit.xml").read_text()


@pytest.mark.slow  # the timeout, the grace, and xdist's workers
def test_under_xdist_a_crashed_tests_duration_is_its_wall_time(
    notebook: Any, next_notebook: Path, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    notebook([f"# TEST: swallows\n{SWALLOWS}"], name="a.ipynb")
    args = ("--ntdd", "--ntdd-timeout", "1", "-n", "2", "--ntdd-store-durations=d.json", ".")
    run(pytester, *args, plugins=["xdist"], subprocess=True).assert_outcomes(passed=1, failed=1)
    durations = json.loads((pytester.path / "d.json").read_text())
    assert durations["a.ipynb"] >= 5.0  # the timeout and the grace, not the setup's milliseconds
