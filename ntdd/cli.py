"""The `ntdd` command.

Exit codes: 0 done; 1 nothing to do, or a check failed; 2 bad input (a file
that is not a notebook, a foreign file in the way, a bad option).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from ntdd.errors import NtddError

OK, NOTHING_TO_DO, BAD_INPUT = 0, 1, 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        return command(args)
    except NtddError as e:
        _error(e, args.debug)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("ntdd: interrupted", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    from ntdd import __version__

    parser = argparse.ArgumentParser(
        prog="ntdd",
        description="Turn the `# TEST` cells of Jupyter notebooks into pytest tests.",
        epilog="Exit codes: 0 done, 1 nothing to do or a check failed, 2 bad input.",
    )
    parser.add_argument("--version", action="version", version=f"ntdd {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.set_defaults(command=lambda _args: _usage(parser))
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    export = sub.add_parser(
        "export",
        help="write a pytest module for each notebook",
        description="Write test_<notebook>.py for each notebook, from its `# TEST` cells.",
    )
    export.add_argument("paths", nargs="+", metavar="NOTEBOOK_OR_DIR")
    export.add_argument(
        "-o", "--output", type=Path, help="folder for the modules (default: beside each notebook)"
    )
    export.add_argument("--template", type=Path, help="a Jinja template of your own")
    export.add_argument(
        "--force", action="store_true", help="overwrite files that ntdd did not write"
    )
    export.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    export.set_defaults(command=_export)
    return parser


def _export(args: argparse.Namespace) -> int:
    from ntdd.config import load_config
    from ntdd.export import export_notebook
    from ntdd.files import find_notebooks

    config = load_config()
    out_dir = args.output or config.output
    template = args.template or config.template
    if template is not None and not template.is_file():
        raise NtddError(f"{template}: template not found")
    failures = written = 0
    try:
        notebooks = list(find_notebooks(args.paths))
    except NtddError as e:
        _error(e, args.debug)
        return BAD_INPUT
    if not notebooks:
        print(f"ntdd: no notebooks found in {' '.join(args.paths)}", file=sys.stderr)
        return NOTHING_TO_DO
    for notebook in notebooks:
        try:
            done = export_notebook(notebook, out_dir, template, args.force)
        except NtddError as e:
            _error(e, args.debug)
            failures += 1
            continue
        for warning in done.warnings:
            print(f"ntdd: warning: {warning}", file=sys.stderr)
        if done.status == "no tests":
            print(f"{notebook}: no test cells; nothing written")
            continue
        written += 1
        print(f"{done.module}: {done.status} ({_plural(done.tests, 'test')} from {notebook})")
    if failures:
        return BAD_INPUT
    return OK if written else NOTHING_TO_DO


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return NOTHING_TO_DO


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _error(error: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(error)
    print(f"ntdd: error: {error}", file=sys.stderr)
