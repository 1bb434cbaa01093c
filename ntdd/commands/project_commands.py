"""`ntdd faults`, `ntdd list` and `ntdd init` on the command line.

These look at a project's notebooks as a whole (which ones to test, a CI
workflow for them, which faults their tests catch) rather than at one
notebook and its module.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ntdd.commands.console import BAD_INPUT, FAULTS_MISSED, NOTHING_TO_DO, OK, plural
from ntdd.errors import NtddError


def faults_command(args: argparse.Namespace) -> int:
    """`ntdd faults`: a table for each notebook as it finishes, then the verdict."""
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
        smoke=args.smoke,
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
    if args.summary is not None:
        not_tested = "".join(f"- ❌ not tested: {reason}\n" for reason in refused)
        text = f"**Notebooks:** testing {len(found)}: {why}.\n\n"
        append_to(args.summary, text + (f"{not_tested}\n" if refused else ""), "--summary")
    return BAD_INPUT if refused else OK


def _write_args_file(path: Path, notebooks: Sequence[Path]) -> None:
    """The notebooks as `pytest @FILE` reads them: one a line, each as a path, so that
    one run takes them all (`xargs` splits a long list into runs, and each run's
    results replace the last's) and none is read as an option."""
    from ntdd.notebook.files import path_argument, write_atomic

    write_atomic(path, b"".join(os.fsencode(path_argument(n)) + b"\n" for n in notebooks))


def append_to(path: Path, text: str, option: str) -> None:
    """Append Markdown to a summary (`$GITHUB_STEP_SUMMARY`); one that cannot be written
    is bad input, said in one line."""
    from ntdd.notebook.files import check_results_file

    check_results_file(path, option)  # a notebook given where the file was meant, or a folder
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as f:  # one write: all of the text or none
            f.write(text.encode("utf-8", "backslashreplace"))
    except OSError as e:
        reason = (e.strerror or type(e).__name__).lower()
        raise NtddError(f"{path}: cannot write it: {reason}") from e


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


def init_command(args: argparse.Namespace) -> int:
    """`ntdd init`: survey the repository and write (or print) its CI workflow."""
    from ntdd.repository.origin import given, installed_origin
    from ntdd.repository.pins import installed_pins
    from ntdd.repository.survey import survey
    from ntdd.repository.workflow import Choices, plan
    from ntdd.repository.workflow_file import render_workflow, write_workflow

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
        nbval=not args.no_nbval and args.outputs in (None, "nbval"),
        outputs_in_process=args.outputs == "ntdd",
    )
    ntdd = given(args.ntdd_from) if args.ntdd_from else installed_origin("ntdd", root)
    found = survey(root, args.notebooks, args.modules)
    pins = installed_pins(root, dict(found.imports), [spec for spec, _ in found.installs])
    options, notes = plan(found, asked, ntdd, pins)
    text = render_workflow(options)
    nbdev = nbdev_note(root)
    notes = [*notes, nbdev] if nbdev else notes
    for note in notes:  # with --dry-run, stdout is the workflow alone
        print(f"ntdd: {note}", file=sys.stderr if args.dry_run else sys.stdout)
    if args.dry_run:
        sys.stdout.write(text)
        return OK
    path = write_workflow(args.output, text, force=args.force)
    print(f"{path}: written; commit it to run your notebooks' tests on every change")
    return OK


def nbdev_note(root: Path) -> str | None:
    """What `ntdd init` suggests to an nbdev project (nbdev's keys in settings.ini, or
    nbdev in pyproject.toml) that has not chosen how its `#| eval: false` cells run."""
    from ntdd.config import load_config

    settings, pyproject = root / "settings.ini", root / "pyproject.toml"
    found = settings.is_file() and _reads(settings, ("lib_name", "nbs_path"))
    found = found or (pyproject.is_file() and _reads(pyproject, ("nbdev",)))
    if not found:
        return None
    try:
        if load_config(root).skip_eval_false is not None:
            return None
    except NtddError:
        return None
    return (
        "an nbdev project: its `#| eval: false` cells (such as the `nbdev_export()` that ends "
        "its notebooks) run under test, as a kernel's Run All runs them; to leave them out, "
        "as nbdev_test does, add `skip_eval_false = true` under [tool.ntdd] in pyproject.toml"
    )


def _reads(path: Path, words: tuple[str, ...]) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return all(word in text for word in words)


def _check_init_args(args: argparse.Namespace, root: Path) -> None:
    """Refuse before looking at the repository: bad values, a file in the way, a subfolder."""
    from ntdd.repository.git import git_top

    if args.no_nbval and args.outputs in ("nbval", "ntdd"):
        raise NtddError(f"--no-nbval and --outputs {args.outputs}: choose one")
    if not 1 <= args.shards <= 256:
        raise NtddError(f"--shards {args.shards}: expected 1 to 256 machines (GitHub's limit)")
    label = args.gpu_runner
    if label is not None and (not label.strip() or any(c in label for c in ",\n\r\"'")):
        raise NtddError(f"--gpu-runner {label!r}: expected a runner label, such as gpu or cuda")
    spec = args.ntdd_from
    if spec is not None and (not spec.strip() or any(c in spec for c in "\n\r")):
        raise NtddError(f"--ntdd-from {spec!r}: expected a pip requirement, such as ntdd==0.1.0")
    if args.output.exists() and not (args.force or args.dry_run):
        raise NtddError(f"{args.output}: exists; not overwriting it (use --force)")
    top = git_top(root)
    if top is not None and top != root:
        raise NtddError(
            f"run `ntdd init` in the top folder of the repository ({top}): "
            "GitHub reads workflows from there, and runs them there"
        )
