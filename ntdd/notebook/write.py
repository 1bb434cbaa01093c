"""Write new sources into a notebook's cells, and change no other byte.

Jupyter, nbformat and most editors write notebooks as `json.dumps` with one
indent width, keys in order and a trailing newline. The writer finds the
settings that reproduce the file exactly (a byte-order mark and CRLF line
ends included), changes the cells' sources, and writes the result back with
the same settings: outputs, metadata, ids and every other cell stay byte for
byte. A file those settings cannot reproduce is refused rather than
reformatted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ntdd.errors import NotebookWriteError
from ntdd.notebook.files import write_atomic
from ntdd.notebook.streams import SHORTENED
from ntdd.notebook.text import TEXT_SUFFIXES, text_with_sources

_STYLES = [
    (indent, ascii_only) for indent in (1, 2, 4, "\t", 0, None) for ascii_only in (False, True)
]
_BOM = "\ufeff"


def replace_sources(path: Path, sources: Mapping[int, str], was: bytes | None = None) -> None:
    """Set the source of cells (by number: 1 is the first) of the notebook at *path*, atomically.

    Cells are told by number in the notebook as it was read: *was*, those
    bytes, when given, is what the edits go into, and the file must still
    hold them when it is replaced (Jupyter may have saved it in between, a
    cell inserted above); else `FileChangedError`, and nothing is written.
    A jupytext text notebook is written back by jupytext (`text_notebook`).
    """
    data = path.read_bytes() if was is None else was
    write_atomic(path, with_sources(path, sources, data), was=data)


def with_sources(path: Path, sources: Mapping[int, str], data: bytes) -> bytes:
    """The bytes of the notebook *data*, read from *path*, with those cell sources:
    what `replace_sources` would write, for a caller that shows it first."""
    if path.suffix in TEXT_SUFFIXES:
        return text_with_sources(path, sources, data)

    def edit(notebook: dict[str, Any]) -> None:
        cells = notebook["cells"]
        for index, text in sources.items():
            cell = cells[index - 1]
            old = cell.get("source", "")
            cell["source"] = text.splitlines(keepends=True) if isinstance(old, list) else text

    return _edited(path, data, edit)


# A code cell as a run left it: its outputs (nbformat's shapes), its execution count, the
# whole length and SHA-256 of each stream kept as its tail, by name (`streams`), and its
# timing as Jupyter's `metadata.execution` holds it ({}: untimed, the cell's own stays).
RanCell = tuple[list[dict[str, Any]], int, dict[str, dict[str, Any]], dict[str, str]]


def with_outputs(
    path: Path, ran: Mapping[int, RanCell], data: bytes, marker: dict[str, Any] | None = None
) -> bytes:
    """The bytes of the notebook *data*, read from *path*, with the outputs and execution
    counts of the cells a run ran (by number: 1 is the first); every other cell as it was,
    and *marker*, where given, as the notebook's `ntdd` metadata.

    The file's own JSON layout is kept where ntdd can reproduce it, else the
    notebook is written as Jupyter writes it (nbformat's one-space indent).
    """

    def edit(notebook: dict[str, Any]) -> None:
        cells = notebook["cells"]
        if marker is not None:
            notebook.setdefault("metadata", {})["ntdd"] = marker
        for index, (outputs, count, shortened, execution) in ran.items():
            if index > len(cells):
                raise NotebookWriteError(f"{path}: has no cell {index} any more")
            cell = cells[index - 1]
            if cell.get("cell_type") != "code":
                raise NotebookWriteError(f"{path}: cell {index} is no longer a code cell")
            cell["outputs"] = [_counted(output, count) for output in outputs]
            cell["execution_count"] = count
            _mark_shortened(cell, shortened)
            if execution:
                _metadata(cell)["execution"] = execution

    return _edited(path, data, edit, any_layout=True)


def _mark_shortened(cell: dict[str, Any], shortened: dict[str, dict[str, Any]]) -> None:
    """The cell's `ntdd` metadata says which of its streams are tails, and what the whole
    ones were, so that a check of the notebook compares those, never the tails; a mark
    an earlier write left goes with the outputs it described."""
    metadata = _metadata(cell)
    ours = metadata.get("ntdd")
    if shortened:
        metadata["ntdd"] = {**(ours if isinstance(ours, dict) else {}), SHORTENED: shortened}
    elif isinstance(ours, dict) and SHORTENED in ours:
        rest = {key: value for key, value in ours.items() if key != SHORTENED}
        if rest:
            metadata["ntdd"] = rest
        else:
            del metadata["ntdd"]


def _metadata(cell: dict[str, Any]) -> dict[str, Any]:
    metadata = cell.get("metadata")
    if not isinstance(metadata, dict):
        metadata = cell["metadata"] = {}
    return metadata


def _counted(output: dict[str, Any], count: int) -> dict[str, Any]:
    """An `execute_result` carries its cell's execution count, as its `Out[n]`."""
    if output.get("output_type") == "execute_result":
        return {**output, "execution_count": count}
    return output


def _edited(
    path: Path, data: bytes, edit: Callable[[dict[str, Any]], None], any_layout: bool = False
) -> bytes:
    """The notebook *data* changed by *edit*, every other byte as it was;
    with *any_layout*, a layout ntdd cannot reproduce is written as Jupyter writes it."""
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotebookWriteError(f"{path}: not UTF-8 text; not changing it") from e
    bom = _BOM if raw.startswith(_BOM) else ""
    newline = "\r\n" if "\r\n" in raw else "\n"
    raw = raw.removeprefix(bom).replace("\r\n", "\n")
    try:
        notebook = json.loads(raw)
    except json.JSONDecodeError as e:
        raise NotebookWriteError(f"{path}: not a notebook's JSON any more: {e}") from e
    if not isinstance(notebook, dict) or notebook.get("nbformat") != 4:
        version = notebook.get("nbformat") if isinstance(notebook, dict) else None
        raise NotebookWriteError(
            f"{path}: nbformat {version} notebook; ntdd writes back into "
            "nbformat 4 only (open and save it in Jupyter to upgrade it)"
        )
    try:
        dump = _dumper(raw, notebook, path)
    except NotebookWriteError:
        if not any_layout:
            raise
        dump = _as_jupyter_writes
    edit(notebook)
    new = dump(notebook)
    _validate(raw, new, path)
    return (bom + new).replace("\n", newline).encode("utf-8")


def _as_jupyter_writes(notebook: Any) -> str:
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def _dumper(raw: str, notebook: Any, path: Path) -> Callable[[Any], str]:
    newline = "\n" if raw.endswith("\n") else ""
    for indent, ascii_only in _STYLES:

        def dump(nb: Any, indent: int | str | None = indent, ascii_only: bool = ascii_only) -> str:
            return json.dumps(nb, indent=indent, ensure_ascii=ascii_only) + newline

        if dump(notebook) == raw:
            return dump
    raise NotebookWriteError(
        f"{path}: written in a JSON layout that ntdd cannot reproduce byte for byte; "
        "not changing it (save it once from Jupyter, then sync again)"
    )


def _validate(old: str, new: str, path: Path) -> None:
    """The new notebook must validate with nbformat wherever the old one did."""
    import warnings

    import nbformat

    def valid(text: str) -> bool:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # nbformat warns about what it repairs
                nbformat.validate(nbformat.reads(text, as_version=nbformat.NO_CONVERT))
        except Exception:
            return False
        return True

    if not valid(new) and valid(old):  # the new one first: most are valid, and one check does
        raise NotebookWriteError(f"{path}: the updated notebook would not validate; not writing it")
