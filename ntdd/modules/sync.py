"""`ntdd sync`: bring a notebook and its generated module back into agreement.

Whichever side changed since the last export wins: a changed notebook
regenerates the module; test regions edited in the module are written back
into their `# TEST` cells, and the module is regenerated from the result.

A write-back is exact or refused. The edited region must be matched to its
cell beyond doubt (see `drift`), the cell must stay a test of the same kind,
and the notebook with the edit must render that region back byte for byte;
otherwise sync names the cell and the reason, and changes nothing. When
both sides changed, sync refuses unless told which side to prefer.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from ntdd.errors import FileChangedError, FileWriteError, NotPythonError, NtddError, SyncConflict
from ntdd.format.module import GLOBAL_NOTE, parse_regions, read_region
from ntdd.modules.drift import Drift, RegionState, compare, describe_cells, describe_states
from ntdd.modules.existing import read_existing
from ntdd.notebook import markers
from ntdd.notebook.files import ensure_writable, line_ending, write_atomic
from ntdd.notebook.write import replace_sources
from ntdd.parameters import Parameters
from ntdd.pipeline import build_module
from ntdd.values import Cell, Mark, Notebook, Plan, TestCell, TestKind


@dataclass(frozen=True)
class Synced:
    """What a sync did."""

    notebook: Path
    module: Path
    action: str  # "in sync", "module written", "notebook and module written", ...
    cells: tuple[int, ...] = ()  # cells written back into the notebook


def sync(
    notebook: Path,
    module: Path,
    prefer: str | None = None,
    template: Path | None = None,
    parameters: Parameters | None = None,
) -> Synced:
    try:
        drift, read = _compared(notebook, module, template, parameters)
    except NotPythonError as e:
        if e.has_tests:
            raise
        return Synced(notebook, module, "no test cells; nothing written")  # as export says
    if not drift.plan.tests:
        return _without_tests(drift)
    if drift.current:
        return Synced(notebook, module, "in sync")
    if drift.text is None or not drift.module_changed or prefer == "notebook":
        _ensure_unchanged(drift, read)
        write_atomic(module, drift.expected, line_ending(module))
        return Synced(notebook, module, "module written")
    _refuse_what_cannot_go_back(drift, prefer)
    written = {s.fresh.index: _written_back(s, drift.plan) for s in drift.edited if s.fresh}
    edits = {index: back.source for index, back in written.items()}
    text = _verified(drift, written, template, parameters)
    _ensure_unchanged(drift, read)
    for path in (notebook, module):
        ensure_writable(path)  # both, before either is written
    try:
        replace_sources(notebook, edits, was=read)
    except FileChangedError as e:
        raise SyncConflict(str(e)) from e
    write_atomic(module, text, line_ending(module))
    return Synced(notebook, module, "notebook and module written", tuple(sorted(edits)))


def _compared(
    notebook: Path, module: Path, template: Path | None, parameters: Parameters | None
) -> tuple[Drift, bytes]:
    """The drift, and the notebook's bytes it was worked out from.

    Read again if the notebook was saved while it was compared: every later
    step works on the one reading, and writes back only into those bytes.
    """
    for _ in range(3):
        before = _bytes_of(notebook)
        drift = compare(notebook, module, template, parameters)
        if _bytes_of(notebook) == before:
            return drift, before
    raise SyncConflict(
        f"{notebook}: kept changing on disk while ntdd compared it with {module}; "
        "nothing was changed: sync again once it is saved"
    )


def _bytes_of(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # reading the notebook will say what is wrong with it


def _ensure_unchanged(drift: Drift, read: bytes) -> None:
    """Neither file changed since the comparison: a save in between is never overwritten."""
    if _bytes_of(drift.notebook) != read:
        raise SyncConflict(
            f"{drift.notebook}: changed on disk while ntdd was syncing it (saved from "
            "Jupyter?); nothing was changed: sync again"
        )
    if read_existing(drift.module) != drift.text:
        raise SyncConflict(
            f"{drift.module}: changed on disk while ntdd was syncing it; nothing was "
            "changed: sync again"
        )


def _without_tests(drift: Drift) -> Synced:
    """A notebook without tests has no module: sync agrees with `--check` and removes it."""
    if drift.text is None:
        return Synced(drift.notebook, drift.module, "no test cells; nothing written")
    if drift.module_changed:
        raise SyncConflict(
            f"{drift.module}: the notebook has no test cells any more, and the module has "
            f"edits ({describe_states(drift.edited) or 'outside the test regions'}); "
            "nothing was changed: move the edits into the notebook, or delete the module"
        )
    try:
        drift.module.unlink()
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise FileWriteError(f"{drift.module}: cannot remove it: {reason}") from e
    return Synced(drift.notebook, drift.module, "module removed: the notebook has no test cells")


def _refuse_what_cannot_go_back(drift: Drift, prefer: str | None) -> None:
    if drift.frame_edited and drift.markers_in_doubt:
        raise SyncConflict(
            f"{drift.module}: a line of a test region reads like a region marker "
            "(`# %% ntdd …`), and ntdd cannot tell it from the markers it wrote; nothing was "
            "changed. Make the edit in the notebook, or discard the module's edits with "
            "--prefer notebook"
        )
    if drift.frame_edited:
        raise SyncConflict(
            f"{drift.module}: edited outside its test regions (the header, setup cells or "
            "fixtures); only test cells sync back. Make the change in the notebook, or "
            "discard the module's edits with --prefer notebook"
        )
    unmatched = tuple(s for s in drift.edited if s.fresh is None)
    if unmatched:
        raise SyncConflict(
            f"{drift.module}: the edits in {describe_states(unmatched)} cannot be matched to a "
            f"cell of {drift.notebook} beyond doubt (a cell changed, moved or was removed, and "
            "has no id to tell it by); nothing was changed. Make the edits in the notebook, or "
            "discard them with --prefer notebook"
        )
    both = tuple(s for s in drift.edited if s.changed_in_notebook)
    if (both or drift.setup_changed or drift.stale_cells) and prefer != "module":
        raise SyncConflict(
            f"{drift.notebook} and {drift.module} both changed since the last export"
            + (f"; in conflict: {describe_states(both)}" if both else "")
            + f" (module: {describe_states(drift.edited)}; notebook: {_notebook_side(drift)}). "
            f"Nothing was changed; {_choices(drift, both)}"
        )


def _notebook_side(drift: Drift) -> str:
    """The notebook's changes since the export: its test cells, by number and id, or
    else its setup cells (the notebook's content changed, and no test cell did)."""
    changed = [s.fresh or s.region for s in drift.regions if s.changed_in_notebook and not s.agreed]
    cells = [*changed, *drift.added]
    return describe_cells(cells) if cells else "setup cells"


def _choices(drift: Drift, both: tuple[RegionState, ...]) -> str:
    """What each `--prefer` keeps: where the two sides edited different test cells,
    the module's edits go back into the notebook beside the notebook's own."""
    if both or not drift.stale_cells:
        return "choose with --prefer notebook or --prefer module"
    return (
        "the edits touch different cells, so --prefer module keeps both (the module's go "
        "back into the notebook, the notebook's stay); --prefer notebook keeps the "
        "notebook's only"
    )


@dataclass(frozen=True)
class _WriteBack:
    """An edited region's cell source, and the region it must render back to."""

    source: str
    region: str  # the edited region, its `# TEST` line carrying the marks edited in


def _written_back(state: RegionState, plan: Plan) -> _WriteBack:
    """The source an edited region says its cell should have."""
    assert state.fresh is not None
    test = next(t for t in plan.tests if t.cell.index == state.fresh.index)
    where = f"{state.region.index}" + (f" (id {state.region.id})" if state.region.id else "")
    if test.kind is TestKind.BROKEN:
        raise SyncConflict(f"cell {where}: {test.problem}; fix the cell in the notebook")
    try:
        edit = read_region(state.region.text)
    except NtddError as e:
        raise SyncConflict(f"cell {where}: {e}; nothing was changed") from e
    was = "functions" if test.kind is TestKind.FUNCTIONS else "wrapped"
    now = "functions" if edit.kind == "functions" else "wrapped"
    if was != now:
        above = _added_above(state.region.text) if was == "wrapped" else None
        if above is not None:
            line, definition = above
            raise SyncConflict(
                f"cell {where}: {line!r} was added above `{definition}`, outside the function "
                "that holds the cell's lines; nothing was changed. Write it inside the "
                "function, or add it to the cell in the notebook"
            )
        raise SyncConflict(
            f"cell {where}: the edit turns a cell of {_kinds[was]} into a cell of {_kinds[now]}; "
            "make that change in the notebook"
        )
    before = _unrename(edit.source, test)
    after = _with_marks(before, edit.marks, test, where)
    return _WriteBack(after, _carry_test_line(state.region.text, before, after))


def _added_above(region: str) -> tuple[str, str] | None:
    """A comment written above a wrapped test's `def` (which reads as a cell of functions)."""
    lines = region.split("\n")
    at = next((n for n, line in enumerate(lines) if _WRAPPER.match(line)), None)
    if at is None:
        return None
    above = [line.strip() for line in lines[:at] if line.strip() and not line.startswith("@")]
    if not above or not all(line.startswith("#") for line in above):
        return None
    return above[0], lines[at].strip()


_WRAPPER = re.compile(r"(?:async\s+)?def\s+test\w*\s*\(\s*\)\s*:")


def _carry_test_line(region: str, before: str, after: str) -> str:
    """The region as it renders once its marks moved onto the `# TEST` line.

    Marks edited as decorators are written to the cell's `# TEST` line, which
    the region shows too: that line, and only that line, is expected to change.
    """
    if before == after:
        return region
    old = next(line.strip() for line in before.split("\n") if line.strip())
    new = next(line.strip() for line in after.split("\n") if line.strip())
    lines = region.split("\n")
    for n, line in enumerate(lines):
        if line.strip() == old:
            lines[n] = line[: len(line) - len(line.lstrip())] + new
            break
    return "\n".join(lines)


_kinds = {"functions": "`def test_*` functions", "wrapped": "bare statements"}


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
    given = (*markers.tag_marks(test.cell), *markers.directive_marks(test.cell.source))
    from_tags = {m.name for m in given}
    missing = from_tags - {m.name for m in marks}
    if missing:
        raise SyncConflict(
            f"cell {where}: the mark(s) {', '.join(sorted(missing))} come from cell tags or "
            "`#|` directives; remove them in the notebook"
        )
    lines = text.split("\n")
    at = markers.test_line_index(lines)
    if at is None or not markers.is_test_cell(Cell(0, "code", lines[at])):
        raise SyncConflict(f"cell {where}: the edit has no `# TEST` line to carry its marks")
    title = markers.parse_test_marker(Cell(0, "code", lines[at])).title
    lines[at] = markers.format_test_line(title, [m for m in marks if m.name not in from_tags])
    return "\n".join(lines)


def _verified(
    drift: Drift,
    written: dict[int, _WriteBack],
    template: Path | None,
    parameters: Parameters | None,
) -> str:
    """The module the notebook with the edits renders, if it holds every edited region exactly."""
    notebook = drift.plan.notebook  # the notebook as compared, not read again
    cells = tuple(
        replace(c, source=written[c.index].source) if c.index in written else c
        for c in notebook.cells
    )
    values = parameters.for_notebook(drift.notebook) if parameters is not None else ()
    edited = Notebook(notebook.path, cells, notebook.nbformat, notebook.nbformat_minor)
    text = build_module(edited, values, drift.module.parent, template).text
    assert text is not None
    rendered = {r.index: r for r in parse_regions(text) if r.kind == "test"}
    for state in drift.edited:
        assert state.fresh is not None
        again = rendered.get(state.fresh.index)
        where = state.describe()
        if again is None:
            raise SyncConflict(
                f"{drift.module}: with the edit, {where} would no longer be a test cell; "
                "nothing was changed"
            )
        expected = _without_derived(written[state.fresh.index].region)
        if _without_derived(again.text) != expected:
            raise SyncConflict(
                f"{drift.module}: the edit in {where} would not render back as written "
                f"({_first_difference(expected, _without_derived(again.text))}); "
                "nothing was changed"
            )
    return text


def _without_derived(region: str) -> str:
    """A region less its `global` line: ntdd derives it from the cell's assignments, so
    an edit that assigns a new name, or no name, changes it as the `# TEST` line's marks."""
    return "\n".join(line for line in region.split("\n") if not line.endswith(GLOBAL_NOTE))


def _first_difference(edited: str, rendered: str) -> str:
    ours, theirs = edited.split("\n"), rendered.split("\n")
    for n, (a, b) in enumerate(zip(ours, theirs, strict=False), 1):
        if a != b:
            return f"line {n} of the region would read {b.strip()!r}, not {a.strip()!r}"
    if len(ours) != len(theirs):
        return f"the region would have {len(theirs)} lines, not {len(ours)}"
    return "it would differ"
