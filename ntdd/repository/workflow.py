"""`ntdd init`'s decisions: what the workflow does in the repository it is written into.

`survey` looks at the repository; `plan` turns what it found and the options
asked for into `WorkflowOptions`, and notes that say what was decided and
why; `workflow_file` renders them as the workflow's YAML.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ntdd.repository.installs import Installs, plan_installs
from ntdd.repository.origin import Origin
from ntdd.repository.pins import Pins
from ntdd.repository.survey import Survey

_HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"  # where `ntdd init` runs
DURATIONS_FILE = ".ntdd-durations.json"  # read by the sharded matrix when committed


@dataclass(frozen=True)
class WorkflowOptions:
    """Everything the workflow template needs; nothing is looked up while rendering."""

    notebooks: str = "."
    python: str = "3.11"
    check: bool = False  # run `ntdd export --check`: the modules are committed
    modules: str | None = None  # where the modules are, when `-o` must say so
    module_folders: tuple[str, ...] = ()  # committed modules' folders outside the notebooks'
    installs: Installs = field(default_factory=Installs)
    faults: bool = False
    gpu_runner: str | None = None
    shards: int = 1
    workflow_name: str = "ntdd.yml"
    nbval: bool = False  # run nbval beside ntdd (`--nbval-lax`): `--outputs nbval`
    outputs_in_process: bool = True  # check marked cells' outputs in ntdd's run (the default)
    lfs: bool = False  # check out with Git LFS: notebooks, or files beside them, are in it
    sources: tuple[str, ...] = ()  # the repository's code the notebooks run (`src/`)
    data: tuple[str, ...] = ()  # where the files they name are, outside their folder
    reuse: bool = False  # keep verdicts in a cache (`--ntdd-reuse`), and run all nightly


@dataclass(frozen=True)
class Choices:
    """What the user asked `ntdd init` for, before looking at the repository."""

    notebooks: str | None = None
    python: str = "3.11"
    modules: str | None = None
    no_check: bool = False
    faults: bool = False
    gpu_runner: str | None = None
    shards: int = 1
    workflow_name: str = "ntdd.yml"
    nbval: bool = False  # `--outputs nbval`: `--nbval-lax`, a kernel's second run
    outputs_in_process: bool = True  # `--ntdd-outputs-lax`: the notebooks run once
    reuse: bool = False  # `--reuse`: unchanged notebooks' verdicts reused, a nightly full run


def plan(
    found: Survey, asked: Choices, ntdd: Origin, pins: Pins, here: str = _HERE
) -> tuple[WorkflowOptions, list[str]]:
    """The workflow's options for this repository, and notes saying what was decided;
    *ntdd* says where the ntdd running this came from, *pins* what the notebooks import,
    resolved in this Python (*here*)."""
    check, notes = _export_check_step(found, asked)
    extras = ["nbval", "jupytext", "nbconvert"] if asked.nbval else ["jupytext", "nbconvert"]
    workflow = f".github/workflows/{asked.workflow_name}"
    installs, installed = plan_installs(
        found.declared, pins, ntdd, extras, asked.python, here, workflow
    )
    options = WorkflowOptions(
        notebooks=found.notebooks_dir,
        python=asked.python,
        check=check,
        modules=asked.modules if check else None,
        module_folders=_module_folders(found, asked.modules) if check else (),
        installs=installs,
        faults=asked.faults,
        gpu_runner=asked.gpu_runner,
        shards=asked.shards,
        workflow_name=asked.workflow_name,
        nbval=asked.nbval,
        outputs_in_process=asked.outputs_in_process,
        lfs=bool(found.lfs),
        sources=found.sources,
        data=found.data,
        reuse=asked.reuse,
    )
    return options, [*_found(found), *installed, *notes, *_runs(found, options), *_extras(options)]


def _found(found: Survey) -> list[str]:
    where = "the top folder" if found.notebooks_dir == "." else f"{found.notebooks_dir}/"
    notes = [
        f"{_count(len(found.notebooks), 'notebook')} in {where}, "
        f"{len(found.with_tests)} with # TEST cells"
        + ("" if found.git else " (not a git repository: files on disk count as committed)")
    ]
    notes += [f"{found.copies}: the workflow leaves them out too"] if found.copies else []
    notes += [
        f"warning: {reason} (pytest --ntdd reports it as an error)" for reason in found.unreadable
    ]
    if found.sources:
        notes.append(
            f"a change to the repository's code the notebooks run ({_some(found.sources)}) "
            "tests every notebook"
        )
    if found.data:
        notes.append(
            f"the notebooks name files outside {where} ({_some(found.data)}): a change to "
            "one tests the notebooks that name it"
        )
    if found.lfs:
        notes.append(
            f"checks out with Git LFS (lfs: true): .gitattributes stores "
            f"{_count(len(found.lfs), 'file')} there with it, e.g. {found.lfs[0]}; without "
            "it the runner has their pointers"
        )
    return notes


def _export_check_step(found: Survey, asked: Choices) -> tuple[bool, list[str]]:
    """Check the modules only where they are committed: elsewhere the check cannot pass."""
    if asked.no_check:
        return False, ["leaves out `ntdd export --check` (--no-check)"]
    if not found.committed_modules and not asked.modules:
        notes = [
            "no generated test modules are committed, so the workflow runs the notebooks "
            "with `pytest --ntdd` and leaves out `ntdd export --check` "
            "(commit the modules, or name their folder with --modules, to add it)"
        ]
        if found.uncommitted_modules:
            notes.append(
                f"{_count(len(found.uncommitted_modules), 'exported module')} "
                f"not committed, e.g. {found.uncommitted_modules[0]}"
            )
        return False, notes
    notes = [
        f"generated modules are committed for {len(found.committed_modules)} of "
        f"{_count(len(found.with_tests), 'notebook')} with tests: the workflow checks "
        "that they are current with `ntdd export --check`"
    ]
    if found.missing_modules:
        notes.append(_missing(found.missing_modules))
    return True, notes


def _module_folders(found: Survey, modules: str | None) -> tuple[str, ...]:
    """The folders of the committed modules that lie outside the notebooks' folder: a
    pull request that only edits a module there must start the workflow too."""
    folders = {str(PurePosixPath(m).parent) for m in found.committed_modules}
    folders |= {PurePosixPath(modules).as_posix()} if modules else set()
    top = found.notebooks_dir
    outside = sorted(f for f in folders if top != "." and f != top and not f.startswith(top + "/"))
    common = (os.path.commonpath(outside) or ".") if outside else "."
    return (common,) if common != "." else tuple(outside)


def _missing(notebooks: tuple[str, ...], shown: int = 3) -> str:
    names = ", ".join(notebooks[:shown])
    more = f" and {len(notebooks) - shown} more" if len(notebooks) > shown else ""
    return (
        f"warning: {_count(len(notebooks), 'notebook')} with tests but no committed module "
        f"({names}{more}): the check fails until `ntdd export` writes them and they are committed"
    )


def _runs(found: Survey, options: WorkflowOptions) -> list[str]:
    """What the test step runs: notebooks without tests too, and nbval or not."""
    untested = len(found.notebooks) - len(found.with_tests) - len(found.unreadable)
    notes = []
    if untested > 0:
        notes.append(
            f"{_count(untested, 'notebook')} without # TEST cells: the job runs each to its "
            "end as one test (--ntdd-run-untested), so a cell that raises fails it"
        )
    if options.nbval:
        notes.append(
            "runs nbval beside ntdd (--nbval-lax, chosen by --outputs nbval): every notebook's "
            "cells a second time, in a Jupyter kernel, failing on a cell that raises; it "
            "compares outputs only in cells marked # NBVAL_CHECK_OUTPUT. nbval names a cell by "
            "its code cells counted from 0 (`Cell 1`), ntdd by every cell counted from 1 "
            "(`cell 3`): each nbval failure's line under the totals says which cell it is"
        )
    elif options.outputs_in_process:
        notes.append(
            "checks the saved outputs of cells marked # NBVAL_CHECK_OUTPUT in ntdd's own run "
            "(--ntdd-outputs-lax): each notebook runs once, with nbval's markers and rules and "
            "no Jupyter kernel; kernel-only behaviours are listed in the docs' Outputs page "
            "(--outputs nbval runs nbval beside it instead, a second run in a kernel)"
        )
    else:
        notes.append("checks no saved outputs (--outputs off): each notebook runs once, under ntdd")
    return notes


def _extras(options: WorkflowOptions) -> list[str]:
    notes = []
    if options.reuse:
        notes.append(
            "reuses the verdicts of a notebook that passed when nothing it depends on changed "
            "(--ntdd-reuse, kept in the Actions cache per OS and dependency files), and runs "
            "every notebook nightly, reusing none"
        )
    if options.faults:
        notes.append("reports the faults the tests catch (`ntdd faults`) in the job summary")
    if options.gpu_runner:
        notes.append(
            f"adds a job on self-hosted runners labelled {options.gpu_runner!r} that runs "
            "`pytest --ntdd --ntdd-devices cuda`; the CPU job runs the rest "
            "(actionlint users: declare the label in .github/actionlint.yaml)"
        )
    if options.shards > 1:
        notes.append(
            f"splits the tests over {options.shards} machines, balanced by the durations in "
            f"{DURATIONS_FILE} once it is committed (by test count until then)"
        )
    return notes


def _some(paths: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
