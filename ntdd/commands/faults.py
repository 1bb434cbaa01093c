"""`ntdd faults` on the command line: a table for each notebook as it finishes, then the verdict.

The runs, the faults and the reports are `ntdd.faults`'.
"""

from __future__ import annotations

import argparse
import sys

from ntdd.commands.console import BAD_INPUT, FAULTS_MISSED, NOTHING_TO_DO, OK
from ntdd.commands.summary_file import append_to


def faults_command(args: argparse.Namespace) -> int:
    """`ntdd faults`: a table for each notebook as it finishes, then the verdict."""
    import json

    from ntdd.faults.command import Request, fault_names, run_faults
    from ntdd.faults.report import as_json, markdown, notebook_table, summary_table, verdict_line
    from ntdd.faults.results import DIED, UNREADABLE, NotebookReport
    from ntdd.faults.rule import CLEAN_RUNS, KillRule

    rule = KillRule(args.alpha, args.max_runs)
    if rule.fewest_runs(CLEAN_RUNS) is None:
        print(
            f"ntdd: error: --max-runs {args.max_runs} cannot catch any fault at α = {args.alpha:g}:"
            f" a fault failing every run against {CLEAN_RUNS} clean runs that pass needs more",
            file=sys.stderr,
        )
        return BAD_INPUT
    request = Request(
        paths=tuple(args.paths),
        faults=fault_names(args.faults),
        devices=args.devices,
        timeout=args.timeout,
        fork=not args.no_fork,
        min_kill_rate=args.min_kill_rate,
        smoke=args.smoke,
        rule=rule,
        seed=args.seed,
        threads=args.threads,
    )
    if args.report is not None:
        append_to(args.report, "", "--report")  # before the runs, which take minutes

    def show(report: NotebookReport) -> None:
        if report.status == UNREADABLE:
            print(f"ntdd: error: {report.error}", file=sys.stderr)
        elif report.status == DIED:
            print(f"ntdd: error: {report.notebook}: {report.error}", file=sys.stderr)
        if not args.json:
            print(notebook_table(report) + "\n", flush=True)

    summary = run_faults(request, show)
    if not summary.reports:
        print(f"ntdd: no notebooks found in {' '.join(args.paths)}", file=sys.stderr)
        return NOTHING_TO_DO
    unreadable = any(r.status == UNREADABLE for r in summary.reports)
    code = BAD_INPUT if unreadable else OK if summary.passed else FAULTS_MISSED
    if args.json:
        print(json.dumps(as_json(summary, code), indent=2, ensure_ascii=False))
    else:
        if len(summary.reports) > 1:
            print(summary_table(summary) + "\n")
        print(verdict_line(summary))
    if args.report is not None:
        append_to(args.report, markdown(summary), "--report")
    return code
