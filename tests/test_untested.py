"""Day 0: a folder of notebooks without `# TEST` cells.

`pytest --ntdd` says in one line how many notebooks it passed over for having
no test cell, and how to start; `--ntdd-run-untested` (ini `ntdd_run_untested`,
`[tool.ntdd] run_untested`) makes each of them one test,
`test_notebook_runs_to_the_end`, which runs every cell as Run All does, with
all that ntdd does for a notebook: skip directives, `raises-exception`,
timeouts, devices, the report, JUnit, xdist.
"""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, ROOT, code, md, requires_torch, run
from oracle import first_failures, run_all

from ntdd.defaults import WRITING_TESTS

END = "test_notebook_runs_to_the_end"
PASSES = [md("# Untested"), "x = 1", "y = x + 1", "assert y == 2"]
FAILS = ["x = 1", "def half(v):\n    return v / 0", "z = half(x)", "print('never')"]
TESTED = ["x = 1", "# TEST: x is one\nassert x == 1"]
LINE = "ntdd: {} no # TEST cell and {} not run: mark a test cell `# TEST` ({}) or run each as one test with --ntdd-run-untested"  # noqa: E501


def the_line(count: int) -> str:
    some = "1 notebook has" if count == 1 else f"{count} notebooks have"
    return LINE.format(some, "was" if count == 1 else "were", WRITING_TESTS)


# -- the one line ------------------------------------------------------------------------


def test_a_folder_without_tests_says_in_one_line_how_many_notebooks_it_passed_over(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(PASSES, name="nbs/a.ipynb")
    notebook(FAILS, name="nbs/b.ipynb")
    result = run(pytester, "--ntdd", "nbs")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert result.stdout.lines.count(the_line(2)) == 1
    assert "nbs/a.ipynb" not in result.stdout.str()  # which ones: -v


def test_with_v_it_names_each_notebook_it_passed_over(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(PASSES, name="nbs/a.ipynb")
    notebook(TESTED, name="nbs/tested.ipynb")
    result = run(pytester, "--ntdd", "-v", "nbs")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([the_line(1), "ntdd: nbs/a.ipynb: no # TEST cell; not run"])
    assert "nbs/tested.ipynb: no # TEST" not in result.stdout.str()


def test_notebooks_with_tests_say_nothing_of_it(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(TESTED)
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1)
    assert "no # TEST cell" not in result.stdout.str()


def test_with_the_option_on_the_line_is_not_said(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(PASSES, name="a.ipynb")
    notebook([md("only words")], name="empty.ipynb")  # nothing to run: no test, and no line
    result = run(pytester, "--ntdd", "--ntdd-run-untested", ".")
    result.assert_outcomes(passed=1)
    assert "no # TEST cell" not in result.stdout.str()


@pytest.mark.slow
def test_under_xdist_the_line_is_said_once_for_all_workers(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    for name in "abc":
        notebook(PASSES, name=f"{name}.ipynb")
    result = run(pytester, "--ntdd", "-n", "2", ".", plugins=["xdist"], subprocess=True)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert result.stdout.lines.count(the_line(3)) == 1


def test_the_link_is_the_docs_page_of_the_grammar() -> None:
    repository, _, page = WRITING_TESTS.partition("/blob/main/")
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert f"repo_url: {repository}\n" in mkdocs
    assert (ROOT / page).is_file() and "# TEST" in (ROOT / page).read_text(encoding="utf-8")


# -- --ntdd-run-untested -------------------------------------------------------------


def test_each_notebook_without_tests_is_one_test_that_runs_it_to_the_end(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(PASSES, name="a.ipynb")
    notebook(TESTED, name="tested.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-run-untested", "-v", ".")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            f"a.ipynb::{END} PASSED - Runs cell* every cell of this notebook without tests*",
            "tested.ipynb::test_x_is_one PASSED*",
        ]
    )
    assert f"tested.ipynb::{END}" not in result.stdout.str()  # a tested notebook is as it was


def test_a_failing_cell_fails_it_naming_the_cell_and_the_line(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The test is the notebook's run: it failed, as nbmake and nbval say, not errored."""
    notebook(FAILS)
    result = run(pytester, "--ntdd", "--ntdd-run-untested", "nb.ipynb")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            f"*_ {END} _*",
            ">   z = half(x)",
            "nb.ipynb:*: (setup cell 3, id *, line 1)",
            ">       return v / 0",
            "E       ZeroDivisionError: division by zero",
            "nb.ipynb:*: ZeroDivisionError (setup cell 2, id *, line 2)",
            f"FAILED nb.ipynb::{END} - ZeroDivisionError in setup c*",
        ]
    )
    assert "never" not in result.stdout.str()  # the cells below it did not run


def test_a_failing_notebook_is_one_failure_in_the_terminal_junit_the_summary_and_the_report(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(FAILS)
    result = run(
        pytester,
        *("--ntdd", "--ntdd-run-untested", "nb.ipynb", "--junitxml=j.xml"),
        *("--ntdd-summary=s.md", "--ntdd-report=r.html"),
    )
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suite = ET.parse(pytester.path / "j.xml").getroot().find(".//testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("1", "0")
    case = suite.find("testcase")
    assert case is not None and case.find("failure") is not None and case.find("error") is None
    summary = (pytester.path / "s.md").read_text(encoding="utf-8")
    assert "ntdd: 1 failed in" in summary and f"| `nb.ipynb::{END}` | failed |" in summary
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "1 failed" in html and "1 error" not in html


def test_cells_ntdd_and_nbval_skip_are_not_run_and_raises_exception_cells_may_raise(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "x = 1",
            "# NTDD: skip\nraise SystemExit('a long training loop')",
            "# NBVAL_SKIP\n1 / 0",
            code("import urllib.request; urllib.request.urlopen('http://x')", ["skip-execution"]),
            code("raise ValueError('shown on purpose')", ["raises-exception"]),
            "assert x == 1",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-run-untested", "nb.ipynb")
    result.assert_outcomes(passed=1)


def test_a_cell_that_runs_too_long_fails_it_with_the_timeout(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["import time", "time.sleep(30)"])
    result = run(pytester, "--ntdd", "--ntdd-run-untested", "--ntdd-timeout=0.5", "nb.ipynb")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*NtddTimeout: nb.ipynb::{END} timed out after 0.5 s*", "*(setup cell 2, id *, line 1)"]
    )


@pytest.mark.parametrize(
    ("ini", "pyproject", "runs"),
    [
        ("ntdd_run_untested = true", "", True),
        ("", "[tool.ntdd]\nrun_untested = true\n", True),
        ("ntdd_run_untested = false", "[tool.ntdd]\nrun_untested = true\n", False),
        ("", "[tool.ntdd]\nrun_untested = false\n", False),
    ],
)
def test_the_ini_key_and_tool_ntdd_turn_it_on_the_ini_over_pyproject(
    notebook: Any, pytester: pytest.Pytester, ini: str, pyproject: str, runs: bool
) -> None:
    notebook(PASSES)
    pytester.makeini(f"[pytest]\n{ini}\n")
    if pyproject:
        pytester.makepyprojecttoml(pyproject)
    result = run(pytester, "--ntdd", "nb.ipynb")
    assert result.ret == (pytest.ExitCode.OK if runs else pytest.ExitCode.NO_TESTS_COLLECTED)


def test_a_tool_ntdd_value_that_is_not_a_bool_is_one_usage_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(PASSES)
    pytester.makepyprojecttoml('[tool.ntdd]\nrun_untested = "yes"\n')
    result = run(pytester, "--ntdd", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*pyproject.toml [[]tool.ntdd[]]: run_untested must be true or false, got 'yes'"]
    )


def test_junit_and_the_report_record_it_as_the_notebooks_test(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(FAILS)
    run(pytester, "--ntdd", "--ntdd-run-untested", "--junitxml=j.xml", "--ntdd-report=r.html")
    case = ET.parse(pytester.path / "j.xml").getroot().find(".//testcase")
    assert case is not None and case.get("name") == END and case.get("classname") == "nb.ipynb"
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["notebook"] == "nb.ipynb" and properties["cell"] == "3"
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert f"nb.ipynb::{END}" in html and "ZeroDivisionError" in html


@requires_torch
def test_a_notebook_that_picks_its_device_runs_once_on_the_first_device_asked_for(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
            "t = torch.ones(2, device=device)",
            "assert t.device.type == 'cpu'",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-run-untested", "-v", "nb.ipynb")
    result.stdout.fnmatch_lines([f"nb.ipynb::{END} PASSED*"])  # once, not per device


def test_the_module_cache_keeps_a_notebook_apart_with_the_option_and_without(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(PASSES)
    assert pytester.runpytest("--ntdd", "nb.ipynb").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.runpytest("--ntdd", "--ntdd-run-untested", "nb.ipynb").assert_outcomes(passed=1)
    assert pytester.runpytest("--ntdd", "nb.ipynb").ret == pytest.ExitCode.NO_TESTS_COLLECTED


# -- the oracle: a kernel's Run All --------------------------------------------------------

# Third-party notebooks without tests (tests/corpus/untested/SOURCES.md): some run to
# the end, some stop at a cell for real (an exception on purpose, a missing package
# after an install ntdd drops, deep in the notebook), one has nothing to run.
ORACLE = [
    "untested/d2l-pytorch-colab__custom-layer.ipynb",
    "untested/d2l-pytorch-colab__lookup-api.ipynb",
    "untested/d2l-pytorch-colab__subword-embedding.ipynb",
    "untested/d2l-pytorch-colab__hybridize.ipynb",
    "untested/handson-ml3__extra_autodiff.ipynb",
    "untested/d2l-pytorch-colab__index.ipynb",
    "good/nbclient__Skip_Exceptions_with_Cell_Tags.ipynb",
]


@pytest.mark.slow
def test_on_real_notebooks_it_agrees_with_a_kernels_run_all_on_the_first_failing_cell(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the kernel runs `!pip install`: it must fail
    names = [Path(shutil.copy(CORPUS / case, pytester.path)).name for case in ORACLE]
    kernel = {name: run_all(pytester.path / name) for name in names}
    assert sum(cell is None for cell in kernel.values()) >= 2
    assert sum(cell is not None and cell > 5 for cell in kernel.values()) >= 2  # deep in
    run(pytester, "--ntdd", "--ntdd-run-untested", "--junitxml=j.xml", "-W", "ignore", *names)
    ntdd = first_failures(pytester.path / "j.xml")
    assert {name: ntdd.get(name) for name in names} == kernel
