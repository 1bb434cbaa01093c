"""ntdd beside the pytest plugins people commonly have: none changes a notebook's verdict.

Each test runs small notebooks with ntdd and one plugin loaded (and no other);
the plugins are pinned in the `test` extra.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import requires_torch, run, write_notebook

SEED = 7
DRAW = "(random.random(), float(numpy.random.rand()), float(torch.rand(1)))"


def draws(count: int) -> list[tuple[float, float, float]]:
    """What *Run All* draws after seeding each generator with SEED: *count* triples."""
    import numpy
    import torch

    plain, legacy = random.Random(SEED), numpy.random.RandomState(SEED)
    generator = torch.Generator().manual_seed(SEED)
    return [
        (plain.random(), float(legacy.rand()), float(torch.rand(1, generator=generator)))
        for _ in range(count)
    ]


def seeded_notebook(notebook: Any) -> Path:
    """A notebook that seeds itself, and whose tests check the draws Run All makes."""
    expected = draws(4)
    return notebook(
        [
            "import random\nimport numpy\nimport torch\n"
            f"random.seed({SEED})\nnumpy.random.seed({SEED})\ntorch.manual_seed({SEED})\n"
            f"first = {DRAW}",
            f"# TEST: first draw\nassert first == {expected[0]!r}",
            f"# TEST: second draw\nassert {DRAW} == {expected[1]!r}",
            f"third = {DRAW}",
            f"# TEST: third and fourth\nassert third == {expected[2]!r}\n"
            f"assert {DRAW} == {expected[3]!r}",
        ],
        name="seeded.ipynb",
    )


@requires_torch
@pytest.mark.parametrize("seed", [[], ["--randomly-seed=1"], ["--randomly-seed=2"]])
def test_randomly_reseeding_changes_no_draw_of_a_seeded_notebook(
    notebook: Any, run_notebook: Any, seed: list[str]
) -> None:
    seeded_notebook(notebook)
    result = run_notebook("seeded.ipynb", *seed, "-p", "randomly")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["Using --randomly-seed=*"])  # it loaded, and reseeded


UNSEEDED = [
    "import random\nimport numpy\ndraw = (random.random(), float(numpy.random.rand()))",
    "# TEST: noted\nimport pathlib\npathlib.Path('draw.txt').write_text(repr(draw))",
]


def test_an_unseeded_notebook_is_reproducible_with_randomlys_seed(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(UNSEEDED)
    drawn = []
    for seed in (3, 3, 4):
        run(pytester, "--ntdd", f"--randomly-seed={seed}", plugins=["randomly"])
        drawn.append((pytester.path / "draw.txt").read_text())
    assert drawn[0] == drawn[1] != drawn[2]


ASYNC = [
    "import asyncio\nfuture = asyncio.get_running_loop().create_future()\nawait asyncio.sleep(0)",
    "# TEST: awaits the setup cell's future\n"
    "async def test_future():\n"
    "    future.set_result(1)\n"
    "    assert await future == 1",
    "# TEST: awaits at the top\nawait asyncio.sleep(0)\n"
    "assert future.get_loop() is asyncio.get_running_loop()",
]


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_notebook_coroutines_run_on_the_notebooks_loop_under_pytest_asyncio(
    notebook: Any, run_notebook: Any, mode: str
) -> None:
    pytest.importorskip("pytest_asyncio")
    notebook(ASYNC)
    options = ["-o", f"asyncio_mode={mode}", "-o", "asyncio_default_fixture_loop_scope=function"]
    result = run_notebook("nb.ipynb", *options, "-p", "asyncio")
    result.assert_outcomes(passed=2)
    # pytest-asyncio ran, in that mode: a plugin that did not load changes no verdict either
    result.stdout.fnmatch_lines([f"asyncio: mode=Mode.{mode.upper()},*"])


def timed_notebook(notebook: Any, marker: str = "@timeout(0.5)") -> Path:
    return notebook(["import time", f"# TEST: sleeps {marker}\ntime.sleep(30)"], name="timed.ipynb")


@pytest.mark.parametrize(
    "given", [[], ["--timeout=0.5"], ["--timeout=0.5", "--timeout-method=thread"]]
)
def test_a_marked_cell_fails_once_with_ntdds_timeout_beside_pytest_timeout(
    notebook: Any, pytester: pytest.Pytester, given: list[str]
) -> None:
    pytest.importorskip("pytest_timeout")
    timed_notebook(notebook)
    # Its thread method ends the process (os._exit) where it fires: not pytester's own.
    thread = "--timeout-method=thread" in given
    result = run(pytester, "--ntdd", *given, plugins=["timeout"], subprocess=thread)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*NtddTimeout: timed.ipynb::test_sleeps timed out after 0.5 s*"])
    result.stdout.no_fnmatch_line("*Timeout >*")


def test_pytest_timeouts_own_limit_is_kept_by_ntdd_for_unmarked_cells(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("pytest_timeout")
    timed_notebook(notebook, marker="")
    result = run(pytester, "--ntdd", "--timeout=0.5", plugins=["timeout"])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*timed out after 0.5 s (ntdd timeout)*"])
    result.stdout.no_fnmatch_line("*Timeout >*")


FLAKY = [
    "import pathlib\nimport time",
    "# TEST: slow the first time @timeout(0.5)\n"
    "runs = pathlib.Path('runs.txt')\n"
    "count = int(runs.read_text()) if runs.exists() else 0\n"
    "runs.write_text(str(count + 1))\n"
    "if count == 0:\n"
    "    time.sleep(30)",
]


def test_a_rerun_after_a_timeout_starts_with_a_fresh_budget(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("pytest_rerunfailures")
    notebook(FLAKY)
    result = run(pytester, "--ntdd", "--reruns=1", plugins=["rerunfailures"])
    assert result.parseoutcomes() == {"passed": 1, "rerun": 1}
    assert (pytester.path / "runs.txt").read_text() == "2"


def setup_once(name: str) -> list[str]:
    """A notebook whose setup cell notes each time it runs, and six tests."""
    return [
        "import pathlib\n"
        f"with pathlib.Path('setups.txt').open('a') as f:\n    f.write('{name}\\n')",
        *(f"# TEST: number {i}\nassert True" for i in range(6)),
    ]


@pytest.mark.slow  # a pytest process and its two xdist workers start
@pytest.mark.parametrize("dist", ["load", "loadgroup", "worksteal"])
def test_under_every_dist_mode_a_notebook_runs_its_setup_once(
    notebook: Any, pytester: pytest.Pytester, dist: str
) -> None:
    pytest.importorskip("xdist")
    for name in "abc":
        notebook(setup_once(name), name=f"sub/{name}.ipynb")
    pytester.makepyfile(test_plain="\n".join(f"def test_{i}(): pass" for i in range(6)))
    result = run(
        pytester, "--ntdd", "-n", "2", f"--dist={dist}", plugins=["xdist"], subprocess=True
    )
    result.assert_outcomes(passed=24)
    assert sorted((pytester.path / "sub" / "setups.txt").read_text().split()) == ["a", "b", "c"]


def _headline_counts(summary: Path) -> dict[str, int]:
    headline = summary.read_text().splitlines()[0]
    counts = headline.split(": ", 1)[1].rsplit(" in ", 1)[0]
    return {word: int(n) for n, _, word in (part.partition(" ") for part in counts.split(", "))}


@pytest.mark.slow
def test_the_summary_counts_reruns_and_subtests_as_the_terminal_does(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("pytest_rerunfailures")
    notebook(FLAKY, name="flaky.ipynb")
    notebook(
        [
            "# TEST: subtests\n"
            "def test_parts(subtests):\n"
            "    for part in range(3):\n"
            "        with subtests.test(part=part):\n"
            "            assert part != 1",
            "# TEST: fails\nassert False",
        ],
        name="sub/parts.ipynb",
    )
    result = run(pytester, "--ntdd", "--reruns=1", "--ntdd-summary=s.md", plugins=["rerunfailures"])
    terminal = result.parseoutcomes()
    assert terminal["rerun"] == 3  # the flaky test once, the subtests' and the failing test
    assert _headline_counts(pytester.path / "s.md") == terminal


# -- a notebook that cannot be collected, beside pytest-timeout -----------------------

LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
    "size 12345\n"
)


def r_notebook_with_tests(path: Path) -> None:
    made = nbformat.v4.new_notebook()
    made.metadata["kernelspec"] = {"name": "ir", "language": "R"}
    made.metadata["language_info"] = {"name": "R"}
    made.cells = [nbformat.v4.new_code_cell("# TEST\nstopifnot(1 == 1)")]
    nbformat.write(made, path)


UNCOLLECTABLE: dict[str, Any] = {
    "truncated JSON": lambda path: path.write_text('{"cells": [{"cell_type": "code", "sou'),
    "merge-conflict markers": lambda path: path.write_text(
        '{\n<<<<<<< HEAD\n "cells": [],\n=======\n "cells": [{}],\n>>>>>>> theirs\n}\n'
    ),
    "JSON nested too deeply": lambda path: path.write_text("[" * 100_000 + "]" * 100_000),
    "an R notebook with # TEST cells": r_notebook_with_tests,
    "a def test_* cell whose top level raises": lambda path: write_notebook(
        path, ["# TEST\nraise ValueError('at import')\ndef test_never():\n    pass"]
    ),
    "a Git LFS pointer": lambda path: path.write_text(LFS_POINTER),
    "a link to a deleted notebook": lambda path: path.symlink_to("gone.ipynb"),
}


@pytest.mark.parametrize("plugins", [[], ["timeout"]], ids=["alone", "beside pytest-timeout"])
@pytest.mark.parametrize("bad", list(UNCOLLECTABLE))
def test_a_notebook_that_cannot_be_collected_is_one_error_and_the_others_run(
    pytester: pytest.Pytester, notebook: Any, bad: str, plugins: list[str]
) -> None:
    """pytest-timeout hands ntdd's `pytest_timeout_cancel_timer` the collector that
    failed; reading its module raised again, and the session ended in an INTERNALERROR."""
    if plugins:
        pytest.importorskip("pytest_timeout")
    UNCOLLECTABLE[bad](pytester.path / "broken.ipynb")
    notebook(["x = 1", "# TEST: x is one\nassert x == 1", "# TEST: a real failure\nassert x == 2"])
    result = run(pytester, "--ntdd", plugins=plugins)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting broken.ipynb*"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_a_git_lfs_pointer_is_named_as_one(pytester: pytest.Pytester) -> None:
    (pytester.path / "data.ipynb").write_text(LFS_POINTER)
    result = run(pytester, "--ntdd")
    result.stdout.fnmatch_lines(["*data.ipynb: a Git LFS pointer, not the notebook*git lfs pull*"])


def test_a_folders_link_to_a_deleted_notebook_is_named_not_passed_over(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    """pytest's folders collect files and folders, and a dangling link is neither."""
    (pytester.path / "nbs").mkdir()
    (pytester.path / "nbs" / "old.ipynb").symlink_to("gone.ipynb")
    result = run(pytester, "--ntdd", "nbs")
    result.assert_outcomes(errors=1)  # red, as a collection error is
    result.stdout.fnmatch_lines(
        ["*nbs/old.ipynb: a link to gone.ipynb, which does not exist; fix the link or remove it"]
    )
    assert run(pytester, "--ntdd", "nbs", "--ignore=nbs/old.ipynb").ret == 5  # nothing left
