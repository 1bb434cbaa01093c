"""A notebook's result never depends on the notebooks that ran before it.

Each notebook starts from the process state the session started with, and
what it changes is put back after its last test, as if each had a kernel of
its own.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import CORPUS, HAVE_TORCH, SAMPLES, make_notebook, requires_torch, run
from oracle import as_tests, ntdd_run_by_notebook

CHANGES = (
    "%env NTDD_LEAK=1\nimport os, sys, random, warnings\nos.chdir('..')\n"
    "sys.path.append('/nowhere')\nsys.setrecursionlimit(12345)\n"
    "warnings.simplefilter('ignore')\nrandom.seed(7)"
)
SEES_NONE_OF_IT = (
    "# TEST: a clean process\nimport os, sys, warnings\n"
    "assert 'NTDD_LEAK' not in os.environ\nassert os.path.basename(os.getcwd()) == 'b'\n"
    "assert '/nowhere' not in sys.path and sys.getrecursionlimit() != 12345"
)


def test_what_a_notebook_changes_in_the_process_is_put_back(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([CHANGES, "# TEST: changed\nassert os.environ['NTDD_LEAK'] == '1'"], name="a/nb.ipynb")
    notebook([SEES_NONE_OF_IT], name="b/nb.ipynb")
    pytester.makepyfile(
        test_after="import os, sys\n\ndef test_after():\n"
        "    assert 'NTDD_LEAK' not in os.environ and '/nowhere' not in sys.path\n"
        f"    assert os.getcwd() == {str(pytester.path)!r}\n"
    )
    result = run(pytester, "--ntdd", "a/nb.ipynb", "b/nb.ipynb", "test_after.py")
    result.assert_outcomes(passed=3)


def test_within_a_notebook_changes_last_for_the_cells_below(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    (pytester.path / "data").mkdir()
    notebook(
        [
            "import os\n%env NTDD_WITHIN=1\nos.chdir('data')",
            "# TEST: in data\nassert os.path.basename(os.getcwd()) == 'data'",
            "# TEST: still set\nassert os.environ['NTDD_WITHIN'] == '1'",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_two_notebooks_each_import_their_own_helpers(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    for folder, value in (("week1", 1), ("week2", 2)):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "helpers.py").write_text(f"VALUE = {value}\n")
        notebook(
            ["from helpers import VALUE", f"# TEST: own helpers\nassert VALUE == {value}"],
            name=f"{folder}/lab.ipynb",
        )
    result = run(pytester, "--ntdd", "week1/lab.ipynb", "week2/lab.ipynb")
    result.assert_outcomes(passed=2)


@requires_torch
def test_torch_switches_and_generators_are_put_back(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "import torch\ntorch.set_default_dtype(torch.float64)\ntorch.set_grad_enabled(False)\n"
            "torch.use_deterministic_algorithms(True)\ntorch.manual_seed(3)",
            "# TEST: changed\nassert torch.zeros(1).dtype == torch.float64",
        ],
        name="a.ipynb",
    )
    notebook(
        [
            "# TEST: a fresh torch\nimport torch\nassert torch.zeros(1).dtype == torch.float32\n"
            "assert torch.is_grad_enabled() and not torch.are_deterministic_algorithms_enabled()"
        ],
        name="b.ipynb",
    )
    run(pytester, "--ntdd", "a.ipynb", "b.ipynb").assert_outcomes(passed=2)


def test_unseeded_random_numbers_do_not_depend_on_the_notebooks_before(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    draw = "import random\nvalue = random.random()\nprint('drew', value)"
    notebook([draw, "# TEST\nassert value"], name="a.ipynb")
    notebook([draw, "# TEST\nassert value"], name="b.ipynb")
    result = run(pytester, "--ntdd", "a.ipynb", "b.ipynb", "-rP")
    drawn = [line for line in result.outlines if line.startswith("drew")]
    assert len(drawn) == 2 and drawn[0] == drawn[1]


# -- the isolation matrix ----------------------------------------------------------


POLLUTER = [
    CHANGES + "\ntry:\n    import torch\nexcept ImportError:\n    pass\nelse:\n"
    "    torch.set_default_dtype(torch.float64)\n    torch.set_grad_enabled(False)",
    "# TEST: polluted\nassert os.environ['NTDD_LEAK'] == '1'",
]


# The corpus notebooks of the matrix, one for each kind of state a notebook changes:
# autograd's grad mode, ndarray's tensors, information-theory's seeded generators,
# nbval's `random` and its shell escapes, nbclient's display ids, testbook's
# injected values. With the samples (cwd and data, torch's training state) and
# the polluter, which changes all the rest. (Every corpus notebook would do, at
# twice the cost; the parity tests run each of them.)
MATRIX_CORPUS = (
    "d2l-pytorch-colab__autograd",
    "d2l-pytorch-colab__ndarray",
    "d2l-pytorch-colab__information-theory",
    "nbval__latex-example",
    "nbval__test_coalesce",
    "nbclient__update-display-id",
    "testbook__inject",
)


def _matrix_notebooks(folder: Path) -> list[Path]:
    """The samples and some corpus notebooks, every code cell a test, and a
    notebook that changes all it can in the process, in one folder."""
    shutil.copytree(SAMPLES / "data", folder / "data")
    (folder / "b").mkdir()
    paths = [folder / "b" / "polluter.ipynb"]
    nbformat.write(make_notebook(POLLUTER), str(paths[0]))
    corpus = [CORPUS / "good" / f"{name}.ipynb" for name in MATRIX_CORPUS]
    for source in sorted([*SAMPLES.glob("*.ipynb"), *corpus]):
        if not HAVE_TORCH and "torch" in source.read_text(encoding="utf-8"):
            continue
        path = folder / source.name
        nbformat.write(as_tests(nbformat.read(str(source), as_version=4)), str(path))
        paths.append(path)
    return paths


def _outcomes(pytester: pytest.Pytester, paths: list[Path]) -> dict[str, dict[str, bool]]:
    """Each notebook's verdicts from one `pytest --ntdd` of *paths*, in a process of its
    own as a user's run is: what earlier tests left in this worker is no part of the
    matrix (in-process, `nbval__latex-example` now and then differed after a shuffled
    worker's other tests, never in a process of its own)."""
    by_file = ntdd_run_by_notebook(pytester, "--ntdd", *map(str, paths))
    names = [path.relative_to(pytester.path).as_posix() for path in paths]
    return {name: by_file.get(Path(name).name, {}) for name in names}


def _depends_on_the_others(pytester: pytest.Pytester, paths: list[Path]) -> list[str]:
    """The notebooks whose outcomes differ, alone and in one run of them all in order
    or in reverse order: in one of the two, each follows every other one."""
    alone = {name: got for p in paths for name, got in _outcomes(pytester, [p]).items()}
    assert all(alone.values()), "every notebook has tests"
    in_order = sorted(paths, key=lambda p: p.name)
    runs = [_outcomes(pytester, in_order), _outcomes(pytester, in_order[::-1])]
    return sorted(name for name in alone if any(run[name] != alone[name] for run in runs))


@pytest.mark.slow
def test_every_notebook_gives_the_same_outcomes_alone_and_after_every_other(
    pytester: pytest.Pytester,
) -> None:
    paths = _matrix_notebooks(pytester.path)
    assert _depends_on_the_others(pytester, paths) == []


@pytest.mark.slow
def test_the_matrix_finds_a_notebook_that_leaks_into_another(pytester: pytest.Pytester) -> None:
    """What ntdd does not put back (a list of a module every notebook shares, changed in
    place) shows: the matrix is able to see a leak, whichever order the two run in."""
    leaks = ["import json\njson.__all__.append('ntdd_leak')", "# TEST: set\nassert json.__all__"]
    sees = ["# TEST: clean\nimport json\nassert 'ntdd_leak' not in json.__all__"]
    paths = []
    for name, cells in (("a_sees", sees), ("b_leaks", leaks)):
        paths.append(pytester.path / f"{name}.ipynb")
        nbformat.write(make_notebook(cells), str(paths[-1]))
    try:
        assert _depends_on_the_others(pytester, paths) == ["a_sees.ipynb"]
    finally:
        import json

        while "ntdd_leak" in json.__all__:
            json.__all__.remove("ntdd_leak")
