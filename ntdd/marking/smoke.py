"""`ntdd mark --smoke`'s work on one notebook: its runs, what they say, the marks, the check.

A notebook is run once in full and once in smoke mode (`smoke_runs`); the
tests that pass in full and fail in smoke mode in their own cell get
`@full_run` (`adoption`, `full_run`), a jupytext pair's files alike
(`files`); with `faults`, `ntdd faults` runs in both modes too and says which
faults smoke mode loses (`lost_faults`). After the marks are written, one
more smoke run checks that smoke mode is now green where the full run is.

A notebook is checked before anything runs: one that cannot be read, or a
code cell that is not Python, is bad input, named by file and cell: its runs
would only fail alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntdd.cells.cell_code import to_python
from ntdd.errors import NtddError
from ntdd.marking.adoption import Adoption, compare
from ntdd.marking.files import mark
from ntdd.marking.full_run import propose_full_run
from ntdd.marking.proposal import Proposal
from ntdd.marking.smoke_runs import Run, Settings, run_faults, run_tests
from ntdd.marking.verdicts import Verdict
from ntdd.notebook.markers import is_test_cell
from ntdd.notebook.read import read_bytes, read_notebook
from ntdd.values import Notebook


@dataclass
class Outcome:
    """What adopting smoke mode did for one notebook."""

    full: Run
    smoke: Run
    adoption: Adoption
    proposals: list[Proposal] = field(default_factory=list)
    faults: tuple[dict[str, Any], dict[str, Any]] | None = None  # in full, in smoke mode
    confirmed: Run | None = None  # the smoke run after the marks were written
    still_broken: list[str] = field(default_factory=list)  # tests it still breaks


def checked(path: Path) -> Notebook | None:
    """*path* read, every code cell Python (else `NtddError` naming the file and the cell);
    None where it has no test to compare."""
    notebook = read_notebook(path)
    if not any(is_test_cell(cell) for cell in notebook.cells):
        return None
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        try:
            to_python(cell.source)
        except SyntaxError as e:
            raise NtddError(
                f"{path}: {cell.label}: SyntaxError: {e.msg} (line {e.lineno}); fix it first: "
                "both runs would fail on it alike"
            ) from e
    return notebook


def adopt(
    files: list[Path],
    settings: Settings,
    write: bool,
    faults: bool,
    said: Callable[[str], None] | None = None,
) -> Outcome | None:
    """The notebook in *files* run in full and in smoke mode, its tests that need the full
    run marked (written with *write*, then checked by a smoke run), and with *faults* the
    faults smoke mode loses. *said* hears of each run as it starts. None for a notebook
    without tests: nothing runs."""
    tell = said or (lambda _text: None)
    notebook = checked(files[0])
    if notebook is None:
        return None
    was = {file: read_bytes(file) for file in files}
    tell("full run")
    full = run_tests(files[0], smoke=False, settings=settings)
    tell("smoke run")
    smoke = run_tests(files[0], smoke=True, settings=settings)
    found = compare(notebook, full.verdicts, smoke.verdicts)
    if not found.compared:
        why = "; ".join(f"{name}: {v.message}" for name, v in full.verdicts.items() if v.message)
        raise NtddError(
            f"{files[0]}: its full run ran none of its tests" + (f" ({why})" if why else "")
        )
    outcome = Outcome(full, smoke, found)
    if faults:
        tell("`ntdd faults` in full")
        in_full = run_faults(files[0], smoke=False, settings=settings)
        tell("`ntdd faults` in smoke mode")
        outcome.faults = (in_full, run_faults(files[0], smoke=True, settings=settings))
    outcome.proposals = mark(
        files, write, lambda file: propose_full_run(file, found.cells, was[file])
    )
    if write and outcome.proposals[0].after is not None:
        tell("smoke run, to check the marks")
        outcome.confirmed = run_tests(files[0], smoke=True, settings=settings)
        outcome.still_broken = still_broken(full.verdicts, outcome.confirmed.verdicts)
    return outcome


def still_broken(full: dict[str, Verdict], smoke: dict[str, Verdict]) -> list[str]:
    """The tests that pass in full and still fail or error in smoke mode."""
    return [
        f"{test}: {smoke[test].message}"
        for test, verdict in full.items()
        if verdict.outcome == "passed" and test in smoke and smoke[test].broke
    ]
