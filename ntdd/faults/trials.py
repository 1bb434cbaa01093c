"""Which runs `ntdd faults` makes of a notebook, in what order, and the verdict each fault gets.

The runs themselves are made elsewhere (forked children in `forked`, pytest
runs one after another in `runs`, mutant notebooks in the oracle's
benchmark): this module asks for a run of a *variant* (a fault's name, or
None for the clean notebook) under a seed and a thread count, and decides.

1. The clean notebook runs under the first seed. If it seeds itself
   (`seeds.SeedWatch`), every run would be the same: the clean notebook and
   each fault run once at the requested thread count and once at the other
   one of 1 and 2, and a fault is caught when its run fails at both, undecided
   when at one only.
2. Otherwise the clean notebook runs under `CLEAN_RUNS` seeds (more where
   some of them fail: its tests are flaky), and each fault under seeds in
   the same order until the kill rule (`rule.KillRule`) decides.

A run *fails* when a test that passed in a clean run (at its thread count)
fails or errors; timing decides nothing (a run whose only change is a test
past its timeout leaves its fault "timed out"). A fault that changed nothing
in its first run is "not applicable", one whose run could not be judged an
"error": neither runs again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ntdd.faults.results import (
    CAUGHT_BY,
    ERROR,
    NOT_APPLICABLE,
    TIMED_OUT,
    FaultResult,
    Injected,
    Outcomes,
)
from ntdd.faults.rule import (
    CAUGHT,
    CLEAN_RUNS,
    FLAKY_CLEAN_RUNS,
    SURVIVED,
    UNDECIDED,
    KillRule,
    Tally,
    fisher_one_sided,
)

Variant = str | None  # a fault's name, or None: the clean notebook
RunOne = Callable[[Variant, int, int], tuple[Outcomes, Injected]]  # (variant, seed, threads)
# Runs of several variants under one seed at one thread count, made together.
Batch = Callable[[Sequence[Variant], int, int], list[tuple[Outcomes, Injected]]]


@dataclass(frozen=True)
class Run:
    """One run: its seed and thread count, and the tests' outcomes."""

    seed: int
    threads: int
    outcomes: Outcomes

    @property
    def label(self) -> str:
        return (
            f"seed {self.seed}"
            if self.threads == 1
            else f"seed {self.seed}, {self.threads} threads"
        )


@dataclass
class CleanRuns:
    """The clean notebook's runs, and what they say about its tests."""

    runs: list[Run] = field(default_factory=list)

    def add(self, seed: int, threads: int, outcomes: Outcomes, injected: Injected) -> str:
        """One more clean run; how it died (a crash, a hang, `os._exit`), where it did: the
        notebook's error, which ends its runs."""
        if injected.error:
            return injected.error.replace("its run", "its clean run", 1)
        if outcomes.died:
            return f"its clean run called {outcomes.died}: a kernel would have died there"
        self.runs.append(Run(seed, threads, outcomes))
        return ""

    def passing(self, threads: int | None = None) -> set[str]:
        """The tests that passed in some clean run (at *threads*, where given): those a run
        can fail."""
        return {
            test
            for run in self.runs
            if threads is None or run.threads == threads
            for test, outcome in run.outcomes.tests.items()
            if outcome == "passed"
        }

    def failed(self, run: Run) -> list[str]:
        """The tests of clean *run* that fail where another clean run passed them (at another
        thread count too: a test that fails at two threads only is flaky)."""
        passing = self.passing()
        return [t for t, o in run.outcomes.tests.items() if o in CAUGHT_BY and t in passing]

    def tally(self) -> Tally:
        return Tally(len(self.runs), sum(bool(self.failed(run)) for run in self.runs))

    def flaky(self) -> dict[str, list[str]]:
        """Each test that fails in some clean runs and passes in others: the runs it failed."""
        found: dict[str, list[str]] = {}
        for run in self.runs:
            for test in self.failed(run):
                found.setdefault(test, []).append(run.label)
        return found


@dataclass(frozen=True)
class Trial:
    """A notebook's runs and verdicts."""

    clean: CleanRuns
    results: list[FaultResult]
    seeds_itself: str = ""  # its own seeding calls, where every run would be the same
    threads: tuple[int, ...] = (1,)
    died: str = ""  # how a clean run died (a crash, os._exit): nothing to judge by

    @property
    def baseline(self) -> Outcomes:
        return self.clean.runs[0].outcomes if self.clean.runs else Outcomes()


def run_trials(
    names: Sequence[str],
    run: RunOne,
    rule: KillRule,
    seed: int = 0,
    threads: int = 1,
    batch: Batch | None = None,
) -> Trial:
    """Every fault of *names* on one notebook, each run made by *run*; the runs at the other
    thread count of a notebook that seeds itself by *batch*, where given."""
    clean = CleanRuns()
    died = clean.add(seed, threads, *run(None, seed, threads))
    first = clean.runs[0].outcomes if not died else Outcomes()
    if not died and first.own_seeds and not first.unseeded:
        batch = batch or (lambda variants, seed, count: [run(v, seed, count) for v in variants])
        return _deterministic(names, run, batch, clean, threads)
    for extra in range(1, FLAKY_CLEAN_RUNS):
        if died or (extra >= CLEAN_RUNS and not clean.tally().failures):
            break  # flaky clean runs only: how often, measured on more seeds
        died = clean.add(seed + extra, threads, *run(None, seed + extra, threads))
    if died:
        return Trial(clean, [], died=died)
    results = [_sequential(name, run, clean, rule, seed, threads) for name in names]
    return Trial(clean, results, threads=(threads,))


def _sequential(
    name: str, run: RunOne, clean: CleanRuns, rule: KillRule, seed: int, threads: int
) -> FaultResult:
    """One fault under seeds in the clean runs' order, until the rule decides."""
    clean_tally = clean.tally()
    evidence = _Evidence(name)
    for attempt in range(rule.max_runs):
        outcomes, injected = run(name, seed + attempt, threads)
        stop = evidence.add(Run(seed + attempt, threads, outcomes), injected, clean)
        if stop is not None:
            return stop
        verdict = rule.verdict(evidence.tally, clean_tally)
        if verdict is not None:
            return evidence.result(verdict, clean_tally, rule)
    return evidence.result(UNDECIDED, clean_tally, rule)


def _deterministic(
    names: Sequence[str], run: RunOne, batch: Batch, clean: CleanRuns, threads: int
) -> Trial:
    """A notebook that seeds itself: one run at each of two thread counts."""
    other = 2 if threads == 1 else 1
    seed = clean.runs[0].seed
    evidence = {name: _Evidence(name) for name in names}
    results: dict[str, FaultResult] = {}
    for name in names:
        outcomes, injected = run(name, seed, threads)
        stop = evidence[name].add(Run(seed, threads, outcomes), injected, clean)
        if stop is not None:
            results[name] = stop
    left = [name for name in names if name not in results]
    found = batch([None, *left], seed, other)
    died = clean.add(seed, other, *found[0])
    if died:
        return Trial(clean, [], died=died)
    for name, (outcomes, injected) in zip(left, found[1:], strict=True):
        stop = evidence[name].add(Run(seed, other, outcomes), injected, clean)
        if stop is not None:
            results[name] = stop
            continue
        failures = evidence[name].tally.failures
        verdict = CAUGHT if failures == 2 else SURVIVED if failures == 0 else UNDECIDED
        result = evidence[name].result(verdict, clean.tally())
        if verdict == UNDECIDED:
            result = _with_reason(result, _threads_differ(evidence[name], threads, other))
        results[name] = result
    own = "; ".join(dict.fromkeys(clean.runs[0].outcomes.own_seeds))
    return Trial(clean, [results[name] for name in names], own, (threads, other))


def _threads_differ(evidence: _Evidence, threads: int, other: int) -> str:
    caught_at = threads if evidence.failed_runs[0].threads == threads else other
    missed_at = other if caught_at == threads else threads
    return (
        f"its tests fail at {caught_at} thread{'s' * (caught_at > 1)} and pass at "
        f"{missed_at}: the verdict depends on torch's thread count"
    )


def _with_reason(result: FaultResult, reason: str) -> FaultResult:
    return replace(result, reason=reason)


class _Evidence:
    """One fault's runs so far: what it changed, which runs failed and by which tests."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.tally = Tally()
        self.applied: list[str] = []
        self.caught_by: list[str] = []
        self.by_setup: list[str] = []
        self.setup_reason = ""
        self.failed_runs: list[Run] = []
        self.timed_out = ""

    def add(self, run: Run, injected: Injected, clean: CleanRuns) -> FaultResult | None:
        """Note one run; a result where the fault stops here (not applicable, an error, a
        run that only timed out)."""
        if injected.error:
            return FaultResult(self.name, ERROR, tuple(injected.applied), reason=injected.error)
        self.applied += [c for c in injected.applied if c not in self.applied]
        if not self.applied:
            why = injected.not_applicable or "no test reached its cell"
            return FaultResult(self.name, NOT_APPLICABLE, reason=why)
        passing = clean.passing(run.threads)
        failed = [t for t, o in run.outcomes.tests.items() if o in CAUGHT_BY and t in passing]
        late = [t for t, o in run.outcomes.tests.items() if o == TIMED_OUT and t in passing]
        self.tally = self.tally.add(bool(failed))
        if failed:
            self.failed_runs.append(run)
        for test in failed:
            if test not in self.caught_by:
                self.caught_by.append(test)
            if test in run.outcomes.setup_errors and test not in self.by_setup:
                self.by_setup.append(test)
                self.setup_reason = self.setup_reason or run.outcomes.setup_errors[test]
        if late and not failed and not self.caught_by:
            more = f" (and {len(late) - 1} more)" if len(late) > 1 else ""
            why = f"{late[0]} ran past its timeout with the fault in{more}"
            return FaultResult(self.name, TIMED_OUT, tuple(self.applied), reason=why)
        return None

    def result(self, verdict: str, clean: Tally, rule: KillRule | None = None) -> FaultResult:
        """The verdict, with the rule's p-value (none where the runs are deterministic)."""
        p_value = fisher_one_sided(self.tally, clean) if rule is not None else None
        caught = verdict in (CAUGHT, UNDECIDED)  # undecided: the tests that failed, and when
        return FaultResult(
            self.name,
            verdict,
            tuple(self.applied),
            caught_by=tuple(self.caught_by) if caught else (),
            by_setup=tuple(self.by_setup) if caught else (),
            reason=self.setup_reason if caught and self.by_setup else "",
            runs=self.tally.runs,
            failures=self.tally.failures,
            clean_runs=clean.runs,
            clean_failures=clean.failures,
            p_value=p_value,
            failed_runs=tuple(run.label for run in self.failed_runs),
        )
