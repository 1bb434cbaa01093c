"""The text of a generated module: written and read here, both directions side by side.

A module ntdd writes for a notebook is

    # ntdd: generated — edit the notebook or use `ntdd sync`.      the header:
    # ntdd-source: nb.ipynb                                        where it came from,
    # ntdd-version: 0.1.0                                          which ntdd wrote it,
    # ntdd-hash: sha256:…                                          the notebook's test content,
    # ntdd-render: …                                               the format and templates,
    # ntdd-frame: …                                                the text outside test regions
    …
    # %% ntdd fixtures
    # %% ntdd setup: cell 1, id 2d3a2959                           one region per code cell,
    # %% ntdd test: cell 4, id 9ba5a08a, sha 1c2d…                 in notebook order,
    # %% ntdd end: after cell 9                                    and the cells below the last test

A test region is a cell of `def test_*` kept as written (its marks applied
after it), or one function wrapping the cell: the cell's marks as
decorators, `def test_x():`, a `global` line when the cell assigns names,
and the cell's lines; or a function that runs the cell as notebook code.
The Jinja templates lay the module out; the pieces whose text `sync`,
`export --check` and the runtime read back are made and read here.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import NtddError
from ntdd.notebook import cell_code, markers
from ntdd.values import Mark

#: Bumped whenever the same notebook and templates would render different text:
#: a module whose header records the same format and templates is current.
FORMAT = 6

HEADER_FIRST_LINE = "# ntdd: generated — edit the notebook or use `ntdd sync`."
VERSION_FIELD = "# ntdd-version: "
FRAME_FIELD = "# ntdd-frame: "
MARKERS_FIELD = "# ntdd-markers: "  # how many markers ntdd wrote: more marker-like lines are fakes
_HEADER_FIELD = re.compile(r"# ntdd-(?P<key>[a-z-]+): (?P<value>.*)$")
_HEADER_LINES = 12

MARKER_START = "# %% ntdd "
_MARKER = re.compile(
    r"# %% ntdd (?P<kind>setup|skipped|test|fixtures|parameters|end)"
    r"(?:: (?:(?:after|before) )?cell (?P<index>\d+))?"
    r"(?:, id (?P<id>[^,\s]+))?(?:, sha (?P<sha>[0-9a-f]+))?\s*$"
)
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Ends each marker ntdd renders, until `stamp_hashes` or `finish` takes it off: which lines
#: ntdd wrote as markers is then known for certain, whatever the cells hold (no compiled
#: cell, and no string literal ntdd writes, can hold a NUL).
_WRITTEN = "\0"
#: How many marker-like lines a test region may hold before its end is no longer looked for.
_WINDOW = 8
#: How many other readings of a module's markers are tried against its frame hash.
_READINGS = 32

# Lines ntdd adds inside test regions, each saying why.
GLOBAL_NOTE = "# ntdd: the cell's assignments land in the notebook's namespace, as in a kernel"
MARKS_COMMENT = "# ntdd: marks of cell"
CELL_CODE_NOTE = "# ntdd: the cell runs as notebook code"
EMPTY_BODY = "pass  # ntdd: the cell has no statements"
USES_DEVICE = 'pytest.mark.usefixtures("device")'
NEEDS_CUDA = '__ntdd__.needs("cuda")'
_DEF = re.compile(r"(?:async\s+)?def\s+(?P<name>\w+)\s*\(")


# -- the header ----------------------------------------------------------------


@dataclass(frozen=True)
class Header:
    """What a generated module records about its origin."""

    notebook: str  # the notebook, relative to the module's folder (`# ntdd-source:`)
    version: str
    content_hash: str
    frame: str = ""  # hash of everything outside the test regions
    render: str = ""  # the format and templates it was rendered with


def header_text(header: Header) -> str:
    """The header's lines, before the frame hash is stamped in."""
    return "\n".join(
        [
            HEADER_FIRST_LINE,
            f"# ntdd-source: {_quoted(header.notebook)}",
            f"{VERSION_FIELD}{header.version}",
            f"# ntdd-hash: {header.content_hash}",
            f"# ntdd-render: {header.render}",
        ]
    )


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
    try:
        notebook = _unquoted(fields["source"])
    except ValueError:
        return None
    frame, render = fields.get("frame", ""), fields.get("render", "")
    return Header(notebook, fields["version"], fields["hash"], frame, render)


def _quoted(path: str) -> str:
    """A path as a header field: as is, or as a JSON string when it holds odd characters."""
    plain = path.isprintable() and path == path.strip() and not path.startswith('"')
    return path if plain else json.dumps(path)


def _unquoted(field: str) -> str:
    if not field.startswith('"'):
        return field
    value = json.loads(field)
    if not isinstance(value, str):
        raise ValueError(field)
    return value


def render_fingerprint(templates: list[Path]) -> str:
    """What a rendering depends on besides the notebook: ntdd's format and the templates.

    Not ntdd's version or code: a release that renders the same text leaves
    committed modules current. (A change to how modules are rendered bumps
    `FORMAT`; the golden sample modules catch one that forgets to.)
    """
    stamps = []
    for path in templates:
        stat = path.stat()
        stamps.append((path, stat.st_mtime_ns, stat.st_size))
    return _fingerprint(tuple(stamps))


@functools.lru_cache(maxsize=64)
def _fingerprint(stamps: tuple[tuple[Path, int, int], ...]) -> str:
    """The templates' digest, read again only when one of them changed (every
    module rendered would otherwise read and hash them all)."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    for path, _, _ in stamps:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def without_version(text: str) -> str:
    """*text* less its version line: two modules that differ only there say the same."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(VERSION_FIELD))


# -- regions ---------------------------------------------------------------------


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
    return f"{MARKER_START}{kind}: cell {index}" + (f", id {safe}" if safe else "") + _WRITTEN


def parameters_marker(index: int, after: bool) -> str:
    """`# %% ntdd parameters: after cell 3`: where test-only parameters go in."""
    return f"{MARKER_START}parameters: {'after' if after else 'before'} cell {index}{_WRITTEN}"


def end_marker(after: int) -> str:
    """`# %% ntdd end: after cell 9`: the test that runs the cells below the last test."""
    return f"{MARKER_START}end: after cell {after}"


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
        if line.startswith(MARKER_START) and (m := _MARKER.match(line))
    ]
    chosen = _read_markers(lines, found, with_ends)
    return [_region(lines, found, chosen, n, with_text) for n in range(len(chosen))]


def _region(
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
    ends = _Ends(lines, found, search=bool(frames))
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


class _Ends:
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
    count = _recorded_count(text.split("\n", _HEADER_LINES)[:_HEADER_LINES])
    return count is not None and count != len(regions)


def _recorded_count(lines: list[str]) -> int | None:
    """How many markers ntdd wrote (None in a module of format 3 or before)."""
    if not lines or lines[0] != HEADER_FIRST_LINE:
        return None
    for line in lines[:_HEADER_LINES]:
        if line.startswith(MARKERS_FIELD) and line[len(MARKERS_FIELD) :].strip().isdigit():
            return int(line[len(MARKERS_FIELD) :])
    return None


def _recorded_frames(lines: list[str]) -> tuple[str, ...]:
    if not lines or lines[0] != HEADER_FIRST_LINE:
        return ()
    return tuple(
        line.removeprefix(FRAME_FIELD).strip()
        for line in lines[:_HEADER_LINES]
        if line.startswith(FRAME_FIELD)
    )


def _frame_of(texts: list[str], found: list[tuple[int, re.Match[str]]], chosen: list[int]) -> str:
    regions = [_region(texts, found, chosen, n, text=False) for n in range(len(chosen))]
    return _frame_digest(texts, regions, (FRAME_FIELD, VERSION_FIELD)) if regions else ""


def region_sha(text: str) -> str:
    """The short hash a test region's marker records."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def frame_sha(text: str, regions: list[Region] | None = None, legacy: bool = False) -> str:
    """A hash of a module's frame: every line outside its test regions' text.

    The header's own `ntdd-frame` line and its version line are left out; the
    region markers, with their recorded hashes, are in. (Format 1 hashed the
    version line too: *legacy* computes that, so that such a module reads as
    unedited.)
    """
    regions = parse_regions(text) if regions is None else regions
    left_out = (FRAME_FIELD,) if legacy else (FRAME_FIELD, VERSION_FIELD)
    return _frame_digest(text.split("\n"), regions, left_out)


def _frame_digest(lines: list[str], regions: list[Region], left_out: tuple[str, ...]) -> str:
    tests = [r for r in regions if r.kind == "test"]
    inside = {n for r in tests for n in range(r.start, r.end + 1)}
    frame = [
        line for n, line in enumerate(lines, 1) if n not in inside and not line.startswith(left_out)
    ]
    return hashlib.sha256("\n".join(frame).encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
    lines = [line.removesuffix(_WRITTEN) for line in lines]
    regions = [_region(lines, found, list(range(len(found))), n, True) for n in range(len(found))]
    for region in regions:
        if region.kind == "test" and region.sha is None:
            lines[region.marker_line - 1] += f", sha {region_sha(region.text)}"
    fields = [i for i, line in enumerate(lines[:_HEADER_LINES]) if _HEADER_FIELD.match(line)]
    if not fields:
        return "\n".join(lines)
    lines.insert(fields[-1] + 1, f"{MARKERS_FIELD}{len(found)}")
    shifted = [(i + 1 if i > fields[-1] else i, match) for i, match in found]
    regions = [
        _region(lines, shifted, list(range(len(found))), n, False) for n in range(len(found))
    ]
    frame = _frame_digest(lines, regions, (FRAME_FIELD, VERSION_FIELD))
    lines.insert(fields[-1] + 2, f"{FRAME_FIELD}{frame}")
    return "\n".join(lines)


def finish(text: str) -> str:
    """A rendered module that gets no hashes (one pytest imports from memory), as Python.

    Unless a cell holds a line that reads like a marker: the hashes then tell
    the markers from it, for the locations of failures and of each test.
    """
    if text.count(f"\n{MARKER_START}") > text.count(_WRITTEN) + 1:  # + the fixtures' own
        return stamp_hashes(text)
    return text.replace(_WRITTEN, "")


def _written_markers(lines: list[str]) -> list[tuple[int, re.Match[str]]]:
    """The markers of a rendering: those ntdd wrote, and the template's own (outside tests)."""
    found = []
    in_test = False
    for i, line in enumerate(lines):
        if not line.startswith(MARKER_START):
            continue
        match = _MARKER.match(line.removesuffix(_WRITTEN))
        if match is not None and (line.endswith(_WRITTEN) or not in_test):
            found.append((i, match))
            in_test = match["kind"] == "test"
    return found


def test_definitions(text: str) -> int:
    """The test functions and classes a module's test regions define."""
    found = 0
    for region in parse_regions(text):
        if region.kind == "test":
            found += len(re.findall(r"^(?:async def test|def test|class Test)", region.text, re.M))
    return found


# -- marks ---------------------------------------------------------------------


def mark_expression(mark: Mark) -> str:
    """A mark as the module applies it: `pytest.mark.xfail(reason='why')`."""
    if mark.name == "cuda" and not mark.args and not mark.kwargs:
        return NEEDS_CUDA
    arguments = [*mark.args, *(f"{key}={value}" for key, value in mark.kwargs)]
    return f"pytest.mark.{mark.name}" + (f"({', '.join(arguments)})" if arguments else "")


def mark_of_expression(expression: str) -> Mark | None:
    """The mark a decorator or a mark line applies; None for what ntdd derives itself."""
    if expression == USES_DEVICE:
        return None  # derived from the code, not a mark of the cell
    if expression == NEEDS_CUDA:
        return Mark("cuda")
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError as e:
        raise NtddError(f"cannot read the mark {expression!r}") from e
    call = node if isinstance(node, ast.Call) else None
    name = ast.unparse(call.func if call is not None else node)
    if not name.startswith("pytest.mark."):
        raise NtddError(f"{expression!r} is not a pytest mark; marks are all a cell can carry")
    word = name.removeprefix("pytest.mark.")
    if call is None:
        return Mark(word)
    try:
        return markers.mark_from_call(word, call)
    except markers.MarkerError as e:
        raise NtddError(f"the mark {expression!r}: {e}") from e


# -- test regions: written -------------------------------------------------------


def wrapped_body(code: str, assigned: tuple[str, ...], global_after: int, empty: bool) -> str:
    """A bare test cell as a function's body: its names declared global, then indented.

    The declaration goes first, or after the cell's docstring, which must stay
    the function's first statement. A cell of comments only gets a `pass`.
    """
    prefix = cell_code.indent_prefix(code)
    if assigned:
        lines = code.split("\n")
        lines.insert(global_after, f"global {', '.join(assigned)}  {GLOBAL_NOTE}")
        code = "\n".join(lines)
    body = cell_code.indent(code, prefix)
    return body + f"\n{prefix}{EMPTY_BODY}" if empty else body


def cell_code_note(code: str, reason: str) -> str:
    """The first line of a test that runs its cell as notebook code, saying why."""
    return f"{cell_code.indent_prefix(code)}{CELL_CODE_NOTE}: {reason} cannot be in a function"


def marks_tail(names: tuple[str, ...], marks: list[str], device_users: list[str]) -> list[str]:
    """The lines after a cell of functions that apply its marks to each of them."""
    return [f"{m}({n})" for n in names for m in marks] + [
        f"{USES_DEVICE}({n})" for n in device_users
    ]


# -- test regions: read back -------------------------------------------------------


@dataclass(frozen=True)
class CellEdit:
    """What a test region says its cell should now be."""

    source: str
    marks: tuple[Mark, ...]
    kind: str  # "functions", "statements" or "cell": how the region carries the cell


def read_region(text: str) -> CellEdit:
    """The cell source, marks and kind that a (possibly edited) test region stands for."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("#"):
        return _functions_region(lines)
    return _wrapped_region(lines)


def _functions_region(lines: list[str]) -> CellEdit:
    cut = next((i for i, line in enumerate(lines) if line.startswith(MARKS_COMMENT)), len(lines))
    marks = tuple(m for line in lines[cut + 1 :] if (m := _mark_of_line(line)) is not None)
    return CellEdit("\n".join(lines[:cut]).rstrip(), _unique(marks), "functions")


def _wrapped_region(lines: list[str]) -> CellEdit:
    at = next((i for i, line in enumerate(lines) if _DEF.match(line)), None)
    if at is None:
        raise NtddError("no `def test_...():` line in the region")
    outside = [line for line in lines[:at] if line.strip() and not line.lstrip().startswith("@")]
    if outside:
        raise NtddError(f"{outside[0].strip()!r} above the test function is not a decorator")
    marks = tuple(m for line in lines[:at] if (m := _mark_of_decorator(line)) is not None)
    body_lines, extra = _split_body(lines[at + 1 :])
    if extra.strip():
        raise NtddError(
            "code was added after the wrapped cell's function; a bare test cell becomes one "
            "function, so add the code to the cell in the notebook"
        )
    if any(line.strip().startswith(CELL_CODE_NOTE) for line in body_lines):
        return CellEdit(_cell_code(body_lines), marks, "cell")
    body_lines = [line for line in body_lines if not line.rstrip().endswith(GLOBAL_NOTE)]
    prefix = "\t" if body_lines and body_lines[0].startswith("\t") else "    "
    body = cell_code.dedent("\n".join(body_lines), prefix)
    body = "\n".join(line for line in body.split("\n") if line.strip() != EMPTY_BODY)
    return CellEdit(body.rstrip(), marks, "statements")


def _cell_code(body_lines: list[str]) -> str:
    """The cell of a test that runs as notebook code: the string it passes to `run_cell`."""
    call = "\n".join(line for line in body_lines if not line.strip().startswith("#")).strip()
    try:
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call) and len(node.args) == 3
        code = ast.literal_eval(node.args[2])
    except (SyntaxError, ValueError, AssertionError) as e:
        raise NtddError("the region no longer calls `__ntdd__.run_cell(...)` with the cell") from e
    if not isinstance(code, str):
        raise NtddError("the cell passed to `__ntdd__.run_cell(...)` is not a string")
    return code.rstrip()


def _split_body(lines: list[str]) -> tuple[list[str], str]:
    """The function body, and any code after it at column 0."""
    inside = cell_code.continuation_lines("\n".join(lines))
    for n, line in enumerate(lines, 1):
        if line.strip() and not line[0].isspace() and n not in inside:
            return lines[: n - 1], "\n".join(lines[n - 1 :])
    return lines, ""


def _mark_of_decorator(line: str) -> Mark | None:
    text = line.strip()
    return mark_of_expression(text[1:]) if text.startswith("@") else None


def _mark_of_line(line: str) -> Mark | None:
    """`pytest.mark.slow(test_a)` -> Mark("slow"): the tail of a cell of functions."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    call = text[: text.rindex("(")] if text.endswith(")") else text
    return mark_of_expression(call)


def _unique(marks: tuple[Mark, ...]) -> tuple[Mark, ...]:
    return tuple(dict.fromkeys(marks))
