"""How a generated module and its notebook have drifted apart since the export.

The module records what it was made from: a hash of the notebook's test
content in its header, a hash of each test region in the region's marker, and
a hash of everything else (the frame). Comparing those with the module as it
is and the notebook as it is tells, per cell, which side changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ntdd.errors import GeneratedModuleError
from ntdd.export import ensure_ours
from ntdd.model import Plan
from ntdd.plan import make_plan
from ntdd.reader import read_notebook
from ntdd.regions import Header, Region, frame_sha, parse_header, parse_regions, region_sha
from ntdd.render import render_module


@dataclass(frozen=True)
class Drift:
    """The state of one notebook and its module."""

    notebook: Path
    module: Path
    plan: Plan
    expected: str  # what `ntdd export` would write now
    text: str | None  # the module as it is; None when missing
    header: Header | None = None
    edited: tuple[Region, ...] = ()  # test regions changed in the module
    notebook_changed: tuple[str, ...] = ()  # keys of test cells changed in the notebook
    setup_changed: bool = False  # the notebook changed, and not (only) in test cells
    frame_edited: bool = False  # the module changed outside its test regions
    regions: dict[str, Region] = field(default_factory=dict)  # module test regions by key

    @property
    def current(self) -> bool:
        return self.text == self.expected

    @property
    def module_changed(self) -> bool:
        return bool(self.edited) or self.frame_edited

    @property
    def changed_in_notebook(self) -> bool:
        return bool(self.notebook_changed) or self.setup_changed


def region_key(region: Region) -> str:
    """A test region's cell: its id where it has one, else its position."""
    return region.id or f"#{region.index}"


def compare(notebook: Path, module: Path, template: Path | None = None) -> Drift:
    """Compare *notebook* with its generated *module*; raises if the module is not ours."""
    plan = make_plan(read_notebook(notebook))
    expected = render_module(plan, module.parent, template)
    if not module.exists():
        return Drift(notebook, module, plan, expected, None)
    text = module.read_text(encoding="utf-8")
    ensure_ours(module, text, notebook)
    header = parse_header(text)
    if header is None:  # pragma: no cover - ensure_ours has refused it
        raise GeneratedModuleError(f"{module}: broken ntdd header")
    ours = {region_key(r): r for r in parse_regions(text) if r.kind == "test"}
    fresh = {region_key(r): r for r in parse_regions(expected) if r.kind == "test"}
    changed = _notebook_changes(ours, fresh) if plan.content_hash != header.content_hash else ()
    return Drift(
        notebook=notebook,
        module=module,
        plan=plan,
        expected=expected,
        text=text,
        header=header,
        edited=tuple(r for r in ours.values() if r.sha != region_sha(r.text)),
        notebook_changed=changed,
        setup_changed=plan.content_hash != header.content_hash and not changed,
        frame_edited=bool(header.frame) and frame_sha(text) != header.frame,
        regions=ours,
    )


def _notebook_changes(ours: dict[str, Region], fresh: dict[str, Region]) -> tuple[str, ...]:
    """Keys of the test cells that the notebook added, changed or removed."""
    changed = [key for key, r in fresh.items() if key not in ours or ours[key].sha != r.sha]
    return tuple(changed + [key for key in ours if key not in fresh])


def describe_cells(keys: tuple[str, ...] | list[str]) -> str:
    """`("1a2b", "#4")` -> "cell 1a2b, cell 4": ids where cells have them."""
    return ", ".join(
        f"cell {key.lstrip('#')}" if key.startswith("#") else f"cell id {key}" for key in keys
    )


def describe_edits(regions: tuple[Region, ...]) -> str:
    return ", ".join(f"cell {r.index}" + (f" (id {r.id})" if r.id else "") for r in regions)


def explain(drift: Drift, version: str) -> str | None:
    """Why `--check` lists this module, in one line; None when it is current."""
    if drift.current:
        return None
    if drift.text is None:
        return "missing: not exported yet"
    reasons = []
    if drift.edited:
        reasons.append(f"hand-edited in {describe_edits(drift.edited)}")
    if drift.frame_edited:
        reasons.append("hand-edited outside the test regions")
    if drift.notebook_changed:
        reasons.append(f"stale: the notebook changed in {describe_cells(drift.notebook_changed)}")
    elif drift.setup_changed:
        reasons.append("stale: the notebook's setup cells changed")
    if not reasons:
        header = drift.header
        made_by = header.version if header else "?"
        reasons.append(
            f"stale: written by ntdd {made_by}, and ntdd {version} writes it differently"
            if made_by != version
            else "stale: the template renders it differently now"
        )
    return "; ".join(reasons)
