"""Runs survive the environment: a read-only checkout, other languages' notebooks,
hostile JSON. Each is one clear line, or nothing at all; never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import make_notebook, run, write_notebook

from ntdd.commands.cli import BAD_INPUT
from ntdd.commands.cli import main as ntdd_main

# -- a checkout where the module cache cannot be written ---------------------------


def cached_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run with pytest's cache on, which the module cache lives in."""
    return pytester.runpytest("-p", "no:randomly", "--ntdd", *args)


@pytest.mark.parametrize(
    "blocked",
    [".pytest_cache", ".pytest_cache/d"],
    ids=["the cache folder", "its folder of directories"],
)
def test_a_cache_that_cannot_be_made_leaves_the_notebooks_running(
    notebook: Any, pytester: pytest.Pytester, blocked: str
) -> None:
    """As in a read-only checkout. Tests run as root, whom chmod does not stop, so the
    folder pytest would make is blocked by a file in its place: mkdir fails alike."""
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    (pytester.path / blocked).parent.mkdir(parents=True, exist_ok=True)
    (pytester.path / blocked).write_text("not a folder")
    result = cached_run(pytester, "-W", "ignore::pytest.PytestCacheWarning", "nb.ipynb")
    result.assert_outcomes(passed=1)
    assert "Error" not in result.stdout.str()


def test_the_assertion_pass_hook_is_part_of_the_cache_key(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A module compiled without the hook's calls is not reused once the hook is on."""
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    pytester.makeconftest(
        "def pytest_assertion_pass(item, lineno, orig, expl):\n    print('passed assert:', orig)\n"
    )
    cached_run(pytester, "nb.ipynb").assert_outcomes(passed=1)
    result = cached_run(pytester, "-s", "-o", "enable_assertion_pass_hook=true", "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*passed assert: x == 2*"])


# -- notebooks in other languages ---------------------------------------------------


def in_language(path: Path, cells: list[str], language: str) -> Path:
    """A notebook whose kernel runs *language*, as Jupyter saves one."""
    notebook = make_notebook(cells)
    notebook.metadata["kernelspec"] = {"name": language.lower(), "language": language}
    notebook.metadata["language_info"] = {"name": language}
    path.write_text(json.dumps(notebook))
    return path


def test_a_notebook_in_another_language_without_tests_is_passed_over(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    in_language(pytester.path / "plots.ipynb", ["library(ggplot2)", "x <- 1"], "R")
    in_language(pytester.path / "fit.ipynb", ["using Flux"], "julia")
    result = run(pytester, "--ntdd", "-v", ".")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines_random(
        [
            "ntdd: plots.ipynb not collected: a 'R' notebook without test cells",
            "ntdd: fit.ipynb not collected: a 'julia' notebook without test cells",
        ]
    )
    named = run(pytester, "--ntdd", "plots.ipynb")  # named on the command line: still nothing
    assert named.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert "error" not in named.stdout.str().lower()


def test_every_shard_passes_over_a_notebook_in_another_language(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    for name in ("a", "b"):
        notebook(["x = 2", "# TEST: x is two\nassert x == 2"], name=f"{name}.ipynb")
    in_language(pytester.path / "plots.ipynb", ["x <- 1"], "R")
    for shard in ("1/2", "2/2"):
        run(pytester, "--ntdd", "--ntdd-shard", shard, ".").assert_outcomes(passed=1, deselected=1)


def test_a_notebook_in_another_language_with_tests_is_a_clear_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    in_language(
        pytester.path / "stats.ipynb", ["x <- 1", "# TEST: x is one\nstopifnot(x == 1)"], "R"
    )
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["ntdd: stats.ipynb: a 'R' notebook; ntdd runs Python notebooks"])


def test_export_and_its_check_pass_over_a_notebook_in_another_language_without_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "fit.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    in_language(tmp_path / "nbs" / "plots.ipynb", ["x <- 1"], "R")
    assert ntdd_main(["export", "nbs", "-o", "tests"]) == 0
    assert "nbs/plots.ipynb: no test cells; nothing written" in capsys.readouterr().out
    assert ntdd_main(["export", "--check", "nbs", "-o", "tests"]) == 0
    assert [p.name for p in (tmp_path / "tests").iterdir()] == ["test_fit.py"]
    in_language(tmp_path / "nbs" / "plots.ipynb", ["x <- 1", "# TEST\nstopifnot(x == 1)"], "R")
    capsys.readouterr()
    assert ntdd_main(["export", "--check", "nbs", "-o", "tests"]) == BAD_INPUT
    assert "a 'R' notebook; ntdd runs Python notebooks" in capsys.readouterr().err


def test_sync_and_faults_pass_over_a_notebook_in_another_language_without_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workflow hands both every notebook `ntdd list` picks, as pytest --ntdd finds them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nbs").mkdir()
    in_language(tmp_path / "nbs" / "plots.ipynb", ["x <- 1"], "R")
    assert ntdd_main(["sync", "nbs", "-o", "tests"]) == 0
    assert "no test cells; nothing written" in capsys.readouterr().out
    assert ntdd_main(["faults", "--no-fork", "nbs"]) == 0
    assert "plots.ipynb: no tests" in capsys.readouterr().out
    in_language(tmp_path / "nbs" / "plots.ipynb", ["x <- 1", "# TEST\nstopifnot(x == 1)"], "R")
    assert ntdd_main(["sync", "nbs", "-o", "tests"]) == BAD_INPUT
    assert ntdd_main(["faults", "--no-fork", "nbs"]) == BAD_INPUT
    assert "a 'R' notebook; ntdd runs Python notebooks" in capsys.readouterr().err


def test_init_warns_of_no_notebook_in_another_language_without_tests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest --ntdd passes it over: the workflow's run is green for it."""
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "fit.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    in_language(tmp_path / "nbs" / "plots.ipynb", ["x <- 1"], "R")
    assert ntdd_main(["init", "--dry-run"]) == 0
    notes = capsys.readouterr().err
    assert "2 notebooks" in notes and "1 with # TEST cells" in notes
    assert "plots.ipynb" not in notes


# -- JSON nested deeper than Python's parser goes ----------------------------------

DEPTH = 100_000


def deeply_nested(path: Path) -> Path:
    nesting = "[" * DEPTH + "]" * DEPTH
    path.write_text(f'{{"nbformat": 4, "cells": [], "metadata": {{"x": {nesting}}}}}')
    return path


def test_a_deeply_nested_notebook_is_one_collection_error_and_the_rest_runs(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 2", "# TEST: x is two\nassert x == 2"])
    deeply_nested(pytester.path / "deep.ipynb")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["ntdd: deep.ipynb: JSON nested too deeply to parse, not a notebook"]
    )
    assert "RecursionError" not in result.stdout.str()


@pytest.mark.parametrize("command", [["export"], ["faults", "--faults", "lr0"]])
def test_the_commands_say_a_deeply_nested_notebook_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    deeply_nested(tmp_path / "deep.ipynb")
    assert ntdd_main([*command, "deep.ipynb"]) == BAD_INPUT
    err = capsys.readouterr().err
    assert err == "ntdd: error: deep.ipynb: JSON nested too deeply to parse, not a notebook\n"


def test_init_warns_of_a_deeply_nested_notebook_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nbs" / "good.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    deeply_nested(tmp_path / "nbs" / "deep.ipynb")
    assert ntdd_main(["init", "--dry-run"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "deep.ipynb" in line]
    assert warnings == [
        "ntdd: warning: nbs/deep.ipynb: JSON nested too deeply to parse, not a notebook "
        "(pytest --ntdd reports it as an error)"
    ]
