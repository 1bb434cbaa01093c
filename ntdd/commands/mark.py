"""`ntdd mark` on the command line: the diff on stdout, what was marked or left alone on stderr.

Which cells get a `# TEST` line, the file read back before it is shown, and
a jupytext pair's files marked alike are `ntdd.marking`'s. The diff goes to
stdout (`git apply` takes it); `--write` writes it. `--smoke` proposes
`@full_run` instead, from a full run and a smoke run (`mark_smoke`).
"""

from __future__ import annotations

import argparse
import sys

from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, plural, print_error
from ntdd.errors import NotPythonError, NtddError


def mark_command(args: argparse.Namespace) -> int:
    """`ntdd mark`: show each notebook's diff; with `--write`, write it."""
    smoke_only = [
        flag
        for flag, given in (("--faults", args.faults), ("--devices", args.devices),
                            ("--timeout", args.timeout), ("--param", args.param))
        if given
    ]  # fmt: skip
    if smoke_only and not args.smoke:
        print(f"ntdd: error: {', '.join(smoke_only)} needs --smoke", file=sys.stderr)
        return BAD_INPUT
    if args.smoke:
        from ntdd.commands.mark_smoke import mark_smoke_command

        return mark_smoke_command(args)
    from ntdd.marking.files import each_notebook, mark
    from ntdd.notebook.files import find_notebooks

    failures = proposed = refused = 0
    found = 0
    try:
        paths = list(find_notebooks(args.paths))
    except NtddError as e:
        print_error(e, args.debug)
        return BAD_INPUT
    for path, files in each_notebook(paths):
        found += 1
        try:
            proposals = mark(files, write=args.write)
        except NotPythonError as e:
            print(f"ntdd: {path}: a {e.language!r} notebook; not marked", file=sys.stderr)
            continue
        except NtddError as e:
            print_error(e, args.debug)
            failures += 1
            continue
        first = proposals[0]
        for line in first.refused:
            print(f"ntdd: {line}", file=sys.stderr)
        refused += len(first.refused)
        if first.after is None:
            continue
        proposed += 1
        for proposal in proposals:
            sys.stdout.write(proposal.diff())
        done = "marked" if args.write else "to mark"
        paired = f" (and {', '.join(f.name for f in files[1:])}, paired)" if files[1:] else ""
        print(f"ntdd: {files[0]}{paired}: {_cells(first.cells)} {done}", file=sys.stderr)
    return _exit_code(found, failures, proposed, refused, args.write)


def _exit_code(found: int, failures: int, proposed: int, refused: int, written: bool) -> int:
    """0: nothing left to mark. 1: proposals not written, cells refused, or no notebook.
    2: bad input."""
    if failures:
        return BAD_INPUT
    if not found:
        print("ntdd: no notebooks found", file=sys.stderr)
        return NOTHING_TO_DO
    if not proposed and not refused:
        print(f"ntdd: {plural(found, 'notebook')}: no cell to mark", file=sys.stderr)
    return NOTHING_TO_DO if refused or (proposed and not written) else OK


def _cells(numbers: tuple[int, ...]) -> str:
    words = [str(n) for n in numbers]
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"{'cell' if len(words) == 1 else 'cells'} {listed}"
