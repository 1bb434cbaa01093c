"""The compiled-module cache: used when nothing changed, never when anything did."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from conftest import code


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The notebooks each run compiled (rendered, rewrote, compiled) instead of loading."""
    collect = importlib.import_module("ntdd.plugin.collect")  # the one in sys.modules
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
    from ntdd.plugin import module_cache

    salt = module_cache._salt("rewrite", False)
    for name in ("runtime/notebook_runtime.py", "pipeline/plan.py", "format/module/header.py"):
        assert f"{name}:" in salt
