"""The oracle of `ntdd faults`: each fault's verdict against its bug written in by hand,
under the same kill rule, run for run.

For a notebook of `fault_cases` (or `unseen_cases`, `fresh_training_cases`),
`ntdd faults` runs on a copy with the tests a careful user writes; then the
written-in bugs go through the same schedule of runs (`trials.run_trials`):
the clean copy and each mutant copy under the same seeds and thread counts,
each a pytest run of its own in this process, and the same rule decides. A
fault with no mutant (nothing to write into the notebook) is "not
applicable". `tests/test_faults_oracle.py` and `benchmarks/faults_oracle.py`
use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fault_cases import Case

from ntdd.faults.children import import_torch_for, same_threads
from ntdd.faults.command import Request, run_notebook
from ntdd.faults.results import FaultResult, Injected, NotebookReport, Outcomes
from ntdd.faults.runs import SeededRun, run_seeded
from ntdd.faults.trials import Trial, run_trials

NO_MUTANT = "no place in the notebook to write this bug"


@dataclass(frozen=True)
class Verdicts:
    """`ntdd faults`' report on a notebook, and the written-in bugs' trial."""

    ours: NotebookReport
    theirs: Trial

    def table(self) -> dict[str, tuple[str, str]]:
        """Each fault: (ntdd's verdict, the written-in bug's)."""
        bugs = {r.name: r.status for r in self.theirs.results}
        return {r.name: (r.status, bugs[r.name]) for r in self.ours.results}

    def results(self) -> dict[str, tuple[FaultResult, FaultResult]]:
        bugs = {r.name: r for r in self.theirs.results}
        return {r.name: (r, bugs[r.name]) for r in self.ours.results}


def verdicts(case: Case, kinds: tuple[str, ...], folder: Path, request: Request) -> Verdicts:
    """`ntdd faults` on the case's clean copy, and its written-in bugs under the same rule."""
    notebook = case.notebook(folder / "clean")
    ours = run_notebook(notebook, Request((str(notebook),), kinds, **_options(request)))
    mutants = {k: case.notebook(folder / k, case.mutants[k]) for k in kinds if k in case.mutants}
    args = request.pytest_args()
    import_torch_for(notebook)
    with same_threads(request.threads) as pin:

        def run(variant: str | None, seed: int, threads: int) -> tuple[Outcomes, Injected]:
            if variant is not None and variant not in mutants:
                return Outcomes(), Injected(not_applicable=NO_MUTANT)
            copy = notebook if variant is None else mutants[variant]
            outcomes, _ = run_seeded(copy, args, SeededRun(seed, threads, None, pin))
            return outcomes, Injected(applied=["written in"] if variant else [])

        theirs = run_trials(kinds, run, request.rule, request.seed, request.threads)
    return Verdicts(ours, theirs)


def _options(request: Request) -> dict[str, object]:
    return {
        "rule": request.rule,
        "seed": request.seed,
        "threads": request.threads,
        "smoke": request.smoke,
        "fork": request.fork,
    }


def disagreements(table: dict[str, tuple[str, str]]) -> list[str]:
    return [
        f"{k}: ntdd faults {ours}, the written-in bug {theirs}"
        for k, (ours, theirs) in table.items()
        if ours != theirs
    ]
