"""`-n auto` starts only the xdist workers the recorded work pays for, so that it is
never slower than `-n 0`: what earlier runs kept in pytest's cache, or a durations file.

Each run here is pytest in a child process with xdist and pytest's cache on, as a
user's `pytest --ntdd -n auto` is; the notebooks write whether a worker ran them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import code, write_notebook

from ntdd.plugin.scale.threads import cores

pytest.importorskip("xdist")

WHERE = (
    "# TEST: where it ran\nimport os\nfrom pathlib import Path\n"
    "Path('ran-in-' + os.environ.get('PYTEST_XDIST_WORKER', 'controller')).touch()"
)
CACHED = Path(".pytest_cache", "v", "ntdd", "cpu_seconds")


@pytest.fixture(autouse=True)
def _not_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child is a user's pytest, not one of this suite's xdist workers."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)


def _notebooks(pytester: pytest.Pytester, *names: str) -> None:
    for name in names:
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_notebook(path, [code("x = 1"), code(WHERE)])


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """`pytest --ntdd -n auto` with pytest's cache on (the suite's runs turn it off)."""
    return pytester.runpytest_subprocess("-p", "xdist", "--ntdd", "-n", "auto", *args)


def _workers_ran(pytester: pytest.Pytester) -> set[str]:
    return {p.name.removeprefix("ran-in-") for p in pytester.path.rglob("ran-in-*")}


def _record(pytester: pytest.Pytester, seconds: dict[str, float]) -> None:
    path = pytester.path / CACHED
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(seconds))


def test_a_run_records_its_seconds_and_the_next_auto_starts_no_workers_for_little_work(
    pytester: pytest.Pytester,
) -> None:
    _notebooks(pytester, "a.ipynb", "b.ipynb")
    first = pytester.runpytest_subprocess("--ntdd", "-p", "xdist", "-n", "0")
    first.assert_outcomes(passed=2)
    recorded = json.loads((pytester.path / CACHED).read_text())
    assert set(recorded) == {"a.ipynb", "b.ipynb"}
    assert all(0 < seconds < 60 for seconds in recorded.values())

    result = _run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "ntdd: -n auto: no workers: *.* s of recorded work in 2 files "
            "(CPU time, pytest's cache) on * cores pays for none "
            "(each worker past the first must take 8 s off the longest share)"
        ]
    )
    assert _workers_ran(pytester) == {"controller"}


@pytest.mark.slow
@pytest.mark.skipif(cores() < 2, reason="two workers need two cores")
def test_recorded_work_that_pays_for_workers_gets_them(pytester: pytest.Pytester) -> None:
    _notebooks(pytester, "a.ipynb", "b.ipynb")
    _record(pytester, {"a.ipynb": 100.0, "b.ipynb": 100.0})
    result = _run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "ntdd: -n auto: 2 workers for 200.0 s of recorded work in 2 files "
            f"(CPU time, pytest's cache) on {cores()} cores"
        ]
    )
    assert "controller" not in _workers_ran(pytester)


def test_only_the_files_the_run_names_count(pytester: pytest.Pytester) -> None:
    """A run of one quick notebook starts no workers for the long one beside it."""
    _notebooks(pytester, "quick/a.ipynb", "long/b.ipynb")
    _record(pytester, {"quick/a.ipynb": 2.0, "long/b.ipynb": 1000.0})
    result = _run(pytester, "quick")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ntdd: -n auto: no workers: 2.0 s of recorded work in 1 file *"])
    assert _workers_ran(pytester) == {"controller"}


@pytest.mark.parametrize(
    "cached",
    [
        None,
        *(
            pytest.param(text, marks=pytest.mark.slow)
            for text in ("{not json", '{"a.ipynb": "soon"}', "[1, 2]")
        ),
    ],
)
def test_with_nothing_recorded_xdist_counts_and_the_run_says_so(
    pytester: pytest.Pytester, cached: str | None
) -> None:
    """A first run, or a cache entry that is not ntdd's durations: xdist's own count."""
    _notebooks(pytester, "a.ipynb")
    if cached is not None:
        (pytester.path / CACHED).parent.mkdir(parents=True)
        (pytester.path / CACHED).write_text(cached)
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: -n auto: nothing recorded yet: a worker per core, as xdist counts"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    # the run records what it measured, over whatever was there
    assert set(json.loads((pytester.path / CACHED).read_text())) == {"a.ipynb"}


@pytest.mark.slow
def test_the_cache_is_found_where_cache_dir_puts_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NTDD_TEST_CACHE", "elsewhere")
    pytester.makeini("[pytest]\ncache_dir = $NTDD_TEST_CACHE/cache\n")
    _notebooks(pytester, "a.ipynb")
    pytester.runpytest_subprocess("--ntdd").assert_outcomes(passed=1)
    assert (pytester.path / "elsewhere" / "cache" / "v" / "ntdd" / "cpu_seconds").is_file()
    result = _run(pytester)
    result.stdout.fnmatch_lines(["ntdd: -n auto: no workers: *"])


@pytest.mark.slow
def test_a_durations_file_counts_before_the_cache(pytester: pytest.Pytester) -> None:
    _notebooks(pytester, "a.ipynb")
    _record(pytester, {"a.ipynb": 1000.0})
    (pytester.path / "d.json").write_text('{"a.ipynb": 3.0}')
    result = _run(pytester, "--ntdd-durations", "d.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: -n auto: no workers: 3.0 s of recorded work in 1 file (--ntdd-durations) on *"]
    )


def test_without_the_cache_nothing_is_recorded(pytester: pytest.Pytester) -> None:
    _notebooks(pytester, "a.ipynb")
    pytester.runpytest_subprocess("--ntdd", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert not (pytester.path / ".pytest_cache").exists()


@pytest.mark.slow
def test_the_cache_keeps_cpu_seconds_so_waiting_is_no_work(pytester: pytest.Pytester) -> None:
    """A busy machine's run, or a cell that waits, counts no more work than was done."""
    write_notebook(pytester.path / "a.ipynb", [code("import time\ntime.sleep(1.5)"), code(WHERE)])
    pytester.runpytest_subprocess("--ntdd", "--durations=1").assert_outcomes(passed=1)
    recorded = json.loads((pytester.path / CACHED).read_text())
    assert recorded["a.ipynb"] < 1.0


def test_files_never_recorded_are_counted_by_xdist_not_as_no_work(
    pytester: pytest.Pytester,
) -> None:
    _notebooks(pytester, "old/a.ipynb", "new/b.ipynb")
    _record(pytester, {"old/a.ipynb": 1000.0})
    result = _run(pytester, "new")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: -n auto: nothing recorded yet: a worker per core, as xdist counts"]
    )
