"""`ntdd faults`: which injected faults a notebook's tests notice.

The notebook's tests run once cleanly, then once per fault, in this process,
through `pytest --ntdd`. A fault is caught when a test that passed cleanly
fails or errors with it. Faults go into the namespace as each test reaches
its cell (an `Injection` in the run's `config.stash`); the notebook file is
never touched, and no pytest cache is written. Each run starts from a clean
state: the runtime forgets the modules a notebook imported from its folder.
"""

from __future__ import annotations

import contextlib
import io
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ntdd.faults import FAULTS, Fault, Namespace, NotApplicable, Seen
from ntdd.settings import INJECTION

CAUGHT_BY = ("failed", "error")


@dataclass
class FaultResult:
    name: str
    description: str
    applied: list[str] = field(default_factory=list)  # what it changed
    not_applicable: str = ""  # why it changed nothing
    caught_by: list[str] = field(default_factory=list)

    @property
    def applicable(self) -> bool:
        return bool(self.applied)

    @property
    def caught(self) -> bool:
        return bool(self.caught_by)


@dataclass
class FaultReport:
    notebook: Path
    baseline: dict[str, str]  # test id -> outcome of the clean run
    results: list[FaultResult]

    @property
    def applicable(self) -> list[FaultResult]:
        return [r for r in self.results if r.applicable]

    @property
    def kill_rate(self) -> float | None:
        applicable = self.applicable
        return sum(r.caught for r in applicable) / len(applicable) if applicable else None

    @property
    def all_caught(self) -> bool:
        return all(r.caught for r in self.applicable)


class _Outcomes:
    """A pytest plugin that records each test's outcome, by test id."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::", 1)[-1]
        if report.failed:
            self.outcomes[name] = "error" if report.when != "call" else "failed"
        elif report.skipped and name not in self.outcomes:
            self.outcomes[name] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.passed and report.when == "call":
            self.outcomes[name] = "xpassed" if hasattr(report, "wasxfail") else "passed"


def run_tests(notebook: Path, args: list[str], *plugins: object) -> dict[str, str]:
    """Run a notebook's tests in this process, quietly; return their outcomes."""
    recorder = _Outcomes()
    quiet = ["-p", "no:cacheprovider", "-p", "no:terminal", "-o", "addopts=", "-W", "ignore"]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = pytest.main([*quiet, "--ntdd", *args, str(notebook)], plugins=[recorder, *plugins])
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise RuntimeError(f"pytest could not run {notebook} (exit {int(code)})")
    return recorder.outcomes


def run_faults(notebook: Path, names: list[str], pytest_args: list[str]) -> FaultReport:
    baseline = run_tests(notebook, pytest_args)
    passing = {test for test, outcome in baseline.items() if outcome == "passed"}
    results = []
    for name in names:
        result = FaultResult(name, FAULTS[name].description)
        outcomes = run_tests(notebook, pytest_args, FaultPlugin(FAULTS[name], result))
        if not result.applied and not result.not_applicable:
            result.not_applicable = "no test ran the setup"
        result.caught_by = sorted(t for t in passing if outcomes.get(t) in CAUGHT_BY)
        results.append(result)
    return FaultReport(notebook, baseline, results)


class FaultPlugin:
    """Hands one fault to the notebooks' runtimes of one pytest run, through its stash."""

    def __init__(self, fault: Fault, result: FaultResult) -> None:
        self.injection = FaultInjection(fault, result)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[INJECTION] = self.injection


class FaultInjection:
    """Injects a fault as each test reaches its cell, and notes what it changed."""

    def __init__(self, fault: Fault, result: FaultResult) -> None:
        self.fault = fault
        self.result = result
        self._seen: dict[str, Seen] = {}  # per device: what the fault changed already

    def apply(self, namespace: Namespace, device: str) -> None:
        seen = self._seen.setdefault(device, weakref.WeakSet())
        try:
            applied = self.fault.inject(namespace, seen)
        except NotApplicable as e:
            if not self.result.applied:
                self.result.not_applicable = str(e)
            return
        self.result.not_applicable = ""
        if applied not in self.result.applied:
            self.result.applied.append(applied)


def format_table(report: FaultReport) -> str:
    """The fault x caught-by table, and the kill rate."""
    width = max(len(name) for name in FAULTS) + 2
    lines = [f"{'fault':<{width}}caught by", f"{'-' * (width - 2):<{width}}{'-' * 9}"]
    for r in report.results:
        if not r.applicable:
            verdict = f"not applicable: {r.not_applicable}"
        elif r.caught:
            verdict = ", ".join(r.caught_by)
        else:
            verdict = "NOT CAUGHT: no test failed"
        lines.append(f"{r.name:<{width}}{verdict}")
    rate = report.kill_rate
    caught = sum(r.caught for r in report.applicable)
    lines.append("")
    lines.append(
        f"kill rate: {caught}/{len(report.applicable)} applicable faults caught"
        + (f" ({rate:.0%})" if rate is not None else "")
    )
    failing = sorted(t for t, o in report.baseline.items() if o in CAUGHT_BY)
    if failing:
        lines.append(f"note: {len(failing)} test(s) fail without any fault: {', '.join(failing)}")
    return "\n".join(lines)


def as_json(report: FaultReport) -> dict[str, Any]:
    return {
        "notebook": str(report.notebook),
        "baseline": report.baseline,
        "faults": [
            {
                "name": r.name,
                "description": r.description,
                "applicable": r.applicable,
                "applied": r.applied,
                "not_applicable": r.not_applicable or None,
                "caught": r.caught,
                "caught_by": r.caught_by,
            }
            for r in report.results
        ],
        "kill_rate": report.kill_rate,
        "all_caught": report.all_caught,
    }
