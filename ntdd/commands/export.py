"""`ntdd export` and `ntdd export --check` on the command line.

Each path given names a notebook and its module (`ntdd.modules.given`);
each is exported, or checked, on its own (`ntdd.modules.export`,
`ntdd.modules.drift`), and reported on one line: an error in one notebook
does not stop the others.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ntdd._version import __version__
from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, plural, print_error
from ntdd.errors import NotPythonError, NtddError

if TYPE_CHECKING:
    from ntdd.modules.given import ModuleSettings, Named


def export_command(args: argparse.Namespace) -> int:
    """`ntdd export`: write each notebook's module; with `--check`, say which are not current."""
    from ntdd.modules.export import export_notebook, mark_packages
    from ntdd.modules.given import module_settings, named_by

    settings = module_settings(args.output, args.template)
    out_dir = settings.out_dir
    found = list(named_by(args.paths, out_dir, args.skip_other_files, located=args.check))
    if not found:
        if args.skip_other_files:
            return OK
        print(f"ntdd: no notebooks found in {' '.join(args.paths)}", file=sys.stderr)
        return NOTHING_TO_DO
    if args.check:
        return _check_modules_current(found, settings, args.debug)
    failures = written = 0
    for named in found:
        try:
            done = export_notebook(
                named.notebook,
                template=settings.template,
                force=args.force,
                target=named.module,
                parameters=settings.parameters,
            )
            if out_dir is not None and done.status != "no tests":
                mark_packages(out_dir, done.module)
        except NtddError as e:
            print_error(e, args.debug)
            failures += 1
            continue
        for warning in done.warnings:
            print(f"ntdd: warning: {warning}", file=sys.stderr)
        if done.status == "no tests":
            print(f"{named.notebook}: no test cells; nothing written")
            continue
        written += 1
        print(f"{done.module}: {done.status} ({plural(done.tests, 'test')} from {named.notebook})")
    return BAD_INPUT if failures else OK if written else NOTHING_TO_DO


def _check_modules_current(found: list[Named], settings: ModuleSettings, debug: bool) -> int:
    """`ntdd export --check`: one line for each module that is missing, stale or edited."""
    from ntdd.modules.drift import compare, explain

    listed = failures = 0
    for named in found:
        try:
            drift = compare(named.notebook, named.module, settings.template, settings.parameters)
        except NotPythonError as e:
            if e.has_tests:
                print_error(e, debug)
                failures += 1
            continue  # without tests: nothing to export, as for a Python notebook
        except NtddError as e:
            print_error(e, debug)
            failures += 1
            continue
        if not drift.plan.tests and drift.text is None:
            continue  # nothing to export, nothing exported
        reason = explain(drift, __version__)
        if reason:
            listed += 1
            print(f"{named.module}: {reason}")
    if failures:
        return BAD_INPUT
    if not listed:
        print(f"ntdd: {plural(len(found), 'notebook')} checked; every module is current")
    return NOTHING_TO_DO if listed else OK
