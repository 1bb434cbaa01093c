"""`ntdd mark`: a `# TEST` line for each cell that is already a check, as a diff.

A repository adopts ntdd in one command: the cells whose every statement is
a check (`ntdd.cells.checks`) get `# TEST` as their first line, where the
grammar reads it (below any `#|` directives). Nothing else changes: no
cell's code, no other byte of the file (`ntdd.notebook.write`), so the cell
keeps what it does and the state it sees, and becomes a test.

A cell is left as it is, with a line that says why, where the marker would
change its meaning: a cell magic (`%%time`) must stay a cell's first line.
Cells already marked, cells that do not run under test (`# NTDD: skip`,
`# NBVAL_SKIP`, a skip tag) and cells that may raise on purpose
(`raises-exception`) are not proposed. Before anything is shown, the marked
file is read back: it must hold the same cells, the marked ones with the
line added, each now a test; else the notebook is refused.

The diff goes to stdout (`git apply` takes it); `--write` writes it,
atomically, into a notebook that still holds the bytes read. A jupytext pair
(`nb.ipynb` and its `nb.py` or `nb.md`) is one notebook in two files: both get
the same lines, so that the pair stays in sync, whichever of them was named;
a pair whose files hold different cells is refused (jupytext would have to
choose which one wins).
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ntdd.commands.console import BAD_INPUT, NOTHING_TO_DO, OK, plural, print_error
from ntdd.errors import MarkRefused, NotPythonError, NtddError

if TYPE_CHECKING:
    from ntdd.values import Cell, Notebook

MARKER = "# TEST"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


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


def mark_command(args: argparse.Namespace) -> int:
    """`ntdd mark`: show each notebook's diff; with `--write`, write it."""
    from ntdd.notebook.files import find_notebooks, write_atomic

    failures = proposed = refused = 0
    found = 0
    try:
        paths = list(find_notebooks(args.paths))
    except NtddError as e:
        print_error(e, args.debug)
        return BAD_INPUT
    done_with: set[Path] = set()
    for path in paths:
        files = pair_of(path)
        if done_with.intersection(files):
            continue  # the other file of a pair already named
        done_with.update(files)
        found += 1
        try:
            proposals = [propose(file) for file in files]
            _ensure_the_same(proposals)
            for proposal in proposals:
                if proposal.after is not None and args.write:
                    write_atomic(proposal.path, proposal.after, was=proposal.before)
        except NotPythonError as e:
            print(f"ntdd: {path}: a {e.language!r} notebook; not marked", file=sys.stderr)
            continue
        except NtddError as e:
            print_error(e, args.debug)
            failures += 1
            continue
        first = proposals[0]
        for line in first.refused:
            print(f"ntdd: {line}", file=sys.stderr)
        refused += len(first.refused)
        if first.after is None:
            continue
        proposed += 1
        for proposal in proposals:
            sys.stdout.write(proposal.diff())
        done = "marked" if args.write else "to mark"
        paired = f" (and {', '.join(f.name for f in files[1:])}, paired)" if files[1:] else ""
        print(f"ntdd: {files[0]}{paired}: {_cells(first.cells)} {done}", file=sys.stderr)
    return _exit_code(found, failures, proposed, refused, args.write)


def pair_of(path: Path) -> list[Path]:
    """*path*'s files as one notebook: a jupytext pair's `.ipynb` first, then its text
    notebooks (those with jupytext's header); *path* alone for a notebook unpaired."""
    from ntdd.notebook.text import TEXT_SUFFIXES, has_jupytext_header

    ipynb = path.with_suffix(".ipynb")
    if path.suffix != ".ipynb" and not ipynb.is_file():
        return [path]
    texts = [p for p in map(ipynb.with_suffix, TEXT_SUFFIXES) if has_jupytext_header(p)]
    return [ipynb, *texts] if texts else [path]


def _ensure_the_same(proposals: list[Proposal]) -> None:
    """The files of a pair hold the same cells, and get the same lines; else neither is marked."""
    first = proposals[0]
    for other in proposals[1:]:
        if other.read != first.read:
            raise MarkRefused(
                f"{first.path} and {other.path}, a jupytext pair, hold different cells "
                "(one was edited since they were last synced); sync them first "
                f"(`jupytext --sync {first.path}`, or open it in Jupyter); not marked"
            )


def _exit_code(found: int, failures: int, proposed: int, refused: int, written: bool) -> int:
    """0: nothing left to mark. 1: proposals not written, cells refused, or no notebook.
    2: bad input."""
    if failures:
        return BAD_INPUT
    if not found:
        print("ntdd: no notebooks found", file=sys.stderr)
        return NOTHING_TO_DO
    if not proposed and not refused:
        print(f"ntdd: {plural(found, 'notebook')}: no cell to mark", file=sys.stderr)
    return NOTHING_TO_DO if refused or (proposed and not written) else OK


def propose(path: Path) -> Proposal:
    """The `# TEST` lines *path* would get, checked to read back as intended."""
    from ntdd.notebook.read import notebook_of_bytes, read_bytes
    from ntdd.notebook.write import with_sources

    before = read_bytes(path)
    notebook = notebook_of_bytes(before, path)
    sources: dict[int, str] = {}
    refused: list[str] = []
    for cell in notebook.cells:
        why = _refusal(cell)
        if why is not None:
            refused.append(f"{path}: {cell.label}: {why}; not marked")
        elif _proposed(cell):
            sources[cell.index] = marked(cell.source)
    refused += _not_tests(notebook, sources)
    read = tuple((cell.cell_type, cell.source) for cell in notebook.cells)
    if not sources:
        return Proposal(path, before, None, refused=tuple(refused), read=read)
    after = with_sources(path, sources, before)
    _ensure_reads_back(path, notebook, sources, notebook_of_bytes(after, path))
    return Proposal(path, before, after, tuple(sorted(sources)), tuple(refused), read)


def marked(source: str) -> str:
    """*source* with `# TEST` as the line the grammar reads first, and no other change."""
    from ntdd.notebook.markers import test_line_index

    at = test_line_index(_normalized(source).split("\n")) or 0
    breaks = list(_LINE_BREAK.finditer(source))
    offset = breaks[at - 1].end() if at else 0
    end = breaks[0].group() if breaks else "\n"
    return source[:offset] + MARKER + end + source[offset:]


def _proposed(cell: Cell) -> bool:
    """A code cell, not yet a test, run under test, not meant to raise, and all checks."""
    from ntdd.notebook import markers

    if cell.cell_type != "code" or markers.is_test_cell(cell):
        return False
    if markers.skip_reason(cell) is not None or markers.expects_exception(cell):
        return False
    return _all_checks(cell.source)


def _refusal(cell: Cell) -> str | None:
    """Why a cell of checks cannot take the marker without changing what it does."""
    from ntdd.notebook import markers

    if cell.cell_type != "code" or markers.is_test_cell(cell) or not _proposed_but_magic(cell):
        return None
    magic = markers.first_line(cell.source).split()[0]
    return (
        f"its checks run under the cell magic {magic}, which must stay the cell's first "
        "line (a `# TEST` line above it would end the magic)"
    )


def _proposed_but_magic(cell: Cell) -> bool:
    """A cell that would be proposed, but for the cell magic (`%%time`) on its first line."""
    from ntdd.notebook import markers

    lines = _normalized(cell.source).split("\n")
    at = markers.test_line_index(lines)
    if at is None or not lines[at].lstrip().startswith("%%"):
        return False
    if markers.skip_reason(cell) is not None or markers.expects_exception(cell):
        return False
    return _all_checks("\n".join(lines[at + 1 :]))


def _all_checks(source: str) -> bool:
    from ntdd.cells.cell_code import to_python
    from ntdd.cells.checks import is_check

    try:
        return is_check(to_python(source).tree)
    except SyntaxError:
        return False


def _not_tests(notebook: Notebook, sources: dict[int, str]) -> list[str]:
    """Marked cells the plan would not make a test that runs: left alone (and out of *sources*)."""
    from dataclasses import replace

    from ntdd.pipeline.plan import make_plan
    from ntdd.values import TestKind

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
    from ntdd.notebook.markers import is_test_cell

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


def _normalized(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines(keepends=True)


def _cells(numbers: tuple[int, ...]) -> str:
    words = [str(n) for n in numbers]
    listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
    return f"{'cell' if len(words) == 1 else 'cells'} {listed}"
