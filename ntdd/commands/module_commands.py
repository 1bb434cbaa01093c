"""`ntdd export`, `ntdd export --check` and `ntdd sync` on the command line.

Each path given is paired with its module (or a module with its notebook),
each pair is handled on its own, and each is reported on one line: an error
in one notebook does not stop the others.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ntdd._version import __version__
from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, plural, print_error
from ntdd.errors import NotPythonError, NtddError

if TYPE_CHECKING:
    from ntdd.parameters import Parameters


def export_command(args: argparse.Namespace) -> int:
    """`ntdd export`: write each notebook's module; with `--check`, say which are not current."""
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
            print_error(e, args.debug)
            failures += 1
            continue
        for warning in done.warnings:
            print(f"ntdd: warning: {warning}", file=sys.stderr)
        if done.status == "no tests":
            print(f"{pair.notebook}: no test cells; nothing written")
            continue
        written += 1
        print(f"{done.module}: {done.status} ({plural(done.tests, 'test')} from {pair.notebook})")
    return BAD_INPUT if failures else OK if written else NOTHING_TO_DO


def _check_modules_current(
    pairs: list[_Pair], template: Path | None, parameters: Parameters, debug: bool
) -> int:
    """`ntdd export --check`: one line for each module that is missing, stale or edited."""
    from ntdd.commands.drift import compare, explain

    listed = failures = 0
    for pair in pairs:
        try:
            drift = compare(pair.notebook, pair.module, template, parameters)
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
        print(f"ntdd: {plural(len(pairs), 'notebook')} checked; every module is current")
    return NOTHING_TO_DO if listed else OK


def sync_command(args: argparse.Namespace) -> int:
    """`ntdd sync`: carry each pair's edits to the other side, or refuse saying why."""
    from ntdd.commands.export import mark_packages
    from ntdd.commands.sync import sync
    from ntdd.errors import SyncConflict

    out_dir, template, parameters = _settings(args)
    refused = failures = 0
    for pair in _pairs(args.paths, out_dir, args.skip_other_files, located=True):
        try:
            done = sync(pair.notebook, pair.module, args.prefer, template, parameters)
            if out_dir is not None and done.module.exists():
                mark_packages(out_dir, done.module)
        except SyncConflict as e:
            print_error(e, args.debug)
            refused += 1
            continue
        except NtddError as e:
            print_error(e, args.debug)
            failures += 1
            continue
        word = "cell" if len(done.cells) == 1 else "cells"
        listed = ", ".join(map(str, done.cells))
        cells = f" ({word} {listed} written back)" if done.cells else ""
        print(f"{pair.notebook} <-> {pair.module}: {done.action}{cells}")
    return BAD_INPUT if failures else NOTHING_TO_DO if refused else OK


def _settings(args: argparse.Namespace) -> tuple[Path | None, Path | None, Parameters]:
    """The output folder, template and test parameters: the command line, else `[tool.ntdd]`."""
    from ntdd.settings.pyproject import load_config

    config = load_config()
    template = args.template or config.template
    if template is not None and not template.is_file():
        raise NtddError(f"{template}: template not found")
    return args.output or config.output, template, config.parameters


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
