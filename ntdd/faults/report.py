"""`ntdd faults` results as people and machines read them: text, Markdown and JSON.

- The text table, per notebook: how its runs were made (a notebook that
  seeds itself, or how many seeds, and the clean runs' flaky tests), then
  each fault: what it changed, its runs that failed and the p-value of the
  kill rule, and the tests that caught it, or for a fault no test caught,
  the check that would have. With several notebooks, a summary of
  notebook × fault follows.
- Markdown, for GitHub Actions' job summary: the summary table, then each
  notebook's table in a collapsed section.
- JSON: the same facts, in the schema the docs' reference documents (`SCHEMA`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ntdd.faults.catalogue import FAULTS
from ntdd.faults.results import (
    CAUGHT,
    DIED,
    ERROR,
    NOT_APPLICABLE,
    SURVIVED,
    TESTED,
    TIMED_OUT,
    UNDECIDED,
    FaultResult,
    NotebookReport,
    Summary,
)

SCHEMA = 4  # the JSON's "version"
CHANGED_WIDTH = 44  # the text table's "what changed" column, at most
CAUGHT_WIDTH = 72  # the tests listed in its "caught by" column, about
NO_TORCH_TEXT = "no torch: no faults apply"
_WORD = {
    CAUGHT: "caught", SURVIVED: "MISSED", NOT_APPLICABLE: "-", ERROR: "ERROR", TIMED_OUT: "TIMEOUT",
    UNDECIDED: "UNSURE",
}  # fmt: skip
_MARK = {
    CAUGHT: "✅", SURVIVED: "❌", NOT_APPLICABLE: "➖", ERROR: "⚠️", TIMED_OUT: "⏱️", UNDECIDED: "❔",
}  # fmt: skip


def rate_text(caught: int, applicable: int) -> str:
    """`11/12 (92%)`, or `0/0` where nothing applied."""
    return f"{caught}/{applicable}" + (f" ({caught / applicable:.0%})" if applicable else "")


def caught_text(caught: int, applicable: int, alpha: float) -> str:
    """`11 of 12 applicable faults caught at α = 0.05 (92%)`: the kill rate, and its rule."""
    share = f" ({caught / applicable:.0%})" if applicable else ""
    return f"{caught} of {applicable} applicable faults caught at α = {alpha:g}{share}"


def runs_text(report: NotebookReport) -> str:
    """How the notebook's runs were made: one line, for the text and the Markdown."""
    if report.seeds_itself:
        counts = " and ".join(map(str, report.threads))
        return (
            f"runs: the notebook seeds itself ({report.seeds_itself}): every run is the same "
            f"under any seed, so each fault ran once at {counts} torch threads, caught where "
            "its tests fail at both"
        )
    return (
        f"runs: each fault under new seeds until decided, against {report.clean_runs} clean "
        f"runs ({report.clean_failures} failed); caught where its runs fail more often "
        f"(Fisher's exact test, one-sided, α = {report.alpha:g})"
    )


def flaky_lines(report: NotebookReport) -> list[str]:
    """The clean runs' flaky tests: which, on which runs, how often."""
    return [
        f"{test} failed {len(runs)} of {report.clean_runs} clean runs ({', '.join(runs)})"
        for test, runs in report.flaky.items()
    ]


def policy_text(min_kill_rate: float) -> str:
    if min_kill_rate >= 1:
        return "every applicable fault caught"
    return f"a kill rate of {min_kill_rate:.0%} or more in each notebook"


# -- text -----------------------------------------------------------------------------


def notebook_table(report: NotebookReport) -> str:
    """One notebook: a row per fault, then its kill rate."""
    if report.status == DIED:
        return f"{report.notebook}: error: {report.error}"
    if report.status != TESTED:
        return f"{report.notebook}: {report.status}"
    if report.without_torch:
        return f"{report.notebook}: {NO_TORCH_TEXT}"
    rows = [
        (r.name, _fit(r.applied, CHANGED_WIDTH) or "-", _failed(r), _p(r), _verdict(r))
        for r in report.results
    ]
    head = ("fault", "what changed", "failed", "p", "caught by")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head[:-1])]
    lines = [report.notebook, runs_text(report), ""]
    lines += _columns([head, *rows], widths)
    rate = caught_text(report.caught, len(report.applicable), report.alpha)
    lines += ["", f"kill rate: {rate}"]
    if report.flaky:
        lines += [f"flaky without any fault: {line}" for line in flaky_lines(report)]
    if report.failing_cleanly:
        failing = report.failing_cleanly
        lines.append(f"note: {len(failing)} test(s) fail without any fault: {', '.join(failing)}")
    return "\n".join(lines)


def _failed(result: FaultResult) -> str:
    """`2/2`: the fault's runs that failed, of its runs; `-` where it did not run to a verdict."""
    return f"{result.failures}/{result.runs}" if result.runs else "-"


def _p(result: FaultResult) -> str:
    return f"{result.p_value:.3g}" if result.p_value is not None else "-"


def _columns(rows: Sequence[tuple[str, ...]], widths: Sequence[int]) -> list[str]:
    """Left-aligned columns of *widths*, and a last column as long as it is."""
    head, *body = rows
    rule = (*("-" * w for w in widths), "-" * len(head[-1]))
    return [
        "  ".join([*(f"{c:<{w}}" for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in [head, rule, *body]
    ]


def _fit(items_: Iterable[str], width: int) -> str:
    """As many of *items_* as fit in *width*, then how many more."""
    items = list(items_)
    for shown in range(len(items), 0, -1):
        more = f" +{len(items) - shown} more" if shown < len(items) else ""
        text = ", ".join(items[:shown]) + more
        if len(text) <= width:
            return text
    more = f" +{len(items) - 1} more" if len(items) > 1 else ""
    return items[0][: width - len(more) - 1] + "…" + more if items else ""


def _verdict(result: FaultResult) -> str:
    if result.status == NOT_APPLICABLE:
        return f"not applicable: {result.reason}"
    if result.status == ERROR:
        return f"ERROR: {result.reason}"
    if result.status == TIMED_OUT:
        return f"TIMED OUT, neither caught nor missed: {result.reason}"
    if result.status == SURVIVED:
        return f"NOT CAUGHT. {_plain(advice(result))}"
    if result.status == UNDECIDED:
        return f"UNDECIDED, not caught: {undecided_text(result)}"
    if result.by_setup == result.caught_by:
        return f"caught by setup ({result.reason}): {_fit(result.caught_by, CAUGHT_WIDTH)}"
    marked = [f"{t} (setup)" if t in result.by_setup else t for t in result.caught_by]
    return _fit(marked, CAUGHT_WIDTH)


def undecided_text(result: FaultResult) -> str:
    """Why a fault is undecided: on which runs its tests failed, and by which tests."""
    if result.reason:
        return result.reason
    runs = ", ".join(result.failed_runs)
    return (
        f"its tests failed on {result.failures} of {result.runs} runs ({runs}: "
        f"{', '.join(result.caught_by)}), not significantly more often than on "
        f"{result.clean_failures} of {result.clean_runs} clean runs"
    )


def advice(result: FaultResult) -> str:
    """What to do about a fault no test caught (Markdown): the check that would catch it, or,
    where a test cell makes that check already, why it did not."""
    if result.checked:
        made = f"The check it needs is made (test {result.checked})"
        return f"{made}, but missed the fault: {result.missed}"
    return f"Try: {FAULTS[result.name].suggestion}"


def _plain(markdown: str) -> str:
    return markdown.replace("`", "")


def summary_table(summary: Summary) -> str:
    """Notebook × fault, each notebook's kill rate, and the overall one and the policy."""
    names = summary.faults
    width = max(len("notebook"), *(len(r.notebook) for r in summary.reports))
    head = ["notebook".ljust(width), *(n.ljust(max(len(n), 6)) for n in names), "kill rate"]
    lines = ["  ".join(head), "  ".join("-" * len(h) for h in head)]
    for report in summary.reports:
        if report.status != TESTED or report.without_torch:
            status = NO_TORCH_TEXT if report.without_torch else report.status
            lines.append(f"{report.notebook:<{width}}  {status}")
            continue
        verdicts = {r.name: _WORD[r.status] for r in report.results}
        cells = [verdicts.get(n, "").ljust(max(len(n), 6)) for n in names]
        rate = rate_text(report.caught, len(report.applicable))
        lines.append("  ".join([report.notebook.ljust(width), *cells, rate]))
    return "\n".join(lines)


def verdict_line(summary: Summary) -> str:
    """The last line: the exit policy's verdict, after the overall kill rate of several."""
    policy = f"exit policy ({policy_text(summary.min_kill_rate)}): "
    policy += "met" if summary.passed else "NOT met"
    if len(summary.reports) == 1:
        return policy
    return f"overall: {caught_text(summary.caught, summary.applicable, summary.alpha)}; {policy}"


# -- Markdown -------------------------------------------------------------------------


def markdown(summary: Summary) -> str:
    """The report for a job summary: a headline, notebook × fault, then each notebook."""
    count = len(summary.reports)
    mark = "✅" if summary.passed else "❌"
    rate = caught_text(summary.caught, summary.applicable, summary.alpha)
    lines = [
        f"### {mark} ntdd faults: {rate} in {count} notebook{'s' if count != 1 else ''}",
        "",
        f"Exit policy: {policy_text(summary.min_kill_rate)}.",
        "",
        *_markdown_summary(summary),
        "",
        "✅ caught · ❌ not caught · ❔ undecided, not caught · ➖ not applicable · ⚠️ error · "
        "⏱️ timed out",
        "",
    ]
    for report in summary.reports:
        if report.status == TESTED and not report.without_torch:
            lines += _markdown_notebook(report)
    return "\n".join(lines) + "\n"


def _markdown_summary(summary: Summary) -> list[str]:
    names = summary.faults
    lines = [
        "| notebook | " + " | ".join(f"`{n}`" for n in names) + " | kill rate |",
        "|---|" + ":-:|" * len(names) + "---|",
    ]
    for report in summary.reports:
        if report.status != TESTED or report.without_torch:  # then empty cells to the end
            status = NO_TORCH_TEXT if report.without_torch else report.status
            empty = " |" * len(names)
            lines.append(f"| {_code(report.notebook)} | {_table_cell(status)} |{empty}")
            continue
        marks = {r.name: _MARK[r.status] for r in report.results}
        cells = " | ".join(marks.get(n, "") for n in names)
        rate = rate_text(report.caught, len(report.applicable))
        lines.append(f"| {_code(report.notebook)} | {cells} | {rate} |")
    return lines


def _markdown_notebook(report: NotebookReport) -> list[str]:
    rate = rate_text(report.caught, len(report.applicable))
    lines = [
        f"<details><summary><code>{_html(report.notebook)}</code>: {rate} caught</summary>",
        "",
        _table_cell(runs_text(report)).capitalize() + ".",
        "",
        "| fault | what changed | failed | p | caught by |",
        "|---|---|---|---|---|",
    ]
    for r in report.results:
        changed = "<br>".join(_table_cell(c) for c in r.applied) or "–"
        verdict = _markdown_verdict(r)
        lines.append(f"| `{r.name}` | {changed} | {_failed(r)} | {_p(r)} | {verdict} |")
    if report.flaky:
        lines += ["", "Flaky without any fault:", ""]
        lines += [f"- {_table_cell(line)}" for line in flaky_lines(report)]
    if report.failing_cleanly:
        lines += ["", f"Failing without any fault: {', '.join(map(_code, report.failing_cleanly))}"]
    return [*lines, "", "</details>", ""]


def _markdown_verdict(result: FaultResult) -> str:
    if result.status == NOT_APPLICABLE:
        return f"➖ not applicable: {_table_cell(result.reason)}"
    if result.status == ERROR:
        return f"⚠️ {_table_cell(result.reason)}"
    if result.status == TIMED_OUT:
        return f"⏱️ timed out, neither caught nor missed: {_table_cell(result.reason)}"
    if result.status == SURVIVED:
        return f"❌ not caught. {advice(result).replace('|', chr(92) + '|')}"
    if result.status == UNDECIDED:
        return f"❔ undecided, not caught: {_table_cell(undecided_text(result))}"
    tests = ", ".join(
        _code(t) + (" (setup)" if t in result.by_setup else "") for t in result.caught_by
    )
    if result.by_setup == result.caught_by:
        return f"caught by setup ({_table_cell(result.reason)}): {tests}"
    return tests


def _table_cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table."""
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _code(text: str) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- JSON -----------------------------------------------------------------------------


def as_json(summary: Summary, exit_code: int) -> dict[str, Any]:
    """The machine-readable report; the reference's "ntdd faults JSON" lists every field."""
    return {
        "version": SCHEMA,
        "faults": list(summary.faults),
        "min_kill_rate": summary.min_kill_rate,
        "alpha": summary.alpha,
        "passed": summary.passed,
        "exit_code": exit_code,
        "caught": summary.caught,
        "applicable": summary.applicable,
        "kill_rate": summary.kill_rate,
        "notebooks": [_notebook_json(report, summary.min_kill_rate) for report in summary.reports],
    }


def _notebook_json(report: NotebookReport, min_kill_rate: float) -> dict[str, Any]:
    return {
        "notebook": report.notebook,
        "status": report.status,
        "error": report.error or None,
        "mode": report.mode or None,
        "passed": report.meets(min_kill_rate),
        "caught": report.caught,
        "applicable": len(report.applicable),
        "kill_rate": report.kill_rate,
        "baseline": dict(report.baseline),
        "clean_runs": report.clean_runs,
        "clean_failures": report.clean_failures,
        "flaky": {test: list(runs) for test, runs in report.flaky.items()},
        "seeds_itself": report.seeds_itself or None,
        "threads": list(report.threads),
        "faults": [_fault_json(r) for r in report.results],
    }


def _fault_json(result: FaultResult) -> dict[str, Any]:
    fault = FAULTS[result.name]
    return {
        "name": result.name,
        "description": fault.description,
        "status": result.status,
        "applied": list(result.applied),
        "caught_by": list(result.caught_by),
        "caught_by_setup": list(result.by_setup),
        "reason": result.reason or None,
        "suggestion": fault.suggestion,
        "checked": result.checked or None,
        "missed": result.missed or None,
        "runs": result.runs,
        "failures": result.failures,
        "clean_runs": result.clean_runs,
        "clean_failures": result.clean_failures,
        "p_value": result.p_value,
        "failed_runs": list(result.failed_runs),
    }
