"""`ntdd sync` on the command line.

Each path given names a notebook and its module (`ntdd.modules.given`);
each is synced on its own (`ntdd.modules.sync`), and reported on one line:
a sync refused, or an error, in one notebook does not stop the others.
"""

from __future__ import annotations

import argparse

from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, print_error
from ntdd.errors import NtddError, SyncConflict


def sync_command(args: argparse.Namespace) -> int:
    """`ntdd sync`: carry what changed, in each notebook or its module, to the other side;
    or refuse, saying why."""
    from ntdd.modules.export import mark_packages
    from ntdd.modules.given import module_settings, named_by
    from ntdd.modules.sync import sync

    out_dir, template, parameters = module_settings(args.output, args.template)
    refused = failures = 0
    for named in named_by(args.paths, out_dir, args.skip_other_files, located=True):
        try:
            done = sync(named.notebook, named.module, args.prefer, template, parameters)
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
        print(f"{named.notebook} <-> {named.module}: {done.action}{cells}")
    return BAD_INPUT if failures else NOTHING_TO_DO if refused else OK
