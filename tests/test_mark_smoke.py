"""`ntdd mark --smoke`: `@full_run` for exactly the tests that pass in full and fail in smoke
mode, as a diff of their `# TEST` lines, written with --write and checked by a smoke run.

Each test runs the command as a user does, on notebooks written with nbformat:
its runs are real `pytest --ntdd` child processes (a couple of seconds each),
so the notebooks are tiny: a few epochs of a linear model in torch, or a
training loop by hand in plain Python, which smoke mode caps alike (its body
calls `.step()`).
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat
import pytest
from conftest import code, run, sha, write_notebook

from ntdd.commands.cli import main

TORCH_SETUP = (
    "import math\nimport torch\ntorch.manual_seed(0)\n"
    "X = torch.randn(64, 3)\ny = X @ torch.tensor([1.0, -2.0, 0.5])\n"
    "model = torch.nn.Linear(3, 1)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nlosses = []"
)
TORCH_TRAINING = (
    "for epoch in range(60):\n"
    "    opt.zero_grad()\n"
    "    loss = ((model(X).squeeze(1) - y) ** 2).mean()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    losses.append(loss.item())"
)
TORCH_CELLS = [
    TORCH_SETUP,
    TORCH_TRAINING,
    "# TEST: loss went down\nassert losses[-1] < losses[0]",  # cell 3: holds in both
    "# TEST: it fitted the line\nassert losses[-1] < 1e-3",  # cell 4: only after all epochs
    "# TEST: a wrong count\nassert len(losses) == 7",  # cell 5: fails in full too
    # cell 6: two tests, one holds only after all epochs: the cell is marked as a whole
    "# TEST\ndef test_all_epochs():\n    assert len(losses) == 60\n\n"
    "def test_finite():\n    assert all(math.isfinite(v) for v in losses)",
]
# Plain Python: a loop whose body calls `.step()` trains, for smoke mode.
MODEL = (
    "class Model:\n"
    "    def __init__(self):\n        self.steps = 0\n"
    "    def step(self):\n        self.steps += 1\n"
    "m = Model()"
)
TRAINING = "for epoch in range(30):\n    m.step()"


def mark(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["mark", "--smoke", *args])
    out, err = capsys.readouterr()
    return status, out, err


def sources(path: Path) -> list[str]:
    return [c.source for c in jupytext.read(str(path)).cells]


def changed_lines(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]


CUT_EVERY_LOOP = "[tool.ntdd]\nsmoke_min_seconds = 0\n"  # these trainings take milliseconds


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's folder, where the command runs: its smoke runs cut every training loop,
    however short, as smoke mode does for trainings that take seconds."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(CUT_EVERY_LOOP, encoding="utf-8")
    return tmp_path


# -- a torch training notebook ----------------------------------------------------------


@pytest.mark.slow
def test_only_the_tests_that_need_all_epochs_get_full_run_as_a_diff_nothing_written(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    path = write_notebook(here / "train.ipynb", TORCH_CELLS)
    before = sha(path)
    status, out, err = mark(capsys, "train.ipynb")
    assert status == 1  # a proposal, not written
    assert sha(path) == before
    assert out.startswith("--- a/train.ipynb\n+++ b/train.ipynb\n")
    assert changed_lines(out) == [
        '-    "# TEST: it fitted the line\\n",',
        '+    "# TEST: it fitted the line @full_run\\n",',
        '-    "# TEST\\n",',
        '+    "# TEST @full_run\\n",',
    ]
    cost = r"train\.ipynb: full run \d+\.\d s CPU, smoke run \d+\.\d s \(\d\.\d\d\u00d7\)"
    assert re.search(cost, err)
    assert (
        "train.ipynb: cell 4 to mark @full_run: test_it_fitted_the_line passes in full and "
        "fails in smoke mode (assert " in err
    )
    assert "cell 6 to mark @full_run: test_all_epochs passes in full" in err
    assert (
        "cell 6 also holds test_finite, which passes in smoke mode: a cell is marked as a "
        "whole, so smoke mode skips it too" in err
    )
    assert "test_a_wrong_count (assert 60 == 7) fails in the full run: left alone" in err
    assert "test_loss_went_down" not in err  # holds in both: nothing to say
    assert "`--write` writes the marks, then a smoke run checks them" in err


@pytest.mark.slow  # three runs that import torch, then the user's own smoke run
def test_write_marks_the_lines_and_the_smoke_run_is_then_green_where_the_full_run_is(
    here: Path, capsys: pytest.CaptureFixture[str], pytester: pytest.Pytester
) -> None:
    pytest.importorskip("torch")
    pytester.makepyprojecttoml(CUT_EVERY_LOOP)
    path = write_notebook(pytester.path / "train.ipynb", TORCH_CELLS)
    original = path.read_text(encoding="utf-8")
    status, out, err = mark(capsys, "--write", str(path))
    assert status == 0
    written = path.read_text(encoding="utf-8")
    assert written == original.replace(
        '"# TEST: it fitted the line\\n"', '"# TEST: it fitted the line @full_run\\n"'
    ).replace('"# TEST\\n"', '"# TEST @full_run\\n"')
    assert changed_lines(out) and "cell 4 marked @full_run" in err
    assert "smoke run, to check the marks…" in err
    assert (
        "smoke run with the marks: green where the full run is (1 passed, 3 skipped, "
        "1 failing as in the full run; " in err
    )
    # As the user sees it: smoke mode skips the marked tests; the full run's failure stays.
    smoke = run(pytester, "--ntdd", "--ntdd-smoke", "-p", "no:randomly", "train.ipynb")
    smoke.assert_outcomes(passed=1, skipped=3, failed=1)
    smoke.stdout.fnmatch_lines(["FAILED train.ipynb::test_a_wrong_count - assert 2 == 7"])


@pytest.mark.slow  # `ntdd faults` in both modes: two dozen runs of the notebook
def test_faults_says_which_faults_each_test_loses_in_smoke_mode(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    write_notebook(here / "train.ipynb", TORCH_CELLS[:4])
    status, out, err = mark(capsys, "--faults", "train.ipynb")
    assert status == 1 and "@full_run" in out
    assert "train.ipynb: `ntdd faults` in full…" in err
    assert "train.ipynb: `ntdd faults` in smoke mode…" in err
    caught = re.search(r"faults caught: (\d+)/(\d+) in full, (\d+)/(\d+) in smoke mode", err)
    assert caught and int(caught[1]) > int(caught[3])
    assert re.search(
        r"lost in smoke mode: \w+.* \(caught in full by test_it_fitted_the_line\)", err
    )
    assert re.search(
        r"test_it_fitted_the_line catches \w+.* in full, not in smoke mode \(it fails in "
        r"smoke mode: to mark @full_run\)",
        err,
    )


# -- what no mark cures, what needs none -------------------------------------------------


@pytest.mark.slow
def test_a_setup_cell_that_raises_only_in_smoke_mode_is_named_not_marked(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = [
        MODEL,
        "# TEST: made\nassert m.steps == 0",
        TRAINING,
        "last = [m.steps][0] // (m.steps - 2)",  # divides by zero after 2 steps
        "# TEST: it stepped\nassert m.steps > 0",
        "print(last)",
    ]
    path = write_notebook(here / "nb.ipynb", cells)
    before = sha(path)
    status, out, err = mark(capsys, "--write", "nb.ipynb")
    assert (status, out) == (1, "")  # nothing marked, and smoke mode is not green
    assert sha(path) == before
    assert "nb.ipynb: not marked: test_it_stepped, cell 5 (id " in err
    assert (
        "errors in smoke mode only, before its cell runs (ZeroDivisionError in setup cell 4" in err
    )
    assert "no mark cures it; make that setup cell hold in smoke mode too" in err
    assert "not marked: test_notebook_runs_to_the_end, at setup cell 4 (id " in err
    assert "no test to mark; smoke mode breaks what no mark cures (above)" in err


@pytest.mark.slow
def test_green_in_smoke_mode_nothing_to_mark_and_a_full_run_test_is_never_touched(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cells = [
        MODEL,
        TRAINING,
        "# TEST: it stepped\nassert m.steps > 0",
        "# TEST: all of them @full_run\nassert m.steps == 30",
        code("# TEST: tagged\nassert m.steps == 30", tags=["ntdd-full_run"]),
    ]
    path = write_notebook(here / "nb.ipynb", cells)
    before = sha(path)
    status, out, err = mark(capsys, "--write", "nb.ipynb")
    assert (status, out) == (0, "")
    assert sha(path) == before
    assert (
        "already @full_run (skipped in smoke mode, left alone): test_all_of_them, test_tagged"
        in err
    )
    assert "nb.ipynb: the smoke run is green where the full run is: nothing to mark" in err


@pytest.mark.slow
def test_a_test_only_parameter_reaches_both_runs(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--param rounds=2` runs both with two rounds: the test holds in each, nothing to mark
    (without it, smoke mode stops the loop after two of 30, and the test fails)."""
    cells = [
        code("rounds = 30", tags=["parameters"]),
        MODEL,
        "for _ in range(rounds):\n    m.step()",
        "# TEST: every round\nassert m.steps == rounds",
    ]
    write_notebook(here / "nb.ipynb", cells)
    status, out, err = mark(capsys, "--param", "rounds=2", "nb.ipynb")
    assert (status, out) == (0, "")
    assert "nb.ipynb: the smoke run is green where the full run is: nothing to mark" in err


@pytest.mark.slow
def test_both_files_of_a_jupytext_pair_get_the_mark_and_a_project_smoke_setting_is_overridden(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`[tool.ntdd] smoke = true` would make the full run a smoke run: it is a full run."""
    (here / "pyproject.toml").write_text(CUT_EVERY_LOOP + "smoke = true\n", encoding="utf-8")
    cells = [MODEL, TRAINING, "# TEST: all epochs\nassert m.steps == 30"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "P", "language": "python"}
    notebook.metadata["jupytext"] = {"formats": "ipynb,py:percent"}
    ipynb, text = here / "nb.ipynb", here / "nb.py"
    nbformat.write(notebook, str(ipynb))
    jupytext.write(notebook, str(text), fmt="py:percent")
    text_before = text.read_text(encoding="utf-8")
    status, out, err = mark(capsys, "--write", "nb.py")
    assert status == 0
    marked = "# TEST: all epochs @full_run\nassert m.steps == 30"
    assert sources(ipynb)[2] == sources(text)[2] == marked
    assert text.read_text(encoding="utf-8") == text_before.replace(
        "# TEST: all epochs\n", "# TEST: all epochs @full_run\n"
    )
    assert out.count("--- a/") == 2  # the diff of each file
    assert "nb.ipynb (and nb.py, paired): cell 3 marked @full_run" in err
    assert "smoke run with the marks: green where the full run is (1 skipped;" in err


# -- bad input, before anything runs -----------------------------------------------------


def test_bad_input_is_named_by_file_and_cell_and_nothing_runs(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "cut.ipynb").write_text('{"cells": [', encoding="utf-8")
    write_notebook(here / "syntax.ipynb", ["x = (1,", "# TEST\nassert x"])
    write_notebook(here / "untested.ipynb", ["x = 1"])
    status, out, err = mark(capsys, "cut.ipynb", "syntax.ipynb", "untested.ipynb")
    assert (status, out) == (2, "")
    assert "ntdd: error: cut.ipynb: truncated JSON" in err
    assert "ntdd: error: syntax.ipynb: cell 1 (id " in err
    assert "SyntaxError: '(' was never closed (line 1); fix it first" in err
    assert "untested.ipynb: no `# TEST` cell, so no test to compare" in err
    assert "…" not in err  # no run started


def test_the_runs_options_need_smoke(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    write_notebook(here / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    status = main(["mark", "--faults", "--param", "n=1", "nb.ipynb"])
    assert status == 2
    assert "ntdd: error: --faults, --param needs --smoke" in capsys.readouterr().err


def test_a_folder_without_notebooks_is_nothing_to_do(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert mark(capsys, ".") == (1, "", "ntdd: no notebooks found\n")


def test_a_run_pytest_cannot_make_is_bad_input_with_what_pytest_said(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (here / "pytest.ini").write_text("[pytest]\naddopts = --no-such-option\n", encoding="utf-8")
    path = write_notebook(here / "nb.ipynb", [MODEL, "# TEST\nassert m.steps == 0"])
    before = sha(path)
    status, out, err = mark(capsys, "--write", "nb.ipynb")
    assert (status, out) == (2, "")
    assert "ntdd: error: nb.ipynb: pytest could not make its full run (exit 4):" in err
    assert "unrecognized arguments: --no-such-option" in err
    assert sha(path) == before
