"""`ntdd mark`: `# TEST` for the cells that are already checks, as a diff, written with --write.

Each test reads the notebook as a user would after the command: its bytes
(only the new lines differ), its cells, and how `pytest --ntdd` runs it.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import pytest
from conftest import code, md, run, sha, write_notebook
from nbformat.v4 import new_output

from ntdd.cells.checks import is_check
from ntdd.commands.cli import main

CHECKS = [
    md("# Data"),
    "import numpy as np\nx = np.arange(4)",
    "assert x.sum() == 6\nnp.testing.assert_array_equal(x, [0, 1, 2, 3])",  # cell 3: a check
    "y = x * 2",
    "assert (y == 2 * x).all()",  # cell 5: a check
    "print(y)\nassert y[1] == 2",  # prints too: setup
]


def mark(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["mark", *args])
    out, err = capsys.readouterr()
    return status, out, err


def sources(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]


# -- what is a check -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "check"),
    [
        ("assert x == 1", True),
        ("assert x, 'why'\nassert y", True),
        ("np.testing.assert_allclose(a, b)", True),
        ("numpy.testing.assert_equal(a, b)", True),
        ("torch.testing.assert_close(a, b, rtol=0, atol=0)", True),
        ("pd.testing.assert_frame_equal(a, b)", True),
        ("test_eq(f(1), 2)\ntest_close(g(1), 0.5, eps=1e-3)\ntest_fail(lambda: h(0))", True),
        ("test_ne(a, b); test_is(a, a)", True),
        ("x = 1\nassert x == 1", False),  # an assignment: setup
        ("print(x)\nassert x", False),
        ("np.allclose(a, b)", False),  # returns a bool: checks nothing
        ("testing.assert_allclose(a, b)", False),  # not one of the modules listed
        ("torch.testing.assert_close(a, b) or foo()", False),
        ("# only a comment", False),
        ("", False),
        ("if x:\n    assert x", False),
    ],
)
def test_a_check_is_a_cell_of_asserts_and_testing_calls_and_nothing_else(
    source: str, check: bool
) -> None:
    assert is_check(ast.parse(source)) is check


# -- the diff and --write --------------------------------------------------------------


def test_it_shows_a_diff_adding_the_marker_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", CHECKS)
    before = sha(path)
    status, out, err = mark(capsys, str(path))
    assert status == 1  # proposals not written: as `export --check`, a check that fails
    assert sha(path) == before
    added = [line for line in out.splitlines() if line.startswith("+") and "+++" not in line]
    assert added == ['+    "# TEST\\n",', '+    "# TEST\\n",']
    assert out.startswith(f"--- a/{path.as_posix()}\n+++ b/{path.as_posix()}\n")
    assert f"ntdd: {path}: cells 3 and 5 to mark" in err


def test_write_adds_only_the_first_lines_every_other_byte_stays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = list(CHECKS)
    cells[2] = code(CHECKS[2], tags=["keep-me"])
    cells[2].outputs = [new_output("stream", name="stdout", text="saved output\n")]
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    old = path.read_bytes()
    assert mark(capsys, "--write", str(path))[0] == 0
    new = path.read_bytes()
    assert new.replace(b'    "# TEST\\n",\n', b"") == old
    again = nbformat.read(path, as_version=4)
    assert again.cells[2].metadata.tags == ["keep-me"]
    assert again.cells[2].outputs[0].text == "saved output\n"
    assert [s.split("\n")[0] for s in sources(path)][2:5] == ["# TEST", "y = x * 2", "# TEST"]
    status, out, err = mark(capsys, "--write", str(path))  # once marked, nothing more to mark
    assert (status, out) == (0, "") and "1 notebook: no cell to mark" in err


def test_the_diff_applies_with_git_as_write_would_write_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    applied = write_notebook(tmp_path / "a" / "nb.ipynb", CHECKS)
    written = tmp_path / "b" / "nb.ipynb"
    written.parent.mkdir()
    shutil.copy(applied, written)
    assert mark(capsys, "--write", str(written))[0] == 0
    monkeypatch.chdir(applied.parent)
    _, diff, _ = mark(capsys, "nb.ipynb")
    subprocess.run(["git", "apply", "-"], input=diff, text=True, check=True)
    assert applied.read_bytes() == written.read_bytes()


def test_a_folder_is_searched_and_no_notebook_is_nothing_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_notebook(tmp_path / "nbs" / "a.ipynb", CHECKS)
    write_notebook(tmp_path / "nbs" / "deep" / "b.ipynb", ["x = 1", "assert x"])
    status, _, err = mark(capsys, "--write", str(tmp_path / "nbs"))
    assert status == 0 and "cells 3 and 5 marked" in err and "cell 2 marked" in err
    (tmp_path / "empty").mkdir()
    assert mark(capsys, str(tmp_path / "empty"))[0] == 1


# -- what is not proposed, and what is refused --------------------------------------------


def test_cells_that_are_marked_skipped_or_meant_to_raise_are_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "x = 1",
            "# TEST: one\nassert x == 1",
            "# NTDD: skip\nassert x == 2",
            "# NBVAL_SKIP\nassert x == 3",
            code("assert x == 4", tags=["skip-execution"]),
            code("assert x == 5", tags=["raises-exception"]),
            "assert x == 6  # NBVAL_RAISES_EXCEPTION\n# NBVAL_RAISES_EXCEPTION",
        ],
    )
    status, out, err = mark(capsys, str(path))
    assert (status, out) == (0, "") and "no cell to mark" in err


def test_a_cell_magic_stays_first_the_cell_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", ["x = 1", "%%time\nassert x == 1", "assert x"])
    status, _, err = mark(capsys, "--write", str(path))
    assert status == 1  # what could be marked is written; the refusal is said and counted
    lines = [line for line in err.splitlines() if "not marked" in line]
    assert len(lines) == 1
    assert lines[0].startswith(f"ntdd: {path}: cell 2 (id ")
    assert "cell magic %%time, which must stay the cell's first line" in lines[0]
    assert sources(path)[1:] == ["%%time\nassert x == 1", "# TEST\nassert x"]


def test_the_marker_goes_below_quarto_and_nbdev_directives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(tmp_path / "nb.ipynb", ["x = 1", "#| hide\n\nassert x == 1"])
    assert mark(capsys, "--write", str(path))[0] == 0
    assert sources(path)[1] == "#| hide\n\n# TEST\nassert x == 1"


def test_a_notebook_whose_layout_cannot_be_kept_is_refused_and_not_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nb.ipynb"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("assert True")])
    path.write_text(json.dumps(notebook, indent=3, sort_keys=True, separators=(",", " : ")))
    before = sha(path)
    status, out, err = mark(capsys, "--write", str(path))
    assert (status, out) == (2, "") and sha(path) == before
    assert err.startswith(f"ntdd: error: {path}: written in a JSON layout that ntdd cannot")


def test_a_percent_text_notebook_is_marked_through_jupytext(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in ["x = 1", "assert x == 1"]]
    )
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    path = tmp_path / "nb.py"
    path.write_text(jupytext.writes(notebook, "py:percent"), encoding="utf-8")
    old = path.read_text(encoding="utf-8")
    assert mark(capsys, "--write", str(path))[0] == 0
    assert path.read_text(encoding="utf-8") == old.replace(
        "# %%\nassert x == 1", "# %%\n# TEST\nassert x == 1"
    )


def _pair(folder: Path, cells: list[str]) -> tuple[Path, Path]:
    """A jupytext pair, `nb.ipynb` and `nb.py`, holding *cells*, as jupytext writes it."""
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    ipynb, text = folder / "nb.ipynb", folder / "nb.py"
    nbformat.write(notebook, str(ipynb))
    jupytext.write(notebook, str(text), fmt="py:percent")
    return ipynb, text


def _sources(path: Path) -> list[str]:
    return [c.source for c in jupytext.read(str(path)).cells]


@pytest.mark.parametrize("named", [["."], ["nb.py"], ["nb.py", "nb.ipynb"]])
def test_both_files_of_a_jupytext_pair_get_the_line_whichever_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    named: list[str],
) -> None:
    """One notebook in two files: marked once, and the pair still reads as one notebook."""
    ipynb, text = _pair(tmp_path, ["x = 1", "assert x == 1"])
    monkeypatch.chdir(tmp_path)
    code, _, err = mark(capsys, "--write", *named)
    assert code == 0
    assert _sources(ipynb) == _sources(text) == ["x = 1", "# TEST\nassert x == 1"]
    assert err.count("cell 2 marked") == 1
    assert "nb.ipynb (and nb.py, paired): cell 2 marked" in err


@pytest.mark.parametrize(
    "edit",
    [("", "\n# %%\nassert x > 0\n"), ("x = 1", "x = 2")],
    ids=["a check added", "a setup cell edited"],
)
def test_a_pair_whose_files_hold_different_cells_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: tuple[str, str]
) -> None:
    """Marking one side of a pair that has drifted would make jupytext choose a winner."""
    ipynb, text = _pair(tmp_path, ["x = 1", "assert x == 1"])
    old, new = edit
    drifted = text.read_text(encoding="utf-8")
    drifted = drifted.replace(old, new) if old else drifted + new
    text.write_text(drifted, "utf-8")
    before = (sha(ipynb), sha(text))
    code, out, err = mark(capsys, "--write", str(ipynb))
    assert code == 2 and out == ""
    assert "a jupytext pair, hold different cells" in err and "jupytext --sync" in err
    assert (sha(ipynb), sha(text)) == before


# -- the marked notebook under pytest --------------------------------------------------


def test_marked_cells_become_tests_with_the_verdicts_the_notebook_had(
    notebook: Any, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = ["x = [1, 2]", "assert len(x) == 2", "x.append(3)", "assert x[-1] == 4, x", "y = 1"]
    path = notebook(cells)
    before = run(pytester, "--ntdd", "--ntdd-run-untested", "nb.ipynb")
    before.assert_outcomes(failed=1)  # the notebook run is the test: it fails
    before.stdout.fnmatch_lines(
        [
            "E   AssertionError: [[]1, 2, 3]",
            "nb.ipynb:*: AssertionError (setup cell 4, id *, line 1)",
        ]
    )
    assert mark(capsys, "--write", str(path))[0] == 0
    after = run(pytester, "--ntdd", "-v", "nb.ipynb")
    # The check of cell 2 sees x as cell 1 left it; the one of cell 4, after cell 3.
    after.stdout.fnmatch_lines(
        ["nb.ipynb::test_cell_2 PASSED*", "nb.ipynb::test_cell_4 FAILED*", "E * [[]1, 2, 3]"]
    )
    after.assert_outcomes(passed=2, failed=1)  # and the cells below still run to the end
