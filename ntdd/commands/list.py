"""`ntdd list` on the command line: the notebooks, one a line, and why those.

The names come from disk, or from a list of files (`--files-from`, `-z`);
which of them to test is `ntdd.repository.pick`'s.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ntdd.commands.console import BAD_INPUT, OK, plural
from ntdd.commands.summary_file import append_to
from ntdd.errors import NtddError


def list_command(args: argparse.Namespace) -> int:
    """Print the notebooks; the pick step of `ntdd init`'s workflow runs this.

    A picked notebook that cannot be handed to pytest (`pick.untestable`: a link
    to a deleted notebook) is left out and named as an error, and the exit is 2,
    after the others are written: they are still tested, and the job is red."""
    from ntdd.notebook.files import check_results_file, find_notebooks
    from ntdd.repository.pick import module_sources, pick, untestable

    end = b"\0" if args.null else b"\n"
    if args.args_file is not None:
        check_results_file(args.args_file, "--args-file")
    if args.files_from is None and args.changed is None:
        found = list(find_notebooks(args.paths))
        why = "every notebook"
    else:
        tracked = _names(args.files_from, end) if args.files_from else _on_disk(args.paths)
        changed = _names(args.changed, end) if args.changed else None
        picked = pick(tracked, args.paths, changed, args.depends_on, module_sources(changed or []))
        found, why = list(picked.notebooks), picked.why
    found, copies = _without_copies(found)
    reasons = [(path, untestable(path, args.args_file is not None)) for path in found]
    found = [path for path, reason in reasons if reason is None]
    refused = [reason for _, reason in reasons if reason is not None]
    sys.stdout.buffer.write(b"".join(os.fsencode(path) + end for path in found))
    sys.stdout.flush()
    if args.args_file is not None:
        _write_args_file(args.args_file, found)
    for reason in refused:
        print(f"ntdd: error: {reason}", file=sys.stderr)
    print(f"ntdd: {plural(len(found), 'notebook')}: {why}", file=sys.stderr)
    if copies:
        print(f"ntdd: {copies}", file=sys.stderr)
    if args.summary is not None:
        not_tested = "".join(f"- ❌ not tested: {reason}\n" for reason in refused)
        text = f"**Notebooks:** testing {len(found)}: {why}.\n\n"
        text += f"{copies[0].upper()}{copies[1:]}.\n\n" if copies else ""
        append_to(args.summary, text + (f"{not_tested}\n" if refused else ""), "--summary")
    return BAD_INPUT if refused else OK


def _without_copies(found: Sequence[Path]) -> tuple[list[Path], str | None]:
    """The notebooks, less the copies `--ntdd-write-notebooks` wrote (`notebook.copies`),
    which `pytest --ntdd` leaves out too; and what was left out, in words."""
    from ntdd.notebook.copies import copies_folders, copy_of, left_out

    root = Path.cwd()
    named = [(path, copy_of(path, root)) for path in found]
    copies = [(path, source) for path, source in named if source is not None]
    if not copies:
        return list(found), None
    kept = [path for path, source in named if source is None]
    return kept, left_out(len(copies), copies_folders(copies, root), "ntdd")


def _write_args_file(path: Path, notebooks: Sequence[Path]) -> None:
    """The notebooks as `pytest @FILE` reads them: one a line, each as a path, so that
    one run takes them all (`xargs` splits a long list into runs, and each run's
    results replace the last's), none is read as an option, and a name pytest would
    read as a test's (`::`, `[`) is reached through its folder (`pytest_args`)."""
    from ntdd.notebook.files import write_atomic
    from ntdd.repository.pytest_args import pytest_arguments

    arguments = pytest_arguments(notebooks)
    write_atomic(path, b"".join(os.fsencode(argument) + b"\n" for argument in arguments))


def _names(source: Path, end: bytes) -> list[str]:
    """The file names in *source* (`-`: stdin), as bytes on disk say them."""
    try:
        data = sys.stdin.buffer.read() if str(source) == "-" else source.read_bytes()
    except OSError as e:
        raise NtddError(
            f"{source}: cannot be read: {(e.strerror or type(e).__name__).lower()}"
        ) from e
    return [os.fsdecode(name) for name in data.split(end) if name]


def _on_disk(paths: Sequence[str]) -> list[str]:
    from ntdd.notebook.files import find_notebooks

    return [str(path) for path in find_notebooks(paths)]
