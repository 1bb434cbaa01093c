"""The `ntdd` command.

Exit codes: 0 done; 1 nothing to do, a check failed, or a sync was refused;
2 bad input (a file that is not a notebook, a foreign file in the way, a bad
option).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ntdd._version import __version__
from ntdd.errors import NotPythonError, NtddError

if TYPE_CHECKING:
    from ntdd.parameters import Parameters

OK, NOTHING_TO_DO, BAD_INPUT = 0, 1, 2
FAULTS_MISSED = 1  # `ntdd faults`: the exit policy is not met


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

    export = _command(sub, "export", _export, "write a pytest module for each notebook")
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

    sync = _command(sub, "sync", _sync, "bring notebooks and their modules into agreement")
    sync.add_argument("paths", nargs="+", metavar="NOTEBOOK_OR_MODULE")
    _output_options(sync)
    sync.add_argument(
        "--prefer",
        choices=("notebook", "module"),
        help="when both changed since the export, the side whose edits win",
    )

    faults = _command(
        sub, "faults", _faults, "inject common PyTorch faults; see which tests notice"
    )
    _faults_options(faults)

    init = _command(sub, "init", _init, "write a GitHub Actions workflow for your notebooks")
    _init_options(init)

    listing = _command(sub, "list", _list, "list the notebooks that ntdd finds and tests")
    _list_options(listing)
    return parser


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
        "`git diff -z --name-only`): every notebook when a file beside them changed",
    )
    listing.add_argument(
        "--depends-on",
        type=_pattern,
        metavar="REGEX",
        help="with --changed: a changed file that matches it tests every notebook",
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
    faults.add_argument("--devices", default="cpu", help="devices to run on (default: cpu)")
    faults.add_argument("--timeout", help="seconds per test, setup included")
    faults.add_argument(
        "--no-fork",
        action="store_true",
        help="run each fault as a pytest run of its own, one after another, instead of "
        "forking them from the clean run (slower; the same results)",
    )


def _kill_rate(text: str) -> float:
    """`0.8` or `80%`: a share between 0 and 1."""
    try:
        rate = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        rate = -1.0
    if not 0 <= rate <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a share from 0 to 1, or 0% to 100%")
    return rate


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


def _settings(args: argparse.Namespace) -> tuple[Path | None, Path | None, Parameters]:
    """The output folder, template and test parameters: the command line, else `[tool.ntdd]`."""
    from ntdd.config import load_config

    config = load_config()
    template = args.template or config.template
    if template is not None and not template.is_file():
        raise NtddError(f"{template}: template not found")
    return args.output or config.output, template, config.parameters


def _export(args: argparse.Namespace) -> int:
    from ntdd.commands.export import export_notebook, mark_packages

    out_dir, template, parameters = _settings(args)
    pairs = list(_pairs(args.paths, out_dir, args.skip_other_files, located=args.check))
    if not pairs:
        if args.skip_other_files:
            return OK
        print(f"ntdd: no notebooks found in {' '.join(args.paths)}", file=sys.stderr)
        return NOTHING_TO_DO
    if args.check:
        return _check_modules_current(pairs, template, parameters, args.debug)
    failures = written = 0
    for pair in pairs:
        try:
            done = export_notebook(
                pair.notebook,
                template=template,
                force=args.force,
                target=pair.module,
                parameters=parameters,
            )
            if out_dir is not None and done.status != "no tests":
                mark_packages(out_dir, done.module)
        except NtddError as e:
            _error(e, args.debug)
            failures += 1
            continue
        for warning in done.warnings:
            print(f"ntdd: warning: {warning}", file=sys.stderr)
        if done.status == "no tests":
            print(f"{pair.notebook}: no test cells; nothing written")
            continue
        written += 1
        print(f"{done.module}: {done.status} ({_plural(done.tests, 'test')} from {pair.notebook})")
    return BAD_INPUT if failures else OK if written else NOTHING_TO_DO


def _check_modules_current(
    pairs: list[_Pair], template: Path | None, parameters: Parameters, debug: bool
) -> int:
    from ntdd.commands.drift import compare, explain

    listed = failures = 0
    for pair in pairs:
        try:
            drift = compare(pair.notebook, pair.module, template, parameters)
        except NotPythonError as e:
            if e.has_tests:
                _error(e, debug)
                failures += 1
            continue  # without tests: nothing to export, as for a Python notebook
        except NtddError as e:
            _error(e, debug)
            failures += 1
            continue
        if not drift.plan.tests and drift.text is None:
            continue  # nothing to export, nothing exported
        reason = explain(drift, __version__)
        if not drift.plan.tests:
            reason = (
                "stale: the notebook has no test cells any more; `ntdd sync` removes the module"
            )
        if reason:
            listed += 1
            print(f"{pair.module}: {reason}")
    if failures:
        return BAD_INPUT
    if not listed:
        print(f"ntdd: {_plural(len(pairs), 'notebook')} checked; every module is current")
    return NOTHING_TO_DO if listed else OK


def _sync(args: argparse.Namespace) -> int:
    from ntdd.commands.export import mark_packages
    from ntdd.commands.sync import SyncConflict, sync

    out_dir, template, parameters = _settings(args)
    refused = failures = 0
    for pair in _pairs(args.paths, out_dir, args.skip_other_files, located=True):
        try:
            done = sync(pair.notebook, pair.module, args.prefer, template, parameters)
            if out_dir is not None and done.module.exists():
                mark_packages(out_dir, done.module)
        except SyncConflict as e:
            _error(e, args.debug)
            refused += 1
            continue
        except NtddError as e:
            _error(e, args.debug)
            failures += 1
            continue
        cells = f" (cells {', '.join(map(str, done.cells))} written back)" if done.cells else ""
        print(f"{pair.notebook} <-> {pair.module}: {done.action}{cells}")
    return BAD_INPUT if failures else NOTHING_TO_DO if refused else OK


class _Pair(NamedTuple):
    notebook: Path
    module: Path


def _pairs(
    paths: Sequence[str], out_dir: Path | None, skip_others: bool, located: bool
) -> Iterator[_Pair]:
    """(notebook, module) for each path, each pair once.

    A notebook's module is where export writes it; with *located*, where one
    was written already, if elsewhere. A module names its notebook in its
    header. A `.py` file is a notebook when it is a jupytext text notebook,
    else a module. With *skip_others*, files that are neither are passed over.
    """
    from ntdd.format import paths as where
    from ntdd.notebook.files import is_notebook_file

    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        notebook = path.is_dir() or is_notebook_file(path, given=True)
        if path.suffix == ".py" and not notebook:
            pair = _module_pair(path, skip_others)
            found = [pair] if pair is not None else []
        elif skip_others and not notebook:
            continue
        else:
            locate = where.find_module if located else where.module_path
            found = [
                _Pair(p.notebook, locate(p.notebook, out_dir, p.base))
                for p in where.notebooks_under([path])
            ]
        for pair in found:
            key = Path(os.path.abspath(pair.notebook))
            if key not in seen:
                seen.add(key)
                yield pair


def _module_pair(path: Path, skip_others: bool) -> _Pair | None:
    from ntdd.format.module import is_generated
    from ntdd.format.paths import notebook_of

    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        text = ""
    if skip_others and not is_generated(text):
        return None
    return _Pair(notebook_of(path, text), path)


def _faults(args: argparse.Namespace) -> int:
    import json

    from ntdd.faults.command import Request, fault_names, run_faults
    from ntdd.faults.report import as_json, markdown, notebook_table, summary_table, verdict_line
    from ntdd.faults.results import DIED, UNREADABLE, NotebookReport

    request = Request(
        paths=tuple(args.paths),
        faults=fault_names(args.faults),
        devices=args.devices,
        timeout=args.timeout,
        fork=not args.no_fork,
        min_kill_rate=args.min_kill_rate,
    )

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
        args.report.parent.mkdir(parents=True, exist_ok=True)
        with args.report.open("a", encoding="utf-8") as f:
            f.write(markdown(summary))
    return code


def _list(args: argparse.Namespace) -> int:
    """Print the notebooks; the pick step of `ntdd init`'s workflow runs this."""
    from ntdd.commands.pick import pick
    from ntdd.notebook.files import find_notebooks

    end = b"\0" if args.null else b"\n"
    if args.files_from is None and args.changed is None:
        found = list(find_notebooks(args.paths))
        why = "every notebook"
    else:
        tracked = _names(args.files_from, end) if args.files_from else _on_disk(args.paths)
        changed = _names(args.changed, end) if args.changed else None
        picked = pick(tracked, args.paths, changed, args.depends_on)
        found, why = list(picked.notebooks), picked.why
    sys.stdout.buffer.write(b"".join(os.fsencode(path) + end for path in found))
    sys.stdout.flush()
    print(f"ntdd: {_plural(len(found), 'notebook')}: {why}", file=sys.stderr)
    if args.summary is not None:
        with args.summary.open("a", encoding="utf-8") as f:
            f.write(f"**Notebooks:** testing {len(found)}: {why}.\n\n")
    return OK


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


def _init(args: argparse.Namespace) -> int:
    from ntdd.commands.survey import survey
    from ntdd.commands.workflow import Choices, plan, render_workflow, write_workflow

    root = Path.cwd().resolve()
    _check_init_args(args, root)
    asked = Choices(
        notebooks=args.notebooks,
        python=args.python,
        modules=args.modules,
        no_check=args.no_check,
        faults=args.faults,
        gpu_runner=args.gpu_runner,
        shards=args.shards,
        workflow_name=args.output.name,
    )
    options, notes = plan(survey(root, args.notebooks, args.modules), asked)
    text = render_workflow(options)
    for note in notes:  # with --dry-run, stdout is the workflow alone
        print(f"ntdd: {note}", file=sys.stderr if args.dry_run else sys.stdout)
    if args.dry_run:
        sys.stdout.write(text)
        return OK
    path = write_workflow(args.output, text, force=args.force)
    print(f"{path}: written; commit it to run your notebooks' tests on every change")
    return OK


def _check_init_args(args: argparse.Namespace, root: Path) -> None:
    """Refuse before looking at the repository: bad values, a file in the way, a subfolder."""
    from ntdd.commands.survey import git_top

    if not 1 <= args.shards <= 256:
        raise NtddError(f"--shards {args.shards}: expected 1 to 256 machines (GitHub's limit)")
    label = args.gpu_runner
    if label is not None and (not label.strip() or any(c in label for c in ",\n\r\"'")):
        raise NtddError(f"--gpu-runner {label!r}: expected a runner label, such as gpu or cuda")
    if args.output.exists() and not (args.force or args.dry_run):
        raise NtddError(f"{args.output}: exists; not overwriting it (use --force)")
    top = git_top(root)
    if top is not None and top != root:
        raise NtddError(
            f"run `ntdd init` in the top folder of the repository ({top}): "
            "GitHub reads workflows from there, and runs them there"
        )


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return NOTHING_TO_DO


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _error(error: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(error)
    print(f"ntdd: error: {error}", file=sys.stderr)
