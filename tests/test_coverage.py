"""Coverage of notebook code: `ntdd.coverage`, coverage.py's plugin for what `--ntdd` runs.

Each run is a child process: coverage.py cannot measure a pytest run nested
in a process it is already measuring.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import line_of, run, write_notebook

pytest.importorskip("pytest_cov")

PLUGIN = '[tool.coverage.run]\nplugins = ["ntdd.coverage"]\n'
CELLS = [
    "def double(v):\n    return 2 * v\n\ndef unused():\n    return 0",
    "if double(1) == 3:\n    never = True",
    "# TEST: doubles\nassert double(2) == 4",
    "# TEST\ndef test_as_written():\n    assert double(3) == 6",
]


def coverage_run(
    pytester: pytest.Pytester, *args: str, plugins: tuple[str, ...] = ()
) -> pytest.RunResult:
    return run(
        pytester,
        "--ntdd",
        "nbs",
        "--cov=nbs",
        "--cov-report=term-missing",
        *args,
        plugins=["pytest_cov", *plugins],
        subprocess=True,
    )


def row(result: pytest.RunResult, name: str) -> list[str]:
    """The report's row for *name* (not the progress line of its tests)."""
    line = next(line for line in result.stdout.lines if re.match(rf"{name}\s+\d", line))
    return re.split(r"\s+", line.strip(), maxsplit=4)


def test_the_report_has_a_row_per_notebook_with_the_lines_of_its_cells_that_did_not_run(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "pyproject.toml").write_text(PLUGIN)
    path = write_notebook(pytester.path / "nbs" / "maths.ipynb", CELLS)
    write_notebook(pytester.path / "nbs" / "other.ipynb", ["w = 1", "# TEST\nassert w == 1"])
    result = coverage_run(pytester)
    result.assert_outcomes(passed=3)
    assert "Couldn't parse" not in result.stdout.str() + result.stderr.str()
    missed = f"{line_of(path, 'return 0')}, {line_of(path, 'never = True')}"
    # 9 statements: 2 defs and 2 returns, the `if` and its body, the tests' 3 lines.
    assert row(result, "nbs/maths.ipynb") == ["nbs/maths.ipynb", "9", "2", "78%", missed]
    assert row(result, "nbs/other.ipynb")[:4] == ["nbs/other.ipynb", "2", "0", "100%"]
    result.stdout.no_fnmatch_line("*ntdd module*")


@pytest.mark.slow
def test_under_xdist_the_workers_measure_the_notebooks_too(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    (pytester.path / "pyproject.toml").write_text(PLUGIN)
    write_notebook(pytester.path / "nbs" / "maths.ipynb", CELLS)
    result = coverage_run(pytester, "-n", "2", plugins=("xdist.plugin",))
    result.assert_outcomes(passed=2)
    assert row(result, "nbs/maths.ipynb")[1:4] == ["9", "2", "78%"]


@pytest.mark.slow
def test_without_the_plugin_ntdd_says_how_to_measure_notebooks(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "nbs" / "maths.ipynb", CELLS)
    result = coverage_run(pytester)
    result.assert_outcomes(passed=2)
    hint = 'ntdd: coverage measures notebooks only with its plugin: add plugins = ["ntdd.coverage"]'
    assert hint in result.stdout.str()


@pytest.mark.slow
def test_a_notebook_gone_before_the_report_is_no_source_as_a_py_file_is(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "pyproject.toml").write_text(PLUGIN)
    path = write_notebook(pytester.path / "nbs" / "maths.ipynb", CELLS)
    coverage_run(pytester, "--cov-report=").assert_outcomes(passed=2)
    path.unlink()
    result = pytester.run(sys.executable, "-m", "coverage", "report")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["No source for code: '*maths.ipynb'*"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    ignored = pytester.run(sys.executable, "-m", "coverage", "report", "--ignore-errors")
    ignored.stderr.fnmatch_lines(["*CoverageWarning: Couldn't parse '*maths.ipynb': No source*"])
    assert "Traceback" not in ignored.stdout.str() + ignored.stderr.str()


def one_string_source(path: Path, minified: bool) -> None:
    """Rewrite a notebook with its first cell's source as one JSON string (valid
    nbformat), or the whole file on one line."""
    data = json.loads(path.read_text())
    data["cells"][0]["source"] = "".join(data["cells"][0]["source"])
    path.write_text(json.dumps(data, indent=None if minified else 1))


@pytest.mark.parametrize("minified", [False, True], ids=["one string", "one line"])
@pytest.mark.slow
def test_lines_a_file_shares_between_source_lines_are_never_reported_covered(
    pytester: pytest.Pytester, minified: bool
) -> None:
    """`return 2` never runs; its line of JSON also holds the call that does."""
    (pytester.path / "pyproject.toml").write_text(PLUGIN)
    path = write_notebook(
        pytester.path / "nbs" / "maths.ipynb",
        ["def f(v):\n    if v:\n        return 1\n    return 2\nf(1)", "# TEST\nassert f(1) == 1"],
    )
    one_string_source(path, minified)
    result = coverage_run(pytester)
    result.assert_outcomes(passed=1)
    # The test cell's assert, on its own line, is the one statement left; on one line, none.
    expected = ["0", "0", "100%"] if minified else ["1", "0", "100%"]
    assert row(result, "nbs/maths.ipynb")[1:4] == expected


@pytest.mark.slow
def test_branch_coverage_says_notebooks_are_measured_by_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "pyproject.toml").write_text(PLUGIN)
    write_notebook(pytester.path / "nbs" / "maths.ipynb", CELLS)
    result = coverage_run(pytester, "--cov-branch")
    result.stdout.fnmatch_lines(["ntdd: coverage measures notebooks' lines, not their branches*"])
