"""Notebook code that misbehaves fails its own test, and the run goes on."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import code, run


@pytest.fixture
def next_notebook(notebook: Any) -> Path:
    """A well-behaved notebook that runs after the misbehaving one."""
    return notebook(
        ["import os\nhere = os.getcwd()", "# TEST: runs after\nassert True"], name="z_next.ipynb"
    )


@pytest.mark.parametrize(
    ("setup", "test", "outcomes", "message"),
    [
        ("x = 1", "import sys\nsys.exit(3)", {"failed": 1}, "*SystemExit: 3*"),
        (
            "import sys\nsys.exit(2)",
            "assert True",
            {"errors": 1},
            "*SystemExit in setup cell 1: 2*",
        ),
        (
            "x = 1",
            "raise KeyboardInterrupt",
            {"failed": 1},
            "*NotebookInterrupt*raised KeyboardInterrupt*",
        ),
        ("raise KeyboardInterrupt", "assert True", {"errors": 1}, "*Interrupt in setup cell 1*"),
        ("x = 1", "while True:\n    pass", {"failed": 1}, "*timed out after 0.5 s*"),
        ("while True:\n    pass", "assert True", {"errors": 1}, "*timed out after 0.5 s*"),
    ],
    ids=[
        "test exits",
        "setup exits",
        "test interrupts",
        "setup interrupts",
        "test hangs",
        "setup hangs",
    ],
)
def test_misbehaving_code_fails_its_test_and_the_run_goes_on(
    notebook: Any,
    next_notebook: Path,
    pytester: pytest.Pytester,
    setup: str,
    test: str,
    outcomes: dict[str, int],
    message: str,
) -> None:
    notebook([setup, f"# TEST: misbehaves\n{test}"], name="a_bad.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.5", "a_bad.ipynb", "z_next.ipynb")
    result.assert_outcomes(passed=1, **outcomes)
    result.stdout.fnmatch_lines([message])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # not INTERRUPTED


def test_a_failed_setup_runs_once_for_all_its_tests(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "with open('runs.txt', 'a') as f:\n    f.write('x')\nraise KeyboardInterrupt",
            *[f"# TEST: t{i}\nassert True" for i in range(3)],
        ]
    )
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(errors=3)
    assert (pytester.path / "runs.txt").read_text() == "x"


@pytest.mark.parametrize("capture", ["fd", "no"])
@pytest.mark.slow
def test_a_replaced_stdout_is_restored(
    notebook: Any, pytester: pytest.Pytester, capture: str
) -> None:
    notebook(
        [
            "import io, sys",
            "# TEST: swallows output\nsys.stdout = io.StringIO()\nsys.stderr = io.StringIO()",
            "# TEST: prints\nprint('still heard')",
        ]
    )
    result = run(pytester, "--ntdd", f"--capture={capture}", "nb.ipynb", "-rP", subprocess=True)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*still heard*"])


def test_a_changed_working_directory_is_restored(notebook: Any, pytester: pytest.Pytester) -> None:
    (pytester.path / "a").mkdir()
    (pytester.path / "b").mkdir()
    notebook(["import os\nos.chdir('/')", "# TEST: moves\nos.chdir('/tmp')"], name="a/nb.ipynb")
    notebook(
        ["# TEST: in its folder\nimport os\nassert os.path.basename(os.getcwd()) == 'b'"],
        name="b/nb.ipynb",
    )
    run(pytester, "--ntdd", "a/nb.ipynb", "b/nb.ipynb").assert_outcomes(passed=2)
    assert Path.cwd() == pytester.path


@pytest.mark.slow
def test_a_crash_is_contained_by_xdist_workers(notebook: Any, pytester: pytest.Pytester) -> None:
    """What cannot be contained in-process needs a process: a worker dies, not the run."""
    pytest.importorskip("xdist")
    crash = "# TEST: kills the process\nimport ctypes\nctypes.string_at(0)"
    notebook(["x = 1", crash], name="a.ipynb")
    notebook(["x = 2", "# TEST: fine\nassert x == 2"], name="b.ipynb")
    result = run(pytester, "--ntdd", "-n", "2", ".", plugins=["xdist"], subprocess=True)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*worker 'gw*' crashed while running 'a.ipynb::test_kills_the_process'*"]
    )


def read_until(proc: subprocess.Popen[bytes], text: bytes, timeout: float) -> bytes:
    """What *proc* writes to its stdout, up to and including *text*; fails after *timeout* s."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while text not in seen:
            left = deadline - time.monotonic()
            assert left > 0 and selector.select(left), f"no {text!r} in {timeout} s:\n{seen!r}"
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"ended before {text!r}:\n{seen.decode()}"
            seen += chunk
    return seen


@pytest.mark.slow
def test_a_real_ctrl_c_still_stops_the_run(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            "# TEST: long\nimport time\nprint('long test started', flush=True)\n"
            "for _ in range(600):\n    time.sleep(0.05)",
            "# TEST: later\nassert True",
        ]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--ntdd", "nb.ipynb"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        started = read_until(proc, b"long test started", timeout=120)
        proc.send_signal(signal.SIGINT)  # while the long test runs: it has 30 s to go
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    out = (started + rest).decode()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "KeyboardInterrupt" in out
    assert "NotebookInterrupt" not in out


def test_the_default_timeout_is_documented_and_can_be_switched_off(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST\nimport time\ntime.sleep(0.2)"])
    run(pytester, "--ntdd", "--ntdd-timeout", "0", "nb.ipynb").assert_outcomes(passed=1)
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(["*--ntdd-timeout=SECONDS*", "*default 600, 0 for none*"])


@pytest.mark.parametrize(
    "cell",
    [
        "while True:\n    try:\n        time.sleep(0.05)\n    except Exception:\n        pass",
        "import signal\nsignal.alarm(0)\nsignal.setitimer(signal.ITIMER_REAL, 0)\ntime.sleep(30)",
    ],
    ids=["swallowed by except Exception", "disarmed by signal.alarm(0)"],
)
def test_a_timeout_holds_whatever_the_cell_does(
    notebook: Any, pytester: pytest.Pytester, cell: str
) -> None:
    notebook(["import time", f"# TEST: stubborn\n{cell}", "# TEST: next\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.5", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*timed out after 0.5 s*"])


def test_a_timeout_is_not_an_exception_a_cell_may_raise_as_marked(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            code("import time\ntime.sleep(30)", tags=["raises-exception"]),
            "# TEST: after\nassert True",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.5", "nb.ipynb")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*NtddTimeout in setup cell 1*"])
    result.stdout.no_fnmatch_line("*as marked*")


@pytest.mark.slow
def test_a_timeout_waits_for_an_import_under_way(notebook: Any, pytester: pytest.Pytester) -> None:
    """An exception in the middle of an import would leave a half-made module behind."""
    (pytester.path / "slow_module.py").write_text(
        "import time\nfor _ in range(20):\n    time.sleep(0.05)\nCOMPLETE = True\n"
    )
    notebook(
        [
            "# TEST: imports slowly\nimport slow_module\nimport time\ntime.sleep(30)",
            "# TEST: finds it whole\nassert slow_module.COMPLETE",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.3", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_imports_slowly*timed out after 0.3 s*"])


@pytest.mark.parametrize("mark", ["@timeout('soon')", "@timeout(-1)", "@timeout"])
def test_a_timeout_mark_without_a_positive_number_fails_naming_the_cell(
    notebook: Any, pytester: pytest.Pytester, mark: str
) -> None:
    notebook(["x = 1", f"# TEST: limited {mark}\nassert x", "# TEST: fine\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*nb.ipynb: cell 2 (id *): bad marker: @timeout takes a number of seconds > 0*"]
    )


@pytest.mark.slow
def test_a_real_ctrl_c_in_a_setup_cell_tagged_raises_exception_still_stops_the_run(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The tag lets the cell's own errors pass; the user's Ctrl-C is none of them."""
    notebook(
        [
            code(
                "import time\nprint('long cell started', flush=True)\n"
                "for _ in range(600):\n    time.sleep(0.05)",
                tags=["raises-exception"],
            ),
            "# TEST: later\nassert True",
        ]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--ntdd", "nb.ipynb"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        started = read_until(proc, b"long cell started", timeout=120)
        proc.send_signal(signal.SIGINT)  # while the cell runs: it has 30 s to go
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    out = (started + rest).decode()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
    assert "1 passed" not in out


def test_parametrize_on_a_cell_of_statements_fails_that_cell_not_the_notebook(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Its function takes no arguments: pytest would refuse the whole module, and a kernel
    raises NameError at the cell. A `def test_*` cell takes the arguments it marks."""
    notebook(
        [
            "x = 1",
            "# TEST: cases @parametrize('n', [1, 2])\nassert n < 3",
            "# TEST: written @parametrize('n', [1, 2])\ndef test_written(n):\n    assert n < 3",
            "# TEST: a fixture @usefixtures('tmp_path') @parametrize('tmp_path', [1])\nassert x",
            "# TEST: fine\nassert x",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        ["*nb.ipynb: cell 2 (id *): @parametrize gives a test function arguments*"]
    )


# -- processes the cells start -------------------------------------------------------

needs_proc = pytest.mark.skipif(
    not Path("/proc/self/task").is_dir(), reason="children are read from Linux's /proc"
)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@needs_proc
@pytest.mark.slow
def test_processes_the_cells_start_end_with_the_notebook_as_a_kernels_shutdown_ends_them(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A server (with a child of its own) and a forked worker would outlive the run."""
    pids = pytester.path / "pids"
    notebook(
        [
            "import multiprocessing, os, subprocess, sys, time\n"
            "server = subprocess.Popen([sys.executable, '-c', 'import subprocess, sys, time; "
            'subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"]); '
            "time.sleep(120)'])\n"
            "worker = multiprocessing.get_context('fork').Process(target=time.sleep, args=(120,))\n"
            "worker.start()\n"
            "time.sleep(0.5)\n"
            f"with open({str(pids)!r}, 'w') as f:\n"
            "    f.write(f'{server.pid} {worker.pid}')",
            "# TEST: the server runs\nassert server.poll() is None",
            "# TEST: so does the worker\nassert worker.is_alive()",
        ]
    )
    result = run(pytester, "--ntdd", "-W", "default", subprocess=True)
    result.assert_outcomes(passed=2, warnings=2)
    result.stdout.fnmatch_lines(["*process * started by its cells, was still running after*"])
    server, worker = map(int, pids.read_text().split())
    assert not alive(server) and not alive(worker)
    leftovers = subprocess.run(
        ["pgrep", "-f", "time.sleep\\(120\\)"], capture_output=True, text=True
    ).stdout.split()
    assert not leftovers, leftovers


@needs_proc
def test_a_process_that_ended_by_itself_is_no_warning(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])",
            "# TEST\nassert True",
        ]
    )
    result = run(pytester, "--ntdd", "-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*started by its cells*")
