"""`ntdd mark --smoke` on the command line: the diff on stdout, the findings on stderr.

For each notebook: a line as each run starts (they take the time of a full
run), the diff that adds `@full_run` (stdout: `git apply` takes it), then
what the runs cost, which tests get the mark and why, those left alone and
why, the faults smoke mode loses (with `--faults`), and with `--write` the
smoke run that checks the marks. The work is `ntdd.marking.smoke`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, print_error
from ntdd.errors import NotPythonError, NtddError

if TYPE_CHECKING:
    from ntdd.marking.adoption import Adoption
    from ntdd.marking.smoke import Outcome
    from ntdd.marking.smoke_runs import Run


def mark_smoke_command(args: argparse.Namespace) -> int:
    """`ntdd mark --smoke`: each notebook's runs, its `@full_run` diff; `--write` writes it."""
    from ntdd.marking.files import each_notebook
    from ntdd.marking.smoke import adopt
    from ntdd.marking.smoke_runs import Settings
    from ntdd.notebook.files import find_notebooks

    settings = Settings(args.devices, args.timeout, tuple(args.param))
    try:
        paths = list(find_notebooks(args.paths))
    except NtddError as e:
        print_error(e, args.debug)
        return BAD_INPUT
    found = failures = unsettled = 0
    for path, files in each_notebook(paths):
        found += 1
        name = _name(files)

        def said(run: str, name: str = name) -> None:
            print(f"ntdd: {name}: {run}…", file=sys.stderr, flush=True)

        try:
            outcome = adopt(files, settings, args.write, args.faults, said)
        except NotPythonError as e:
            print(f"ntdd: {path}: a {e.language!r} notebook; not marked", file=sys.stderr)
            continue
        except NtddError as e:
            print_error(e, args.debug)
            failures += 1
            continue
        if outcome is None:
            print(
                f"ntdd: {name}: no `# TEST` cell, so no test to compare (`ntdd mark` "
                "proposes them); not run",
                file=sys.stderr,
            )
            continue
        for proposal in outcome.proposals:
            sys.stdout.write(proposal.diff())
        sys.stdout.flush()
        for line in _findings(outcome, args.write):
            print(f"ntdd: {name}: {line}", file=sys.stderr)
        proposed = outcome.proposals[0].after is not None
        if (proposed and not args.write) or outcome.adoption.not_curable or outcome.still_broken:
            unsettled += 1
    if failures:
        return BAD_INPUT
    if not found:
        print("ntdd: no notebooks found", file=sys.stderr)
        return NOTHING_TO_DO
    return NOTHING_TO_DO if unsettled else OK


def _name(files: list[Path]) -> str:
    paired = f" (and {', '.join(f.name for f in files[1:])}, paired)" if files[1:] else ""
    return f"{files[0]}{paired}"


def _findings(outcome: Outcome, written: bool) -> list[str]:
    """What the runs found, a line each, in the order a user acts on them."""
    found = outcome.adoption
    lines = [_cost(outcome.full, outcome.smoke)]
    done = "marked" if written else "to mark"
    for cell, broke in found.to_mark.items():
        first = broke[0]
        lines.append(
            f"cell {cell} {done} @full_run: {', '.join(broke)} "
            f"{'passes' if len(broke) == 1 else 'pass'} in full and "
            f"{'fails' if len(broke) == 1 else 'fail'} in smoke mode ({found.smoke_says[first]})"
        )
        broken = {test.partition("[")[0] for test in broke}
        others = [test for test in found.tests_of.get(cell, ()) if test not in broken]
        if others:
            one = len(others) == 1
            lines.append(
                f"cell {cell} also holds {', '.join(others)}, which "
                f"{'passes' if one else 'pass'} in smoke mode: a cell is marked as a whole, "
                f"so smoke mode skips {'it' if one else 'them'} too"
            )
    lines += [
        f"{line} fails in the full run: left alone (a smoke run cannot tell what a failing "
        "test needs)"
        for line in found.failing_in_full
    ]
    lines += [f"not marked: {line}" for line in found.not_curable]
    if found.already:
        listed = ", ".join(found.already)
        lines.append(f"already @full_run (skipped in smoke mode, left alone): {listed}")
    if outcome.faults is not None:
        lines += _faults(*outcome.faults, found)
    lines += _verdict(outcome, written)
    return lines


def _cost(full: Run, smoke: Run) -> str:
    if full.cpu is None or smoke.cpu is None:
        return "full run and smoke run made (their CPU is not measured on this system)"
    ratio = f" ({smoke.cpu / full.cpu:.2f}×)" if full.cpu > 0 else ""  # noqa: RUF001
    return f"full run {full.cpu:.1f} s CPU, smoke run {smoke.cpu:.1f} s{ratio}"


def _faults(full: dict[str, Any], smoke: dict[str, Any], found: Adoption) -> list[str]:
    from ntdd.marking.lost_faults import caught, lost, lost_by_test

    (in_full, of_full), (in_smoke, of_smoke) = caught(full), caught(smoke)
    lines = [f"faults caught: {in_full}/{of_full} in full, {in_smoke}/{of_smoke} in smoke mode"]
    by_tests: dict[tuple[str, ...], list[str]] = {}
    for name, tests in lost(full, smoke):
        by_tests.setdefault(tuple(tests), []).append(name)
    if by_tests:
        listed = "; ".join(
            f"{', '.join(names)} (caught in full by {', '.join(tests)})"
            for tests, names in by_tests.items()
        )
        lines.append(f"lost in smoke mode: {listed}")
    marked = {t for tests in found.to_mark.values() for t in tests}
    for test, names in lost_by_test(full, smoke).items():
        why = " (it fails in smoke mode: to mark @full_run)" if test in marked else ""
        lines.append(f"{test} catches {', '.join(names)} in full, not in smoke mode{why}")
    return lines


def _verdict(outcome: Outcome, written: bool) -> list[str]:
    found = outcome.adoption
    if not found.to_mark:
        if found.not_curable:
            return ["no test to mark; smoke mode breaks what no mark cures (above)"]
        return ["the smoke run is green where the full run is: nothing to mark"]
    if not written:
        return ["`--write` writes the marks, then a smoke run checks them"]
    if outcome.confirmed is None:
        return []
    if outcome.still_broken:
        return [
            f"smoke run with the marks still breaks, where the full run passes: {line}"
            for line in outcome.still_broken
        ]
    verdicts = outcome.confirmed.verdicts.values()
    counts = [
        (sum(v.outcome == "passed" for v in verdicts), "passed"),
        (sum(v.outcome == "skipped" for v in verdicts), "skipped"),
        (sum(v.broke for v in verdicts), "failing as in the full run"),
    ]
    tally = ", ".join(f"{n} {word}" for n, word in counts if n)
    cpu = f"; {outcome.confirmed.cpu:.1f} s CPU" if outcome.confirmed.cpu is not None else ""
    return [f"smoke run with the marks: green where the full run is ({tally}{cpu})"]
