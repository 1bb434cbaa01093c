"""The compiled-module cache: used when nothing changed, never when anything did."""

from __future__ import annotations

import hashlib
import importlib
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import code, plugin_env


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The notebooks each run compiled (rendered, rewrote, compiled) instead of loading."""
    collect = importlib.import_module("ntdd.plugin.collection.collect")  # the one in sys.modules
    made: list[str] = []
    real = collect.NotebookModule._collect

    def counted(self: Any, path: Path, data: bytes) -> Any:
        made.append(path.name)
        return real(self, path, data)

    monkeypatch.setattr(collect.NotebookModule, "_collect", counted)
    return made


def cached_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run with pytest's cache on, which the module cache lives in."""
    return pytester.runpytest("-p", "no:randomly", "--ntdd", *args)


def test_an_unchanged_notebook_is_loaded_from_the_cache(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    assert compiles == ["nb.ipynb"]  # the second run compiled nothing


def test_an_edited_notebook_is_compiled_again(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    notebook(["x = 3", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(failed=1)
    assert compiles == ["nb.ipynb", "nb.ipynb"]


def test_a_parameter_override_is_part_of_the_key(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    notebook([code("n = 1", tags=["parameters"]), "# TEST: n is one\nassert n == 1"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    cached_run(pytester, "nb.ipynb", "--ntdd-param", "n=2").assert_outcomes(failed=1)
    assert len(compiles) == 2


@pytest.mark.parametrize("given", ["a.ipynb", "a.ipynb::test_x_is_two"])
@pytest.mark.slow
def test_a_notebook_given_alone_is_the_only_one_of_its_folder_compiled(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str], given: str
) -> None:
    """pytest collects every file of a given file's folder, and keeps the given one."""
    for name in ("a.ipynb", "b.ipynb", "c.ipynb"):
        notebook(["x = 2", "# TEST: x is two\nassert x == 2"], name=name)
    pytester.runpytest("-p", "no:cacheprovider", "--ntdd", given).assert_outcomes(passed=1)
    assert compiles == ["a.ipynb"]
    pytester.runpytest("-p", "no:cacheprovider", "--ntdd", ".").assert_outcomes(passed=3)
    assert sorted(compiles) == ["a.ipynb", "a.ipynb", "b.ipynb", "c.ipynb"]


def test_a_corrupt_entry_is_never_used(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    entries = [p for p in (pytester.path / ".pytest_cache").rglob("*") if p.is_file()]
    ours = [p for p in entries if "ntdd-modules" in p.parts]
    assert ours
    for entry in ours:
        entry.write_bytes(b"\x00not marshal data")
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    assert compiles == ["nb.ipynb", "nb.ipynb"]


def test_the_key_covers_every_module_of_ntdd() -> None:
    """A changed checkout recompiles: the salt stamps the whole package, not one folder."""
    from ntdd.plugin.collection import module_cache

    salt = module_cache._salt("rewrite", False)
    for name in ("runtime/notebook_runtime.py", "pipeline/plan.py", "format/module/header.py"):
        assert f"{name}:" in salt


def test_a_run_after_collect_only_fails_with_pytests_message(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """`--co` compiles a changed notebook without rewriting its asserts; a run rewrites them."""
    notebook(["x = [1, 2]", "# TEST: x is one two three\nassert x == [1, 2, 3]"])
    cached_run(pytester, "--co", "nb.ipynb").stdout.fnmatch_lines(["*1 test collected*"])
    result = cached_run(pytester, "nb.ipynb")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Right contains one more item: 3*"])  # pytest's explanation
    again = cached_run(pytester, "nb.ipynb")  # the entry the run stored is rewritten too
    again.stdout.fnmatch_lines(["*Right contains one more item: 3*"])


def test_collect_only_compiles_once_for_a_run(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    """The module `--co` rendered is kept: a run rewrites its asserts, it does not plan again."""
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "--co", "nb.ipynb")
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    cached_run(pytester, "--co", "nb.ipynb")
    assert compiles == ["nb.ipynb"]


def test_an_assert_run_at_import_is_rewritten_under_collect_only(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A test cell's top-level code runs at collection: its assert keeps pytest's message."""
    cell = "# TEST\nx = [1, 2]\nassert x == [1, 2, 3]\ndef test_x():\n    pass"
    notebook([cell])
    result = cached_run(pytester, "--co", "nb.ipynb")
    result.stdout.fnmatch_lines(["*Right contains one more item: 3*"])


@pytest.mark.parametrize(
    "top_level",
    ["check()", "@checked\ndef test_y():\n    pass", "values = [check() for _ in 'x']"],
    ids=["a-call", "a-decorator", "a-comprehension"],
)
def test_a_helper_the_module_runs_at_import_asserts_with_pytests_message(
    notebook: Any, pytester: pytest.Pytester, top_level: str
) -> None:
    """The top level of a `def test_*` cell may call the cell's own asserting code at import."""
    helpers = "def check():\n    x = [1, 2]\n    assert x == [1, 2, 3]\n\n"
    helpers += "def checked(f):\n    check()\n    return f\n\n"
    notebook([f"# TEST\n{helpers}{top_level}\n\ndef test_x():\n    pass"])
    result = cached_run(pytester, "--co", "nb.ipynb")
    result.stdout.fnmatch_lines(["*Right contains one more item: 3*"])


def test_assert_plain_after_collect_only_stays_plain(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = [1, 2]", "# TEST: x is one two three\nassert x == [1, 2, 3]"])
    cached_run(pytester, "--co", "--assert=plain", "nb.ipynb")
    result = cached_run(pytester, "--assert=plain", "nb.ipynb")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *AssertionError"])  # the failure, shown plain
    assert "Right contains" not in result.stdout.str()


def entries(pytester: pytest.Pytester) -> list[Path]:
    found = list((pytester.path / ".pytest_cache").rglob("*.ntddc"))
    assert found
    return found


@pytest.mark.slow
def test_an_entry_with_three_bytes_of_its_code_changed_is_compiled_again(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Damaged bytecode crashes the run that executes it: the checksum is read first."""
    notebook(["x = 2", "# TEST: x is two\nassert x == 2", "# TEST: x is three\nassert x == 3"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1, failed=1)
    for entry in entries(pytester):
        data = bytearray(entry.read_bytes())
        checked = hashlib.sha256(data[32:]).digest() == data[:32]
        code = marshal.loads(data[32:] if checked else data)[4]
        at = data.index(code.co_code)
        for offset in (2, 6, 10):
            data[at + offset] ^= 0x5A
        entry.write_bytes(bytes(data))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)


def planted(pytester: pytest.Pytester, entry: Path) -> Path:
    """*entry* replaced by one whose code leaves a file behind, with a valid checksum:
    what another user who can write the cache could put there."""
    stored = marshal.loads(entry.read_bytes()[32:])
    evil = compile(f"open({str(pytester.path / 'planted')!r}, 'w').close()", "x", "exec")
    payload = marshal.dumps((*stored[:4], evil, *stored[5:]))
    entry.write_bytes(hashlib.sha256(payload).digest() + payload)
    return pytester.path / "planted"


def others_may_write(entry: Path) -> None:
    entry.chmod(0o666)


def nobody_owns(entry: Path) -> None:
    os.chown(entry, 65534, 65534)


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no file owners to check")
@pytest.mark.parametrize("handed_over", [others_may_write, nobody_owns], ids=["writable", "owned"])
def test_an_entry_another_user_could_have_written_is_never_run(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str], handed_over: Any
) -> None:
    if handed_over is nobody_owns and os.getuid() != 0:
        pytest.skip("needs root to chown")
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    (entry,) = entries(pytester)
    marker = planted(pytester, entry)
    handed_over(entry)
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    assert not marker.exists()
    assert compiles == ["nb.ipynb", "nb.ipynb"]


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="no file owners to check")
def test_a_cache_folder_made_group_writable_is_made_private(
    notebook: Any, pytester: pytest.Pytester, compiles: list[str]
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    folder = next((pytester.path / ".pytest_cache").rglob("ntdd-modules"))
    folder.chmod(0o777)
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    assert folder.stat().st_mode & 0o022 == 0
    assert compiles == ["nb.ipynb"]  # its entries are still this user's


@pytest.mark.slow
def test_modules_stored_under_python_O_are_not_loaded_without_it(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """`python -O` compiles asserts away: its entries must not be what a run without it loads."""
    notebook(["x = 2", "# TEST: x is three\nassert x == 3"])

    def pytest_run(*flags: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, *flags, "-m", "pytest", "-p", "no:randomly", "--ntdd"]
        return subprocess.run(
            [*command, "--assert=plain", "nb.ipynb"],
            cwd=pytester.path,
            capture_output=True,
            text=True,
            env={**os.environ, **plugin_env()},
        )

    assert pytest_run("-O").returncode == 0  # no assert left to fail
    assert pytest_run().returncode == 1, "the -O entry was loaded"
