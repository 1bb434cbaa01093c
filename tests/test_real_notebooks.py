"""Real notebooks nobody here wrote (tests/corpus/real/, attributed in its SOURCES.md),
judged by a kernel: each notebook's Run All in a fresh kernel of its own against
`pytest --ntdd --ntdd-run-untested`, alone and all in one session.

The notebooks are the handful that need nothing beyond the test extra (numpy,
matplotlib): a book's pyplot tutorial and its linear-algebra chapter, which
draw 3-D axes and change `rcParams`, and a lecture that stops at an import.
Run one after another in one process, they are where leftover figures and
settings would change a verdict. `benchmarks/real_notebooks.py` runs the whole
set, fastcore's notebooks and the marked copies too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run
from oracle import first_failures, run_all

CORPUS = Path(__file__).parent / "corpus" / "real"
NOTEBOOKS = (
    "handson-ml3__math_linear_algebra.ipynb",
    "handson-ml3__tools_matplotlib.ipynb",
    "nn-zero-to-hero__micrograd_lecture_first_half_roughly.ipynb",
)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("real_notebooks")]


@pytest.fixture(scope="module")
def kernel_stops(tmp_path_factory: pytest.TempPathFactory) -> dict[str, int | None]:
    """Where a kernel's Run All stops in each notebook, each in a kernel of its own."""
    folder = tmp_path_factory.mktemp("kernel")
    stops = {}
    for name in NOTEBOOKS:
        shutil.copy(CORPUS / name, folder / name)
        stops[name] = run_all(folder / name, timeout=300)
    return stops


def _ntdd_stops(pytester: pytest.Pytester, names: list[str]) -> dict[str, int | None]:
    for name in names:
        shutil.copy(CORPUS / name, pytester.path / name)
    junit = pytester.path / "ntdd.xml"
    # A process of its own, as a user's run has: matplotlib's extension modules cannot be
    # imported again in this one once pytester's in-process run has put sys.modules back.
    run(pytester, "--ntdd", "--ntdd-run-untested", f"--junitxml={junit}", *names, subprocess=True)
    return first_failures(junit)


def test_each_notebook_alone_stops_where_a_kernel_stops(
    pytester: pytest.Pytester, kernel_stops: dict[str, int | None]
) -> None:
    for name in NOTEBOOKS:
        assert _ntdd_stops(pytester, [name]) == {name: kernel_stops[name]}


@pytest.mark.parametrize("order", [1, -1], ids=["in order", "reversed"])
def test_all_in_one_session_stop_where_each_stops_alone_in_a_kernel(
    pytester: pytest.Pytester, kernel_stops: dict[str, int | None], order: int
) -> None:
    """A notebook after others gets the verdict a fresh kernel gives it: no figure, 3-D
    axes or `rcParams` left by the notebook before."""
    names = list(NOTEBOOKS)[::order]
    assert _ntdd_stops(pytester, names) == kernel_stops
