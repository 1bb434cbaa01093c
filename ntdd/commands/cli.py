"""The `ntdd` command line: its subcommands, their options, and `main`.

Each subcommand then has a module of its own (`export`, with `--check`;
`sync`, `mark`, `init`, `list`, `faults`), which calls into the packages
below and prints what they did; they load the heavy parts (Jinja, nbformat,
pytest) only when they run, so `ntdd --help` stays quick.

Exit codes: 0 done; 1 nothing to do, a check failed, or a sync was refused;
2 bad input (a file that is not a notebook, a foreign file in the way, a bad
option).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ntdd._version import __version__
from ntdd.commands.console import BAD_INPUT, FAULTS_MISSED, NOTHING_TO_DO, OK, print_error
from ntdd.commands.export import export_command
from ntdd.commands.faults import faults_command
from ntdd.commands.init import init_command
from ntdd.commands.list import list_command
from ntdd.commands.mark import mark_command
from ntdd.commands.sync import sync_command
from ntdd.errors import NtddError

__all__ = ["BAD_INPUT", "FAULTS_MISSED", "NOTHING_TO_DO", "OK", "main"]

_T = TypeVar("_T")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        return command(args)
    except NtddError as e:
        print_error(e, args.debug)
        return BAD_INPUT
    except KeyboardInterrupt:
        print("ntdd: interrupted", file=sys.stderr)
        return 130


class _Version(argparse.Action):
    """`--version`: ntdd's own, from `ntdd._version`."""

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:

        print(f"ntdd {__version__}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ntdd",
        description="Turn the `# TEST` cells of Jupyter notebooks into pytest tests.",
        epilog="Exit codes: 0 done; 1 nothing to do, a check failed or a sync was refused; "
        "2 bad input.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.set_defaults(command=lambda _args: _usage(parser))
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    export = _command(sub, "export", export_command, "write a pytest module for each notebook")
    export.add_argument("paths", nargs="+", metavar="NOTEBOOK_DIR_OR_MODULE")
    _output_options(export)
    export.add_argument(
        "--force", action="store_true", help="overwrite files that ntdd did not write"
    )
    export.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list modules that are missing, stale or hand-edited (exit 1)",
    )

    sync = _command(sub, "sync", sync_command, "bring notebooks and their modules into agreement")
    sync.add_argument("paths", nargs="+", metavar="NOTEBOOK_OR_MODULE")
    _output_options(sync)
    sync.add_argument(
        "--prefer",
        choices=("notebook", "module"),
        help="when both changed since the export, the side whose edits win",
    )

    faults = _command(
        sub, "faults", faults_command, "inject common PyTorch faults; see which tests notice"
    )
    _faults_options(faults)

    init = _command(sub, "init", init_command, "write a GitHub Actions workflow for your notebooks")
    _init_options(init)

    listing = _command(sub, "list", list_command, "list the notebooks that ntdd finds and tests")
    _list_options(listing)

    mark = _command(sub, "mark", mark_command, "add `# TEST` to the cells that are already checks")
    _mark_options(mark)
    return parser


def _mark_options(mark: argparse.ArgumentParser) -> None:
    mark.add_argument("paths", nargs="*", default=["."], metavar="NOTEBOOK_OR_DIR")
    mark.add_argument(
        "--write",
        action="store_true",
        help="write the `# TEST` lines (with --smoke, the `@full_run` marks) into the "
        "notebooks; without it, show the diff and exit 1 when there is one",
    )
    smoke = mark.add_argument_group("adopting smoke mode")
    smoke.add_argument(
        "--smoke",
        action="store_true",
        help="run each notebook's tests once in full and once in smoke mode; propose "
        "`@full_run` for those that pass in full and fail in smoke mode, and say what the "
        "smoke run saves in CPU",
    )
    smoke.add_argument(
        "--faults",
        action="store_true",
        help="with --smoke: run `ntdd faults` in full and in smoke mode too, and say which "
        "faults each test catches in full and not in smoke mode",
    )
    smoke.add_argument(
        "--devices",
        type=_devices,
        metavar="LIST",
        help="with --smoke: the runs' --ntdd-devices (default: the project's, else cpu)",
    )
    smoke.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="with --smoke: seconds per test, setup included (--ntdd-timeout)",
    )
    smoke.add_argument(
        "--param",
        action="append",
        type=_param,
        default=[],
        metavar="NAME=VALUE",
        help="with --smoke: a test-only parameter for both runs, as --ntdd-param (repeatable)",
    )


def _list_options(listing: argparse.ArgumentParser) -> None:
    listing.add_argument("paths", nargs="*", default=["."], metavar="NOTEBOOK_OR_DIR")
    listing.add_argument(
        "-z",
        "--null",
        action="store_true",
        help="names end with NUL, not newline, read and written (as git's -z writes them)",
    )
    listing.add_argument(
        "--files-from",
        type=Path,
        metavar="FILE",
        help="the notebooks among the files FILE names (- for stdin, e.g. from "
        "`git ls-files -z`), instead of those on disk",
    )
    listing.add_argument(
        "--changed",
        type=Path,
        metavar="FILE",
        help="only those a change to the files FILE names can break (e.g. from "
        "`git diff -z --name-only`): every notebook when a file beside them changed, "
        "and those whose code names a changed file",
    )
    listing.add_argument(
        "--depends-on",
        type=_pattern,
        metavar="REGEX",
        help="with --changed: a changed file that matches it tests every notebook",
    )
    listing.add_argument(
        "--args-file",
        type=Path,
        metavar="FILE",
        help="also write the notebooks to FILE as `pytest @FILE` reads them: one a line, "
        "each as a path (./-draft.ipynb is no option)",
    )
    listing.add_argument(
        "--summary",
        type=Path,
        metavar="FILE.md",
        help='append which notebooks and why as Markdown to FILE.md (e.g. "$GITHUB_STEP_SUMMARY")',
    )


def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"{text!r}: not a regular expression: {e}") from e


def _faults_options(faults: argparse.ArgumentParser) -> None:
    from ntdd.faults import FAULTS
    from ntdd.faults.rule import ALPHA, MAX_RUNS

    faults.add_argument("paths", nargs="+", metavar="NOTEBOOK_OR_DIR")
    faults.add_argument(
        "--faults",
        default=",".join(FAULTS),
        help=f"comma-separated faults to inject (default: all {len(FAULTS)}: {','.join(FAULTS)})",
    )
    faults.add_argument(
        "--min-kill-rate",
        type=_kill_rate,
        default=1.0,
        metavar="R",
        help="exit 1 unless each notebook's tests catch this share of the faults that apply "
        "to it (0.8 or 80%%; default 1: every applicable fault)",
    )
    faults.add_argument("--json", action="store_true", help="print the report as JSON")
    faults.add_argument(
        "--report",
        type=Path,
        metavar="FILE.md",
        help='append the report as Markdown to FILE.md (e.g. "$GITHUB_STEP_SUMMARY")',
    )
    faults.add_argument(
        "--devices", type=_devices, default="cpu", help="devices to run on (default: cpu)"
    )
    faults.add_argument("--timeout", type=_seconds, help="seconds per test, setup included")
    faults.add_argument(
        "--smoke",
        action="store_true",
        help="run every run in smoke mode, as pytest --ntdd-smoke does (its caps as configured)",
    )
    faults.add_argument(
        "--alpha",
        type=_alpha,
        default=ALPHA,
        help=f"the kill rule's significance level: a fault is caught where its runs fail more "
        f"often than the clean runs by Fisher's exact test, one-sided, at this level "
        f"(default {ALPHA:g})",
    )
    faults.add_argument(
        "--max-runs",
        type=_positive,
        default=MAX_RUNS,
        metavar="N",
        help=f"runs of each fault at most, under new seeds, before it is called undecided "
        f"(default {MAX_RUNS})",
    )
    faults.add_argument(
        "--seed",
        type=int,
        default=0,
        help="the first run's seed for random, numpy and torch; later runs take the next "
        "ones (default 0)",
    )
    faults.add_argument(
        "--threads",
        type=_positive,
        default=1,
        metavar="N",
        help="torch's threads in every run (default 1); a notebook that seeds itself is also "
        "checked at 2 (at 1 where N is not 1)",
    )
    faults.add_argument(
        "--no-fork",
        action="store_true",
        help="run each fault as a pytest run of its own, one after another, instead of "
        "forking them from the clean run (slower; the same results)",
    )


def _alpha(text: str) -> float:
    try:
        alpha = float(text)
    except ValueError:
        alpha = -1.0
    if not 0 < alpha < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a level between 0 and 1, as 0.05")
    return alpha


def _positive(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number, 1 or more")
    return count


def _kill_rate(text: str) -> float:
    """`0.8` or `80%`: a share between 0 and 1."""
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        rate = -1.0
    if not 0 <= rate <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a share from 0 to 1, or 0% to 100%")
    return rate


def _devices(text: str) -> str:
    """`cpu,cuda`, checked before any run, then handed to each run's `--ntdd-devices`."""
    from ntdd.config import parse_devices

    return ",".join(_as_argument(parse_devices, text))


def _seconds(text: str) -> str:
    """A test's timeout, checked before any run, then handed to each run's `--ntdd-timeout`."""
    from ntdd.config import parse_timeout

    _as_argument(parse_timeout, text)
    return text


def _param(text: str) -> str:
    """A test-only parameter, checked before any run, then handed to each `--ntdd-param`."""
    from ntdd.parameters import parse_assignments

    _as_argument(lambda value, where: parse_assignments([str(value)], where), text)
    return text


def _as_argument(parse: Callable[[object, str], _T], text: str) -> _T:
    """A value that `ntdd.config` parses, refused the way argparse refuses a bad one."""
    from ntdd.errors import ConfigError

    try:
        return parse(text, repr(text))
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _init_options(init: argparse.ArgumentParser) -> None:
    init.add_argument(
        "--notebooks", help="folder of the notebooks (default: the folder that holds them all)"
    )
    init.add_argument("--python", default="3.11", help="Python version for CI (default: 3.11)")
    init.add_argument(
        "--modules",
        metavar="DIR",
        help="folder of the committed test modules: check them with `ntdd export --check -o DIR` "
        "(default: checked when found committed beside the notebooks or in [tool.ntdd] output)",
    )
    init.add_argument(
        "--no-check", action="store_true", help="leave out the `ntdd export --check` step"
    )
    init.add_argument(
        "--faults", action="store_true", help="report `ntdd faults` in the job summary"
    )
    init.add_argument(
        "--no-nbval",
        action="store_true",
        help="check no saved outputs: as --outputs off (nbval runs only with --outputs nbval)",
    )
    init.add_argument(
        "--outputs",
        choices=("nbval", "ntdd", "off"),
        default=None,
        help="how the job checks saved outputs of cells marked # NBVAL_CHECK_OUTPUT: in "
        "ntdd's own run without a kernel (ntdd, the default: --ntdd-outputs-lax, each "
        "notebook run once), in nbval's kernel beside ntdd (nbval: --nbval-lax, every "
        "notebook run a second time), or not at all (off, as --no-nbval)",
    )
    init.add_argument(
        "--ntdd-from",
        metavar="SPEC",
        help="how CI installs ntdd, any pip requirement: ntdd==0.1.0, git+https://…@COMMIT, "
        "a wheel's path in the repository (default: from where this ntdd came)",
    )
    init.add_argument(
        "--gpu-runner",
        metavar="LABEL",
        help="add a job on self-hosted runners with this label: `pytest --ntdd-devices cuda`",
    )
    init.add_argument(
        "--shards",
        type=int,
        default=1,
        metavar="N",
        help="split the tests over N machines (a matrix of `--ntdd-shard K/N`); default 1",
    )
    init.add_argument(
        "--reuse",
        action="store_true",
        help="keep each run's verdicts in the Actions cache and reuse those of notebooks "
        "nothing changed for (--ntdd-reuse); every notebook runs nightly",
    )
    init.add_argument(
        "--output",
        type=Path,
        default=Path(".github/workflows/ntdd.yml"),
        help="where to write it (default: .github/workflows/ntdd.yml)",
    )
    init.add_argument("--dry-run", action="store_true", help="print the workflow; write nothing")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    run: Callable[[argparse.Namespace], int],
    summary: str,
) -> argparse.ArgumentParser:
    command = sub.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")
    command.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    command.set_defaults(command=run)
    return command


def _output_options(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "-o",
        "--output",
        type=Path,
        help="folder of the modules, mirroring the notebooks' folders below each folder "
        "given (default: beside each notebook)",
    )
    command.add_argument("--template", type=Path, help="a Jinja template of your own")
    command.add_argument(
        "--skip-other-files",
        action="store_true",
        help="pass over files that are neither notebooks nor modules ntdd wrote "
        "(pre-commit hands over every staged file)",
    )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return NOTHING_TO_DO
