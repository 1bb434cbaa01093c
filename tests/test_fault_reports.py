"""`ntdd faults` over many notebooks: the summary, the exit policy, Markdown and JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, write_notebook
from test_faults import CATCHES, CLASSIFIER

from ntdd.commands.cli import main
from ntdd.faults.results import (
    CAUGHT,
    ERROR,
    NOT_APPLICABLE,
    SURVIVED,
    TESTED,
    FaultResult,
    NotebookReport,
    Summary,
)

pytest.importorskip("torch")


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """a catches nan and lr0, b only nan, notes has no tests."""
    monkeypatch.chdir(tmp_path)
    nbs = tmp_path / "nbs"
    write_notebook(
        nbs / "a.ipynb",
        [CLASSIFIER, f"# TEST: finite\n{CATCHES['nan']}", f"# TEST: learns\n{CATCHES['lr0']}"],
    )
    write_notebook(nbs / "b.ipynb", [CLASSIFIER, f"# TEST: finite\n{CATCHES['nan']}"])
    write_notebook(nbs / "notes.ipynb", ["# Notes: no tests here", "x = 1"])
    return nbs


SUMMARY = """\
notebook         nan     lr0     kill rate
---------------  ------  ------  ---------
nbs/a.ipynb      caught  caught  2/2 (100%)
nbs/b.ipynb      caught  MISSED  1/2 (50%)
nbs/notes.ipynb  no tests

overall: 3 of 4 applicable faults caught at α = 0.05 (75%); exit policy (every applicable fault \
caught): NOT met
"""


@pytest.mark.slow
def test_many_notebooks_get_a_table_each_a_summary_and_an_appended_report(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = folder.parent / "summary.md"
    report.write_text("an earlier step wrote this\n")
    assert main(["faults", "nbs", "--faults", "nan,lr0", "--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert out.endswith("\n" + SUMMARY)
    assert SUMMARY in (ROOT / "docs" / "faults.md").read_text(encoding="utf-8")
    assert (
        "nbs/b.ipynb\nruns: the notebook seeds itself" in out
        and "nbs/notes.ipynb: no tests\n" in out
    )
    markdown = report.read_text(encoding="utf-8").splitlines()
    assert markdown[:5] == [
        "an earlier step wrote this",
        "### ❌ ntdd faults: 3 of 4 applicable faults caught at α = 0.05 (75%) in 3 notebooks",
        "",
        "Exit policy: every applicable fault caught.",
        "",
    ]
    assert markdown[5:10] == [
        "| notebook | `nan` | `lr0` | kill rate |",
        "|---|:-:|:-:|---|",
        "| `nbs/a.ipynb` | ✅ | ✅ | 2/2 (100%) |",
        "| `nbs/b.ipynb` | ✅ | ❌ | 1/2 (50%) |",
        "| `nbs/notes.ipynb` | no tests | | |",
    ]
    details = "\n".join(markdown)
    assert "<details><summary><code>nbs/b.ipynb</code>: 1/2 (50%) caught</summary>" in details
    assert (
        "| `lr0` | opt lr 0.5 → 0 | 0/2 | - | ❌ not caught. Try: assert one optimizer step"
        in details
    )
    assert details.count("<details>") == 2  # none for a notebook without tests


@pytest.mark.slow
def test_the_exit_policy_and_the_json_schema_the_reference_documents(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["faults", "nbs", "--faults", "nan,lr0", "--min-kill-rate", "50%", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["passed"], report["exit_code"], report["min_kill_rate"]) == (True, 0, 0.5)
    assert [n["status"] for n in report["notebooks"]] == ["tested", "tested", "no tests"]
    documented = schema_in_reference()
    assert fields_of(report) == set(documented)
    for field, value in values_of(report):
        assert matches(value, documented[field]), (field, value, documented[field])


def schema_in_reference() -> dict[str, str]:
    """`field` -> type, from the reference's table of the JSON's fields."""
    reference = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    section = reference.split("## `ntdd faults` JSON", 1)[1]
    rows = re.findall(r"^\| `([\w\[\].]+)` \| ([^|]+) \|", section, re.MULTILINE)
    return {field: kind.strip() for field, kind in rows}


def values_of(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(field path, value) for every field, lists and objects walked into."""
    found: list[tuple[str, Any]] = []
    if isinstance(value, dict) and not path.endswith(("baseline", "flaky")):
        for key, item in value.items():
            field = f"{path}.{key}" if path else key
            found += [(field, item), *values_of(item, field)]
    elif isinstance(value, list) and value and isinstance(value[0], dict):
        for item in value:
            found += values_of(item, f"{path}[]")
    return found


def fields_of(report: dict[str, Any]) -> set[str]:
    return {field for field, _ in values_of(report)}


TYPES = {"int": int, "float": float, "str": str, "bool": bool, "object": dict}


def matches(value: Any, kind: str) -> bool:
    if kind.endswith(" or null") and value is None:
        return True
    kind = kind.removesuffix(" or null")
    if kind.startswith("list of "):
        item = {"str": str, "int": int, "objects": dict}[kind.removeprefix("list of ")]
        return isinstance(value, list) and all(isinstance(v, item) for v in value)
    if kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        return True
    return isinstance(value, TYPES[kind]) and not (kind == "int" and isinstance(value, bool))


def notebook(*statuses: str, status: str = TESTED) -> NotebookReport:
    results = tuple(FaultResult(f"f{i}", s) for i, s in enumerate(statuses))
    return NotebookReport("nb.ipynb", status, results)


@pytest.mark.parametrize(
    ("reports", "rate", "passed"),
    [
        ([notebook(CAUGHT, CAUGHT, NOT_APPLICABLE)], 1.0, True),
        ([notebook(CAUGHT, SURVIVED)], 1.0, False),
        ([notebook(CAUGHT, SURVIVED)], 0.5, True),
        ([notebook(CAUGHT, CAUGHT), notebook(SURVIVED, CAUGHT)], 0.6, False),  # each notebook
        ([notebook(CAUGHT, ERROR)], 0.0, False),  # an error fails any policy
        ([notebook(NOT_APPLICABLE)], 1.0, True),
        ([notebook(status="no tests")], 1.0, True),
        ([notebook(status="unreadable")], 0.0, False),
    ],
)
def test_the_exit_policy_holds_each_notebook_to_the_rate(
    reports: list[NotebookReport], rate: float, passed: bool
) -> None:
    assert Summary(tuple(reports), ("f0", "f1"), rate).passed is passed


@pytest.mark.slow
def test_notebooks_without_tests_pass_as_the_init_workflow_runs_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`xargs -0 ntdd faults --report "$GITHUB_STEP_SUMMARY" < notebooks`."""
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "notes.ipynb", ["x = 1"])
    write_notebook(tmp_path / "plain.ipynb", ["values = [1, 2]", "# TEST\nassert sum(values) == 3"])
    summary = tmp_path / "summary.md"
    assert main(["faults", "--report", str(summary), "notes.ipynb", "plain.ipynb"]) == 0
    out = capsys.readouterr().out
    assert "notes.ipynb: no tests" in out and out.endswith(": met\n")
    assert "| `notes.ipynb` | no tests |" in summary.read_text(encoding="utf-8")
