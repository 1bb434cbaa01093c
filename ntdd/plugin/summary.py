"""`--ntdd-summary FILE`: the run's results as Markdown, appended to FILE.

Made for GitHub Actions' job summary (`--ntdd-summary "$GITHUB_STEP_SUMMARY"`):
a headline with the counts, and a table of the tests that failed, with the
notebook cell each came from. Under pytest-xdist, reports reach the
controller, which writes the summary; workers write nothing.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

MAX_LISTED = 50  # failures listed in full; GitHub caps a step summary at 1 MiB
ORDER = ("failed", "error", "passed", "skipped", "xfailed", "xpassed")


@dataclass(frozen=True)
class Problem:
    """A test that failed or errored, as the summary lists it."""

    nodeid: str
    outcome: str
    where: str  # the notebook cell, when the test came from one
    message: str


class SummaryWriter:
    """Counts outcomes as the terminal does, and appends the Markdown at the end."""

    def __init__(self, config: pytest.Config, path: Path, title: str) -> None:
        self.config = config
        self.path = path
        self.title = title
        self.counts: Counter[str] = Counter()
        self.problems: list[Problem] = []
        self.started = time.monotonic()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome = _outcome(report)
        if outcome is None:
            return
        self.counts[outcome] += 1
        if outcome in ("failed", "error"):
            self.problems.append(_problem(report, outcome))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.counts["error"] += 1
            self.problems.append(Problem(report.nodeid, "error", "collection", _message(report)))

    def pytest_sessionfinish(self) -> None:
        if hasattr(self.config, "workerinput"):
            return  # the controller has every report and writes the summary
        text = render(self.title, self.counts, self.problems, time.monotonic() - self.started)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)


def summary_writer(config: pytest.Config) -> SummaryWriter | None:
    """The plugin for `--ntdd-summary`, or None without it."""
    raw = config.getoption("ntdd_summary")
    if not raw:
        return None
    shard = config.getoption("ntdd_shard", None)
    title = f"ntdd, shard {shard.strip()}" if shard else "ntdd"
    return SummaryWriter(config, config.invocation_params.dir / raw, title)


def render(title: str, counts: Counter[str], problems: list[Problem], seconds: float) -> str:
    """The Markdown: a headline, then the failures and errors, if any."""
    parts = [f"{counts[o]} {o}" for o in ORDER if counts[o]] or ["no tests ran"]
    mark = "❌" if counts["failed"] or counts["error"] else "✅"
    lines = [f"### {mark} {title}: {', '.join(parts)} in {seconds:.1f} s", ""]
    if problems:
        lines += ["| test | outcome | where | message |", "|---|---|---|---|"]
        lines += [
            f"| {_code(p.nodeid)} | {p.outcome} | {_cell(p.where)} | {_cell(p.message)} |"
            for p in problems[:MAX_LISTED]
        ]
        if len(problems) > MAX_LISTED:
            lines.append(f"\n… and {len(problems) - MAX_LISTED} more; see the JUnit report.")
        lines.append("")
    return "\n".join(lines) + "\n"


def _outcome(report: pytest.TestReport) -> str | None:
    """The outcome word the terminal would count for this report, or None."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when == "call":
        return report.outcome
    if report.failed:
        return "error"  # setup or teardown failed
    if report.skipped:
        return "skipped"  # skipped before the test ran
    return None


def _problem(report: pytest.TestReport, outcome: str) -> Problem:
    props = dict(report.user_properties)
    where = ""
    if "notebook" in props:
        cell_id = f" (id {props['cell_id']})" if props.get("cell_id") else ""
        where = f"{props['notebook']}, cell {props['cell']}{cell_id}"
    return Problem(report.nodeid, outcome, where, _message(report))


def _message(report: Any) -> str:
    """The first line of what went wrong: the exception, as pytest's short summary shows it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr or "")
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


def _cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table."""
    return _one_line(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _code(text: str) -> str:
    """A code span for one table cell; inside it only `|` needs escaping (GFM)."""
    text = _one_line(text).replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
