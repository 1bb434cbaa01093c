"""Read a notebook file into a `Notebook`. The only module that touches JSON.

nbformat's own reader validates every notebook against its JSON schema, which
costs milliseconds per file and rejects notebooks that every Jupyter front-end
opens. ntdd parses the JSON itself, checks the structure it relies on, and
hands older formats (v1-v3) to nbformat's converters.

jupytext's text notebooks (`.py`, `.md`) are read by jupytext, in
`text_notebook`, into the same JSON object, and checked here alike.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntdd.errors import NotebookReadError, NotPythonError
from ntdd.notebook.markers import is_test_cell
from ntdd.notebook.streams import SHORTENED
from ntdd.notebook.text import TEXT_SUFFIXES, read_text_notebook
from ntdd.values import Cell, Notebook

PYTHON_LANGUAGES = frozenset({"python", "python3", "ipython", "ipython3", "python2"})


def read_notebook(path: str | Path) -> Notebook:
    """Read the notebook at *path*; raise `NotebookReadError` naming why not."""
    path = Path(path)
    return notebook_of_bytes(read_bytes(path), path)


def notebook_of_bytes(data: bytes, path: Path) -> Notebook:
    """The notebook that *data*, read from *path*, holds."""
    if path.suffix in TEXT_SUFFIXES:
        return parse_notebook(read_text_notebook(path, data), path)
    return parse_notebook(_json_of(data, path), path)


def _json_of(data: bytes, path: Path) -> dict[str, Any]:
    if not data.strip():
        raise NotebookReadError(f"{path}: empty file, not a notebook")
    if b"\x00" in data[:8192]:
        raise NotebookReadError(f"{path}: binary file, not a notebook")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise NotebookReadError(f"{path}: not UTF-8 text (byte {e.start}), not a notebook") from e
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise NotebookReadError(f"{path}: {_json_problem(text, e)}") from e
    except RecursionError as e:  # Python's parser recurses once per level of nesting
        raise NotebookReadError(f"{path}: JSON nested too deeply to parse, not a notebook") from e
    if not isinstance(obj, dict):
        raise NotebookReadError(
            f"{path}: JSON {type(obj).__name__}, not a notebook (expected an object)"
        )
    return obj


def parse_notebook(obj: Mapping[str, Any], path: Path) -> Notebook:
    """Turn a notebook's JSON object into a `Notebook`."""
    major = obj.get("nbformat")
    if "cells" not in obj and "worksheets" not in obj and major is None:
        raise NotebookReadError(
            f"{path}: JSON object with no 'nbformat' or 'cells': not a notebook"
        )
    if not isinstance(major, int) or isinstance(major, bool):
        raise NotebookReadError(f"{path}: 'nbformat' is {major!r}, expected a version number")
    if major > 4:
        raise NotebookReadError(f"{path}: nbformat {major} is newer than this ntdd reads (4)")
    if major < 4:
        obj = _upgrade(obj, path, major)
    language = _foreign_language(obj)
    minor = obj.get("nbformat_minor", 0)
    cells = obj.get("cells")
    if not isinstance(cells, list):
        raise NotebookReadError(f"{path}: 'cells' is {type(cells).__name__}, expected a list")
    notebook = Notebook(
        path=path,
        cells=tuple(_cell_from_json(raw, n, path) for n, raw in enumerate(cells, 1)),
        nbformat=4,
        nbformat_minor=minor if isinstance(minor, int) else 0,
    )
    if language is not None:
        has_tests = any(is_test_cell(cell) for cell in notebook.cells)
        message = f"{path}: a {language!r} notebook; ntdd runs Python notebooks"
        raise NotPythonError(message, language, has_tests)
    return notebook


def read_bytes(path: Path) -> bytes:
    """A notebook file's bytes, or a `NotebookReadError` saying why it cannot be read."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise NotebookReadError(unreadable(path, e)) from e


def unreadable(path: Path, error: OSError) -> str:
    """Why the notebook at *path* could not be read, as *error* says it."""
    if isinstance(error, IsADirectoryError):
        return f"{path}: is a directory, not a notebook"
    lost = dangling_link(path)
    if lost is not None:
        return lost
    reason = error.strerror or type(error).__name__
    return f"{path}: cannot be read: {reason.lower()}"


def dangling_link(path: Path) -> str | None:
    """What is wrong with *path* when it is a link to a file that does not exist
    (a committed link to a notebook that was deleted or moved); None otherwise."""
    if not path.is_symlink():
        return None
    try:
        os.stat(path)
    except FileNotFoundError:
        target = os.readlink(path)
        return f"{path}: a link to {target}, which does not exist; fix the link or remove it"
    except OSError:  # a loop of links, said as the system says it
        return None
    return None


# The first line of a file Git LFS stores in place of the notebook it tracks.
_LFS_POINTER = "version https://git-lfs.github.com/spec/"


def _json_problem(text: str, e: json.JSONDecodeError) -> str:
    if text.startswith(_LFS_POINTER):
        return (
            "a Git LFS pointer, not the notebook: fetch the file with `git lfs pull` "
            "(on GitHub Actions: actions/checkout with `lfs: true`)"
        )
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.startswith(("<<<<<<< ", ">>>>>>> ")) or line == "=======":
            return f"git merge-conflict markers at line {lineno}; resolve the conflict first"
    if _unclosed(text):
        return "truncated JSON (it ends inside an object or string); the file was cut short"
    return f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}"


def _unclosed(text: str) -> bool:
    """Whether *text* is well formed up to where it stops short: a cut-off file."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and (not stack or stack.pop() != ch):
            return False
    return in_string or bool(stack)


def _upgrade(obj: Mapping[str, Any], path: Path, major: int) -> dict[str, Any]:
    """Convert nbformat 1-3 to 4 with nbformat's own converters."""
    if major == 3:
        sheets = obj.get("worksheets")
        if not isinstance(sheets, list) or not all(
            isinstance(s, dict) and isinstance(s.get("cells"), list) for s in sheets
        ):
            raise NotebookReadError(f"{path}: nbformat 3 notebook without worksheets of cells")
    import nbformat

    try:
        node = nbformat.from_dict(obj)
        upgraded = nbformat.convert(node, 4)
    except Exception as e:
        raise NotebookReadError(f"{path}: nbformat {major} notebook cannot be upgraded: {e}") from e
    return dict(upgraded)


def _foreign_language(obj: Mapping[str, Any]) -> str | None:
    """The notebook's language when its metadata names one other than Python."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    info = meta.get("language_info")
    spec = meta.get("kernelspec")
    names = [
        info.get("name") if isinstance(info, dict) else None,
        spec.get("language") if isinstance(spec, dict) else None,
    ]
    for name in names:
        if isinstance(name, str) and name.lower() not in PYTHON_LANGUAGES:
            return name
    return None


def _cell_from_json(raw: object, index: int, path: Path) -> Cell:
    where = f"{path}: cell {index}"
    if not isinstance(raw, dict):
        raise NotebookReadError(f"{where} is {type(raw).__name__}, expected an object")
    cell_type = raw.get("cell_type")
    if not isinstance(cell_type, str):
        raise NotebookReadError(f"{where} has no 'cell_type'")
    metadata = raw.get("metadata", {})
    if not isinstance(metadata, dict):
        raise NotebookReadError(
            f"{where}: 'metadata' is {type(metadata).__name__}, expected an object"
        )
    cell_id = raw.get("id")
    return Cell(
        index=index,
        cell_type=cell_type,
        source=_source(raw.get("source", ""), where),
        id=cell_id if isinstance(cell_id, str) and cell_id else None,
        tags=_tags(metadata.get("tags", []), where),
    )


def _source(source: object, where: str) -> str:
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    raise NotebookReadError(f"{where}: 'source' must be a string or a list of strings")


def _tags(tags: object, where: str) -> tuple[str, ...]:
    if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
        return tuple(tags)
    raise NotebookReadError(f"{where}: 'metadata.tags' must be a list of strings")


@dataclass(frozen=True)
class SavedCell:
    """A code cell's outputs as the notebook file holds them: what a run is checked against."""

    index: int  # as Jupyter counts cells: 1 is the first; every cell counts
    execution_count: int | None  # None: the cell was never run before it was saved
    outputs: tuple[dict[str, Any], ...]  # nbformat's shapes, multi-line strings joined
    shortened: dict[str, Any] | None = None  # streams ntdd wrote back as tails: each one's
    # whole length and SHA-256, by name, as the cell's `ntdd` metadata says (`streams`)


def notebook_with_outputs(data: bytes, path: Path) -> tuple[Notebook, dict[int, SavedCell]]:
    """A `.ipynb` file's notebook and its code cells' saved outputs, its JSON parsed once."""
    obj = _json_of(data, path)
    return parse_notebook(obj, path), _outputs_of(obj, path)


def saved_outputs(data: bytes, path: Path) -> dict[int, SavedCell]:
    """Each code cell's saved outputs, by cell index, from a `.ipynb` file's *data*."""
    return _outputs_of(_json_of(data, path), path)


def _outputs_of(obj: dict[str, Any], path: Path) -> dict[int, SavedCell]:
    """Strings saved as lists of lines are joined, as nbformat joins them when it reads a
    notebook, so that outputs compare as a kernel made them."""
    major = obj.get("nbformat")
    if isinstance(major, int) and major < 4:
        obj = _upgrade(obj, path, major)
    cells = obj.get("cells")
    if not isinstance(cells, list):
        raise NotebookReadError(f"{path}: 'cells' is {type(cells).__name__}, expected a list")
    found: dict[int, SavedCell] = {}
    for index, raw in enumerate(cells, 1):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        outputs = raw.get("outputs", [])
        if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
            raise NotebookReadError(f"{path}: cell {index}: 'outputs' must be a list of objects")
        count = raw.get("execution_count")
        found[index] = SavedCell(
            index,
            count if isinstance(count, int) and not isinstance(count, bool) else None,
            tuple(_joined(output) for output in outputs),
            _shortened(raw),
        )
    return found


def _shortened(cell: dict[str, Any]) -> dict[str, Any] | None:
    """What the cell's `ntdd` metadata says of its streams written back as tails (each
    entry checked where it is compared), or None."""
    meta = cell.get("metadata")
    ours = meta.get("ntdd") if isinstance(meta, dict) else None
    found = ours.get(SHORTENED) if isinstance(ours, dict) else None
    return found if isinstance(found, dict) else None


def _joined(output: dict[str, Any]) -> dict[str, Any]:
    """An output with its lists of lines joined (`text`, and each MIME type's data)."""
    joined = dict(output)
    if isinstance(joined.get("text"), list):
        joined["text"] = "".join(str(line) for line in joined["text"])
    data = joined.get("data")
    if isinstance(data, dict):
        joined["data"] = {
            mime: "".join(str(line) for line in value)
            if isinstance(value, list) and not mime.endswith("json")
            else value
            for mime, value in data.items()
        }
    return joined
