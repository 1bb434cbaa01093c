"""`ntdd export`: what it writes, what it refuses, and its exit codes."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import SAMPLES, make_notebook, run, sha, write_notebook

from ntdd.commands.cli import main
from ntdd.modules import export as export_module
from ntdd.notebook import files


def test_export_writes_test_module_beside_the_notebook(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    assert "def test_x_is_one():" in module.read_text()
    assert f"{module}: written (1 test from {nb})" in capsys.readouterr().out


def test_export_to_a_folder_records_the_relative_source(nb: Path, tmp_path: Path) -> None:
    out = tmp_path / "tests" / "notebooks"
    assert main(["export", str(nb), "-o", str(out)]) == 0
    assert "# ntdd-source: ../../nb.ipynb" in (out / "test_nb.py").read_text()


def test_export_is_idempotent_byte_for_byte(nb: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    first, mtime = module.read_bytes(), module.stat().st_mtime_ns
    assert main(["export", str(nb)]) == 0
    assert module.read_bytes() == first
    assert module.stat().st_mtime_ns == mtime  # not even rewritten
    assert "unchanged" in capsys.readouterr().out


def test_export_never_modifies_the_notebook(nb: Path) -> None:
    before = sha(nb)
    assert main(["export", str(nb)]) == 0
    assert sha(nb) == before


def test_a_foreign_file_is_not_overwritten_without_force(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = nb.with_name("test_nb.py")
    module.write_text("# my own tests\n")
    assert main(["export", str(nb)]) == 2
    assert module.read_text() == "# my own tests\n"
    err = capsys.readouterr().err
    assert (
        f"ntdd: error: {module}: was not written by ntdd; not overwriting it (use --force)" in err
    )
    assert main(["export", str(nb), "--force"]) == 0
    assert "def test_x_is_one" in module.read_text()


def test_a_module_generated_from_another_notebook_is_not_overwritten(tmp_path: Path) -> None:
    a = write_notebook(tmp_path / "a" / "nb.ipynb", ["# TEST\nassert True"])
    b = write_notebook(tmp_path / "b" / "nb.ipynb", ["# TEST\nassert 1"])
    out = tmp_path / "out"
    assert main(["export", str(a), "-o", str(out)]) == 0
    assert main(["export", str(b), "-o", str(out)]) == 2
    assert "# ntdd-source: ../a/nb.ipynb" in (out / "test_nb.py").read_text()


def test_a_notebook_without_tests_is_reported_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(tmp_path / "plain.ipynb", ["x = 1"])
    assert main(["export", str(path)]) == 1
    assert not path.with_name("test_plain.py").exists()
    assert "no test cells; nothing written" in capsys.readouterr().out


def test_a_folder_is_searched_recursively_skipping_checkpoints(tmp_path: Path) -> None:
    write_notebook(tmp_path / "a.ipynb", ["# TEST\nassert True"])
    write_notebook(tmp_path / "sub" / "b.ipynb", ["# TEST\nassert True"])
    write_notebook(tmp_path / ".ipynb_checkpoints" / "a-checkpoint.ipynb", ["# TEST\nassert 0"])
    assert main(["export", str(tmp_path)]) == 0
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("test_*.py")) == [
        "sub/test_b.py",
        "test_a.py",
    ]


def test_module_names_are_identifiers_and_stay_in_the_output_folder(tmp_path: Path) -> None:
    path = write_notebook(tmp_path / "01-intro to nets.ipynb", ["# TEST\nassert True"])
    out = tmp_path / "out"
    assert main(["export", str(path), "-o", str(out)]) == 0
    assert [p.name for p in out.iterdir()] == ["test_01_intro_to_nets.py"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty file, not a notebook"),
        (b'{"cells": [', "truncated JSON"),
        (b"\x00\x01binary", "binary file, not a notebook"),
        (b'{"a": 1}', "not a notebook"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, reason: str
) -> None:
    bad = tmp_path / "bad.ipynb"
    bad.write_bytes(content)
    good = write_notebook(tmp_path / "good.ipynb", ["# TEST\nassert True"])
    assert main(["export", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0].startswith(f"ntdd: error: {bad}: ")
    assert reason in err
    assert "Traceback" not in err
    assert good.with_name("test_good.py").exists()  # the good notebook was still exported


def test_debug_shows_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ipynb"
    bad.write_bytes(b"")
    assert main(["--debug", "export", str(bad)]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_missing_paths_and_non_notebooks_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("hi")
    assert main(["export", str(tmp_path / "nope.ipynb")]) == 2
    assert main(["export", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert "nope.ipynb: no such file or directory" in err
    assert "notes.txt: not a notebook (expected a .ipynb file)" in err


def test_a_folder_without_notebooks_is_nothing_to_do(tmp_path: Path) -> None:
    assert main(["export", str(tmp_path)]) == 1


def test_an_interrupted_write_leaves_the_old_module_intact(
    nb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    before = module.read_bytes()
    write_notebook(nb, ["x = 2", "# TEST: x is two\nassert x == 2"])

    def crash(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", crash)  # fails after the new text is half out
    with pytest.raises(files.FileWriteError, match=r"test_nb\.py: cannot write it: No space left"):
        export_module.export_notebook(nb)
    assert module.read_bytes() == before
    assert [p.name for p in nb.parent.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_config_in_pyproject_sets_the_output_folder(
    nb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ntdd]\noutput = "generated"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["export", "nb.ipynb"]) == 0
    assert (tmp_path / "generated" / "test_nb.py").exists()


def test_an_unknown_config_key_is_bad_input(
    nb: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ntdd]\noutptu = "x"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["export", "nb.ipynb"]) == 2
    assert "unknown key(s) in [tool.ntdd]: outptu" in capsys.readouterr().err


def test_the_console_script_and_module_entry_point_run(nb: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ntdd", "export", str(nb)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert nb.with_name("test_nb.py").exists()


def test_version_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"ntdd {version('ntdd')}"


@pytest.mark.slow  # nbconvert in a child process
@pytest.mark.parametrize("output_dir", [None, "elsewhere"])
def test_nbconvert_writes_the_same_module_as_export(tmp_path: Path, output_dir: str | None) -> None:
    pytest.importorskip("nbconvert")
    for name in ("tiny_classifier", "data_prep"):
        nb = tmp_path / f"{name}.ipynb"
        nb.write_bytes((SAMPLES / f"{name}.ipynb").read_bytes())
        target = tmp_path / output_dir if output_dir else tmp_path
        extra = ["--output-dir", str(target)] if output_dir else []
        done = subprocess.run(
            [sys.executable, "-m", "nbconvert", "--to", "ntdd", str(nb), *extra],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        converted = (target / f"test_{name}.py").read_bytes()
        (target / f"test_{name}.py").unlink()
        assert main(["export", str(nb), "-o", str(target)]) == 0
        assert (target / f"test_{name}.py").read_bytes() == converted


def test_a_hand_edited_module_is_not_overwritten_without_force(
    nb: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(nb)]) == 0
    module = nb.with_name("test_nb.py")
    edited = module.read_text().replace("assert x == 1", "assert x == 1  # checked by hand")
    module.write_text(edited)
    write_notebook(nb, ["x = 1", "# TEST: x is one\nassert x == 1\nassert x > 0"])
    assert main(["export", str(nb)]) == 2
    assert module.read_text() == edited
    assert "edited since it was exported; not overwriting it" in capsys.readouterr().err
    assert main(["export", str(nb), "--force"]) == 0
    assert "checked by hand" not in module.read_text()


def test_an_unchanged_notebook_is_not_even_rendered_again(
    nb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["export", str(nb)]) == 0

    def fail(*args: object, **kwargs: object) -> str:
        raise AssertionError("rendered again")

    monkeypatch.setattr("ntdd.pipeline.render.render_module", fail)
    assert main(["export", str(nb)]) == 0


# -- ntdd list -------------------------------------------------------------------


def test_list_prints_the_notebooks_export_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("nbs/a.ipynb", "nbs/sub/b c.ipynb", "nbs/.ipynb_checkpoints/a-checkpoint.ipynb"):
        write_notebook(tmp_path / name, ["# TEST\nassert True"])
    assert main(["list", "-z", "nbs"]) == 0
    assert capsysbinary.readouterr().out == b"nbs/a.ipynb\0nbs/sub/b c.ipynb\0"


def test_list_files_from_keeps_the_notebooks_a_search_of_the_folder_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("nbs/a.ipynb", "nbs/.hidden/b.ipynb", "other/c.ipynb"):
        write_notebook(tmp_path / name, ["# TEST\nassert True"])
    (tmp_path / "nbs" / "helper.py").write_text("x = 1\n")
    given = [
        "nbs/a.ipynb",
        "nbs/.hidden/b.ipynb",
        "other/c.ipynb",
        "nbs/helper.py",
        "nbs/gone.ipynb",
    ]
    (tmp_path / "files").write_bytes(b"".join(name.encode() + b"\0" for name in given))
    assert main(["list", "-z", "--files-from", "files", "nbs"]) == 0
    assert capsysbinary.readouterr().out == b"nbs/a.ipynb\0"
    assert sorted(files.find_notebooks(["nbs"])) == [Path("nbs/a.ipynb")]  # the same rule


def test_list_changed_tests_every_notebook_when_a_dependency_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("nbs/a.ipynb", "nbs/b.ipynb"):
        write_notebook(tmp_path / name, ["# TEST\nassert True"])
    (tmp_path / "changed").write_text("requirements.txt\n")
    summary = tmp_path / "summary.md"
    args = ["list", "--changed", "changed", "--depends-on", r"(^|/)requirements\.txt$"]
    assert main([*args, "--summary", str(summary), "nbs"]) == 0
    printed = capsysbinary.readouterr()
    assert printed.out == b"nbs/a.ipynb\nnbs/b.ipynb\n"
    assert b"ntdd: 2 notebooks: requirements.txt changed, so every notebook" in printed.err
    assert summary.read_text() == (
        "**Notebooks:** testing 2: requirements.txt changed, so every notebook.\n\n"
    )


def test_list_writes_pytest_an_args_file_of_paths_none_read_as_an_option(
    pytester: pytest.Pytester, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """`pytest @FILE` reads one argument a line: `-draft.ipynb` there is an option,
    `@notes.ipynb` another file of arguments; `./-draft.ipynb` is the notebook."""
    names = ["-draft.ipynb", "-pno:old.ipynb", "@notes.ipynb", "nbs/a b.ipynb"]
    for name in names:
        write_notebook(pytester.path / name, ["# TEST\nassert True"])
    assert main(["list", "-z", "--args-file", "args", "--", *names]) == 0
    assert capsysbinary.readouterr().out == b"".join(n.encode() + b"\0" for n in names)
    assert (pytester.path / "args").read_text() == "".join(f"./{n}\n" for n in names)
    result = run(pytester, "--ntdd", "--collect-only", "-q", "@args")
    assert result.ret == 0
    assert [line.split("::")[0] for line in result.outlines if "::" in line] == names


def test_list_hands_pytest_names_it_would_read_as_a_tests_and_no_other_notebook(
    pytester: pytest.Pytester, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """pytest reads `::` and `[` in an argument as a test's name and parameters:
    `./nbs/a::b.ipynb` was "file or directory not found", `./nbs/x[1].ipynb` "path
    cannot contain [] parametrization", and pytest exited 4 with no notebook tested.
    Each is reached through its folder; what else the folder holds is not collected."""
    names = [
        "nbs/a::b.ipynb",
        "nbs/x[1].ipynb",
        "nbs/plain.ipynb",
        "nbs/d[2]/n.ipynb",
        "t[0].ipynb",
    ]
    for name in names:
        write_notebook(pytester.path / name, ["x = 1", "# TEST\nassert x == 1"])
    for name in ("nbs/other.ipynb", "nbs/sub/deep.ipynb", "nbs/d[2]/sib.ipynb", "o[1].ipynb"):
        write_notebook(pytester.path / name, ["# TEST\nassert False, 'not picked'"])
    (pytester.path / "nbs" / "test_helper.py").write_text("def test_no():\n    assert False\n")
    (pytester.path / "nbs" / "two\nlines.txt").write_text("x")

    assert main(["list", "-z", "--args-file", "args", "--", *names]) == 0

    assert capsysbinary.readouterr().out == b"".join(n.encode() + b"\0" for n in names)
    result = run(pytester, "--ntdd", "@args")
    assert result.ret == 0
    result.assert_outcomes(passed=5)
    collected = run(pytester, "--ntdd", "--collect-only", "-q", "@args")
    tested = sorted(line.rsplit("::", 1)[0] for line in collected.outlines if "::test_" in line)
    assert tested == sorted(names)


def test_list_names_a_link_to_a_deleted_notebook_and_lists_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """pytest stops at a path that is not there and tests nothing: the link is named,
    one line, the others are listed, and the exit is 2."""
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "a.ipynb", ["# TEST\nassert True"])
    (tmp_path / "nbs" / "old.ipynb").symlink_to("gone.ipynb")
    (tmp_path / "files").write_bytes(b"nbs/a.ipynb\0nbs/old.ipynb\0")
    summary = tmp_path / "summary.md"
    args = ["list", "-z", "--files-from", "files", "--args-file", "args", "--summary", "summary.md"]
    assert main([*args, "nbs"]) == 2
    printed = capfdbinary.readouterr()
    assert printed.out == b"nbs/a.ipynb\0"
    assert (tmp_path / "args").read_text() == "./nbs/a.ipynb\n"
    error = "nbs/old.ipynb: a link to gone.ipynb, which does not exist; fix the link or remove it"
    assert printed.err.decode().splitlines()[0] == f"ntdd: error: {error}"
    assert summary.read_text() == (
        f"**Notebooks:** testing 1: every notebook.\n\n- ❌ not tested: {error}\n\n"
    )


def test_list_refuses_a_name_the_args_file_cannot_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a.ipynb", "two\nlines.ipynb"):
        write_notebook(tmp_path / name, ["# TEST\nassert True"])
    assert main(["list", "-z", "--args-file", "args", "."]) == 2
    printed = capfdbinary.readouterr()
    assert printed.out == b"a.ipynb\0"
    assert (tmp_path / "args").read_text() == "./a.ipynb\n"
    assert (
        b"ntdd: error: 'two\\nlines.ipynb': a line break in its name, which pytest's "
        b"arguments file cannot hold"
    ) in printed.err
    assert main(["list", "-z", "."]) == 0  # the NUL-ended list holds any name


def write_copy(path: Path, of: str) -> None:
    """A copy as `--ntdd-write-notebooks` writes it: its metadata names its notebook."""
    notebook = make_notebook(["# TEST\nassert True"])
    notebook.metadata["ntdd"] = {"written_from": of}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def test_list_leaves_out_the_copies_ntdd_wrote_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    """`pytest --ntdd --ntdd-write-notebooks executed` inside the project: the copies
    were listed, and tested, as notebooks."""
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "a.ipynb", ["# TEST\nassert True"])
    write_copy(tmp_path / "executed" / "nbs" / "a.ipynb", "nbs/a.ipynb")
    write_copy(tmp_path / "nbs" / "b.ipynb", "nbs/b.ipynb")  # moved back: a notebook
    (tmp_path / "files").write_bytes(b"executed/nbs/a.ipynb\0nbs/a.ipynb\0nbs/b.ipynb\0")
    summary = tmp_path / "summary.md"
    args = ["list", "-z", "--files-from", "files", "--args-file", "args", "--summary", "summary.md"]
    assert main([*args, "."]) == 0
    printed = capfdbinary.readouterr()
    assert printed.out == b"nbs/a.ipynb\0nbs/b.ipynb\0"
    assert (tmp_path / "args").read_text() == "./nbs/a.ipynb\n./nbs/b.ipynb\n"
    said = "left out 1 notebook ntdd wrote (copies in executed/)"
    assert f"ntdd: {said}".encode() in printed.err
    assert summary.read_text() == (f"**Notebooks:** testing 2: every notebook.\n\nL{said[1:]}.\n\n")
    assert main(["list", "."]) == 0  # on disk, the same
    assert capfdbinary.readouterr().out == b"nbs/a.ipynb\nnbs/b.ipynb\n"


@pytest.mark.parametrize("command", ["list", "faults"])
def test_a_summary_file_that_cannot_be_written_is_one_line_naming_it(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "a.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    (tmp_path / "summary").mkdir()  # say, a folder where the file should be
    option = "--summary" if command == "list" else "--report"
    assert main([command, "nbs", option, "summary"]) == 2
    err = capfd.readouterr().err
    assert f"ntdd: error: {option} summary: is a folder; give a file name" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--devices", "gpu"], "argument --devices: 'gpu': devices are cpu, cuda, cuda:N or mps"),
        (["--timeout", "soon"], "argument --timeout: 'soon': timeout must be a number of seconds"),
    ],
)
def test_a_bad_faults_option_is_refused_naming_it_before_any_run(
    option: list[str], said: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "a.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    with pytest.raises(SystemExit) as exited:
        main(["faults", "--no-fork", *option, str(nb)])
    assert exited.value.code == 2
    captured = capfd.readouterr()
    assert f"ntdd faults: error: {said}" in captured.err
    assert captured.out == ""  # no notebook was run


# -- files that cannot be written: one line naming the file --------------------------


@contextlib.contextmanager
def read_only_folder(folder: Path) -> Iterator[None]:
    """A folder no file can be created in, as root too (root ignores the mode bits,
    not the immutable flag)."""
    folder.mkdir(parents=True, exist_ok=True)
    immutable = os.geteuid() == 0
    if immutable:
        done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip("running as root, and chattr cannot make a folder immutable here")
    else:
        folder.chmod(0o555)
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=True)
        else:
            folder.chmod(0o755)


@contextlib.contextmanager
def full_disk(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A folder on a 64 KiB tmpfs where the system lets us mount one; else writes
    there fail as a full disk's do (ENOSPC)."""
    folder.mkdir(parents=True, exist_ok=True)
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)],
            capture_output=True,
            check=False,
        ).returncode
        == 0
        if os.geteuid() == 0
        else False
    )
    if not mounted:

        def no_space(fd: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", no_space)  # as the write flushes the module
    try:
        yield
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)


def test_a_read_only_output_folder_is_one_line_naming_the_file(
    nb: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    with read_only_folder(out):
        assert main(["export", str(nb), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ntdd: error: {out / 'test_nb.py'}: cannot write it: ")
    assert len(err.strip().split("\n")) == 1 and "Traceback" not in err


def test_a_module_sync_cannot_remove_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    out = tmp_path / "out"
    assert main(["export", str(nb), "-o", str(out)]) == 0
    write_notebook(nb, ["x = 1"])  # no tests any more: sync removes the module
    capsys.readouterr()
    with read_only_folder(out):
        assert main(["sync", str(nb), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ntdd: error: {out / 'test_nb.py'}: cannot remove it: ")
    assert len(err.strip().split("\n")) == 1 and "Traceback" not in err
    assert (out / "test_nb.py").is_file()


def test_a_full_disk_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = write_notebook(tmp_path / "nb.ipynb", [f"data = {'x' * 100_000!r}", "# TEST\nassert data"])
    out = tmp_path / "out"
    with full_disk(out, monkeypatch):
        assert main(["export", str(nb), "-o", str(out)]) == 2
        assert list(out.iterdir()) == []  # no half module, no temporary left
    err = capsys.readouterr().err
    assert err == f"ntdd: error: {out / 'test_nb.py'}: cannot write it: No space left on device\n"


def test_a_long_notebook_name_exports_or_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = write_notebook(tmp_path / f"{'a' * 239}.ipynb", ["x = 1", "# TEST\nassert x"])
    assert len(long.name) == 245
    assert main(["export", str(long)]) == 0
    assert (tmp_path / f"test_{'a' * 239}.py").is_file()
    too_long = write_notebook(tmp_path / f"{'b' * 249}.ipynb", ["x = 1", "# TEST\nassert x"])
    assert main(["export", str(too_long)]) == 2  # its module's name would be 257 bytes
    err = capsys.readouterr().err
    module = tmp_path / f"test_{'b' * 249}.py"
    assert err == f"ntdd: error: {module}: cannot write it: File name too long\n"


def test_a_parameter_with_a_comment_is_a_clear_error(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "nb.ipynb", ["lr = 1", "# TEST\nassert lr"])
    result = run(pytester, "--ntdd", "--ntdd-param", "lr=0.1  # fast", "nb.ipynb")
    output = result.stdout.str() + result.stderr.str()
    assert "'0.1  # fast' ends in a comment ('# fast'); give the value alone ('0.1')" in output
    assert "does not compile" not in output
