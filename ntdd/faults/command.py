"""`ntdd faults PATH...`: each notebook's clean run and fault runs, and the verdict on all.

A notebook without `# TEST` cells (in another language too, as `pytest
--ntdd` passes it over) is listed as "no tests" and passes: a workflow hands
`ntdd faults` every notebook it picked, tested or not. One
that cannot be read is listed as "unreadable" and fails the command (exit 2),
after the others have run. One whose clean run dies (`os._exit` in a cell, a
crash) is listed as an "error" and fails the command (exit 1): its runs happen
in a child process (`apart`), so the others still run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ntdd.errors import NotPythonError, NtddError
from ntdd.faults.catalogue import FAULTS
from ntdd.faults.results import (
    DIED,
    NO_TESTS,
    SURVIVED,
    TESTED,
    UNREADABLE,
    FaultResult,
    NotebookReport,
    Summary,
)
from ntdd.faults.rule import KillRule
from ntdd.faults.trials import Trial
from ntdd.notebook.markers import is_test_cell
from ntdd.notebook.read import read_notebook
from ntdd.pipeline.plan import make_plan
from ntdd.values import Cell, Notebook


@dataclass(frozen=True)
class Request:
    """What `ntdd faults` was asked to do."""

    paths: tuple[str, ...]
    faults: tuple[str, ...] = tuple(FAULTS)
    devices: str = "cpu"
    timeout: str | None = None
    fork: bool = True  # fork the fault runs from the clean run, where that is safe
    min_kill_rate: float = 1.0
    smoke: bool = False  # every run in smoke mode (`--ntdd-smoke`)
    rule: KillRule = KillRule()  # noqa: RUF009 (frozen: one shared default is safe)
    seed: int = 0  # the first run's seed; the next runs take the next ones
    threads: int = 1  # torch's threads in each run (a notebook that seeds itself: the other too)

    def pytest_args(self) -> list[str]:
        timeout = ["--ntdd-timeout", self.timeout] if self.timeout else []
        smoke = ["--ntdd-smoke"] if self.smoke else []
        return ["--ntdd-devices", self.devices, *timeout, *smoke]


def fault_names(text: str) -> tuple[str, ...]:
    """The faults a comma-separated list names, checked."""
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = sorted(set(names) - set(FAULTS))
    if unknown or not names:
        raise NtddError(
            f"unknown fault(s): {', '.join(unknown) or '(none given)'}; known: {', '.join(FAULTS)}"
        )
    return names


def run_faults(
    request: Request, each: Callable[[NotebookReport], None] = lambda _report: None
) -> Summary:
    """Every notebook the paths name, in turn; *each* sees each notebook's report as it is done."""
    from ntdd.notebook.files import find_notebooks

    reports = []
    for notebook in list(find_notebooks(request.paths)):
        report = run_notebook(notebook, request)
        each(report)
        reports.append(report)
    return Summary(tuple(reports), request.faults, request.min_kill_rate, request.rule.alpha)


def run_notebook(notebook: Path, request: Request) -> NotebookReport:
    try:
        read = read_notebook(notebook)  # the runs plan it: here, whether it has tests, and which
        cells = read.cells
    except NotPythonError as e:
        if e.has_tests:
            return NotebookReport(str(notebook), UNREADABLE, error=str(e))
        return NotebookReport(str(notebook), NO_TESTS)  # as `pytest --ntdd` passes it over
    except NtddError as e:
        return NotebookReport(str(notebook), UNREADABLE, error=str(e))
    if not any(is_test_cell(cell) for cell in cells):
        return NotebookReport(str(notebook), NO_TESTS)
    if not request.fork:
        report = _tested(notebook, request)
    else:
        from ntdd.faults.apart import run_apart

        report = run_apart(notebook, lambda: _tested(notebook, request))
    tests = _test_cells(read)
    results = tuple(_checked(r, tests, report.baseline) for r in report.results)
    return replace(report, results=results)


def _test_cells(notebook: Notebook) -> list[tuple[Cell, tuple[str, ...]]]:
    """Each test cell and the names of the tests it becomes (none where it cannot be planned)."""
    try:
        return [(t.cell, t.names) for t in make_plan(notebook).tests]
    except NtddError:
        return [(cell, ()) for cell in notebook.cells if is_test_cell(cell)]


def _checked(
    result: FaultResult,
    tests: Sequence[tuple[Cell, tuple[str, ...]]],
    baseline: Mapping[str, str],
) -> FaultResult:
    """A fault no test caught, with the test cells that make the check it suggests, and why
    they missed: the report says so, rather than suggest the check the notebook makes."""
    if result.status != SURVIVED:
        return result
    names = FAULTS[result.name].checks
    making = [(c, n) for c, n in tests if any(check in c.source for check in names)]
    found = [f"cell {c.index} ({', '.join(n for n in names if n in c.source)})" for c, _ in making]
    return replace(result, checked="; ".join(found), missed=_missed(result.name, making, baseline))


def _missed(
    fault: str, making: Sequence[tuple[Cell, tuple[str, ...]]], baseline: Mapping[str, str]
) -> str:
    """Why the test cells that make a fault's check passed with it in, as far as the
    notebook and the clean run tell."""
    if not making:
        return ""
    outcomes = [
        outcome
        for _, tests in making
        for test, outcome in baseline.items()
        if test.partition("[")[0] in tests
    ]
    if outcomes and "passed" not in outcomes:
        return "it does not pass without any fault (it fails or is skipped), so it can catch none"
    if fault == "mode" and all(
        ".eval()" in c.source or "train(False)" in c.source for c, _ in making
    ):
        return (
            "the test calls eval() itself before it checks the mode, so the check sees eval "
            "mode whatever the setup cells did"
        )
    return (
        "it passed with the fault in: it looks at another object than the one changed, "
        "or before the fault acts (see what changed)"
    )


def _tested(notebook: Path, request: Request) -> NotebookReport:
    """The runs and verdicts; a clean run that died leaves nothing to judge by."""
    trial, mode = _runs(notebook, request)
    baseline = trial.baseline
    if trial.died:
        return NotebookReport(str(notebook), DIED, baseline=baseline.tests, error=trial.died)
    clean = trial.clean.tally()
    return NotebookReport(
        str(notebook),
        TESTED,
        tuple(trial.results),
        baseline.tests,
        mode,
        clean_runs=clean.runs,
        clean_failures=clean.failures,
        flaky=trial.clean.flaky(),
        seeds_itself=trial.seeds_itself,
        threads=trial.threads,
        alpha=request.rule.alpha,
    )


def _runs(notebook: Path, request: Request) -> tuple[Trial, str]:
    """The notebook's runs and verdicts, and how the runs were made."""
    from ntdd.faults.forked import forked_runs
    from ntdd.faults.runs import one_after_another

    how = (notebook, request.faults, request.pytest_args(), request.rule, request.seed)
    if request.fork:
        return forked_runs(*how, request.threads)
    return one_after_another(*how, request.threads), "process"
