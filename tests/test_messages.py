"""Messages a user can act on: each names what to do, where, in the notebook's terms.

A NameError says which cell below assigns the name; ntdd's warnings point at
the notebook's cell and line and are said once; an annotation quotes the
cell; the job summary reads as pytest's tally; coverage says once what to
add, and its HTML shows cells; sync and `--check` name cells by number; a
symlink out of the project is refused by its name; `-v` and sync's counts
read right.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import code, line_of, md, run, write_notebook

from ntdd.commands.cli import main
from ntdd.coverage import NotebookReporter

# -- a name that only a cell below assigns ------------------------------------------


def test_a_name_a_later_cell_assigns_says_which_cell_assigns_it(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: total\nassert total == 3", md("notes"), "total = x + 2"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(failed=1, passed=1)  # and the test that runs the cells below
    result.stdout.fnmatch_lines(
        [
            "E       NameError: name 'total' is not defined",
            "E       `total` is assigned in cell 4, below this test",
        ]
    )


def test_a_setup_cell_reading_a_later_cells_name_says_which_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["y = later + 1", "later = 2", "# TEST: t\npass"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "E   NameError: name 'later' is not defined",
            "E   `later` is assigned in cell 2, below this cell",
        ]
    )


def test_a_name_no_cell_assigns_gets_no_hint(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["x = 1", "# TEST: typo\nassert totl == 1", "total = 1"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(failed=1, passed=1)
    assert "is assigned in cell" not in result.stdout.str()


# -- ntdd's warnings: at the notebook's cell and line, once ----------------------------


def test_a_dropped_install_is_said_once_as_the_notebook_is_read(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["%pip install foo\nx = 1", "# Test: near miss\nassert x", "# TEST: t\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb", "-W", "default")
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert out.count("'%pip install foo'") == 1
    assert out.count("looks like a test marker") == 1
    assert "NtddWarning" not in out and "shell_magics.py" not in out and "ntdd/runtime" not in out


def test_an_install_the_notebook_reading_cannot_see_is_warned_at_its_line(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    nb = notebook(["get_ipython().run_line_magic('pip', 'install foo')\nx = 1", "# TEST\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb", "-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"  nb.ipynb:{line_of(nb, 'run_line_magic')}: NtddWarning: *'%pip install foo' dropped*"]
    )
    assert "ntdd/runtime" not in result.stdout.str()


def test_ntdds_notes_are_silenced_by_the_name_the_docs_give_them(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["%pip install foo\nx = 1", "# TEST\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb", "-W", "ignore::ntdd.NtddWarning")
    result.assert_outcomes(passed=1)
    assert "NtddWarning" not in result.stdout.str() + result.stderr.str()


def test_an_exported_modules_dropped_install_is_warned_at_its_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    nb = notebook(["x = 1", "# TEST: t\n!pip install bar\nassert x"])
    assert main(["export", str(nb)]) == 0
    result = run(pytester, "test_nb.py", "-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["  nb.ipynb (test cell 2, id *):2: NtddWarning: *'!pip install bar'*"]
    )
    assert "ntdd/runtime" not in result.stdout.str() and "shell.py" not in result.stdout.str()


# -- a syntax error's annotation -----------------------------------------------------


def test_a_syntax_errors_annotation_quotes_the_cells_line(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    nb = notebook(["x = 1", "# TEST: broken\nx = 2\nif x\n    pass"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(failed=1)
    (annotation,) = [line for line in result.stderr.lines if line.startswith("::error ")]
    assert f"line={line_of(nb, 'if x')}," in annotation
    assert "line 3: if x" in annotation and "__ntdd__" not in annotation


# -- the job summary -----------------------------------------------------------------


def test_the_summary_counts_errors_as_pytest_does_without_ntdds_class_names(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "import os",
            "# TEST: dies\nos._exit(3)",
            "y = 1 / 0",
            "# TEST: a\npass",
            "# TEST: b\npass",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "--ntdd-summary=summary.md")
    result.assert_outcomes(failed=1, errors=2)
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert ": 1 failed, 2 errors in " in summary.splitlines()[0]
    assert "| KernelDied: os._exit(3) was called" in summary
    assert "ntdd.runtime" not in summary and "SetupError" not in summary


@pytest.mark.slow  # nbval starts a kernel
def test_the_summary_numbers_nbvals_cells_as_ntdd_does_without_its_colours(
    pytester: pytest.Pytester,
) -> None:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# A title"),
            nbformat.v4.new_code_cell("x = 1"),
            nbformat.v4.new_code_cell("raise ValueError('seen by nbval')"),
            nbformat.v4.new_code_cell("# TEST: x\nassert x"),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(pytester.path / "nb.ipynb"))
    run(
        pytester,
        "--ntdd",
        "--nbval-lax",
        "nb.ipynb",
        "--ntdd-summary=summary.md",
        plugins=["nbval"],
    )
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    row = next(line for line in summary.splitlines() if "nb.ipynb::Cell 1" in line)
    assert f"| nb.ipynb, cell 3 (id {nb.cells[2].id}) |" in row  # nbval's `Cell 1` is cell 3
    assert "\x1b[" not in summary


# -- coverage ------------------------------------------------------------------------


@pytest.mark.slow  # coverage measures in a process of its own
def test_coverage_without_ntdds_plugin_says_once_what_to_add(pytester: pytest.Pytester) -> None:
    write_notebook(
        pytester.path / "notebooks" / "x.ipynb",
        [f"v{n} = {n}" for n in range(5)] + ["# TEST\nassert v1"],
    )
    result = run(
        pytester, "--ntdd", "notebooks", "--cov=.", plugins=["pytest_cov"], subprocess=True
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str() + result.stderr.str()
    assert text.count('add plugins = ["ntdd.coverage"]') == 1
    assert "CoverageWarning" not in text and "notebooks/notebooks" not in text


def test_coverage_html_shows_a_notebooks_code_cells_at_their_file_lines(tmp_path: Path) -> None:
    nb = write_notebook(
        tmp_path / "nb.ipynb",
        [md("# Title"), code("x = 1\nif x == 2:\n    y = 3"), "# TEST: x\nassert x == 1"],
    )
    cell_id = nbformat.read(str(nb), as_version=4).cells[1].id
    shown = NotebookReporter(str(nb)).source().splitlines()
    assert len(shown) == len(nb.read_text().splitlines())  # a line for each line of the file
    assert shown[line_of(nb, "if x == 2") - 1] == "if x == 2:"
    assert shown[line_of(nb, "y = 3") - 1] == "    y = 3"
    assert shown[line_of(nb, '"x = 1') - 2] == f"# cell 2 (id {cell_id})"
    assert '"cell_type"' not in "\n".join(shown)  # no JSON


# -- sync, --check, symlinks ---------------------------------------------------------


def edit_cell(path: Path, index: int, source: str) -> None:
    """Set cell *index* (1-based, as messages count) of the notebook at *path*."""
    nb = json.loads(path.read_text())
    nb["cells"][index - 1]["source"] = source
    path.write_text(json.dumps(nb, indent=1))


SYNC_CELLS = [
    md("# T"),
    "x = 1",
    "# TEST: a\nassert x == 1",
    "y = 2",
    md("m"),
    "# TEST: c\nassert y",
]


def test_a_sync_conflict_in_different_cells_says_prefer_module_keeps_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", SYNC_CELLS)
    ids = [c.id for c in nbformat.read(str(nb), as_version=4).cells]
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    module.write_text(module.read_text().replace("assert x == 1", "assert x == 1  # module"))
    edit_cell(nb, 6, "# TEST: c\nassert y  # notebook")
    assert main(["sync", str(nb)]) == 1
    err = capsys.readouterr().err
    assert f"(module: cell 3 (id {ids[2]}); notebook: cell 6 (id {ids[5]}))" in err
    assert "touch different cells, so --prefer module keeps both" in err
    assert main(["sync", "--prefer", "module", str(nb)]) == 0
    assert "(cell 3 written back)" in capsys.readouterr().out
    assert "# module" in nb.read_text() and "# notebook" in nb.read_text()


def test_a_sync_conflict_in_one_cell_names_that_cell_on_both_sides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", SYNC_CELLS)
    cell_id = nbformat.read(str(nb), as_version=4).cells[5].id
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    module.write_text(module.read_text().replace("assert y", "assert y  # module"))
    edit_cell(nb, 6, "# TEST: c\nassert y  # notebook")
    assert main(["sync", str(nb)]) == 1
    err = capsys.readouterr().err
    assert f"module: cell 6 (id {cell_id}); notebook: cell 6 (id {cell_id})" in err
    assert "setup cells" not in err and "keeps both" not in err


def test_a_symlinked_notebook_leading_out_of_the_project_is_refused_by_the_links_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = write_notebook(tmp_path / "elsewhere" / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    os.symlink(target, project / "nb.ipynb")
    monkeypatch.chdir(project)
    assert main(["export", "nb.ipynb", "-o", "tests"]) == 0
    assert main(["sync", "tests/test_nb.py"]) == 2
    err = capsys.readouterr().err
    assert f"its notebook nb.ipynb is a symbolic link to {target.resolve()}, outside" in err
    assert "header names" not in err


# -- -v ------------------------------------------------------------------------------


def test_verbose_leaves_out_a_title_the_name_already_says(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST: clean rows\nassert True", "# TEST: rows ≥ 0\nassert True"])
    result = run(pytester, "--ntdd", "nb.ipynb", "-v")
    result.stdout.fnmatch_lines(
        ["*::test_clean_rows PASSED *", "*::test_rows_0 PASSED - rows ≥ 0*"]
    )
    assert re.search(r"test_clean_rows PASSED - clean rows", result.stdout.str()) is None
