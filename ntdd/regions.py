"""Read a generated module back: its header and its cell regions.

A generated module says where it came from in a header, and marks each cell
with a `# %% ntdd <kind>: cell N, id X` line (the `# %%` cell syntax that
editors understand). Test regions also record a hash of their text as
written, so that later edits to the module can be told apart from changes to
the notebook.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

HEADER_FIRST_LINE = "# ntdd: generated — edit the notebook or use `ntdd sync`."
# The line that declares a wrapped cell's names global, and why.
GLOBAL_NOTE = "# ntdd: the cell's assignments land in the notebook's namespace, as in a kernel"
# The comment above the marks of a cell of `def test_*` functions.
MARKS_COMMENT = "# ntdd: marks of cell"
# The comment of a test cell that runs as notebook code, not as a function body.
CELL_CODE_NOTE = "# ntdd: the cell runs as notebook code"
_HEADER_FIELD = re.compile(r"# ntdd-(?P<key>[a-z-]+): (?P<value>.*)$")
_MARKER = re.compile(
    r"# %% ntdd (?P<kind>setup|skipped|test|fixtures)(?:: cell (?P<index>\d+))?"
    r"(?:, id (?P<id>[^,\s]+))?(?:, sha (?P<sha>[0-9a-f]+))?\s*$"
)
_MARKER_START = "# %% ntdd "
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_HEADER_LINES = 12
FRAME_FIELD = "# ntdd-frame: "


@dataclass(frozen=True)
class Header:
    """What a generated module records about its origin."""

    source: str
    version: str
    content_hash: str
    frame: str = ""  # hash of everything outside the test regions
    render: str = ""  # fingerprint of what rendered it (templates.render_fingerprint)


@dataclass(frozen=True)
class Region:
    """The lines of a module that one notebook cell became (1-based, inclusive)."""

    kind: str
    index: int
    id: str | None
    sha: str | None
    marker_line: int
    start: int  # first line after the marker
    end: int  # last line, trailing blank lines excluded
    text: str  # lines start..end


def marker_id(cell_id: str | None) -> str | None:
    """A cell id as a region marker can carry it: nbformat's id alphabet only.

    Cells with other ids (spaces, newlines, `$`) are known by their index.
    """
    return cell_id if cell_id and _SAFE_ID.fullmatch(cell_id) else None


def is_generated(text: str) -> bool:
    """Whether *text* is a module ntdd wrote (its first line is ntdd's header)."""
    return text.startswith(HEADER_FIRST_LINE)


def parse_header(text: str) -> Header | None:
    """The header of a generated module, or None when *text* is not one."""
    if not is_generated(text):
        return None
    fields: dict[str, str] = {}
    for line in text.split("\n", _HEADER_LINES)[1:_HEADER_LINES]:
        match = _HEADER_FIELD.match(line)
        if match is None:
            break
        fields[match["key"]] = match["value"].strip()
    if not {"source", "version", "hash"} <= fields.keys():
        return None
    return Header(
        fields["source"],
        fields["version"],
        fields["hash"],
        fields.get("frame", ""),
        fields.get("render", ""),
    )


def parse_regions(text: str) -> list[Region]:
    """Every `# %% ntdd` region of a module, in order."""
    return regions_of_lines(text.split("\n"))


def regions_of_lines(lines: list[str], with_text: bool = True) -> list[Region]:
    """Every `# %% ntdd` region of a module's lines (with or without line ends), in order."""
    marks = [
        (i, m)
        for i, line in enumerate(lines)
        if line.startswith(_MARKER_START) and (m := _MARKER.match(line))
    ]
    regions = []
    for n, (i, match) in enumerate(marks):
        stop = marks[n + 1][0] if n + 1 < len(marks) else len(lines)
        body = lines[i + 1 : stop]
        while body and not body[-1].strip():
            body.pop()
        regions.append(
            Region(
                kind=match["kind"],
                index=int(match["index"] or -1),
                id=match["id"],
                sha=match["sha"],
                marker_line=i + 1,
                start=i + 2,
                end=i + 1 + len(body),
                text="\n".join(line.rstrip("\n") for line in body) if with_text else "",
            )
        )
    return regions


def region_sha(text: str) -> str:
    """The short hash a test region's marker records."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def frame_sha(text: str, regions: list[Region] | None = None) -> str:
    """A hash of a module's frame: every line outside its test regions' text.

    The header's own `ntdd-frame` line is left out (it holds this hash); the
    region markers, with their recorded hashes, are in.
    """
    lines = text.split("\n")
    tests = [r for r in (parse_regions(text) if regions is None else regions) if r.kind == "test"]
    inside = {n for r in tests for n in range(r.start, r.end + 1)}
    frame = [
        line
        for n, line in enumerate(lines, 1)
        if n not in inside and not line.startswith(FRAME_FIELD)
    ]
    return hashlib.sha256("\n".join(frame).encode("utf-8")).hexdigest()[:16]


def intact(text: str, header: Header) -> bool:
    """Whether a module is exactly as ntdd wrote it: no region or frame edited."""
    regions = parse_regions(text)
    tests = [r for r in regions if r.kind == "test"]
    return frame_sha(text, regions) == header.frame and all(
        r.sha == region_sha(r.text) for r in tests
    )


def stamp_hashes(text: str) -> str:
    """Record in a rendered module the hashes that later edits are told by.

    Each test marker gets `sha <hash of its region>`, and the header gets
    `# ntdd-frame: <hash of the rest>`, after its other fields.
    """
    lines = text.split("\n")
    for region in parse_regions(text):
        if region.kind == "test" and region.sha is None:
            lines[region.marker_line - 1] += f", sha {region_sha(region.text)}"
    stamped = "\n".join(lines)
    fields = [i for i, line in enumerate(lines[:_HEADER_LINES]) if _HEADER_FIELD.match(line)]
    if not fields:
        return stamped
    lines.insert(fields[-1] + 1, f"{FRAME_FIELD}{frame_sha(stamped)}")
    return "\n".join(lines)
