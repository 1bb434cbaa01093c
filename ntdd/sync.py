"""`ntdd sync`: bring a notebook and its generated module back into agreement.

Whichever side changed since the last export wins: a changed notebook
regenerates the module; test regions edited in the module are written back
into their `# TEST` cells, and the module is regenerated from the result.
When both sides changed, sync refuses and changes nothing, unless told which
side to prefer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ntdd import markers
from ntdd.drift import Drift, compare, describe_cells, describe_edits, region_key
from ntdd.errors import NtddError
from ntdd.files import write_atomic
from ntdd.model import Cell, Mark, TestCell, TestKind
from ntdd.plan import describe_marks, make_plan
from ntdd.reader import read_notebook
from ntdd.regions import marker_id
from ntdd.render import render_module
from ntdd.unrender import read_region
from ntdd.writer import replace_sources

PREFER = ("notebook", "module")


class SyncConflict(NtddError):
    """Both the notebook and the module changed since the last export."""


@dataclass(frozen=True)
class Synced:
    """What a sync did."""

    notebook: Path
    module: Path
    action: str  # "in sync", "module written", "notebook and module written"
    cells: tuple[int, ...] = ()  # cells written back into the notebook


def sync(
    notebook: Path, module: Path, prefer: str | None = None, template: Path | None = None
) -> Synced:
    drift = compare(notebook, module, template)
    if drift.current:
        return Synced(notebook, module, "in sync")
    if drift.text is None or not drift.module_changed or prefer == "notebook":
        write_atomic(module, drift.expected)
        return Synced(notebook, module, "module written")
    _refuse_what_cannot_go_back(drift, prefer)
    edits = {cell.index: text for cell, text in _cell_edits(drift)}
    if edits:
        replace_sources(notebook, edits)
    plan = make_plan(read_notebook(notebook))
    write_atomic(module, render_module(plan, module.parent, template))
    return Synced(notebook, module, "notebook and module written", tuple(sorted(edits)))


def _refuse_what_cannot_go_back(drift: Drift, prefer: str | None) -> None:
    if drift.frame_edited:
        raise SyncConflict(
            f"{drift.module}: edited outside its test regions (the header, setup cells or "
            "fixtures); only test cells sync back. Make the change in the notebook, or "
            "discard the module's edits with --prefer notebook"
        )
    if drift.changed_in_notebook and prefer != "module":
        both = tuple(r for r in drift.edited if region_key(r) in drift.notebook_changed)
        notebook_side = (
            describe_cells(drift.notebook_changed) if drift.notebook_changed else "setup cells"
        )
        raise SyncConflict(
            f"{drift.notebook} and {drift.module} both changed since the last export"
            + (f"; in conflict: {describe_edits(both)}" if both else "")
            + f" (module: {describe_edits(drift.edited)}; notebook: {notebook_side}). "
            "Nothing was changed; choose with --prefer notebook or --prefer module"
        )


def _cell_edits(drift: Drift) -> list[tuple[Cell, str]]:
    tests = {_key(t.cell): t for t in drift.plan.tests}
    out = []
    for region in drift.edited:
        test = tests.get(region_key(region))
        where = f"{drift.module}: cell {region.index}"
        if test is None:
            raise SyncConflict(f"{where} is no longer a test cell in {drift.notebook}")
        if test.kind is TestKind.BROKEN:
            raise SyncConflict(f"{where}: {test.problem}; fix the cell in the notebook")
        try:
            edit = read_region(region.text)
        except NtddError as e:
            raise NtddError(f"{where}: {e}") from e
        text = _unrename(edit.source, test)
        out.append((test.cell, _with_marks(text, edit.marks, test, where)))
    return out


def _key(cell: Cell) -> str:
    return marker_id(cell.id) or f"#{cell.index}"


def _unrename(text: str, test: TestCell) -> str:
    """Names ntdd changed to keep tests unique go back to what the cell says."""
    for written, emitted in test.renames:
        text = text.replace(f"def {emitted}(", f"def {written}(").replace(
            f"class {emitted}", f"class {written}"
        )
    return text


def _with_marks(text: str, marks: tuple[Mark, ...], test: TestCell, where: str) -> str:
    """Marks edited as decorators become `@marks` on the cell's `# TEST` line."""
    if set(marks) == set(test.marks):
        return text
    from_tags = {m.name for m in markers.tag_marks(test.cell)}
    missing = from_tags - {m.name for m in marks}
    if missing:
        raise NtddError(
            f"{where}: the mark(s) {', '.join(sorted(missing))} come from cell tags; "
            "remove the tags in the notebook"
        )
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.strip())
    title = markers.parse_test_marker(Cell(0, "code", lines[at])).title
    line_marks = describe_marks(m for m in marks if m.name not in from_tags)
    lines[at] = f"# TEST{': ' + title if title else ''} {line_marks}".rstrip()
    return "\n".join(lines)
