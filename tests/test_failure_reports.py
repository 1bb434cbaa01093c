"""A notebook test's failure shows the notebook, never ntdd: in every place a user reads it.

The terminal in each `--tb` style, JUnit, PyCharm's teamcity messages, the
HTML report, GitHub's annotations and the job summary all read the report a
failure makes: its frames are the notebook's cells (and the libraries they
call), a setup cell's failure is the cell's own exception, and the short
summary reads as a `.py` file's does.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import md, requires_torch, run

# What a report must not show of the machinery around a notebook's code.
MACHINERY = ("ntdd/", "ntdd\\", "_pytest", "pluggy", "SetupError", "run_hooks", "__ntdd__")
SETUP_FAILS = [md("# A title"), "x = 1", "y = 1 / 0", "# TEST: x\nassert x", "# TEST: y\nassert y"]
TB_STYLES = ["auto", "long", "short", "line", "native", "no"]


def machinery_in(text: str) -> list[str]:
    """What *text* shows of the machinery; pytest's header line names pluggy's version."""
    text = "\n".join(line for line in text.splitlines() if not line.startswith("platform "))
    return [word for word in MACHINERY if word in text]


@pytest.mark.parametrize("style", TB_STYLES)
def test_a_setup_cells_error_shows_the_cell_and_its_exception_in_every_tb_style(
    notebook: Any, pytester: pytest.Pytester, style: str
) -> None:
    notebook(SETUP_FAILS)
    result = run(pytester, "--ntdd", "nb.ipynb", f"--tb={style}")
    result.assert_outcomes(errors=2)
    assert machinery_in(result.stdout.str()) == []
    result.stdout.fnmatch_lines(
        [
            "ERROR nb.ipynb::test_x - ZeroDivisionError in setup cell 3: division by zero",
            "ERROR nb.ipynb::test_y - ZeroDivisionError in setup cell 3 (see test_x)",
        ]
    )
    if style in ("auto", "long", "short"):
        result.stdout.fnmatch_lines(["*   y = 1 / 0", "E   ZeroDivisionError: division by zero"])
    if style == "native":
        result.stdout.fnmatch_lines(
            ['  File "nb.ipynb", line *, in <module> (setup cell 3, id *, line 1)', "    y = 1 / 0"]
        )


@pytest.mark.parametrize("style", TB_STYLES)
def test_a_setup_cells_syntax_error_shows_its_line_and_caret_as_a_kernel_does(
    notebook: Any, pytester: pytest.Pytester, style: str
) -> None:
    notebook(["x = (1,", "# TEST: x\nassert x", "# TEST: y\nassert x"])
    result = run(pytester, "--ntdd", "nb.ipynb", f"--tb={style}")
    result.assert_outcomes(errors=2)
    assert machinery_in(result.stdout.str()) == []
    result.stdout.fnmatch_lines(
        [
            "ERROR nb.ipynb::test_x - SyntaxError in setup cell 1: '(' was never closed",
            "ERROR nb.ipynb::test_y - SyntaxError in setup cell 1 (see test_x)",
        ]
    )
    if style != "no":
        result.stdout.fnmatch_lines(
            ['  File "nb.ipynb (setup cell 1, id *)", line 1', "    x = (1,", "        ^"]
        )


def test_the_tests_below_a_failed_setup_cell_say_once_which_cell_failed(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([*SETUP_FAILS, "# TEST: z\nassert y"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    assert out.count("y = 1 / 0") == 1  # the traceback, under the first test that needed it
    for name in ("test_y", "test_z"):
        section = out.split(f"ERROR at setup of {name} ")[1].split("\n", 1)[1]
        assert section.splitlines()[0] == (
            "nb.ipynb (setup cell 3, id "
            + re.search(r"setup cell 3, id (\w+)", out)[1]  # type: ignore[index]
            + ") raised ZeroDivisionError; its traceback is under test_x"
        )


def test_a_cell_of_bare_statements_fails_showing_its_own_lines_only(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: x is two\ntotal = x + 1\nassert total == 3"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    block = out.split(" test_x_is_two ")[1].split("nb.ipynb:")[0]
    assert block.strip("_\n").splitlines()[:3] == [
        "        # TEST: x is two",
        "        total = x + 1",
        ">       assert total == 3",
    ]
    assert "def test_x_is_two" not in out and "global total" not in out


def test_under_tb_native_a_frame_of_a_cell_names_the_notebooks_file_line_and_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["def helper():\n    return {}['k']", "# TEST: calls\nhelper()"])
    result = run(pytester, "--ntdd", "nb.ipynb", "--tb=native")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "Traceback (most recent call last):",
            '  File "nb.ipynb", line *, in test_calls (test cell 2, id *, line 2)',
            "    helper()",
            '  File "nb.ipynb", line *, in helper (setup cell 1, id *, line 2)',
            "    return {}['k']",
            "KeyError: 'k'",
        ]
    )
    assert machinery_in(result.stdout.str()) == []


@requires_torch
@pytest.mark.parametrize("style", ["long", "short", "native"])
def test_an_ntdd_torch_helpers_failure_shows_the_cells_line_not_the_helper(
    notebook: Any, pytester: pytest.Pytester, style: str
) -> None:
    notebook(
        [
            "import torch\nfrom ntdd.torch import assert_finite",
            "# TEST: finite\nassert_finite(torch.tensor([1.0, float('nan')]))",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", f"--tb={style}")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert machinery_in(out) == [] and "def fail" not in out and "def assert_finite" not in out
    section = out.split(" test_finite ")[1].split("short test summary")[0]
    shown = [line for line in section.splitlines() if line.strip("_= ")]
    assert len(shown) <= 6, section  # the cell's lines, the error, where: not the helper


def test_a_plain_py_tests_ntdd_torch_failure_hides_the_helpers_frames(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile(
        "import torch\nfrom ntdd.torch import assert_shape\n\n"
        "def test_shape():\n    assert_shape(torch.zeros(2, 3), (2, 4))\n"
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    assert "def fail" not in result.stdout.str() and "def assert_shape" not in result.stdout.str()


def test_junit_holds_the_cells_traceback_and_names_the_setup_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(SETUP_FAILS)
    run(pytester, "--ntdd", "nb.ipynb", "--junitxml=junit.xml").assert_outcomes(errors=2)
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    first, below = cases["test_x"].find("error"), cases["test_y"].find("error")
    assert first is not None and below is not None
    assert "ZeroDivisionError in setup cell 3: division by zero" in first.get("message", "")
    assert ">   y = 1 / 0" in (first.text or "")
    assert "its traceback is under test_x" in (below.text or "")
    assert machinery_in((first.text or "") + (below.text or "")) == []


def teamcity_messages(out: str, kind: str) -> list[dict[str, str]]:
    """The `##teamcity[kind …]` service messages of *out*, their attributes unescaped."""
    unescape = {"|n": "\n", "|r": "\r", "|'": "'", "|[": "[", "|]": "]", "||": "|"}

    def text(value: str) -> str:
        return re.sub(r"\|.", lambda m: unescape.get(m[0], m[0]), value)

    found = []
    for body in re.findall(rf"##teamcity\[{kind} (.*?)(?<!\|)\]", out):
        pairs = re.findall(r"(\w+)='((?:[^'|]|\|.)*)'", body)
        found.append({k: text(v) for k, v in pairs})
    return found


def test_pycharms_teamcity_messages_name_the_test_and_hold_the_notebooks_lines(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "x = 1",
            "# TEST: x is two\nassert x == 2",
            "# TEST\ndef test_on_device(device):\n    assert x == 2",
            "y = 1 / 0",
            "# TEST: below\nassert y",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "--teamcity", plugins=["pytest-teamcity"])
    out = result.stdout.str()
    started = {m["name"] for m in teamcity_messages(out, "testStarted")}
    assert {"nb_ipynb.test_x_is_two", "nb_ipynb.test_below"} <= started
    assert any(name.startswith("nb_ipynb.test_on_device") and "cpu" in name for name in started)
    failed = {m["name"]: m for m in teamcity_messages(out, "testFailed")}
    details = failed["nb_ipynb.test_x_is_two"]["details"]
    assert details.splitlines()[:2] == ["# TEST: x is two", ">       assert x == 2"]
    setup = failed["nb_ipynb.test_below"]["details"]
    assert ">   y = 1 / 0" in setup and "ZeroDivisionError: division by zero" in setup
    assert machinery_in("".join(m["details"] for m in failed.values())) == []


def test_the_html_report_annotations_and_summary_name_the_cell_not_ntdd(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("nbconvert")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    notebook(SETUP_FAILS)
    result = run(
        pytester, "--ntdd", "nb.ipynb", "--ntdd-report=report.html", "--ntdd-summary=summary.md"
    )
    result.assert_outcomes(errors=2)
    annotations = [line for line in result.stderr.lines if line.startswith("::error ")]
    assert len(annotations) == 1  # the cell's failure, once
    assert "ZeroDivisionError in setup cell 3: division by zero" in annotations[0]
    summary = (pytester.path / "summary.md").read_text()
    assert "ZeroDivisionError in setup cell 3: division by zero" in summary
    html = Path(pytester.path / "report.html").read_text()
    for text in (annotations[0], summary, html):
        assert "SetupError" not in text and "ntdd.runtime" not in text
