"""What marking one file would do, checked to read back as intended, and its diff.

Cells already marked, cells that do not run under test and cells that may
raise on purpose are not proposed (`cells`); nor is a cell that the plan
would not make a test that runs. Before anything is shown, the marked file
is read back: it must hold the same cells, the marked ones with the line
added, each now a test; else the notebook is refused.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, replace
from pathlib import Path

from ntdd.errors import MarkRefused
from ntdd.marking.cells import marked, proposed, refusal
from ntdd.notebook.markers import is_test_cell
from ntdd.notebook.read import notebook_of_bytes, read_bytes
from ntdd.notebook.write import with_sources
from ntdd.pipeline.plan import make_plan
from ntdd.values import Notebook, TestKind


@dataclass(frozen=True)
class Proposal:
    """What marking one notebook would do."""

    path: Path
    before: bytes
    after: bytes | None  # None: nothing to mark
    cells: tuple[int, ...] = ()  # the cells marked, by number
    refused: tuple[str, ...] = ()  # one line for each cell left alone: which, and why
    read: tuple[tuple[str, str], ...] = ()  # each cell as read: its type and source

    def diff(self) -> str:
        if self.after is None:
            return ""
        name = self.path.as_posix()
        return "".join(
            difflib.unified_diff(_lines(self.before), _lines(self.after), f"a/{name}", f"b/{name}")
        )


def propose(path: Path) -> Proposal:
    """The `# TEST` lines *path* would get, checked to read back as intended."""
    before = read_bytes(path)
    notebook = notebook_of_bytes(before, path)
    sources: dict[int, str] = {}
    refused: list[str] = []
    for cell in notebook.cells:
        why = refusal(cell)
        if why is not None:
            refused.append(f"{path}: {cell.label}: {why}; not marked")
        elif proposed(cell):
            sources[cell.index] = marked(cell.source)
    refused += _not_tests(notebook, sources)
    read = tuple((cell.cell_type, cell.source) for cell in notebook.cells)
    if not sources:
        return Proposal(path, before, None, refused=tuple(refused), read=read)
    after = with_sources(path, sources, before)
    _ensure_reads_back(path, notebook, sources, notebook_of_bytes(after, path))
    return Proposal(path, before, after, tuple(sorted(sources)), tuple(refused), read)


def _not_tests(notebook: Notebook, sources: dict[int, str]) -> list[str]:
    """Marked cells the plan would not make a test that runs: left alone (and out of *sources*)."""
    if not sources:
        return []
    cells = tuple(replace(c, source=sources.get(c.index, c.source)) for c in notebook.cells)
    plan = make_plan(replace(notebook, cells=cells))
    refused = []
    for test in plan.tests:
        if test.cell.index in sources and test.kind is TestKind.BROKEN:
            del sources[test.cell.index]
            where = f"{notebook.path}: {test.cell.label}"
            refused.append(f"{where}: as a test, {test.problem}; not marked")
    return refused


def _ensure_reads_back(
    path: Path, notebook: Notebook, sources: dict[int, str], again: Notebook
) -> None:
    """The marked file must read back as the same cells, the marked ones with their line."""
    if len(again.cells) != len(notebook.cells):
        raise MarkRefused(f"{path}: with the `# TEST` lines it would not read back as itself")
    for old, new in zip(notebook.cells, again.cells, strict=True):
        wanted = sources.get(old.index, old.source)
        same = (new.cell_type, new.id, new.tags) == (old.cell_type, old.id, old.tags)
        if not same or new.source != wanted or (old.index in sources and not is_test_cell(new)):
            raise MarkRefused(
                f"{path}: {old.label}: with its `# TEST` line the notebook would not read back "
                "as itself; not marking it"
            )


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines(keepends=True)
