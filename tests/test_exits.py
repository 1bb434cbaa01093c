"""A cell never ends the run green, nor hangs it: exits, stray threads, closed streams.

In a kernel, `os._exit` kills the kernel (nbval reports a failure) and
`pytest.exit` is an ordinary exception; neither may stop `pytest --ntdd`
with status 0 before the other tests have run.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import code, export, run

from ntdd.format.paths import module_path

EXITS = {
    "os._exit": "import os\nos._exit(00)",  # Colab's restart idiom, after an install
    "pytest.exit": "import pytest\npytest.exit('restart', returncode=0)",
}
SEGFAULT = "import ctypes\nctypes.string_at(0)"


@pytest.fixture(params=["collected", "exported"])
def way(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_notebooks(
    pytester: pytest.Pytester, way: str, names: list[str], *args: str
) -> pytest.RunResult:
    """pytest in a child process (an exit must not end this one), on the notebooks
    collected with `--ntdd`, or on the modules `ntdd export` writes for them."""
    if way == "collected":
        return run(pytester, "--ntdd", *args, *names, subprocess=True)
    modules = []
    for name in names:
        assert export(pytester.path / name) == 0
        modules.append(str(module_path(pytester.path / name)))
    return run(pytester, *args, *modules, subprocess=True)


@contextlib.contextmanager
def no_hang(pytester: pytest.Pytester) -> Iterator[None]:
    """A child pytest that waits for ever fails the test instead of hanging the suite."""
    with pytest.MonkeyPatch.context() as patch:
        runs = pytester.runpytest_subprocess
        patch.setattr(pytester, "runpytest_subprocess", functools.partial(runs, timeout=120))
        yield


@pytest.fixture
def next_notebook(notebook: Any) -> str:
    """A notebook that runs after the one that exits, and reports."""
    notebook(["y = 2", "# TEST: runs after\nassert y == 2"], name="z_next.ipynb")
    return "z_next.ipynb"


@pytest.mark.parametrize("exit_code", list(EXITS.values()), ids=list(EXITS))
@pytest.mark.slow
def test_an_exit_in_a_setup_cell_errors_its_tests_and_the_next_notebook_still_runs(
    notebook: Any, next_notebook: str, pytester: pytest.Pytester, way: str, exit_code: str
) -> None:
    notebook(["x = 1", exit_code, "# TEST: after the exit\nassert x == 1"], name="a_bad.ipynb")
    result = run_notebooks(pytester, way, ["a_bad.ipynb", next_notebook])
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*a_bad.ipynb*(setup cell 2, id *"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("exit_code", list(EXITS.values()), ids=list(EXITS))
def test_an_exit_in_a_test_cell_fails_that_test_and_the_next_notebook_still_runs(
    notebook: Any, next_notebook: str, pytester: pytest.Pytester, way: str, exit_code: str
) -> None:
    notebook(
        ["x = 1", f"# TEST: exits\n{exit_code}", "# TEST: later\nassert x == 1"],
        name="a_bad.ipynb",
    )
    result = run_notebooks(pytester, way, ["a_bad.ipynb", next_notebook])
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*in notebook a_bad.ipynb, cell 2*", "*FAILED*a_bad*test_exits*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize(
    "cell",
    [
        pytest.param("import os\nos._exit(0)", id="called"),
        # A kernel cannot catch its own death: `except BaseException` does not save it.
        pytest.param(
            "import os\ntry:\n    os._exit(0)\nexcept BaseException:\n    x = 1", id="caught"
        ),
    ],
)
@pytest.mark.slow
def test_os_exit_fails_its_test_naming_what_a_kernel_would_do(
    cell: str, notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([f"# TEST: exits\n{cell}"])
    result = run_notebooks(pytester, "collected", ["nb.ipynb"])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*KernelDied: os._exit(0) was called (*): a kernel would die*"])


@pytest.mark.slow
def test_os_exit_0_from_another_thread_of_the_run_ends_it_red(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Only the test's own thread can fail the test; another's exit still ends the run."""
    notebook(
        [
            "# TEST: exits elsewhere\nimport os, threading\n"
            "t = threading.Thread(target=os._exit, args=(0,))\nt.start()\nt.join()",
            "# TEST: later\nassert True",
        ]
    )
    result = run_notebooks(pytester, "collected", ["nb.ipynb", "-s"])
    assert result.ret == 1
    result.stderr.fnmatch_lines(["ntdd: os._exit(0) was called (nb.ipynb::test_exits_elsewhere)*"])


@pytest.mark.slow
def test_os_exit_in_a_process_the_cell_forked_still_ends_that_process(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """multiprocessing's fork children (a DataLoader's workers) end with os._exit."""
    notebook(
        [
            "# TEST: forks\nimport multiprocessing as mp\n"
            "p = mp.get_context('fork').Process(target=print, args=('child',))\n"
            "p.start()\np.join(60)\nassert p.exitcode == 0"
        ]
    )
    run_notebooks(pytester, "collected", ["nb.ipynb"]).assert_outcomes(passed=1)


def test_pytest_exit_is_an_ordinary_exception_for_a_cell_that_expects_one(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """As in a kernel: a test cell passed by on the way, or a `raises-exception` cell."""
    notebook(
        [
            "import pytest\nx = 1",
            code("pytest.exit('restart')\nx = 2", tags=["raises-exception"]),
            "# TEST: exits\npytest.exit('stop')",
            "# TEST: later\nassert x == 1",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb::test_later")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_os_exit_is_no_exception_a_cell_may_raise_as_marked(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [code("import os\nos._exit(0)", tags=["raises-exception"]), "# TEST: after\nassert True"]
    )
    result = run_notebooks(pytester, "collected", ["nb.ipynb"])
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*KernelDied in setup cell 1*"])
    result.stdout.no_fnmatch_line("*as marked*")


# -- stray threads ---------------------------------------------------------------

THREAD = (
    "import threading\nstop = threading.Event()\n"
    "poller = threading.Thread(target=stop.wait, name='poller')\npoller.start()"
)


@pytest.mark.slow
def test_a_thread_left_running_is_reported_and_not_waited_for(
    notebook: Any, next_notebook: str, pytester: pytest.Pytester, way: str
) -> None:
    notebook([THREAD, "# TEST: started\nassert poller.is_alive()"], name="a_threads.ipynb")
    names = ["a_threads.ipynb", next_notebook]
    with no_hang(pytester):
        result = run_notebooks(pytester, way, names)
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        ["*a_threads.ipynb: thread 'poller' (started by its cells) is still running*"]
    )
    assert result.ret == pytest.ExitCode.OK


def test_a_thread_left_running_is_reported_at_its_line_in_the_notebook(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The warning's place is the notebook's line where the thread waits, not ntdd's."""
    notebook(
        [
            "import threading\nstop = threading.Event()",
            "def poll():\n    stop.wait()\n",
            "poller = threading.Thread(target=poll, name='poller')\npoller.start()",
            "# TEST: started\nassert poller.is_alive()",
        ],
        name="a_threads.ipynb",
    )
    with no_hang(pytester):
        result = run(pytester, "--ntdd", "a_threads.ipynb")
    result.assert_outcomes(passed=1, warnings=1)
    source = (pytester.path / "a_threads.ipynb").read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(source, 1) if "stop.wait()" in text)
    result.stdout.fnmatch_lines([f"*a_threads.ipynb:{line}: NtddWarning: *thread 'poller'*"])


def test_a_thread_that_ended_is_no_warning(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook([THREAD, "# TEST: stops it\nstop.set()\npoller.join()"])
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1, warnings=0)


# -- closed streams --------------------------------------------------------------


# A child process each: stdout under fd capture and stderr under none in the quick
# run, the other four in the slow tier.
@pytest.mark.parametrize(
    ("stream", "capture"),
    [
        ("stdout", "fd"),
        pytest.param("stdout", "sys", marks=pytest.mark.slow),
        pytest.param("stdout", "no", marks=pytest.mark.slow),
        pytest.param("stderr", "fd", marks=pytest.mark.slow),
        pytest.param("stderr", "sys", marks=pytest.mark.slow),
        ("stderr", "no"),
    ],
)
def test_a_cell_that_closes_a_stream_fails_its_test_and_output_goes_on(
    notebook: Any, pytester: pytest.Pytester, capture: str, stream: str
) -> None:
    notebook(
        [
            "import sys",
            f"# TEST: closes\nsys.{stream}.close()",
            "# TEST: prints\nprint('still heard')",
        ],
        name="a_closes.ipynb",
    )
    notebook(["# TEST: next notebook\nprint('next heard')"], name="z_next.ipynb")
    result = run(
        pytester, "--ntdd", f"--capture={capture}", "-rA", "a_closes.ipynb", "z_next.ipynb",
        subprocess=True,
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"*a_closes.ipynb::test_closes: *code closed sys.{stream}*"])
    result.stdout.fnmatch_lines(["*still heard*"])
    result.stdout.fnmatch_lines(["*next heard*"])


def test_a_setup_cell_that_closes_stdout_errors_the_test_below(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["import sys\nsys.stdout.close()", "# TEST: below\nprint('heard')"])
    result = run(pytester, "--ntdd", "nb.ipynb", subprocess=True)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*closed sys.stdout*"])


# -- ntdd faults -----------------------------------------------------------------


@pytest.mark.parametrize(
    # a dying child process each: os._exit in the quick run, a segfault in the slow tier
    "crash",
    [EXITS["os._exit"], pytest.param(SEGFAULT, marks=pytest.mark.slow)],
    ids=["os._exit", "segfault"],
)
def test_a_clean_run_that_dies_is_an_error_for_its_notebook_and_the_others_are_reported(
    notebook: Any, pytester: pytest.Pytester, crash: str
) -> None:
    notebook(["x = 1", crash, "# TEST: after\nassert x == 1"], name="a_dies.ipynb")
    notebook(["x = 2", "# TEST: fine\nassert x == 2"], name="b_fine.ipynb")
    args = ("faults", "a_dies.ipynb", "b_fine.ipynb", "--faults", "nan", "--json")
    result = pytester.run(sys.executable, "-m", "ntdd", *args)
    assert result.ret != 0
    report = json.loads(result.stdout.str())
    dies, fine = report["notebooks"]
    assert (dies["notebook"], dies["status"], dies["passed"]) == ("a_dies.ipynb", "error", False)
    assert "clean run" in dies["error"]
    assert (fine["status"], fine["baseline"]) == ("tested", {"test_fine": "passed"})
    assert report["exit_code"] == result.ret
    assert "a_dies.ipynb" in result.stderr.str()


@pytest.mark.slow
def test_a_clean_run_that_dies_shows_as_an_error_in_the_text_report(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([SEGFAULT, "# TEST: after\nassert True"], name="dies.ipynb")
    result = pytester.run(sys.executable, "-m", "ntdd", "faults", "dies.ipynb", "--faults", "nan")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["dies.ipynb: error: its clean run was killed by SIGSEGV*"])
