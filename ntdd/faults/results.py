"""What fault runs found, as plain values: per run, per fault, per notebook, overall.

A fault is *caught* when a test that passed cleanly fails or errors with it
injected. Timing decides no verdict: a test that only ran past its timeout
with the fault in catches nothing, and a fault whose run's only change was a
test timing out is *timed out*, neither caught nor missed (it fails the exit
policy, as an error does: its run could not be judged). A test that errors
because a setup cell raised under the fault (the cell ran on faulty data)
catches it too, and is marked so: the report
says "caught by setup". A fault that changed nothing is *not applicable*,
whatever the tests did; one whose run could not be judged (the fault itself
raised, or its run crashed or hung) is an *error*, neither caught nor missed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAUGHT_BY = ("failed", "error")
CAUGHT, SURVIVED, NOT_APPLICABLE, ERROR = "caught", "survived", "not applicable", "error"
TIMED_OUT = "timed out"  # a test's outcome, and a fault's status
TESTED, NO_TESTS, UNREADABLE = "tested", "no tests", "unreadable"
NO_TORCH = "the notebook does not use torch"  # the reason of every fault of such a notebook
DIED = "error"  # a notebook whose clean run died (os._exit, a crash): nothing to judge by


@dataclass
class Outcomes:
    """A run's verdict on each test, by test id (`test_x[cpu]`)."""

    tests: dict[str, str] = field(default_factory=dict)  # passed, failed, error, skipped, ...
    setup_errors: dict[str, str] = field(default_factory=dict)  # test -> the setup cell that raised
    died: str = ""  # a test's cell called os._exit: a kernel would have died there


@dataclass
class Injected:
    """What one fault did in one run: the changes it made, or why it made none."""

    applied: list[str] = field(default_factory=list)
    not_applicable: str = ""
    error: str = ""  # the fault could not be applied, or its run could not finish

    def note(self, changes: list[str]) -> None:
        self.not_applicable = ""
        self.applied += [c for c in changes if c not in self.applied]


@dataclass(frozen=True)
class FaultResult:
    """One fault on one notebook."""

    name: str
    status: str  # caught, survived, not applicable, error, timed out
    applied: tuple[str, ...] = ()
    caught_by: tuple[str, ...] = ()  # tests that passed cleanly and failed or errored
    by_setup: tuple[str, ...] = ()  # of those, the ones a setup cell's error errored
    reason: str = ""  # not applicable: what is missing; error: what went wrong; setup: the cell
    checked: str = ""  # not caught: the test cells that make the check it suggests, if any
    missed: str = ""  # ... and why they passed with the fault in, as far as can be told


def judge(name: str, baseline: Outcomes, run: Outcomes, injected: Injected) -> FaultResult:
    """The verdict on one fault, from the clean run's outcomes and the run with the fault."""
    if injected.error:
        return FaultResult(name, ERROR, tuple(injected.applied), reason=injected.error)
    if not injected.applied:
        why = injected.not_applicable or "no test reached its cell"
        return FaultResult(name, NOT_APPLICABLE, reason=why)
    passing = [t for t, outcome in baseline.tests.items() if outcome == "passed"]  # run order
    caught = tuple(t for t in passing if run.tests.get(t) in CAUGHT_BY)
    by_setup = tuple(t for t in caught if t in run.setup_errors)
    reason = run.setup_errors[by_setup[0]] if by_setup else ""
    if not caught:
        late = [t for t in passing if run.tests.get(t) == TIMED_OUT]
        if late:
            why = f"{late[0]} ran past its timeout with the fault in" + (
                f" (and {len(late) - 1} more)" if len(late) > 1 else ""
            )
            return FaultResult(name, TIMED_OUT, tuple(injected.applied), reason=why)
    status = CAUGHT if caught else SURVIVED
    return FaultResult(name, status, tuple(injected.applied), caught, by_setup, reason)


@dataclass(frozen=True)
class NotebookReport:
    """Every fault on one notebook, and its clean run."""

    notebook: str  # as the command line named it
    status: str  # tested, no tests, unreadable, error (its clean run died)
    results: tuple[FaultResult, ...] = ()
    baseline: dict[str, str] = field(default_factory=dict)
    mode: str = ""  # fork or process: how the fault runs were made
    error: str = ""  # why it could not be read, or how its clean run died

    @property
    def applicable(self) -> list[FaultResult]:
        return [r for r in self.results if r.status in (CAUGHT, SURVIVED)]

    @property
    def caught(self) -> int:
        return sum(r.status == CAUGHT for r in self.results)

    @property
    def without_torch(self) -> bool:
        """Tested, and no fault applied because the notebook does not use torch."""
        return (
            self.status == TESTED
            and bool(self.results)
            and all(r.status == NOT_APPLICABLE and r.reason == NO_TORCH for r in self.results)
        )

    @property
    def errors(self) -> int:
        """Faults whose runs could not be judged: errors, and runs that only timed out."""
        return sum(r.status in (ERROR, TIMED_OUT) for r in self.results)

    @property
    def kill_rate(self) -> float | None:
        applicable = len(self.applicable)
        return self.caught / applicable if applicable else None

    @property
    def failing_cleanly(self) -> list[str]:
        return [t for t, outcome in self.baseline.items() if outcome in CAUGHT_BY]

    def meets(self, min_kill_rate: float) -> bool:
        """The exit policy for one notebook: no errors, and enough of its faults caught."""
        if self.status != TESTED:
            return self.status == NO_TESTS
        rate = self.kill_rate
        return not self.errors and (rate is None or rate >= min_kill_rate - 1e-9)


@dataclass(frozen=True)
class Summary:
    """All notebooks of one `ntdd faults` command."""

    reports: tuple[NotebookReport, ...]
    faults: tuple[str, ...]
    min_kill_rate: float

    @property
    def caught(self) -> int:
        return sum(r.caught for r in self.reports)

    @property
    def applicable(self) -> int:
        return sum(len(r.applicable) for r in self.reports)

    @property
    def kill_rate(self) -> float | None:
        return self.caught / self.applicable if self.applicable else None

    @property
    def passed(self) -> bool:
        return all(r.meets(self.min_kill_rate) for r in self.reports)


def as_dict(value: Any) -> dict[str, Any]:
    """A run's `Outcomes` or `Injected` as JSON-ready values (for the pipe from a child)."""
    return dict(vars(value))


def report_as_dict(report: NotebookReport) -> dict[str, Any]:
    """A notebook's report as JSON-ready values (for the pipe from the child that made it)."""
    return {**vars(report), "results": [vars(r) for r in report.results]}


def report_from_dict(values: dict[str, Any]) -> NotebookReport:
    def result(fields: dict[str, Any]) -> FaultResult:
        typed: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()
        }
        return FaultResult(**typed)

    results = tuple(result(r) for r in values["results"])
    return NotebookReport(**{**values, "results": results})
