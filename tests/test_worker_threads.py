"""Under `-n N`, each worker's torch and BLAS threads are the cores it has to itself.

Two workers on two cores, each with torch's default of a thread per core,
oversubscribe them: a training step took many times as long. The tests run
pytest in a child process with the thread variables taken out of its
environment (this suite sets OMP_NUM_THREADS for itself), so that they see
the default a user gets.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from conftest import code, requires_torch, run, write_notebook

pytest.importorskip("xdist")

VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# What a worker's notebook sees, written where the test reads it: a worker's prints stay there.
SHOWS = (
    "# TEST: shows threads\nimport os\nfrom pathlib import Path\n"
    "Path('seen.txt').write_text(' '.join(str(os.environ.get(n)) for n in "
    f"{VARIABLES!r}))"
)
TORCH = (
    "# TEST: torch threads\nimport torch\nfrom pathlib import Path\n"
    "Path('seen.txt').write_text(str(torch.get_num_threads()))"
)


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@pytest.fixture(autouse=True)
def _no_thread_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _shown(pytester: pytest.Pytester, *args: str, cells: tuple[Any, ...] = (SHOWS,)) -> Any:
    write_notebook(pytester.path / "a.ipynb", [code("x = 1"), *cells])
    return run(pytester, "--ntdd", *args, ".", plugins=["xdist"], subprocess=True)


def _seen(pytester: pytest.Pytester) -> str:
    return (pytester.path / "seen.txt").read_text()


@pytest.mark.slow
def test_each_worker_gets_the_cores_it_has_to_itself(pytester: pytest.Pytester) -> None:
    each = max(1, _cores() // 2)
    result = _shown(pytester, "-n", "2")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"ntdd: 2 workers on {_cores()} cores: {each} thread* each for torch and BLAS "
            "(OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS); "
            "set --ntdd-threads to change",
        ]
    )
    assert _seen(pytester) == f"{each} {each} {each}"
    assert result.stdout.str().count("ntdd: 2 workers on") == 1


@requires_torch
@pytest.mark.slow  # torch imported in each worker: the count reaches the variables above
def test_torch_in_a_worker_uses_that_many_threads(pytester: pytest.Pytester) -> None:
    result = _shown(pytester, "-n", "2", cells=(TORCH,))
    assert result.ret == 0
    assert _seen(pytester) == str(max(1, _cores() // 2))


@pytest.mark.slow
def test_a_variable_the_user_set_wins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    result = _shown(pytester, "-n", "2")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"ntdd: 2 workers on {_cores()} cores: torch and BLAS threads as "
            "OMP_NUM_THREADS set them",
        ]
    )
    assert _seen(pytester) == "3 None None"


@pytest.mark.slow
def test_the_option_wins(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    result = _shown(pytester, "-n", "2", "--ntdd-threads", "5")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"ntdd: 2 workers on {_cores()} cores: 5 threads each for torch and BLAS "
            "(--ntdd-threads)",
        ]
    )
    assert _seen(pytester) == "5 5 5"


@pytest.mark.slow  # two xdist runs: the ini key's path is the option's
def test_the_ini_key_and_auto(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nntdd_threads = 4\n")
    result = _shown(pytester, "-n", "2")
    assert result.ret == 0
    assert _seen(pytester) == "4 4 4"
    result = _shown(pytester, "-n", "2", "--ntdd-threads", "auto")
    each = max(1, _cores() // 2)
    assert result.ret == 0
    assert _seen(pytester) == f"{each} {each} {each}"


def test_a_bad_count_is_refused_by_name(pytester: pytest.Pytester) -> None:
    result = _shown(pytester, "-n", "2", "--ntdd-threads", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ntdd: --ntdd-threads: threads must be a whole number >= 1*"])


def test_a_serial_run_is_unchanged(pytester: pytest.Pytester) -> None:
    result = _shown(pytester)
    assert result.ret == 0
    assert _seen(pytester) == "None None None"
    assert "workers on" not in result.stdout.str()


@pytest.mark.slow  # an xdist run, as test_a_variable_the_user_set_wins
def test_a_variable_the_tx_spec_sets_wins(pytester: pytest.Pytester) -> None:
    result = _shown(pytester, "--dist", "load", "--tx", "2*popen//env:OMP_NUM_THREADS=4")
    assert result.ret == 0
    each = max(1, _cores() // 2)
    assert _seen(pytester) == f"4 {each} {each}"
