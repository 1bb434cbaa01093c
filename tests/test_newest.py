"""What is tested is the newest: a jupytext pair's newer file, and no stale module.

A notebook paired with a text notebook (`nb.ipynb` + `nb.py`) is tested with
the inputs jupytext would load: the text file's, unless the `.ipynb` was
saved after it. An exported module whose notebook has changed since the
export says so when plain pytest imports it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jupytext
import pytest
from conftest import export, make_notebook, run, write_notebook

from ntdd.notebook.text import newest_inputs

RED = ["x = 2", "# TEST: x is one\nassert x == 1"]
GREEN = ["x = 1", "# TEST: x is one\nassert x == 1"]


def write_py_notebook(path: Path, cells: list[Any]) -> Path:
    nb = make_notebook(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python", "language": "python"}
    path.write_text(jupytext.writes(nb, "py:percent"))
    return path


def make_older(path: Path, than: Path) -> None:
    """Set *path*'s modification time a minute before *than*'s."""
    then = than.stat().st_mtime - 60
    os.utime(path, (then, then))


def pair(folder: Path, ipynb: list[Any], text: list[Any], newer: str) -> Path:
    """`nb.ipynb` and `nb.py` with their own cells; *newer* ("ipynb" or "py") saved last."""
    notebook = write_notebook(folder / "nb.ipynb", ipynb)
    script = write_py_notebook(folder / "nb.py", text)
    older, newest = (script, notebook) if newer == "ipynb" else (notebook, script)
    make_older(older, newest)
    return notebook


# -- a jupytext pair -------------------------------------------------------------


@pytest.mark.parametrize(("newer", "inputs"), [("py", "nb.py"), ("ipynb", "nb.ipynb")])
def test_a_pairs_inputs_come_from_its_newer_file(tmp_path: Path, newer: str, inputs: str) -> None:
    notebook = pair(tmp_path, GREEN, RED, newer)
    assert newest_inputs(notebook) == tmp_path / inputs


def test_a_tie_goes_to_the_text_file_as_in_jupytext(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", GREEN)
    script = write_py_notebook(tmp_path / "nb.py", RED)
    stamp = notebook.stat().st_mtime
    os.utime(script, (stamp, stamp))
    assert newest_inputs(notebook) == script


def test_a_py_file_without_jupytexts_header_pairs_with_nothing(tmp_path: Path) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", GREEN)
    (tmp_path / "nb.py").write_text("x = 2\n")
    make_older(notebook, tmp_path / "nb.py")
    assert newest_inputs(notebook) == notebook


def test_a_folder_run_tests_the_cells_of_a_pairs_newer_text_file(
    pytester: pytest.Pytester,
) -> None:
    """The `.ipynb` says green; the text file, edited since, says red: red it is."""
    pair(pytester.path, GREEN, RED, newer="py")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*in notebook nb.py, cell 2, line 2: assert x == 1"])


def test_a_folder_run_tests_the_ipynb_when_it_was_saved_last(pytester: pytest.Pytester) -> None:
    pair(pytester.path, RED, GREEN, newer="ipynb")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*in notebook nb.ipynb, cell 2 (id *), line 2: assert x == 1"])


def test_the_module_cache_follows_which_file_of_a_pair_is_newer(
    pytester: pytest.Pytester,
) -> None:
    """The cache is keyed on the bytes read: touching the other file changes what runs."""
    notebook = pair(pytester.path, GREEN, RED, newer="ipynb")
    pytester.runpytest("--ntdd", "nb.ipynb").assert_outcomes(passed=1)
    make_older(notebook, pytester.path / "nb.py")
    pytester.runpytest("--ntdd", "nb.ipynb").assert_outcomes(failed=1)


# -- an exported module whose notebook moved on -----------------------------------


def exported(pytester: pytest.Pytester, cells: list[Any]) -> Path:
    """`nb.ipynb` of *cells*, exported: the module `test_nb.py`."""
    notebook = write_notebook(pytester.path / "nb.ipynb", cells)
    assert export(notebook) == 0
    return pytester.path / "test_nb.py"


# The suite's own `filterwarnings = error` reaches the in-process runs: not this one.
SHOWN = pytest.mark.filterwarnings("default::ntdd.StaleModuleWarning")
STALE = "*StaleModuleWarning: test_nb.py: stale: nb.ipynb has changed since `ntdd export` wrote it*"


def test_a_current_module_runs_without_a_word(pytester: pytest.Pytester) -> None:
    exported(pytester, GREEN)
    result = run(pytester, "test_nb.py")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*StaleModuleWarning*")


@SHOWN
def test_a_module_whose_notebook_changed_warns_that_it_is_stale(pytester: pytest.Pytester) -> None:
    """The module still runs the old cells, green: plain pytest says they are old."""
    exported(pytester, GREEN)
    write_notebook(pytester.path / "nb.ipynb", RED)
    result = run(pytester, "test_nb.py")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([STALE])


@SHOWN
def test_a_stale_module_fails_a_strict_run(pytester: pytest.Pytester) -> None:
    exported(pytester, GREEN)
    write_notebook(pytester.path / "nb.ipynb", RED)
    result = run(pytester, "-W", "error::ntdd.StaleModuleWarning", "test_nb.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the run
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_nb.py*", STALE])


@SHOWN
def test_a_strict_setting_in_pytests_configuration_fails_it_too(
    pytester: pytest.Pytester,
) -> None:
    exported(pytester, GREEN)
    write_notebook(pytester.path / "nb.ipynb", RED)
    pytester.makeini("[pytest]\nfilterwarnings =\n    error::ntdd.StaleModuleWarning\n")
    run(pytester, "test_nb.py").assert_outcomes(errors=1)


@SHOWN
def test_a_module_whose_notebook_is_gone_warns_that_it_is_stale(
    pytester: pytest.Pytester,
) -> None:
    exported(pytester, GREEN)
    (pytester.path / "nb.ipynb").unlink()
    result = run(pytester, "test_nb.py")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*test_nb.py: stale: its notebook nb.ipynb is gone*"])


def test_pytest_ntdd_runs_the_notebook_itself_and_never_warns(pytester: pytest.Pytester) -> None:
    exported(pytester, GREEN)
    write_notebook(pytester.path / "nb.ipynb", RED)
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*StaleModuleWarning*")


@SHOWN
def test_a_module_of_a_pair_whose_text_file_moved_on_warns_that_it_is_stale(
    pytester: pytest.Pytester,
) -> None:
    """Exported from `nb.ipynb`; `nb.py`, saved since, holds other cells: those are tested."""
    module = exported(pytester, GREEN)
    write_py_notebook(pytester.path / "nb.py", RED)
    make_older(pytester.path / "nb.ipynb", pytester.path / "nb.py")
    result = run(pytester, str(module))
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*test_nb.py: stale: nb.py, paired with nb.ipynb and saved after it, has other cells*"]
    )
    assert run(pytester, "--ntdd", "nb.ipynb").ret == pytest.ExitCode.TESTS_FAILED


def test_a_module_of_a_pair_in_step_runs_without_a_word(pytester: pytest.Pytester) -> None:
    module = exported(pytester, GREEN)
    write_py_notebook(pytester.path / "nb.py", GREEN)
    make_older(pytester.path / "nb.ipynb", pytester.path / "nb.py")
    result = run(pytester, str(module))
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*StaleModuleWarning*")


def test_export_of_a_pair_whose_text_file_moved_on_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = pair(tmp_path, GREEN, RED, newer="py")
    assert export(notebook) == 0
    assert (
        f"ntdd: warning: {notebook}: nb.py, paired with nb.ipynb and saved after it, has other "
        "cells"
    ) in capsys.readouterr().err
