"""jupytext's text notebooks: percent-format `.py` and MyST `.md`, read and written back.

A `.py` or `.md` file is a notebook only when it carries jupytext's header
(a YAML block with a `jupytext:` key, commented out in a `.py`): ordinary
Python files and Markdown documents are never touched. The header is told
without jupytext; reading and writing go through jupytext's own reader and
writer (`pip install 'ntdd[jupytext]'`).

A text notebook has no cell ids (jupytext makes up new ones on every read),
so its cells are known by their position and content, as nbformat 4.4's are.
A write-back changes only the edited cells: it is refused unless jupytext
writes the file as it is, byte for byte (the header's version lines aside,
which are kept as they were: another `jupytext_version`, or none at all, as
in a header written by hand).
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ntdd.errors import NotebookReadError, TextNotebookWriteError

TEXT_SUFFIXES = (".py", ".md")
_HEAD_LINES = 200  # a header longer than this is no jupytext header
_JUPYTEXT_KEY = re.compile(r"\s*jupytext\s*:")
_JUPYTEXT_VERSION, _FORMAT_VERSION = "jupytext_version:", "format_version:"  # header lines
_BOM = "\ufeff"


def has_jupytext_header(path: Path) -> bool:
    """Whether *path* is a `.py` or `.md` file that starts with jupytext's header.

    Only the lines up to the header's end are read: for most files, one.
    """
    if path.suffix not in TEXT_SUFFIXES:
        return False
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as f:
            return header_says_jupytext(f, path.suffix)
    except OSError:
        return False


def header_says_jupytext(lines: Iterable[str], suffix: str) -> bool:
    """Whether *lines* open with a `---` block holding `jupytext:` (commented out in a `.py`)."""
    comment = "# " if suffix == ".py" else ""
    inside = False
    for _, line in zip(range(_HEAD_LINES), lines, strict=False):
        if not inside and _preamble(line, comment):
            continue
        if line.rstrip() == f"{comment}---":
            if inside:
                return False  # the header ended without a `jupytext:` key
            inside = True
        elif not inside or (comment and not line.startswith(comment.rstrip())):
            return False
        elif _JUPYTEXT_KEY.match(line[len(comment) :]):
            return True
    return False


def _preamble(line: str, comment: str) -> bool:
    """Lines a `.py` may have above its header: a shebang, an encoding line."""
    return bool(comment) and (line.startswith("#!") or (line.startswith("#") and "coding" in line))


@functools.cache
def jupytext_installed() -> bool:
    return importlib.util.find_spec("jupytext") is not None


def is_paired(path: Path) -> bool:
    """A text notebook with a `.ipynb` of the same name beside it: a jupytext pair."""
    return path.with_suffix(".ipynb").exists()


def newest_inputs(path: Path) -> Path:
    """The file of a jupytext pair that holds the cells to test: the newer, as jupytext reads it.

    jupytext loads a paired notebook's inputs from its text file, unless the
    `.ipynb` was saved after it (`jupytext.pairs.latest_inputs_and_outputs`;
    a tie goes to the text file). *path* itself when it is no `.ipynb` with a
    text notebook beside it, or when jupytext, which reads that one, is missing.
    """
    if path.suffix != ".ipynb" or not jupytext_installed():
        return path
    partners = [p for p in map(path.with_suffix, TEXT_SUFFIXES) if has_jupytext_header(p)]
    if not partners:
        return path
    newest = max(partners, key=_modified)  # the first of equals, as jupytext keeps it
    return path if _modified(path) > _modified(newest) else newest


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return float("-inf")


def read_text_notebook(path: Path, data: bytes) -> dict[str, Any]:
    """The notebook in *data*, the bytes of *path*, as nbformat's JSON object, read by jupytext."""
    text = _decoded(path, data)[1]
    if not text.strip():
        raise NotebookReadError(f"{path}: empty file, not a notebook")
    if not header_says_jupytext(text.split("\n", _HEAD_LINES), path.suffix):
        raise NotebookReadError(
            f"{path}: a {path.suffix} file without jupytext's header, not a notebook "
            "(ntdd reads .ipynb files, and jupytext's .py and .md notebooks with their header)"
        )
    jupytext = _jupytext(path)
    try:
        notebook = jupytext.reads(text, fmt=path.suffix[1:])
    except Exception as e:  # jupytext's own errors, YAML's in the header
        first = str(e).strip().split("\n", 1)[0]
        raise NotebookReadError(
            f"{path}: jupytext cannot read it: {type(e).__name__}: {first}"
        ) from e
    obj = dict(notebook)
    obj["cells"] = [{k: v for k, v in cell.items() if k != "id"} for cell in notebook.cells]
    return obj


def text_with_sources(path: Path, sources: Mapping[int, str], data: bytes) -> bytes:
    """The bytes of the text notebook *data* (read from *path*) with those cell sources
    (by number: 1 is the first), written by jupytext (see `write.replace_sources`)."""
    bom, text, newline = _decoded(path, data)
    jupytext = _jupytext(path)
    notebook = jupytext.reads(text, fmt=path.suffix[1:])
    fmt = _written_format(notebook)
    header, written = _kept_header(text, jupytext.writes(notebook, fmt=fmt), path)
    for number, source in sources.items():
        notebook.cells[number - 1].source = source
    new = "\n".join([*header, *jupytext.writes(notebook, fmt=fmt).split("\n")[written:]])
    _check_reads_back(jupytext.reads(new, fmt=path.suffix[1:]), notebook, sources, path)
    return (bom + new).replace("\n", newline).encode("utf-8")


def _decoded(path: Path, data: bytes) -> tuple[str, str, str]:
    """(byte-order mark, text with LF line ends, the file's line end)."""
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotebookReadError(f"{path}: not UTF-8 text (byte {e.start}), not a notebook") from e
    bom = _BOM if raw.startswith(_BOM) else ""
    newline = "\r\n" if "\r\n" in raw else "\n"
    return bom, raw.removeprefix(bom).replace("\r\n", "\n"), newline


def _jupytext(path: Path) -> Any:
    try:
        import jupytext
    except ImportError as e:
        raise NotebookReadError(
            f"{path}: a jupytext notebook; reading it needs jupytext: pip install 'ntdd[jupytext]'"
        ) from e
    return jupytext


def _written_format(notebook: Any) -> dict[str, str]:
    """The format jupytext read the file in, as its writer takes it."""
    found = notebook.metadata.get("jupytext", {}).get("text_representation", {})
    return {"extension": found["extension"], "format_name": found["format_name"]}


def _kept_header(text: str, as_is: str, path: Path) -> tuple[list[str], int]:
    """The file's own header, and the number of lines jupytext writes for it.

    jupytext writes its versions into the header (`format_version`,
    `jupytext_version`). The file keeps its own: another `jupytext_version`,
    or none of them, as a header written by hand has. Any other line jupytext
    would write otherwise is refused.
    """
    ours, theirs = text.split("\n"), as_is.split("\n")
    mine, its = _header_end(ours), _header_end(theirs)
    has_format = any(_FORMAT_VERSION in line for line in ours[:mine])
    a, b = _compared(ours, mine, has_format), _compared(theirs, its, has_format)
    if [line for _, line in a] == [line for _, line in b]:
        return ours[:mine], its
    raise TextNotebookWriteError(
        f"{path}: jupytext would not write it back as it is ({_difference(a, b)}); "
        "not changing it (save it once with jupytext, then sync again)"
    )


def _header_end(lines: list[str]) -> int:
    """The number of lines up to the end of the header: its closing `---` (0 with none)."""
    opened = False
    for n, line in enumerate(lines):
        if line.lstrip("#").strip() == "---":
            if opened:
                return n + 1
            opened = True
    return 0


def _compared(lines: list[str], header: int, has_format: bool) -> list[tuple[int, str]]:
    """(line number, line) but the header's version lines: `jupytext_version` is never
    compared, and `format_version` only where the file has one."""
    dropped = (_JUPYTEXT_VERSION,) if has_format else (_JUPYTEXT_VERSION, _FORMAT_VERSION)
    return [
        (n, line)
        for n, line in enumerate(lines)
        if n >= header or not any(key in line for key in dropped)
    ]


def _difference(ours: list[tuple[int, str]], theirs: list[tuple[int, str]]) -> str:
    """The first line jupytext would write otherwise (its version lines aside), in words."""
    for (n, a), (_, b) in zip(ours, theirs, strict=False):
        if a != b:
            return f"line {n + 1} would read {b.strip()!r}, not {a.strip()!r}"
    if len(theirs) < len(ours):
        last = theirs[-1][0] + 1 if theirs else 0
        return f"it would end after line {last}, {len(ours) - len(theirs)} line(s) early"
    return f"it would add {len(theirs) - len(ours)} line(s) after line {ours[-1][0] + 1}"


def _check_reads_back(again: Any, intended: Any, sources: Mapping[int, str], path: Path) -> None:
    """The written text must read back as the notebook with the edits, and nothing else."""

    def cells(nb: Any) -> list[tuple[str, str, Any]]:
        return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]

    if cells(again) != cells(intended):
        edited = ", ".join(f"cell {i}" for i in sorted(sources))
        raise TextNotebookWriteError(
            f"{path}: with the edit in {edited}, jupytext would not read the notebook back as "
            "written (a cell marker in the edit?); not changing it"
        )
