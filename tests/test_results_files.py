"""The files a run writes its results to never destroy a notebook, and fail before the run.

`--ntdd-report`, `--ntdd-summary` and `--ntdd-store-durations` take a value,
so the notebook meant as the run's argument can become the file to write
(`pytest --ntdd --ntdd-report nb.ipynb`); `ntdd faults --report` and
`ntdd list --summary` likewise.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import ntdd_main, run, sha

OPTIONS = ["--ntdd-report", "--ntdd-summary", "--ntdd-store-durations"]


@pytest.fixture
def nb(notebook: Any) -> Path:
    return notebook(["x = 1", "# TEST: x is one\nassert x == 1"])


@pytest.mark.parametrize("option", OPTIONS)
def test_a_notebook_given_as_a_results_file_is_refused_before_the_run(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    before = sha(nb)
    result = run(pytester, "--ntdd", option, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} nb.ipynb: is a notebook*"])
    result.stdout.no_fnmatch_line("*passed*")  # nothing ran
    assert sha(nb) == before


@pytest.mark.parametrize("option", OPTIONS)
def test_a_link_to_a_notebook_is_refused_as_a_results_file(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    before = sha(nb)
    (pytester.path / "results.out").symlink_to(nb.name)
    result = run(pytester, "--ntdd", option, "results.out", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is a notebook (through the link results.out)*"])
    assert sha(nb) == before


@pytest.mark.parametrize("option", OPTIONS)
def test_a_folder_or_a_read_only_file_is_refused_before_the_run(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    (pytester.path / "out").mkdir()
    result = run(pytester, "--ntdd", option, "out", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} out: is a folder*"])
    locked = pytester.path / "locked.txt"
    locked.write_text("kept\n")
    locked.chmod(0o444)
    result = run(pytester, "--ntdd", option, "locked.txt", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} locked.txt: read-only*"])
    assert locked.read_text() == "kept\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_summary_that_cannot_be_written_is_one_line_under_the_totals_and_fails_the_run(
    pytester: pytest.Pytester, nb: Path
) -> None:
    result = run(pytester, "--ntdd", "--ntdd-summary", "/dev/full", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: error: --ntdd-summary /dev/full: cannot write it: No space left on device"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_a_lone_surrogate_a_cell_prints_is_shown_as_jupyter_shows_it(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    """A file name that is not UTF-8, printed, is a lone surrogate in Python: the cell's
    output shows the replacement character, as a kernel's message reaches Jupyter."""
    pytest.importorskip("nbconvert")
    notebook(["print('caf\\udce9.csv')", "# TEST: runs\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-report", "report.html", "--ntdd-summary", "s.md")
    assert result.ret == pytest.ExitCode.OK
    assert "caf\ufffd.csv" in (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "1 passed" in (pytester.path / "s.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "command", [["faults", "nb.ipynb", "--report"], ["list", ".", "--summary"]]
)
def test_the_commands_refuse_a_notebook_as_their_markdown_file(
    pytester: pytest.Pytester, nb: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sha(nb)
    os.chdir(pytester.path)
    assert ntdd_main([*command, "nb.ipynb"]) == 2
    assert f"{command[-1]} nb.ipynb: is a notebook" in capsys.readouterr().err
    assert sha(nb) == before
