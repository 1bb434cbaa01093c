"""jupytext's text notebooks: percent-format `.py` and MyST `.md`, with their header.

They are read, exported, collected and synced as `.ipynb` files are; a `.py`
or `.md` file without jupytext's header is never taken for a notebook.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jupytext
import pytest
from conftest import ROOT, code, make_notebook, run

from ntdd.commands.cli import main
from ntdd.errors import NotebookReadError
from ntdd.notebook import files
from ntdd.notebook import text as text_notebook
from ntdd.notebook.read import read_notebook
from ntdd.plugin.collection.collect import NotebookModule
from ntdd.plugin.scale.xdist import NotebookScheduling

FORMATS = {".py": "py:percent", ".md": "md:myst"}
CELLS: list[Any] = [
    "x = 1",
    code("# TEST: one\nassert x == 1", tags=["ntdd-slow"]),
    "# TEST: red\nassert x == 2",
]


def write_text_notebook(path: Path, cells: list[Any], newline: str = "\n") -> Path:
    nb = make_notebook(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python3", "language": "python"}
    text = jupytext.writes(nb, FORMATS[path.suffix])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode())
    return path


def changed_lines(before: str, after: str) -> list[str]:
    diff = difflib.ndiff(before.splitlines(), after.splitlines())
    return [line for line in diff if line.startswith(("- ", "+ "))]


# -- what is a notebook ----------------------------------------------------------


@pytest.mark.parametrize("suffix", [".py", ".md"])
def test_a_text_notebook_reads_as_its_cells_without_ids(tmp_path: Path, suffix: str) -> None:
    nb = read_notebook(write_text_notebook(tmp_path / f"nb{suffix}", CELLS))
    assert [c.source for c in nb.cells] == ["x = 1", "# TEST: one\nassert x == 1", CELLS[2]]
    assert [c.id for c in nb.cells] == [None, None, None]  # jupytext makes up new ones each read
    assert nb.cells[1].tags == ("ntdd-slow",)


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.py", "# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n", True),
        ("a.py", "#!/usr/bin/env python\n# ---\n# jupyter:\n#   jupytext: {}\n# ---\n", True),
        ("a.py", "# %%\nx = 1\n\n# %%\n# TEST\nassert x\n", False),  # cells, no header
        ("a.py", "# ---\n# title: not jupytext\n# ---\n", False),
        ("a.md", "---\njupytext:\n  formats: md:myst\n---\n", True),
        ("a.md", "---\ntitle: a blog post\n---\n\n```{code-cell}\nx\n```\n", False),
        ("a.txt", "---\njupytext:\n---\n", False),
    ],
)
def test_only_files_with_jupytexts_header_are_text_notebooks(
    tmp_path: Path, name: str, text: str, expected: bool
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert text_notebook.has_jupytext_header(path) is expected


def test_a_file_without_the_header_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n\n```python\n# TEST\nassert True\n```\n")
    assert main(["export", str(tmp_path / "notes.md")]) == 2
    assert "notes.md: not a notebook (expected a .ipynb file, or a jupytext" in (
        capsys.readouterr().err
    )


def test_without_jupytext_text_notebooks_are_not_searched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_text_notebook(tmp_path / "nb.py", CELLS)
    monkeypatch.setattr(files, "jupytext_installed", lambda: False)
    monkeypatch.setitem(sys.modules, "jupytext", None)
    assert list(files.find_notebooks([tmp_path])) == []
    with pytest.raises(NotebookReadError, match=r"needs jupytext: pip install 'ntdd\[jupytext\]'"):
        read_notebook(path)


def test_a_notebook_paired_with_an_ipynb_is_found_through_the_ipynb_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_text_notebook(tmp_path / "nb.py", CELLS)
    (tmp_path / "nb.ipynb").write_text(jupytext.writes(make_notebook(CELLS), "ipynb"))
    assert list(files.find_notebooks([tmp_path])) == [tmp_path / "nb.ipynb"]
    assert list(files.find_notebooks([tmp_path / "nb.py"])) == [tmp_path / "nb.py"]


# -- export ------------------------------------------------------------------


def test_export_names_a_text_notebooks_module_apart_from_the_notebook(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("nb.py", "nb.md", "test_lab.py"):
        write_text_notebook(tmp_path / name, CELLS)
    (tmp_path / "helpers.py").write_text("def helper():\n    return 1\n")
    assert main(["export", str(tmp_path)]) == 0
    written = sorted(p.name for p in tmp_path.glob("test_*_*.py"))
    assert written == ["test_lab_py.py", "test_nb_md.py", "test_nb_py.py"]
    assert (
        (tmp_path / "test_nb_py.py")
        .read_text()
        .startswith(
            "# ntdd: generated — edit the notebook or use `ntdd sync`.\n# ntdd-source: nb.py\n"
        )
    )
    before = {p: p.read_bytes() for p in tmp_path.glob("test_*_*.py")}
    assert main(["export", str(tmp_path)]) == 0
    assert main(["export", "--check", str(tmp_path)]) == 0
    assert {p: p.read_bytes() for p in before} == before


# -- pytest --ntdd ---------------------------------------------------------------


def test_pytest_ntdd_runs_percent_and_myst_notebooks(pytester: pytest.Pytester) -> None:
    write_text_notebook(pytester.path / "nb.py", CELLS)
    write_text_notebook(pytester.path / "lab.md", CELLS)
    (pytester.path / "plain.py").write_text("# %%\nx = 1\n\n# %%\n# TEST: no header\nassert x\n")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["*in notebook nb.py, cell 3, line 2: assert x == 2", "FAILED lab.md::test_red*"]
    )


def test_a_text_notebook_named_test_py_is_collected_once_as_a_notebook(
    pytester: pytest.Pytester,
) -> None:
    # As a Python module, pytest would import it and collect this top-level function.
    write_text_notebook(pytester.path / "test_nb.py", ["def test_top():\n    pass", *CELLS])
    items, _ = pytester.inline_genitems("--ntdd", ".")
    assert [item.nodeid for item in items] == ["test_nb.py::test_one", "test_nb.py::test_red"]
    assert all(isinstance(item.parent, NotebookModule) for item in items)


def test_a_paired_text_notebook_is_collected_through_its_ipynb_unless_named(
    pytester: pytest.Pytester,
) -> None:
    write_text_notebook(pytester.path / "nb.py", CELLS)
    (pytester.path / "nb.ipynb").write_text(jupytext.writes(make_notebook(CELLS), "ipynb"))
    items, _ = pytester.inline_genitems("--ntdd", ".")
    assert {item.nodeid.split("::")[0] for item in items} == {"nb.ipynb"}
    items, _ = pytester.inline_genitems("--ntdd", "nb.py")
    assert {item.nodeid.split("::")[0] for item in items} == {"nb.py"}


def test_a_text_notebook_jupytext_cannot_read_is_one_error_and_the_rest_runs(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "bad.md").write_text("---\njupytext: [unclosed\n---\n")
    write_text_notebook(pytester.path / "nb.py", CELLS[:2])
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ntdd: bad.md: jupytext cannot read it: ParserError: while parsing a flow sequence"]
    )


def test_xdist_keeps_a_text_notebooks_tests_on_one_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_text_notebook(tmp_path / "nb.py", CELLS)
    (tmp_path / "test_plain.py").write_text("def test_a():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    scheduling = NotebookScheduling.__new__(NotebookScheduling)
    scheduling.groups = False  # `--dist load`: other tests alone
    scheduling.config = SimpleNamespace(rootpath=tmp_path)
    assert scheduling._split_scope("nb.py::test_one") == "nb.py"
    assert scheduling._split_scope("test_plain.py::test_a") == "test_plain.py::test_a"


# -- sync ------------------------------------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("suffix", [".py", ".md"])
def test_sync_writes_an_edit_back_changing_only_its_lines(
    tmp_path: Path, suffix: str, newline: str
) -> None:
    nb = write_text_notebook(tmp_path / f"nb{suffix}", CELLS, newline)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / f"test_nb_{suffix[1:]}.py"
    text = module.read_text()
    module.write_text(text.replace("    assert x == 2", "    assert x == 2, 'red on purpose'"))
    before = nb.read_bytes()
    assert main(["sync", str(nb)]) == 0
    after = nb.read_bytes()
    assert changed_lines(before.decode(), after.decode()) == [
        "- assert x == 2",
        "+ assert x == 2, 'red on purpose'",
    ]
    assert after.count(b"\r\n") == (after.count(b"\n") if newline == "\r\n" else 0)
    assert main(["export", "--check", str(nb)]) == 0


def test_sync_keeps_the_jupytext_version_the_header_records(tmp_path: Path) -> None:
    nb = write_text_notebook(tmp_path / "nb.md", CELLS)
    nb.write_text(nb.read_text().replace(jupytext.__version__, "1.14.0"))
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb_md.py"
    module.write_text(module.read_text().replace("    assert x == 2", "    assert x == 1"))
    assert main(["sync", str(nb)]) == 0
    assert "jupytext_version: 1.14.0" in nb.read_text()
    assert "assert x == 1\n```" in nb.read_text()


def without_version_lines(text: str) -> str:
    """A header as people write it by hand: no `format_version`, no `jupytext_version`."""
    return re.sub(r"^.*(format|jupytext)_version:.*\n", "", text, flags=re.MULTILINE)


def test_the_docs_example_exports_and_syncs_back_changing_only_the_edit(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "text-notebooks.md").read_text(encoding="utf-8")
    example = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert example is not None
    nb = tmp_path / "nb.py"
    nb.write_text(example.group(1), encoding="utf-8")
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb_py.py"
    module.write_text(module.read_text().replace("    assert x == 1", "    assert x == 1, x"))
    assert main(["sync", str(nb)]) == 0
    assert changed_lines(example.group(1), nb.read_text()) == [
        "- assert x == 1",
        "+ assert x == 1, x",
    ]
    assert main(["export", "--check", str(nb)]) == 0


@pytest.mark.parametrize("suffix", [".py", ".md"])
def test_sync_keeps_a_header_without_version_lines_as_it_is(tmp_path: Path, suffix: str) -> None:
    nb = write_text_notebook(tmp_path / f"nb{suffix}", CELLS)
    nb.write_text(without_version_lines(nb.read_text()))
    before = nb.read_text()
    assert main(["export", str(nb)]) == 0
    module = tmp_path / f"test_nb_{suffix[1:]}.py"
    module.write_text(module.read_text().replace("    assert x == 2", "    assert x == 1"))
    assert main(["sync", str(nb)]) == 0
    assert changed_lines(before, nb.read_text()) == ["- assert x == 2", "+ assert x == 1"]


def test_sync_refuses_a_header_of_another_format_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_text_notebook(tmp_path / "nb.py", CELLS)
    nb.write_text(nb.read_text().replace("format_version: '1.3'", "format_version: '1.1'"))
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb_py.py"
    module.write_text(module.read_text().replace("    assert x == 2", "    assert x == 1"))
    before = nb.read_bytes()
    assert main(["sync", str(nb)]) == 2
    assert (
        "would read \"#       format_version: '1.3'\", not \"#       format_version: '1.1'\""
        in (capsys.readouterr().err)
    )
    assert nb.read_bytes() == before


def test_sync_refuses_a_notebook_jupytext_would_write_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_text_notebook(tmp_path / "nb.py", CELLS)
    nb.write_text(nb.read_text().replace("# %%\nx = 1", "#%%\nx = 1"))  # jupytext writes `# %%`
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb_py.py"
    module.write_text(module.read_text().replace("    assert x == 2", "    assert x == 1"))
    before = nb.read_bytes()
    assert main(["sync", str(nb)]) == 2
    assert "jupytext would not write it back as it is (line 15 would read '# %%', not '#%%')" in (
        capsys.readouterr().err
    )
    assert nb.read_bytes() == before


def test_sync_refuses_an_edit_that_would_read_back_as_two_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_text_notebook(tmp_path / "nb.py", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb_py.py"
    module.write_text(module.read_text().replace("    assert x == 2", "    # %%\n    assert x"))
    before = nb.read_bytes()
    assert main(["sync", str(nb)]) == 2
    assert "jupytext would not read the notebook back as written" in capsys.readouterr().err
    assert nb.read_bytes() == before


@pytest.mark.slow
def test_xdist_keeps_a_text_notebook_on_one_worker_when_run_from_a_subfolder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Node ids are relative to the rootdir, not to the folder pytest was started in."""
    pytest.importorskip("xdist")
    pytester.makeini("[pytest]\n")
    setup = "import os\nwith open('setups.txt', 'a') as f:\n    f.write(f'{os.getpid()}\\n')"
    tests = [f"# TEST: t{i}\nassert True" for i in range(6)]
    for name in "ab":
        write_text_notebook(pytester.path / "nbs" / name / "nb.py", [setup, *tests])
    monkeypatch.chdir(pytester.path / "nbs")
    result = run(pytester, "--ntdd", "-n", "2", ".", plugins=["xdist"], subprocess=True)
    result.assert_outcomes(passed=12)
    for name in "ab":
        assert len((pytester.path / "nbs" / name / "setups.txt").read_text().split()) == 1
