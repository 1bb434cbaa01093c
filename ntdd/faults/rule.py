"""The kill rule: when a fault's runs fail significantly more often than the clean runs.

One run of a training notebook is not a verdict: a seed can fail a test
that another passes. So each fault runs under several seeds, as the clean
notebook does, and it is *caught* when its runs fail more often than the
clean runs by Fisher's exact test, one-sided, at the rule's α (DeepCrime's
rule for mutants of deep-learning programs). The runs are sequential: a
fault stops as soon as its verdict is decided.

- *caught*: the p-value is at most α.
- *survived*: even if every run left in its budget failed, the p-value
  could not reach α, and its runs fail no more often than the clean ones.
- *undecided*: the same, but its runs fail more often than the clean ones:
  the tests catch it under some seeds only. Never counted as caught.

With five clean runs that all pass, a fault whose first two runs fail is
caught (p = 1/21 ≈ 0.048), and one whose first three pass survives at the
default budget of six runs. Nothing here runs anything: `trials` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb

CAUGHT, SURVIVED, UNDECIDED = "caught", "survived", "undecided"
ALPHA = 0.05
MAX_RUNS = 6  # a fault's runs at most: its budget
CLEAN_RUNS = 5  # the clean notebook's runs, where they all agree
FLAKY_CLEAN_RUNS = 10  # ... and where some fail: how often, measured on more seeds


@dataclass(frozen=True)
class Tally:
    """How many runs of one variant (the clean notebook, or a fault) ran, and how many failed."""

    runs: int = 0
    failures: int = 0

    def add(self, failed: bool) -> Tally:
        return Tally(self.runs + 1, self.failures + failed)

    @property
    def rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0


def fisher_one_sided(fault: Tally, clean: Tally) -> float:
    """P(the fault's runs hold at least this many of all the failures) under the null
    hypothesis that a failure is as likely with the fault as without: the one-sided
    p-value of Fisher's exact test on the 2×2 table of runs × failed."""
    total = fault.runs + clean.runs
    failed = fault.failures + clean.failures
    tail = sum(
        comb(failed, k) * comb(total - failed, fault.runs - k)
        for k in range(fault.failures, min(fault.runs, failed) + 1)
    )
    return tail / comb(total, fault.runs)


@dataclass(frozen=True)
class KillRule:
    """The rule's settings: its significance level and the budget of runs per fault."""

    alpha: float = ALPHA
    max_runs: int = MAX_RUNS

    def verdict(self, fault: Tally, clean: Tally) -> str | None:
        """The fault's verdict from its runs so far, or None where another run could
        still decide it."""
        if fault.runs == 0:
            return None
        if fisher_one_sided(fault, clean) <= self.alpha:
            return CAUGHT
        left = self.max_runs - fault.runs
        best = Tally(fault.runs + left, fault.failures + left)  # every run left fails
        if left > 0 and fisher_one_sided(best, clean) <= self.alpha:
            return None
        return UNDECIDED if fault.rate > clean.rate else SURVIVED

    def fewest_runs(self, clean_runs: int) -> int | None:
        """The fewest runs that catch a fault failing every run against *clean_runs* clean
        runs that all pass; None where the budget has too few."""
        for runs in range(1, self.max_runs + 1):
            if fisher_one_sided(Tally(runs, runs), Tally(clean_runs, 0)) <= self.alpha:
                return runs
        return None

    def describe(self) -> str:
        return f"α = {self.alpha:g}"
