"""The hashes that tell an edited module from the one ntdd wrote: stamped in, then checked.

When a module is rendered, each test marker gets the hash of its region and
the header the hash of the frame (everything outside the test regions);
`intact` and `frame_intact` compare a module on disk against them.
"""

from __future__ import annotations

import re

from ntdd.format.module.header import (
    FRAME_FIELD,
    HEADER_FIELD,
    HEADER_LINES,
    MARKERS_FIELD,
    VERSION_FIELD,
    Header,
)
from ntdd.format.module.regions import (
    MARKER,
    MARKER_START,
    WRITTEN,
    Region,
    frame_digest,
    parse_regions,
    region_at,
    region_sha,
)


def frame_sha(text: str, regions: list[Region] | None = None, legacy: bool = False) -> str:
    """A hash of a module's frame: every line outside its test regions' text.

    The header's own `ntdd-frame` line and its version line are left out; the
    region markers, with their recorded hashes, are in. (Format 1 hashed the
    version line too: *legacy* computes that, so that such a module reads as
    unedited.)
    """
    regions = parse_regions(text) if regions is None else regions
    left_out = (FRAME_FIELD,) if legacy else (FRAME_FIELD, VERSION_FIELD)
    return frame_digest(text.split("\n"), regions, left_out)


def frame_intact(text: str, header: Header, regions: list[Region] | None = None) -> bool:
    """Whether the text outside the test regions is as ntdd wrote it."""
    regions = parse_regions(text) if regions is None else regions
    return header.frame in (frame_sha(text, regions), frame_sha(text, regions, legacy=True))


def intact(text: str, header: Header) -> bool:
    """Whether a module is exactly as ntdd wrote it: no region or frame edited."""
    regions = parse_regions(text)
    tests = [r for r in regions if r.kind == "test"]
    return frame_intact(text, header, regions) and all(r.sha == region_sha(r.text) for r in tests)


def stamp_hashes(text: str) -> str:
    """Record in a rendered module the hashes that later edits are told by.

    Each test marker gets `sha <hash of its region>`, and the header gets
    `# ntdd-frame: <hash of the rest>`, after its other fields. The markers
    are the lines ntdd wrote as markers, whatever the cells hold.
    """
    lines = text.split("\n")
    found = _written_markers(lines)
    lines = [line.removesuffix(WRITTEN) for line in lines]
    regions = [region_at(lines, found, list(range(len(found))), n, True) for n in range(len(found))]
    for region in regions:
        if region.kind == "test" and region.sha is None:
            lines[region.marker_line - 1] += f", sha {region_sha(region.text)}"
    fields = [i for i, line in enumerate(lines[:HEADER_LINES]) if HEADER_FIELD.match(line)]
    if not fields:
        return "\n".join(lines)
    lines.insert(fields[-1] + 1, f"{MARKERS_FIELD}{len(found)}")
    shifted = [(i + 1 if i > fields[-1] else i, match) for i, match in found]
    regions = [
        region_at(lines, shifted, list(range(len(found))), n, False) for n in range(len(found))
    ]
    frame = frame_digest(lines, regions, (FRAME_FIELD, VERSION_FIELD))
    lines.insert(fields[-1] + 2, f"{FRAME_FIELD}{frame}")
    return "\n".join(lines)


def finish(text: str) -> str:
    """A rendered module that gets no hashes (one pytest imports from memory), as Python.

    Unless a cell holds a line that reads like a marker: the hashes then tell
    the markers from it, for the locations of failures and of each test.
    """
    if text.count(f"\n{MARKER_START}") > text.count(WRITTEN) + 1:  # + the fixtures' own
        return stamp_hashes(text)
    return text.replace(WRITTEN, "")


def _written_markers(lines: list[str]) -> list[tuple[int, re.Match[str]]]:
    """The markers of a rendering: those ntdd wrote, and the template's own (outside tests)."""
    found = []
    in_test = False
    for i, line in enumerate(lines):
        if not line.startswith(MARKER_START):
            continue
        match = MARKER.match(line.removesuffix(WRITTEN))
        if match is not None and (line.endswith(WRITTEN) or not in_test):
            found.append((i, match))
            in_test = match["kind"] == "test"
    return found
