"""A notebook's module rendered and written, safely and only if needed (`ntdd export`).

The module is left alone when rendering would not change it (its header
tells without rendering), and replaced only as `existing` allows. With an
output folder, the folders that mirror the notebooks' become packages, so
that pytest tells their modules apart.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ntdd.errors import NotPythonError
from ntdd.format.module import (
    intact,
    parse_header,
    render_fingerprint,
    test_definitions,
    without_version,
)
from ntdd.format.paths import module_path
from ntdd.format.stale import content_hash, pair_moved_on
from ntdd.modules.existing import ensure_ours, ensure_unedited, read_existing
from ntdd.notebook.files import line_ending, relative_notebook_path, write_atomic
from ntdd.notebook.read import read_notebook
from ntdd.parameters import Parameters
from ntdd.pipeline import build_module
from ntdd.pipeline.templates import module_templates
from ntdd.values import Notebook


@dataclass(frozen=True)
class Exported:
    """What exporting one notebook did."""

    notebook: Path
    module: Path
    status: str  # "written", "unchanged" or "no tests"
    tests: int = 0
    warnings: tuple[str, ...] = ()


def export_notebook(
    notebook: Path,
    out_dir: Path | None = None,
    template: Path | None = None,
    force: bool = False,
    base: Path | None = None,
    target: Path | None = None,
    parameters: Parameters | None = None,
) -> Exported:
    """Write the test module of *notebook*; leave it alone when it would not change.

    The module goes to *target*, or where `paths.module_path` puts it.
    """
    target = target or module_path(notebook, out_dir, base)
    try:
        read = read_notebook(notebook)
    except NotPythonError as e:
        if e.has_tests:
            raise
        return Exported(notebook, target, "no tests")  # as `pytest --ntdd` passes it over
    done = _export(read, target, template, force, parameters)
    note = pair_moved_on(notebook, read.cells)
    if note is None:
        return done
    return replace(done, warnings=(*done.warnings, f"{notebook}: {note}"))


def _export(
    read: Notebook, target: Path, template: Path | None, force: bool, parameters: Parameters | None
) -> Exported:
    notebook = read.path
    existing = read_existing(target)
    values = parameters.for_notebook(notebook) if parameters is not None else ()
    if not values and existing is not None and _up_to_date(existing, read, target, template):
        return Exported(notebook, target, "unchanged", test_definitions(existing))
    plan, text = build_module(read, values, target.parent, template, render_empty=False)
    if text is None:
        return Exported(notebook, target, "no tests", 0, plan.warnings)
    if existing is not None and without_version(existing) == without_version(text):
        return Exported(notebook, target, "unchanged", len(plan.test_names), plan.warnings)
    if existing is not None and not force:
        ensure_ours(target, existing, notebook)
        ensure_unedited(target, existing)
    write_atomic(target, text, line_ending(target))
    return Exported(notebook, target, "written", len(plan.test_names), plan.warnings)


PACKAGE_NOTE = (
    "# ntdd: a package, so that pytest imports the test modules here by their folder's name\n"
    "# (the mirrored folders of an output folder may each hold a test_lab.py)\n"
)


def mark_packages(out_dir: Path, module: Path) -> None:
    """Make each folder from *out_dir* down to *module* a package, where it is not yet.

    `export -o out` mirrors `week1/lab.ipynb` and `week2/lab.ipynb` to two
    `test_lab.py`; pytest's default import mode imports both as `test_lab`
    and fails on the second, unless their folders are packages. The output
    folder itself stays none: pytest then imports them as `week1.test_lab`.
    """
    try:
        below = module.parent.resolve().relative_to(out_dir.resolve())
    except (ValueError, OSError):
        return
    folder = out_dir
    for part in below.parts:
        folder = folder / part
        package = folder / "__init__.py"
        if not package.exists() and not package.is_symlink():
            write_atomic(package, PACKAGE_NOTE)


def _up_to_date(text: str, notebook: Notebook, target: Path, template: Path | None) -> bool:
    """Whether *text* is what rendering *notebook* would write, without rendering.

    The header records the notebook content and the format and templates it
    was rendered with; when all match and the module is intact, rendering
    would give its bytes (the version line aside).
    """
    header = parse_header(text)
    return (
        header is not None
        and header.content_hash == content_hash(notebook.cells)
        and header.render == render_fingerprint(module_templates(template))
        and header.notebook == relative_notebook_path(notebook.path, target.parent)
        and intact(text, header)
    )
