"""What fault runs found, as plain values: per run, per fault, per notebook, overall.

A fault is *caught* when its runs fail significantly more often than the
clean notebook's (`rule`; `trials` makes the runs): a run fails when a test
that passed cleanly fails or errors with the fault injected. Timing decides
no verdict: a test that only ran past its timeout with the fault in catches
nothing, and a fault whose run's only change was a test timing out is *timed
out*, neither caught nor missed (it fails the exit policy, as an error does:
its run could not be judged). A test that errors because a setup cell raised
under the fault (the cell ran on faulty data) catches it too, and is marked
so: the report says "caught by setup". A fault that changed nothing is *not
applicable*, whatever the tests did; one whose run could not be judged (the
fault itself raised, or its run crashed or hung) is an *error*, neither
caught nor missed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CAUGHT_BY = ("failed", "error")
CAUGHT, SURVIVED, NOT_APPLICABLE, ERROR = "caught", "survived", "not applicable", "error"
UNDECIDED = "undecided"  # fails more often than the clean runs, not significantly: never caught
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
    own_seeds: list[str] = field(default_factory=list)  # the notebook's own seeding calls
    unseeded: dict[str, str] = field(default_factory=dict)  # generators the run's seed reached


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
    runs: int = 0  # the kill rule's tally: runs with the fault, and how many failed
    failures: int = 0
    clean_runs: int = 0  # ... and the clean notebook's
    clean_failures: int = 0
    p_value: float | None = None  # Fisher's one-sided; None where the runs are deterministic
    failed_runs: tuple[str, ...] = ()  # `seed 3`, `seed 0, 2 threads`: the runs that failed


@dataclass(frozen=True)
class NotebookReport:
    """Every fault on one notebook, and its clean run."""

    notebook: str  # as the command line named it
    status: str  # tested, no tests, unreadable, error (its clean run died)
    results: tuple[FaultResult, ...] = ()
    baseline: dict[str, str] = field(default_factory=dict)
    mode: str = ""  # fork or process: how the fault runs were made
    error: str = ""  # why it could not be read, or how its clean run died
    clean_runs: int = 0  # the clean notebook's runs, and how many failed a test another passed
    clean_failures: int = 0
    flaky: dict[str, list[str]] = field(default_factory=dict)  # test -> the clean runs it failed
    seeds_itself: str = ""  # its own seeding calls, where every run is the same
    threads: tuple[int, ...] = ()  # the thread counts its runs used
    alpha: float = 0.05  # the kill rule's level

    @property
    def applicable(self) -> list[FaultResult]:
        return [r for r in self.results if r.status in (CAUGHT, SURVIVED, UNDECIDED)]

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
        """Tests that fail in every clean run: they can catch nothing."""
        return [
            t
            for t, outcome in self.baseline.items()
            if outcome in CAUGHT_BY and t not in self.flaky
        ]

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
    alpha: float = 0.05  # the kill rule's level

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
    values = {**values, "threads": tuple(values.get("threads", ()))}

    def result(fields: dict[str, Any]) -> FaultResult:
        typed: dict[str, Any] = {
            k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()
        }
        return FaultResult(**typed)

    results = tuple(result(r) for r in values["results"])
    return NotebookReport(**{**values, "results": results})
