"""`@full_run` on the `# TEST` lines of the tests that need the full run, checked to read back.

The mark goes at the end of the cell's `# TEST` line (`ntdd.notebook.markers`
writes it, as it reads it), and nothing else changes: a cell of several
`def test_` functions is one cell, so all its tests are marked together. A
test already `@full_run` (its line, a tag, a directive) is left alone. The
marked file must read back as the same cells, each marked one with the same
title and marks as before plus `@full_run`; else the notebook is refused.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ntdd.errors import MarkRefused
from ntdd.marking.proposal import Proposal
from ntdd.notebook.markers import MarkerError, is_test_cell, parse_test_marker, with_mark
from ntdd.notebook.read import notebook_of_bytes, read_bytes
from ntdd.notebook.write import with_sources
from ntdd.values import Cell, Mark, Notebook

FULL_RUN = "full_run"


def needs_the_full_run(cell: Cell) -> bool:
    """Already marked so, by its line, a tag (`ntdd-full_run`) or a directive."""
    try:
        return any(mark.name == FULL_RUN for mark in parse_test_marker(cell).marks)
    except MarkerError:
        return False


def propose_full_run(path: Path, cells: Collection[int], was: bytes | None = None) -> Proposal:
    """`@full_run` on the test cells *cells* (by number) of *path*, read back as intended.

    *was*: the bytes the runs ran; a file changed since is refused, since its
    runs said nothing of it."""
    before = read_bytes(path)
    if was is not None and before != was:
        raise MarkRefused(f"{path}: changed while its runs ran; not marked (run the command again)")
    notebook = notebook_of_bytes(before, path)
    read = tuple((cell.cell_type, cell.source) for cell in notebook.cells)
    sources: dict[int, str] = {}
    for cell in notebook.cells:
        if cell.index in cells and is_test_cell(cell) and not needs_the_full_run(cell):
            try:
                sources[cell.index] = with_mark(cell.source, FULL_RUN)
            except MarkerError as e:
                raise MarkRefused(f"{path}: {cell.label}: {e}; not marked") from e
    if not sources:
        return Proposal(path, before, None, read=read)
    after = with_sources(path, sources, before)
    _ensure_reads_back(path, notebook, sources, notebook_of_bytes(after, path))
    return Proposal(path, before, after, tuple(sorted(sources)), (), read)


def _ensure_reads_back(
    path: Path, notebook: Notebook, sources: dict[int, str], again: Notebook
) -> None:
    """The same cells, the marked ones with their title and marks, and `@full_run`."""
    if len(again.cells) != len(notebook.cells):
        raise MarkRefused(f"{path}: with `@full_run` added it would not read back as itself")
    for old, new in zip(notebook.cells, again.cells, strict=True):
        same = (new.cell_type, new.id, new.tags) == (old.cell_type, old.id, old.tags)
        wanted = sources.get(old.index, old.source)
        if (
            not same
            or new.source != wanted
            or (old.index in sources and not _marked_alike(old, new))
        ):
            raise MarkRefused(
                f"{path}: {old.label}: with `@full_run` added the notebook would not read back "
                "as itself; not marking it"
            )


def _marked_alike(old: Cell, new: Cell) -> bool:
    before, after = parse_test_marker(old), parse_test_marker(new)
    wanted = (*before.marks, Mark(FULL_RUN))
    return after.title == before.title and sorted(map(repr, after.marks)) == sorted(
        map(repr, wanted)
    )
