"""The `# %% ntdd …` regions of a generated module: their markers written, and found again.

Finding them is the hard direction: a cell may hold a line that reads like a
marker, and only the lines ntdd wrote are markers. The header's count of
markers, each test marker's hash of its region and the frame hash tell them
apart (`regions_of_lines`).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ntdd.format.module.header import (
    FRAME_FIELD,
    HEADER_FIRST_LINE,
    HEADER_LINES,
    MARKERS_FIELD,
    VERSION_FIELD,
)

MARKER_START = "# %% ntdd "
MARKER = re.compile(
    r"# %% ntdd (?P<kind>setup|skipped|test|fixtures|parameters|end)"
    r"(?:: (?:(?:after|before) )?cell (?P<index>\d+))?"
    r"(?:, id (?P<id>[^,\s]+))?(?:, sha (?P<sha>[0-9a-f]+))?\s*$"
)
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Ends each marker ntdd renders, until `stamp_hashes` or `finish` takes it off: which lines
#: ntdd wrote as markers is then known for certain, whatever the cells hold (no compiled
#: cell, and no string literal ntdd writes, can hold a NUL).
WRITTEN = "\0"
#: How many marker-like lines a test region may hold before its end is no longer looked for.
_WINDOW = 8
#: How many other readings of a module's markers are tried against its frame hash.
_READINGS = 32


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


def marker(kind: str, index: int, cell_id: str | None) -> str:
    """`# %% ntdd test: cell 4, id 9ba5a08a` (the sha is stamped in later)."""
    safe = marker_id(cell_id)
    return f"{MARKER_START}{kind}: cell {index}" + (f", id {safe}" if safe else "") + WRITTEN


def parameters_marker(index: int, after: bool) -> str:
    """`# %% ntdd parameters: after cell 3`: where test-only parameters go in."""
    return f"{MARKER_START}parameters: {'after' if after else 'before'} cell {index}{WRITTEN}"


def end_marker(after: int) -> str:
    """`# %% ntdd end: after cell 9`: the test that runs the cells below the last test."""
    return f"{MARKER_START}end: after cell {after}{WRITTEN}"


def parameters_call(index: int, after: bool, values: tuple[tuple[str, str], ...]) -> str:
    """The line that registers them: `__ntdd__.parameters(3, {'lr': 0.1})`."""
    written = "{" + ", ".join(f"{name!r}: {text}" for name, text in values) + "}"
    return f"__ntdd__.parameters({index}, {written}" + (")" if after else ", after=False)")


def marker_id(cell_id: str | None) -> str | None:
    """A cell id as a region marker can carry it: nbformat's id alphabet only.

    Cells with other ids (spaces, newlines, `$`) are known by their index.
    """
    return cell_id if cell_id and _SAFE_ID.fullmatch(cell_id) else None


def parse_regions(text: str) -> list[Region]:
    """Every `# %% ntdd` region of a module, in order."""
    return regions_of_lines(text.split("\n"))


def regions_of_lines(lines: list[str], with_text: bool = True) -> list[Region]:
    """Every region of a module's lines (with or without line ends), in order.

    A cell may hold a line that reads like a marker (one pasted from a
    module); only the lines ntdd wrote are markers. A test region ends where
    its text hashes to what its marker recorded; an edited one, where the
    module's frame hash says (`_read_markers`).
    """
    with_ends = bool(lines) and lines[-1].endswith("\n")  # read by linecache
    lines = [line.rstrip("\n") for line in lines]
    found = [
        (i, m)
        for i, line in enumerate(lines)
        if line.startswith(MARKER_START) and (m := MARKER.match(line))
    ]
    chosen = _read_markers(lines, found, with_ends)
    return [region_at(lines, found, chosen, n, with_text) for n in range(len(chosen))]


def region_at(
    lines: list[str], found: list[tuple[int, re.Match[str]]], chosen: list[int], n: int, text: bool
) -> Region:
    i, match = found[chosen[n]]
    stop = found[chosen[n + 1]][0] if n + 1 < len(chosen) else len(lines)
    body = _body(lines, i, stop)
    return Region(
        kind=match["kind"],
        index=int(match["index"] or -1),
        id=match["id"],
        sha=match["sha"],
        marker_line=i + 1,
        start=i + 2,
        end=i + 1 + len(body),
        text="\n".join(body) if text else "",
    )


def _body(lines: list[str], marker_at: int, stop: int) -> list[str]:
    body = lines[marker_at + 1 : stop]
    while body and not body[-1].strip():
        body.pop()
    return body


def _read_markers(
    lines: list[str], found: list[tuple[int, re.Match[str]]], with_ends: bool
) -> list[int]:
    """Which of the marker-like lines *found* are ntdd's markers (their indexes in it).

    As many as the header says ntdd wrote: all of them. Else a test region
    ends at the first marker-like line up to which its text hashes to what
    its marker recorded, or (an edited region) at the next one; when that
    reading has too many markers, other ends are tried for doubtful regions
    (edited ones, those before a marker out of the notebook's order or
    before an edited one), one, two or three at a time, until a reading has
    as many markers as ntdd wrote and gives the frame hash the header
    records. When none does, the first reading: `frame_intact` reports it as
    an edit, `markers_in_doubt` says why, and sync refuses.
    """
    count = _recorded_count(lines)
    if count == len(found):
        return list(range(len(found)))  # as many as ntdd wrote: no cell holds one
    frames = _recorded_frames(lines)
    texts = [*lines, ""] if with_ends else lines  # as `text.split("\n")` gives them
    ends = _RegionEnds(lines, found, search=bool(frames))
    first = ends.reading({})
    if count == len(first) or not frames or not ends.questions(first):
        return first
    if count is None and _frame_of(texts, found, first) in frames:
        return first
    tried = 0
    for depth in (1, 2, 3):  # one region's end moved, then two, then three
        for overrides in ends.alternatives(first, depth):
            chosen = ends.reading(overrides)
            if count is not None and len(chosen) != count:
                continue
            tried += 1
            if tried > _READINGS:
                return first
            if _frame_of(texts, found, chosen) in frames:
                return chosen
    return first


class _RegionEnds:
    """Where each test region may end: at marker-like line j (len(found): the module's end)."""

    def __init__(
        self, lines: list[str], found: list[tuple[int, re.Match[str]]], search: bool
    ) -> None:
        self.lines, self.found, self.search = lines, found, search
        self._options: dict[int, tuple[list[int], bool]] = {}

    def options(self, k: int) -> list[int]:
        """The ends of the region at marker *k*, the likeliest first."""
        return self._ends(k)[0]

    def intact(self, k: int) -> bool:
        return self._ends(k)[1]

    def _ends(self, k: int) -> tuple[list[int], bool]:
        if k not in self._options:
            self._options[k] = self._work_out(k)
        return self._options[k]

    def _work_out(self, k: int) -> tuple[list[int], bool]:
        i, match = self.found[k]
        if match["kind"] != "test" or k + 1 == len(self.found) or not match["sha"]:
            return [k + 1], match["kind"] != "test" or bool(match["sha"])
        window = list(range(k + 1, min(len(self.found), k + _WINDOW) + 1))
        for j in window:
            stop = self.found[j][0] if j < len(self.found) else len(self.lines)
            if region_sha("\n".join(_body(self.lines, i, stop))) == match["sha"]:
                rest = [e for e in window if e != j] if self.search else []
                return [j, *rest], True
        return (window if self.search else [k + 1]), False

    def reading(self, overrides: dict[int, int]) -> list[int]:
        chosen: list[int] = []
        k = 0
        while k < len(self.found):
            chosen.append(k)
            k = overrides.get(k, self.options(k)[0])
        return chosen

    def questions(self, chosen: list[int]) -> list[int]:
        """The markers of a reading whose region may end elsewhere: an edited region (a
        line may have been pasted into it), then one just before an edited region (the
        lines pasted may have been put right after it)."""
        edited = [k for k in chosen if not self.intact(k) and len(self.options(k)) > 1]
        pairs = list(itertools.pairwise(chosen))
        disorder = [a for a, b in pairs if self._out_of_order(a, b)]
        before = [a for a, b in pairs if not self.intact(b)]
        doubtful = dict.fromkeys([*edited, *disorder, *before])
        return [k for k in doubtful if len(self.options(k)) > 1]

    def _out_of_order(self, a: int, b: int) -> bool:
        """ntdd writes one marker per cell, in the notebook's order: a marker of a cell at
        or above the one before it was pasted."""
        first, then = self.found[a][1], self.found[b][1]
        cells = ("setup", "skipped", "test")
        if first["kind"] not in cells or then["kind"] not in cells:
            return then["kind"] == "fixtures"
        return int(then["index"]) <= int(first["index"])

    def alternatives(self, chosen: list[int], depth: int) -> Iterator[dict[int, int]]:
        """Readings that end *depth* of the doubtful regions elsewhere, the nearest first."""
        for ks in itertools.combinations(self.questions(chosen), depth):
            choices = [[(k, j) for j in self.options(k)[1:]] for k in ks]
            for picked in itertools.product(*choices):
                yield dict(picked)


def markers_in_doubt(text: str, regions: list[Region]) -> bool:
    """Whether marker-like lines in test regions could not be told from ntdd's markers."""
    count = _recorded_count(text.split("\n", HEADER_LINES)[:HEADER_LINES])
    return count is not None and count != len(regions)


def _recorded_count(lines: list[str]) -> int | None:
    """How many markers ntdd wrote (None in a module of format 3 or before)."""
    if not lines or lines[0] != HEADER_FIRST_LINE:
        return None
    for line in lines[:HEADER_LINES]:
        if line.startswith(MARKERS_FIELD) and line[len(MARKERS_FIELD) :].strip().isdigit():
            return int(line[len(MARKERS_FIELD) :])
    return None


def _recorded_frames(lines: list[str]) -> tuple[str, ...]:
    if not lines or lines[0] != HEADER_FIRST_LINE:
        return ()
    return tuple(
        line.removeprefix(FRAME_FIELD).strip()
        for line in lines[:HEADER_LINES]
        if line.startswith(FRAME_FIELD)
    )


def _frame_of(texts: list[str], found: list[tuple[int, re.Match[str]]], chosen: list[int]) -> str:
    regions = [region_at(texts, found, chosen, n, text=False) for n in range(len(chosen))]
    return frame_digest(texts, regions, (FRAME_FIELD, VERSION_FIELD)) if regions else ""


def conflict_marker_line(text: str) -> int | None:
    """The first line of git's merge-conflict markers in *text*, if any (1-based)."""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line in ("=======", "<<<<<<<", ">>>>>>>"):
            return number
    return None


def region_sha(text: str) -> str:
    """The short hash a test region's marker records."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def frame_digest(lines: list[str], regions: list[Region], left_out: tuple[str, ...]) -> str:
    tests = [r for r in regions if r.kind == "test"]
    inside = {n for r in tests for n in range(r.start, r.end + 1)}
    frame = [
        line for n, line in enumerate(lines, 1) if n not in inside and not line.startswith(left_out)
    ]
    return hashlib.sha256("\n".join(frame).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def test_definitions(text: str) -> int:
    """The test functions and classes a module's test regions define."""
    found = 0
    for region in parse_regions(text):
        if region.kind == "test":
            found += len(re.findall(r"^(?:async def test|def test|class Test)", region.text, re.M))
    return found
