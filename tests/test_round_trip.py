"""The module round trip never loses, misplaces or invents an edit.

Each test is one case of the round trip between a notebook and its module:
export, `--check`, sync, nbconvert and the pre-commit hooks.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, code, make_notebook, run, sha

from ntdd.commands.cli import main
from ntdd.format.module import parse_header
from ntdd.modules import sync as sync_module

CELLS = ["x = 2", "# TEST: x is two\nassert x == 2", "# TEST: x is even\nassert x % 2 == 0"]


def digest(*paths: Path) -> dict[Path, str]:
    return {p: sha(p) for p in paths}


def write(path: Path, cells: list[object], minor: int = 5) -> Path:
    notebook = make_notebook(cells)
    if minor < 5:  # nbformat 4.4 and before have no cell ids (Colab still writes them)
        notebook.nbformat_minor = minor
        for cell in notebook.cells:
            cell.pop("id", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return path


def cells_of(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def insert_cell(path: Path, at: int, source: str) -> None:
    notebook = json.loads(path.read_text())
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    notebook["cells"].insert(at, {**cell, "source": source})
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


# -- identity ------------------------------------------------------------------


def test_without_cell_ids_an_edit_lands_in_its_cell_after_a_cell_was_added(
    tmp_path: Path,
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS, minor=4)
    assert main(["export", str(nb)]) == 0
    insert_cell(nb, 1, "# TEST: a new test\nassert True")
    edit(nb.with_name("test_nb.py"), "assert x % 2 == 0", "assert x % 2 == 0 and x > 0")
    assert main(["sync", str(nb), "--prefer", "module"]) == 0
    assert cells_of(nb)[3] == "# TEST: x is even\nassert x % 2 == 0 and x > 0"
    assert cells_of(nb)[1] == "# TEST: a new test\nassert True"
    assert main(["export", "--check", str(nb)]) == 0


def test_without_ids_an_edit_whose_cell_also_changed_is_refused_whatever_prefer_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS, minor=4)
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, "assert x % 2 == 0", "assert x % 2 == 0 and x > 0")
    notebook = json.loads(nb.read_text())
    notebook["cells"][2]["source"] = "# TEST: x is even\nassert not x % 2"
    notebook["cells"].insert(0, notebook["cells"].pop(1))  # and moved
    nb.write_text(json.dumps(notebook, indent=1) + "\n")
    before = digest(nb, module)
    assert main(["sync", str(nb), "--prefer", "module"]) == 1
    assert "cannot be matched to a cell" in capsys.readouterr().err
    assert digest(nb, module) == before


# -- marker-like lines are the user's -----------------------------------------------

PASTED = "# %% ntdd setup: cell 1, id s1"  # copied from a module along with a function


def test_a_pasted_marker_line_in_a_test_cell_is_the_cells_own(tmp_path: Path) -> None:
    functions = f"# TEST\ndef test_a():\n    assert x\n{PASTED}\ndef test_b():\n    assert x"
    nb = write(tmp_path / "nb.ipynb", ["x = 2", functions])
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, "def test_a():\n    assert x", "def test_a():\n    assert x == 2")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1] == functions.replace("assert x\n", "assert x == 2\n", 1)
    assert main(["export", "--check", str(nb)]) == 0


def test_a_failure_after_a_pasted_marker_line_is_located_in_its_cell(
    pytester: pytest.Pytester,
) -> None:
    functions = f"# TEST\ndef test_a():\n    assert x\n{PASTED}\ndef test_b():\n    assert x == 3"
    write(pytester.path / "nb.ipynb", ["x = 2", functions])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*in notebook nb.ipynb, cell 2 (id *), line 6: assert x == 3"])


def test_a_marker_line_pasted_into_a_module_goes_back_into_its_cell(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", ["x = 2", "# TEST\ndef test_a():\n    assert x", *CELLS[1:]])
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    pasted = "\n\n# %% ntdd test: cell 3, id abc, sha 0123456789ab\ndef test_b():\n    assert x"
    edit(module, "def test_a():\n    assert x", "def test_a():\n    assert x" + pasted)
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1] == "# TEST\ndef test_a():\n    assert x" + pasted
    assert cells_of(nb)[2:] == CELLS[1:]
    assert main(["export", "--check", str(nb)]) == 0


def test_a_marker_line_that_cannot_be_told_from_ntdds_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, "    assert x == 2\n", f"    assert x == 2\n{PASTED}\nx = 3\n")
    edit(module, "import pytest\n", "import pytest\nimport os\n")  # and the frame edited too
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 1
    assert "reads like a region marker" in capsys.readouterr().err
    assert digest(nb, module) == before


def test_a_marker_line_in_a_setup_string_is_no_marker(tmp_path: Path) -> None:
    setup = 'x = 2\nsnippet = """\n# %% ntdd test: cell 2\n"""'
    nb = write(tmp_path / "nb.ipynb", [setup, "# TEST\nassert snippet.count('ntdd') == 1"])
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    assert module.read_text().count(", sha ") == 1  # none stamped into the string
    assert main(["export", "--check", str(nb)]) == 0
    edit(module, "assert snippet.count('ntdd') == 1", "assert snippet.count('ntdd') >= 1")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb) == [setup, "# TEST\nassert snippet.count('ntdd') >= 1"]


# -- write-back exact or refused ---------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        (
            "def test_x_is_two():",
            "# a comment above the test\ndef test_x_is_two():",
            "'# a comment above the test' was added above `def test_x_is_two():`",
        ),
        ("    # TEST: x is two\n", "", "would no longer be a test cell"),
        (
            "    assert x == 2\n",
            "    assert x == 2\n\n\ndef test_more():\n    assert x\n",
            "code was added after the wrapped cell's function",
        ),
        ("def test_x_is_two():", "def test_renamed():", "would not render back as written"),
    ],
    ids=["comment above", "test line deleted", "function added", "def renamed"],
)
def test_an_edit_that_would_not_come_back_exactly_is_refused_and_nothing_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, reason: str
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, old, new)
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 1
    assert reason in capsys.readouterr().err
    assert digest(nb, module) == before


@pytest.mark.parametrize(
    ("cell", "old", "new", "edited", "declared"),
    [
        (
            CELLS[1],
            "    assert x == 2",
            "    y = x\n    assert y == 2",
            "y = x\nassert y == 2",
            "y",
        ),
        ("# TEST: x is two\ny = x", "    y = x", "    y, z = x, x", "y, z = x, x", "y, z"),
        ("# TEST: x is two\ny = x", "    y = x", "    assert x == 2", "assert x == 2", None),
    ],
    ids=["assigns a new name", "adds one", "drops the only assignment"],
)
def test_the_global_line_follows_the_edit_of_a_bare_test(
    tmp_path: Path, cell: str, old: str, new: str, edited: str, declared: str | None
) -> None:
    nb = write(tmp_path / "nb.ipynb", ["x = 2", cell])
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, old, new)
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1] == "# TEST: x is two\n" + edited
    assert main(["export", "--check", str(nb)]) == 0
    lines = [line.strip() for line in module.read_text().split("\n")]
    declarations = [line.split("  #")[0] for line in lines if line.startswith("global ")]
    assert declarations == ([f"global {declared}"] if declared else [])


def test_marks_with_any_literal_arguments_round_trip(tmp_path: Path) -> None:
    nb = write(
        tmp_path / "nb.ipynb",
        [
            "x = 2",
            "# TEST: cases @xfail(raises=ZeroDivisionError) @parametrize('n', [1, 2])\n"
            "def test_n(n):\n    assert x // 0",
        ],
    )
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    text = module.read_text()
    assert "pytest.mark.xfail(raises=ZeroDivisionError)(test_n)" in text
    assert "pytest.mark.parametrize('n', [1, 2])(test_n)" in text
    assert main(["export", "--check", str(nb)]) == 0
    edit(module, "assert x // 0", "assert x // 0 == 1")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1].endswith("assert x // 0 == 1")


def test_a_decorator_edit_becomes_a_mark_on_the_test_line(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edit(module, "def test_x_is_two():", "@pytest.mark.xfail(reason='flaky')\ndef test_x_is_two():")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1] == "# TEST: x is two @xfail(reason='flaky')\nassert x == 2"
    assert main(["export", "--check", str(nb)]) == 0


def test_test_counts_ignore_test_functions_inside_setup_strings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", ["code = '''\ndef test_fake():\n    pass\n'''", *CELLS[1:]])
    assert main(["export", str(nb)]) == 0
    assert main(["export", str(nb)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("unchanged (2 tests from " + f"{nb})")


# -- paths -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stem", "module"),
    [("testbook", "test_testbook.py"), ("test", "test_test.py"), ("testing", "test_testing.py")],
)
def test_every_module_name_is_one_pytest_collects(
    pytester: pytest.Pytester, stem: str, module: str
) -> None:
    nb = write(pytester.path / f"{stem}.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    assert (pytester.path / module).is_file()
    run(pytester).assert_outcomes(passed=2)


def test_output_folders_mirror_the_notebook_tree(tmp_path: Path) -> None:
    course = tmp_path / "course"
    for week in ("week1", "week2"):
        write(course / week / "lab.ipynb", [f"x = '{week}'", "# TEST\nassert x"])
    out = tmp_path / "out"
    assert main(["export", str(course), "-o", str(out)]) == 0
    for week in ("week1", "week2"):
        module = out / week / "test_lab.py"
        header = parse_header(module.read_text())
        assert header is not None and header.notebook == f"../../course/{week}/lab.ipynb"
    assert main(["export", "--check", str(course), "-o", str(out)]) == 0
    assert main(["sync", str(course), "-o", str(out)]) == 0


def test_sync_finds_the_module_where_it_was_exported(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert main(["export", str(nb), "-o", str(tmp_path / "tests")]) == 0
    module = tmp_path / "tests" / "test_nb.py"
    edit(module, "assert x == 2", "assert x == 2 and x")
    assert main(["sync", str(nb)]) == 0
    assert not (tmp_path / "test_nb.py").exists()
    assert cells_of(nb)[1].endswith("assert x == 2 and x")


def test_sync_works_in_a_folder_that_marks_no_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml, no .git: the project is this folder
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", "nb.ipynb", "-o", "out"]) == 0
    module = tmp_path / "out" / "test_nb.py"
    edit(module, "assert x == 2", "assert x == 2 and x")
    assert main(["sync", "out/test_nb.py"]) == 0
    assert cells_of(nb)[1].endswith("and x")
    edit(module, "assert x == 2 and x", "assert x == 2 and x > 1")
    assert main(["sync", "nb.ipynb"]) == 0
    assert cells_of(nb)[1].endswith("and x > 1")
    assert sorted(p.name for p in tmp_path.rglob("test_*.py")) == ["test_nb.py"]
    monkeypatch.chdir(tmp_path / "out")  # the notebook is not below this folder
    capsys.readouterr()
    assert main(["sync", "test_nb.py"]) == 2
    assert "run ntdd from a folder that holds both the notebook and the module" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_mirrored_output_folders_run_under_plain_pytest(pytester: pytest.Pytester) -> None:
    for week in ("week1", "week2"):
        write(pytester.path / week / "lab.ipynb", [f"x = '{week}'", "# TEST\nassert x"])
    assert main(["export", ".", "-o", "out"]) == 0
    run(pytester, "out").assert_outcomes(passed=2)
    assert main(["export", "--check", ".", "-o", "out"]) == 0


@pytest.mark.parametrize("source", ["/etc/passwd.ipynb", "../../../elsewhere.ipynb"])
def test_a_header_naming_a_notebook_outside_the_project_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str
) -> None:
    project = tmp_path / "a" / "b" / "project"
    nb = write(project / "nb.ipynb", CELLS)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    assert main(["export", str(nb)]) == 0
    module = project / "test_nb.py"
    edit(module, "# ntdd-source: nb.ipynb", f"# ntdd-source: {source}")
    assert main(["sync", str(module)]) == 2
    err = capsys.readouterr().err
    assert "outside the project; not following it" in err or "an absolute path" in err


def test_a_newline_in_a_notebook_name_is_escaped_in_the_header(pytester: pytest.Pytester) -> None:
    nb = write(pytester.path / 'odd\nname """.ipynb', CELLS)
    assert main(["export", str(nb)]) == 0
    module = next(pytester.path.glob("test_*.py"))
    header = parse_header(module.read_text())
    assert header is not None and header.notebook == nb.name
    run(pytester, str(module)).assert_outcomes(passed=2)


def test_sync_of_notebooks_without_tests_writes_nothing_and_agrees_with_check(
    tmp_path: Path,
) -> None:
    write(tmp_path / "plain.ipynb", ["x = 1"])
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["sync", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.py")) == ["test_nb.py"]
    assert main(["export", "--check", str(tmp_path)]) == 0
    notebook = json.loads(nb.read_text())
    notebook["cells"] = notebook["cells"][:1]  # the tests are gone
    nb.write_text(json.dumps(notebook, indent=1) + "\n")
    assert main(["export", "--check", str(tmp_path)]) == 1
    assert main(["sync", str(tmp_path)]) == 0
    assert not (tmp_path / "test_nb.py").exists()
    assert main(["export", "--check", str(tmp_path)]) == 0


def test_the_hooks_run_on_staged_modules_and_pass_over_other_python_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    (tmp_path / "helpers.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    staged = ["test_nb.py", "helpers.py"]  # the module alone, as pre-commit hands it over
    edit(module, "assert x == 2", "assert x == 2 and x")
    assert main(["export", "--check", "--skip-other-files", *staged]) == 1
    assert main(["sync", "--skip-other-files", *staged]) == 0
    assert main(["export", "--check", "--skip-other-files", *staged]) == 0
    assert cells_of(nb)[1].endswith("and x")


# -- files -----------------------------------------------------------------------


def test_sync_writes_through_a_symlinked_notebook(tmp_path: Path) -> None:
    real = write(tmp_path / "real" / "nb.ipynb", CELLS)
    link = tmp_path / "nb.ipynb"
    link.symlink_to(real)
    assert main(["export", str(link)]) == 0
    edit(tmp_path / "test_nb.py", "assert x == 2", "assert x == 2 and x")
    assert main(["sync", str(link)]) == 0
    assert link.is_symlink()
    assert cells_of(real)[1].endswith("and x")


def test_a_read_only_notebook_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    edit(tmp_path / "test_nb.py", "assert x == 2", "assert x == 2 and x")
    nb.chmod(stat.S_IRUSR)
    before = digest(nb)
    assert main(["sync", str(nb)]) == 2
    assert "read-only" in capsys.readouterr().err
    assert digest(nb) == before


def test_write_atomic_refuses_a_file_that_is_not_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ntdd.errors import ReadOnlyError
    from ntdd.notebook.files import write_atomic

    target = tmp_path / "f.txt"
    target.write_text("old")
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(ReadOnlyError, match="read-only"):
        write_atomic(target, "new")
    assert target.read_text() == "old"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux's")
@pytest.mark.parametrize("saved_by", ["rename", "rewrite"])
def test_a_save_landing_between_the_check_and_the_write_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved_by: str
) -> None:
    """The last check that the file still holds what was compared, and the write, are
    one step: a save that lands just after the check is put back, and nothing is lost."""
    from ntdd.notebook import files

    target = tmp_path / "nb.ipynb"
    target.write_text("compared")
    checked = files._ensure_holds

    def then_saved(path: Path, was: bytes | None) -> None:
        checked(path, was)
        if saved_by == "rename":  # Jupyter's atomic save
            (tmp_path / "saving").write_text("saved")
            os.replace(tmp_path / "saving", path)
        else:
            path.write_text("saved")

    monkeypatch.setattr(files, "_ensure_holds", then_saved)
    with pytest.raises(files.FileChangedError, match="changed on disk"):
        files.write_atomic(target, "synced", was=b"compared")
    assert target.read_text() == "saved"
    assert [p.name for p in tmp_path.iterdir()] == ["nb.ipynb"]  # no temporary left


@pytest.mark.parametrize("layout", ["crlf", "bom", "tabs"])
def test_sync_keeps_a_notebooks_bytes_but_the_edited_cell(tmp_path: Path, layout: str) -> None:
    notebook = make_notebook(CELLS)
    text = json.dumps(notebook, indent="\t" if layout == "tabs" else 1, ensure_ascii=False) + "\n"
    if layout == "crlf":
        text = text.replace("\n", "\r\n")
    data = ("\ufeff" if layout == "bom" else "").encode() + text.encode()
    nb = tmp_path / "nb.ipynb"
    nb.write_bytes(data)
    assert main(["export", str(nb)]) == 0
    edit(tmp_path / "test_nb.py", "assert x == 2", "assert x == 2 and x")
    assert main(["sync", str(nb)]) == 0
    old, new = CELLS[1], CELLS[1].replace("assert x == 2", "assert x == 2 and x")
    expected = data.replace(json.dumps(old).encode(), json.dumps(new).encode())
    assert expected != data
    assert nb.read_bytes() == expected


def test_a_crlf_module_stays_crlf_and_current(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    module.write_bytes(module.read_bytes().replace(b"\n", b"\r\n"))  # a Windows checkout
    assert main(["export", "--check", str(nb)]) == 0
    edit(nb, "x = 2", "x = 4")
    assert main(["sync", str(nb)]) == 0
    assert b"x = 4" in module.read_bytes() and b"\n" not in module.read_bytes().replace(
        b"\r\n", b""
    )


def test_a_sync_killed_between_its_writes_is_no_conflict_next_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    edit(module, "assert x == 2", "assert x == 2 and x")

    def killed(path: Path, text: object, newline: str = "\n") -> None:
        raise KeyboardInterrupt  # the notebook was written; the module not

    monkeypatch.setattr(sync_module, "write_atomic", killed)
    assert main(["sync", str(nb)]) == 130
    monkeypatch.undo()
    assert cells_of(nb)[1].endswith("and x")
    assert main(["sync", str(nb)]) == 0
    assert main(["export", "--check", str(nb)]) == 0


def test_temporary_files_of_a_killed_run_are_removed(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    stray = tmp_path / ".test_nb.py.ntdd-2147483646-abcd.tmp"  # no process has that pid
    stray.write_text("half a module")
    assert main(["export", str(nb)]) == 0
    assert not stray.exists()


# -- stable across upgrades --------------------------------------------------------


def test_a_new_version_that_renders_the_same_text_leaves_modules_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    before = digest(tmp_path / "test_nb.py")
    import ntdd

    monkeypatch.setattr(ntdd, "__version__", "99.0")
    assert main(["export", "--check", str(nb)]) == 0
    assert main(["export", str(nb)]) == 0
    assert digest(tmp_path / "test_nb.py") == before


# -- nbconvert -------------------------------------------------------------------


def nbconvert(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "ntdd", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


@pytest.mark.slow
def test_nbconvert_goes_through_exports_guards(tmp_path: Path) -> None:
    pytest.importorskip("nbconvert")
    nb = write(tmp_path / "nb.ipynb", CELLS)
    mine = tmp_path / "test_nb.py"
    mine.write_text("def test_mine():\n    pass\n")
    done = nbconvert(str(nb), cwd=tmp_path)
    assert done.returncode == 1 and "was not written by ntdd" in done.stderr
    assert "Traceback" not in done.stderr
    assert mine.read_text() == "def test_mine():\n    pass\n"
    mine.unlink()
    assert nbconvert(str(nb), "--output", "checks", cwd=tmp_path).returncode == 0
    assert (tmp_path / "checks.py").is_file() and not mine.exists()
    plain = write(tmp_path / "plain.ipynb", ["x = 1"])
    done = nbconvert(str(plain), cwd=tmp_path)
    assert done.returncode == 1 and "no test cells" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_project_carries_the_hooks_for_both_kinds_of_file() -> None:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert text.count(r"files: \.(ipynb|py|md)$") == 2
    assert text.count("--skip-other-files") == 2


def test_notebooks_without_ids_and_tags_still_export(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", [code("x = 1"), "# TEST\nassert x"], minor=4)
    assert main(["export", str(nb)]) == 0
    assert nbformat.read(str(nb), as_version=4).nbformat_minor == 4


# -- messages that lead the right way ------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-8-sig", "cp1252"])
def test_a_module_an_editor_saved_in_another_encoding_says_how_to_save_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], encoding: str
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    text = module.read_text().replace("assert x == 2", "assert x == 2 and x")
    module.write_bytes(text.encode(encoding))
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 2
    err = capsys.readouterr().err
    assert str(module) in err and "--force" not in err
    assert ("Save it as plain UTF-8" if encoding == "utf-8-sig" else "Save it as UTF-8") in err
    assert digest(nb, module) == before


def test_a_read_only_module_is_refused_before_the_notebook_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    edit(module, "assert x == 2", "assert x == 2 and x")
    module.chmod(stat.S_IRUSR)  # ntdd reads the mode bits itself: this holds for root too
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 2
    assert f"{module}: read-only" in capsys.readouterr().err
    assert digest(nb, module) == before


def test_a_dropped_final_newline_is_no_edit(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    module.write_text(module.read_text().rstrip("\n"))  # as some editors save it
    assert main(["export", "--check", str(nb)]) == 0
    edit(module, "assert x == 2", "assert x == 2 and x")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(nb)[1].endswith("and x")


def test_hard_links_of_the_notebook_and_module_are_kept(tmp_path: Path) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    os.link(nb, tmp_path / "linked.ipynb")
    os.link(module, tmp_path / "linked.py")
    edit(module, "assert x == 2", "assert x == 2 and x")
    assert main(["sync", str(nb)]) == 0
    assert cells_of(tmp_path / "linked.ipynb")[1].endswith("and x")
    assert (tmp_path / "linked.py").read_bytes() == module.read_bytes()
    assert nb.stat().st_nlink == module.stat().st_nlink == 2


def test_a_module_cut_short_inside_its_last_test_is_refused_not_synced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crash mid-write, or an editor saving in place while sync runs: `assert x % 2`
    from `assert x % 2 == 0` is no edit to carry into the notebook."""
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    module.write_bytes(module.read_bytes()[: -len(b" == 0\n")])
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 2
    assert "ends mid-line inside its last test region (cell 3)" in capsys.readouterr().err
    assert main(["export", "--check", str(nb)]) != 0
    assert digest(nb, module) == before


def test_a_module_with_merge_conflict_markers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write(tmp_path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = tmp_path / "test_nb.py"
    edit(
        module,
        "    assert x == 2\n",
        "<<<<<<< HEAD\n    assert x == 2\n=======\n    assert x == 3\n>>>>>>> theirs\n",
    )
    before = digest(nb, module)
    assert main(["sync", str(nb)]) == 2
    assert "git merge-conflict markers at line" in capsys.readouterr().err
    assert digest(nb, module) == before


def test_a_module_saved_with_a_bom_is_not_collected_beside_its_notebook(
    pytester: pytest.Pytester,
) -> None:
    nb = write(pytester.path / "nb.ipynb", CELLS)
    assert main(["export", str(nb)]) == 0
    module = pytester.path / "test_nb.py"
    module.write_bytes(b"\xef\xbb\xbf" + module.read_bytes())
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=2)  # the notebook's two tests, once
