"""`--ntdd-summary FILE`: the run's results as Markdown, appended to FILE.

Made for GitHub Actions' job summary (`--ntdd-summary "$GITHUB_STEP_SUMMARY"`):
a headline with the counts, and a table of the tests that failed, with the
notebook cell each came from. Under pytest-xdist, reports reach the
controller, which writes the summary; workers write nothing.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ntdd.notebook.files import append_to_file
from ntdd.plugin.results import files as results_files
from ntdd.settings.typed import settings_of

MAX_LISTED = 50  # failures listed in full; GitHub caps a step summary at 1 MiB
ORDER = ("failed", "error", "passed", "skipped", "xfailed", "xpassed")  # others follow, as met
NOT_OUTCOMES = frozenset({"", "warnings", "deselected"})  # the terminal's other keys
FAILING = ("failed", "error")  # words that make the headline red, alone or ending another


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

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Counted by the category pytest's terminal gives the report (a rerun's, a
        subtest's); the terminal's own tally replaces these counts where there is one."""
        category = category_of(self.config, report)
        if not category:
            return  # the terminal counts it nowhere either (a setup that passed)
        if getattr(report, "count_towards_summary", True):
            self.counts[category] += 1
        if report.failed:
            self.problems.append(_problem(report, category))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.counts["error"] += 1
            self.problems.append(_problem(report, "error"))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if hasattr(self.config, "workerinput"):
            return  # the controller has every report and writes the summary
        counts, problems = self._terminals_tally() or (self.counts, self.problems)
        failed = exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
        seconds = time.monotonic() - self.started
        text = render(self.title, counts, problems, seconds, failed=failed)
        reuse = self.config.pluginmanager.get_plugin("ntdd-reuse")  # `--ntdd-reuse`
        if reuse is not None:
            text += reuse.markdown()
        slow = self.config.pluginmanager.get_plugin("ntdd-slow-cells")  # `--ntdd-slow-cells`
        if slow is not None:  # its cells, gathered where the ledger ran before this hook
            text += slow.markdown()
        results_files.write(session, "--ntdd-summary", self.path, lambda: self._append(text))

    def _append(self, text: str) -> None:
        """One write, in append mode: the job summary's earlier steps stay, and a reader
        sees all of this run's text or none (a lone surrogate, from a file name
        printed, is written as its escape)."""
        append_to_file(self.path, text.encode("utf-8", "backslashreplace"))

    def _terminals_tally(self) -> tuple[Counter[str], list[Problem]] | None:
        """The counts of pytest's terminal line, and its failures and errors.

        Plugins amend the terminal's tally after the fact (pytest-rerunfailures
        takes back the subtests of a run it reruns): the tally is read at the end.
        """
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        stats = getattr(terminal, "stats", None)
        if not isinstance(stats, dict):
            return None  # `-p no:terminal`
        counts: Counter[str] = Counter()
        problems: list[Problem] = []
        for category, reports in stats.items():
            if category in NOT_OUTCOMES:
                continue
            for report in reports:
                if getattr(report, "count_towards_summary", True):
                    counts[category] += 1
                if getattr(report, "failed", False):
                    problems.append(_problem(report, category))
        return counts, problems


def category_of(config: pytest.Config, report: pytest.TestReport) -> str:
    """The category pytest's terminal counts *report* in (`passed`, `error`, `xfailed`,
    another plugin's `rerun`), or "" where it counts it nowhere (a setup that passed)."""
    status = config.hook.pytest_report_teststatus(report=report, config=config)
    return str(status[0]) if isinstance(status, tuple) and status else ""


def terminal_line(config: pytest.Config) -> tuple[str, str] | None:
    """pytest's own summary line, less its time (`14 failed, 2 passed, 15 errors`), and its
    colour: every plugin's tests counted (nbval's beside ntdd's) as the terminal counts
    them; None where there is no terminal (`-p no:terminal`)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    build = getattr(terminal, "build_summary_stats_line", None)
    if build is None:
        return None
    parts, colour = build()
    return ", ".join(str(text) for text, _ in parts), str(colour)


def summary_writer(config: pytest.Config) -> SummaryWriter | None:
    """The plugin for `--ntdd-summary`, or None without it."""
    settings = settings_of(config)
    if settings.summary is None:
        return None
    title = f"ntdd, shard {settings.shard}" if settings.shard else "ntdd"
    return SummaryWriter(config, settings.summary.path, title)


def render(
    title: str,
    counts: Counter[str],
    problems: list[Problem],
    seconds: float,
    failed: bool = False,
) -> str:
    """The Markdown: a headline, then the failures and errors, if any.

    *failed*: the run's exit status says so, whatever the counts say.
    """
    words = [*ORDER, *sorted(set(counts) - set(ORDER))]
    parts = [f"{counts[w]} {_as_pytest_says(w, counts[w])}" for w in words if counts[w]]
    parts = parts or ["no tests ran"]
    failed = failed or any(counts[w] and _failing(w) for w in counts)
    mark = "❌" if failed else "✅"
    lines = [f"### {mark} {title}: {', '.join(parts)} in {seconds:.1f} s", ""]
    if problems:
        lines += ["| test | outcome | where | message |", "|---|---|---|---|"]
        lines += [
            f"| {_code(p.nodeid)} | {p.outcome} | {_table_cell(p.where)} "
            f"| {_table_cell(p.message)} |"
            for p in problems[:MAX_LISTED]
        ]
        if len(problems) > MAX_LISTED:
            lines.append(f"\n… and {len(problems) - MAX_LISTED} more; see the JUnit report.")
        lines.append("")
    return "\n".join(lines) + "\n"


def _as_pytest_says(word: str, count: int) -> str:
    """The category as pytest's own tally line words it: "1 error", "2 errors"."""
    return f"{word}s" if word == "error" and count != 1 else word


def _failing(word: str) -> bool:
    """A category that fails the run: "failed", "error", or one ending so ("subtests failed")."""
    return any(word == w or word.endswith(f" {w}") for w in FAILING)


def _problem(report: Any, outcome: str) -> Problem:
    if isinstance(report, pytest.CollectReport):
        return Problem(report.nodeid, "error", "collection", _message(report))
    props = dict(report.user_properties)
    where = ""
    if "notebook" in props:
        cell_id = f" (id {props['cell_id']})" if props.get("cell_id") else ""
        where = f"{props['notebook']}, cell {props['cell']}{cell_id}"
    return Problem(report.nodeid, outcome, where, _message(report))


def _message(report: Any) -> str:
    """The first line of what went wrong: the exception, as pytest's short summary shows it,
    without the terminal's colours (nbval colours its own) or the module of ntdd's own
    exceptions (`NtddTimeout: …`, not `ntdd.runtime.timeout.NtddTimeout: …`)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr or "")
    text = _OWN_MODULE.sub("", _COLOUR.sub("", text))
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else ""


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # a terminal's SGR escape
_OWN_MODULE = re.compile(r"\bntdd(?:\.\w+)+\.(?=[A-Z]\w*\b)")


def _table_cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table."""
    return _one_line(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _code(text: str) -> str:
    """A code span for one table cell; inside it only `|` needs escaping (GFM)."""
    text = _one_line(text).replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
