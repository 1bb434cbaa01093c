"""Where the notebook's code sits: a test's cell, a frame's cell and line, its file's line.

The module's code and the cells compiled on their own (setup cells, test
cells run as notebook code) are named after the notebook and the cell
(`nb.ipynb (setup cell 3, id 1a2b)`), so that a traceback reads as the
notebook; reports map each of their lines to the line of the notebook's
file that holds it.

The second layer of `NotebookRuntime`, on `NotebookCells`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import textwrap
from typing import Any

import pytest

from ntdd.cells.cell_code import to_python
from ntdd.cells.cell_names import bound_names
from ntdd.format.locate import TestRegion
from ntdd.notebook.positions import line_in_file
from ntdd.runtime.notebook_cells import NotebookCells

END = sys.maxsize  # the position of a test found in no cell: after every cell


class CellPlaces(NotebookCells):
    """Maps the notebook's code, its module's and its cells' alike, to cells and file lines."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        super().__init__(namespace, notebook, uses_device)
        self._in_file: dict[tuple[str, int], int | None] = {}  # asked per line, under coverage
        self.cell_files: dict[str, tuple[int, str | None]] = {}  # test cells run as code

    def _position_of(self, item: pytest.Item) -> int:
        """The index of the cell a test's function was written in."""
        test = self._test_region(item)
        return test.index if test is not None else END

    def _test_cell_name(self, item: pytest.Item) -> str:
        """How messages name the cell of *item*'s test: `nb.ipynb (test cell 4, id 1a2b)`."""
        test = self._test_region(item)
        return self.cell_filename(test.index, test.region.id, "test cell") if test else ""

    def _test_region(self, item: pytest.Item) -> TestRegion | None:
        function = getattr(item, "function", None)
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        if code is None or code.co_filename != self.filename:
            return None
        return self.layout.test_at(code.co_firstlineno)

    def runs_code_of(self, filename: str) -> bool:
        """Whether code compiled under *filename* is this notebook's: its module or a cell."""
        return filename == self.filename or filename.startswith(f"{self.display_path} (")

    def place_of(self, filename: str, line: int) -> str | None:
        """A frame's place as the notebook's cell and line; None for code not the notebook's."""
        if filename == self.filename:
            where = self.layout.locate(line, self.display_path)
            return dataclasses.replace(where, text="").describe() if where else filename
        if self.runs_code_of(filename):
            return f"{filename}, line {line}"  # a cell run as code: its own lines
        return None

    def line_in_file(self, filename: str, lineno: int) -> int | None:
        """The line of the notebook's file that line *lineno* of *filename* came from,
        when *filename* is the notebook's code (its module, or a cell compiled alone)."""
        key = (filename, lineno)
        if key not in self._in_file:
            self._in_file[key] = self._line_in_file(filename, lineno)
        return self._in_file[key]

    def _line_in_file(self, filename: str, lineno: int) -> int | None:
        if not self.file_lines:
            return None
        if filename == self.filename:
            where = self.layout.locate(lineno, "")
            return self.cell_line_in_file(where.index, where.line) if where is not None else None
        index = self.cell_of(filename)
        return self.cell_line_in_file(index, lineno) if index is not None else None

    def cell_line_in_file(self, index: int, line: int | None) -> int | None:
        """The file line of line *line* of cell *index* (None: its first line)."""
        return line_in_file(self.file_lines, index, line)

    def cell_of(self, filename: str) -> int | None:
        """The cell compiled under *filename*: a setup cell, or a test cell run as code."""
        if filename in self.cell_files:
            return self.cell_files[filename][0]
        if not filename.startswith(f"{self.display_path} ("):
            return None
        return next(
            (s.index for s in self._setup if self.cell_filename(s.index, s.id) == filename), None
        )

    def assigned_below(self, name: str, index: int) -> int | None:
        """The first cell below cell *index* that assigns *name*, or None.

        For a NameError: Run All reaches a cell before the cells below it, so a
        name that only a later cell assigns is not defined yet.
        """
        for cell, names in self._names_by_cell:
            if cell > index and name in names:
                return cell
        return None

    @functools.cached_property
    def _names_by_cell(self) -> list[tuple[int, frozenset[str]]]:
        """The names each code cell assigns at its top level, in notebook order."""
        found = [(s.index, _assigned(s.code)) for s in self._setup]
        for test in self.layout.tests:
            text = "".join(self.layout.lines[n - 1] for n in test.cell_lines)
            found.append((test.index, _assigned(textwrap.dedent(text))))
        return sorted(found, key=lambda pair: pair[0])

    def cell_filename(self, index: int, cell_id: str | None, kind: str = "setup cell") -> str:
        """How tracebacks name a cell run as code: `nb.ipynb (setup cell 3, id 1a2b)`.

        No angle brackets: pytest hides frames of files named `<...>`, and these
        frames are the ones a reader needs to see.
        """
        ident = f", id {cell_id}" if cell_id else ""
        return f"{self.display_path} ({kind} {index}{ident})"


def _assigned(code: str) -> frozenset[str]:
    """The names a cell's code binds at its top level (none where it does not parse)."""
    try:
        return frozenset(bound_names(to_python(code).tree))
    except (SyntaxError, RecursionError):
        return frozenset()
