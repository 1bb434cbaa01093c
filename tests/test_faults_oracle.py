"""The oracle of `ntdd faults`: a fault is caught exactly when the same bug written in fails a test.

For each notebook of `fault_cases` (the sample notebooks, small lecture-style
ones, and real training notebooks nobody here wrote, from
`tests/corpus/training/`), each fault's bug is written into the notebook's
source by hand, at the place the fault models (the data where it is made, a
model where it is built, an optimizer where it is made, the `model.eval()`
left out), and the mutant's tests run; a fault with nothing to write into the
notebook has no mutant and must be "not applicable". `ntdd faults` must
agree, kind by kind. `benchmarks/faults_oracle.py` runs every case, the heavy
ones too, and prints the table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fault_cases import CASES, FOUR_CELLS, Case

from ntdd.faults import FAULTS
from ntdd.faults.children import same_threads
from ntdd.faults.command import Request, run_notebook
from ntdd.faults.results import CAUGHT, CAUGHT_BY, NOT_APPLICABLE, SURVIVED
from ntdd.faults.runs import run_session

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ARGS = Request(()).pytest_args()


def mutant_verdict(case: Case, kind: str, folder: Path, baseline: dict[str, str]) -> str:
    """Caught when a test that passed cleanly fails or errors with the bug written in."""
    if kind not in case.mutants:
        return NOT_APPLICABLE
    mutant = case.notebook(folder / kind, case.mutants[kind])
    with same_threads():  # as `ntdd faults` runs every notebook
        outcomes = run_session(mutant, ARGS)
    passing = [t for t, outcome in baseline.items() if outcome == "passed"]
    return CAUGHT if any(outcomes.tests.get(t) in CAUGHT_BY for t in passing) else SURVIVED


def verdicts(case: Case, kinds: tuple[str, ...], folder: Path) -> dict[str, tuple[str, str]]:
    """Each fault's verdict from `ntdd faults`, and the written-in bug's."""
    notebook = case.notebook(folder / "clean")
    report = run_notebook(notebook, Request((str(notebook),), kinds))
    assert not report.failing_cleanly, report.baseline
    found = {r.name: r.status for r in report.results}
    return {k: (found[k], mutant_verdict(case, k, folder, report.baseline)) for k in kinds}


def disagreements(table: dict[str, tuple[str, str]]) -> list[str]:
    return [
        f"{k}: ntdd faults {ours}, the written-in bug {theirs}"
        for k, (ours, theirs) in table.items()
        if ours != theirs
    ]


@pytest.mark.slow
def test_the_issues_four_cells_catch_what_the_written_in_bugs_catch(tmp_path: Path) -> None:
    """lr0, detached and scale fail the notebook written in; no zero_grad() still learns."""
    table = verdicts(FOUR_CELLS, ("lr0", "stale_grad", "detached", "scale"), tmp_path)
    assert disagreements(table) == []
    assert {k: ours for k, (ours, _) in table.items()} == {
        "lr0": CAUGHT, "stale_grad": SURVIVED, "detached": CAUGHT, "scale": CAUGHT,
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, case in CASES.items() if not case.heavy])
def test_every_fault_agrees_with_its_written_in_bug(name: str, tmp_path: Path) -> None:
    for module in CASES[name].needs:
        pytest.importorskip(module)
    table = verdicts(CASES[name], tuple(FAULTS), tmp_path)
    print(f"\n{name}: " + ", ".join(f"{k} {ours}/{theirs}" for k, (ours, theirs) in table.items()))
    assert disagreements(table) == []
    # A case whose every fault is "not applicable" on both sides would agree and test nothing.
    assert {theirs for _, theirs in table.values()} >= {CAUGHT}, table
