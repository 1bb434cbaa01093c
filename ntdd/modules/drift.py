"""How a generated module and its notebook have drifted apart since the export.

The module records what it was made from: a hash of the notebook's test
content in its header, a hash of each test region in the region's marker, and
a hash of everything else (the frame). Comparing those with the module as it
is and the notebook as it renders now tells, per cell, which side changed.

A region is matched to its cell by the cell's id, or, for cells without ids,
by content: the cell that still renders what the region recorded, or what
the region holds now. A region that no cell provably matches is never
matched by position: cells may have been added, removed or moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import GeneratedModuleError
from ntdd.format.module import (
    Header,
    Region,
    conflict_marker_line,
    frame_intact,
    markers_in_doubt,
    parse_header,
    parse_regions,
    region_sha,
    without_version,
)
from ntdd.format.stale import renders_differently
from ntdd.modules.existing import ensure_ours, read_existing
from ntdd.parameters import Parameters
from ntdd.pipeline import build_module
from ntdd.values import Plan


@dataclass(frozen=True)
class RegionState:
    """One test region of the module, and the cell it belongs to now."""

    region: Region  # as the module holds it
    fresh: Region | None  # what its cell renders now; None when no cell provably matches

    @property
    def edited(self) -> bool:
        """Changed in the module since the export."""
        return self.region.sha != region_sha(self.region.text)

    @property
    def agreed(self) -> bool:
        """The notebook renders exactly what the module holds (a sync done, or no change)."""
        return self.fresh is not None and self.fresh.text == self.region.text

    @property
    def changed_in_notebook(self) -> bool:
        return self.fresh is None or self.fresh.sha != self.region.sha

    def describe(self) -> str:
        r = self.region
        return f"cell {r.index}" + (f" (id {r.id})" if r.id else "")


@dataclass(frozen=True)
class Drift:
    """The state of one notebook and its module."""

    notebook: Path
    module: Path
    plan: Plan
    expected: str  # what `ntdd export` would write now
    text: str | None  # the module as it is; None when missing
    header: Header | None = None
    regions: tuple[RegionState, ...] = ()
    added: tuple[Region, ...] = ()  # test cells of the notebook that no region holds
    frame_edited: bool = False  # the module changed outside its test regions
    markers_in_doubt: bool = False  # lines like markers that ntdd cannot tell from its own

    @property
    def current(self) -> bool:
        return self.text is not None and without_version(self.text) == without_version(
            self.expected
        )

    @property
    def edited(self) -> tuple[RegionState, ...]:
        """Regions whose edits the notebook does not hold yet."""
        return tuple(s for s in self.regions if s.edited and not s.agreed)

    @property
    def module_changed(self) -> bool:
        return bool(self.edited) or self.frame_edited

    @property
    def stale_cells(self) -> tuple[Region, ...]:
        """Test cells the notebook changed, added or removed since the export."""
        changed = [
            s.fresh or s.region
            for s in self.regions
            if s.changed_in_notebook and not s.agreed and not s.edited
        ]
        return tuple(changed + list(self.added))

    @property
    def setup_changed(self) -> bool:
        content = self.header is not None and self.plan.content_hash != self.header.content_hash
        return content and not self.stale_cells and not self.edited


def compare(
    notebook: Path,
    module: Path,
    template: Path | None = None,
    parameters: Parameters | None = None,
) -> Drift:
    """Compare *notebook* with its generated *module*; raises if the module is not ours."""
    values = parameters.for_notebook(notebook) if parameters is not None else ()
    plan, expected = build_module(notebook, values, module.parent, template)
    assert expected is not None
    text = read_existing(module)
    if text is None:
        return Drift(notebook, module, plan, expected, None)
    ensure_ours(module, text, notebook)
    header = parse_header(text)
    if header is None:  # pragma: no cover - ensure_ours has refused it
        raise GeneratedModuleError(f"{module}: broken ntdd header")
    every = parse_regions(text)
    ours = [r for r in every if r.kind == "test"]
    fresh = [r for r in parse_regions(expected) if r.kind == "test"]
    matched = match_regions(ours, fresh)
    taken = {id(f) for f in matched.values() if f is not None}
    states = tuple(RegionState(r, matched[r.marker_line]) for r in ours)
    ensure_whole(module, text, every, states)
    return Drift(
        notebook=notebook,
        module=module,
        plan=plan,
        expected=expected,
        text=text,
        header=header,
        regions=states,
        added=tuple(f for f in fresh if id(f) not in taken),
        frame_edited=bool(header.frame) and not frame_intact(text, header, every),
        markers_in_doubt=markers_in_doubt(text, every),
    )


def ensure_whole(
    module: Path, text: str, regions: list[Region], states: tuple[RegionState, ...]
) -> None:
    """Refuse a module that is not whole: git's conflict markers, or cut short.

    ntdd's format ends with a newline after its last region. A module that
    stops mid-line inside an edited last region was cut short (a crash
    mid-write, an editor saving in place while sync ran): reading it as an
    edit would write the cut line into the notebook. An editor's dropped
    final newline alone edits nothing and is no damage.
    """
    line = conflict_marker_line(text)
    if line is not None:
        raise GeneratedModuleError(
            f"{module}: git merge-conflict markers at line {line}; resolve the conflict first"
        )
    last = max(regions, key=lambda r: r.marker_line, default=None)
    cut = [s.region for s in states if s.edited and s.region is last]
    if cut and not _ends_with_newline(module):
        raise GeneratedModuleError(
            f"{module}: ends mid-line inside its last test region (cell {cut[0].index}), "
            "where ntdd's format ends with a newline: it looks cut short, so it is not read "
            "as an edit. Export again to restore it, or end the file with a newline if the "
            "edit is yours"
        )


def _ends_with_newline(module: Path) -> bool:
    try:
        with module.open("rb") as f:
            f.seek(0, 2)
            if f.tell() == 0:
                return False
            f.seek(-1, 2)
            return f.read(1) in (b"\n", b"\r")
    except OSError:
        return True  # reading it again will say what is wrong


def match_regions(ours: list[Region], fresh: list[Region]) -> dict[int, Region | None]:
    """For each module region (by marker line), the notebook's region for the same cell.

    By id where the module recorded one and the notebook has it once; else by
    content, among cells not matched yet: the cell that still renders what
    the region recorded (its sha), or what the region holds now. When several
    cells qualify, the one at the region's own index, if it is one of them.
    """
    ids = [f.id for f in fresh if f.id]
    unique = {f.id: f for f in fresh if f.id and ids.count(f.id) == 1}
    matched: dict[int, Region | None] = {}
    taken: set[int] = set()
    for r in ours:
        if r.id and r.id in unique:
            matched[r.marker_line] = unique[r.id]
            taken.add(id(unique[r.id]))
    for r in ours:
        if r.marker_line in matched:
            continue
        if r.id and r.id in unique:
            continue
        free = [f for f in fresh if id(f) not in taken and not (r.id and f.id == r.id)]
        found = _by_content(r, free)
        matched[r.marker_line] = found
        if found is not None:
            taken.add(id(found))
    return matched


def _by_content(region: Region, candidates: list[Region]) -> Region | None:
    for same in (
        [f for f in candidates if f.sha == region.sha],
        [f for f in candidates if f.text == region.text],
    ):
        if len(same) == 1:
            return same[0]
        at_index = [f for f in same if f.index == region.index]
        if len(at_index) == 1:
            return at_index[0]
    return None


def describe_cells(regions: tuple[Region, ...] | list[Region]) -> str:
    """ "cell 4 (id 1a2b), cell 7": each cell by its number, with its id where it has one."""
    return ", ".join(f"cell {r.index}" + (f" (id {r.id})" if r.id else "") for r in regions)


def describe_states(states: tuple[RegionState, ...]) -> str:
    return ", ".join(s.describe() for s in states)


def explain(drift: Drift, version: str) -> str | None:
    """Why `--check` lists this module, in one line; None when it is current."""
    if drift.text is not None and not drift.plan.tests:
        return "stale: the notebook has no test cells any more; `ntdd sync` removes the module"
    if drift.current:
        return None
    if drift.text is None:
        return "missing: not exported yet"
    reasons = []
    if drift.edited:
        reasons.append(f"hand-edited in {describe_states(drift.edited)}")
    if drift.frame_edited:
        reasons.append("hand-edited outside the test regions")
    if drift.stale_cells:
        reasons.append(f"stale: the notebook changed in {describe_cells(drift.stale_cells)}")
    elif drift.setup_changed:
        reasons.append("stale: the notebook's setup cells changed")
    if not reasons:
        header = drift.header
        reasons.append(renders_differently(header.version if header else "?", version))
    return "; ".join(reasons)
