"""The oracle of `ntdd faults`: a fault is caught exactly when the same bug written in fails a test.

For each notebook of `fault_cases` (the sample notebooks, small lecture-style
ones, and real training notebooks nobody here wrote, from
`tests/corpus/training/`), each fault's bug is written into the notebook's
source by hand, at the place the fault models (the data where it is made, a
model where it is built, an optimizer where it is made, the `model.eval()`
left out), and the mutant's tests run under the same seeds and the same kill
rule as `ntdd faults`' runs of the fault (`written_in`); a fault with nothing
to write into the notebook has no mutant and must be "not applicable". `ntdd
faults` must agree, kind by kind. `benchmarks/faults_oracle.py` runs every case, the heavy
ones too, and prints the table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fault_cases import CASES, FOUR_CELLS
from written_in import disagreements, verdicts

from ntdd.faults import FAULTS
from ntdd.faults.command import Request
from ntdd.faults.results import CAUGHT, SURVIVED

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@pytest.mark.slow
def test_the_issues_four_cells_catch_what_the_written_in_bugs_catch(tmp_path: Path) -> None:
    """lr0, detached and scale fail the notebook written in; no zero_grad() still learns."""
    kinds = ("lr0", "stale_grad", "detached", "scale")
    found = verdicts(FOUR_CELLS, kinds, tmp_path, Request(()))
    table = found.table()
    assert disagreements(table) == []
    assert {k: ours for k, (ours, _) in table.items()} == {
        "lr0": CAUGHT, "stale_grad": SURVIVED, "detached": CAUGHT, "scale": CAUGHT,
    }  # fmt: skip
    # Run for run: the same runs, and the same failures on the same seeds.
    for name, (ours, theirs) in found.results().items():
        assert (ours.runs, ours.failed_runs) == (theirs.runs, theirs.failed_runs), name


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name, case in CASES.items() if not case.heavy])
def test_every_fault_agrees_with_its_written_in_bug(name: str, tmp_path: Path) -> None:
    for module in CASES[name].needs:
        pytest.importorskip(module)
    found = verdicts(CASES[name], tuple(FAULTS), tmp_path, Request(()))
    assert not found.ours.failing_cleanly, found.ours.baseline
    table = found.table()
    print(f"\n{name}: " + ", ".join(f"{k} {ours}/{theirs}" for k, (ours, theirs) in table.items()))
    assert disagreements(table) == []
    # A case whose every fault is "not applicable" on both sides would agree and test nothing.
    assert {theirs for _, theirs in table.values()} >= {CAUGHT}, table
