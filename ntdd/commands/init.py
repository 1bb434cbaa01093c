"""`ntdd init` on the command line: its options checked, the workflow written or printed.

What it finds in the repository and decides is `ntdd.repository`'s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ntdd.commands.console import OK
from ntdd.errors import NtddError


def init_command(args: argparse.Namespace) -> int:
    """`ntdd init`: survey the repository and write (or print) its CI workflow."""
    from ntdd.repository.nbdev import nbdev_note
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
        nbval=args.outputs == "nbval",
        outputs_in_process=not args.no_nbval and args.outputs in (None, "ntdd"),
        reuse=args.reuse,
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
