"""A coverage.py plugin: the code of notebooks that `pytest --ntdd` runs, measured per notebook.

`pytest --ntdd` compiles a notebook's module and its cells in memory, under
names such as `nb.ipynb (ntdd module)` that are no file: without this plugin
coverage.py records them and then warns "Couldn't parse" for each. With it,
what runs is recorded against the notebook's file, at the line of the file
that holds each source line, and the report has one row per notebook whose
statements are the lines of its code cells. Enable it in coverage's
configuration (it is then loaded in every process that measures or reports,
xdist's workers and `coverage report` alike):

    [tool.coverage.run]
    plugins = ["ntdd.coverage"]

Only the tracer runs while tests run, and it asks the notebook's runtime
(the module's `__ntdd__`) where a line came from; the reporter reads the
notebook file again.

Coverage counts lines of the file. Where a line of the file holds more
than one source line (a cell saved as one JSON string, a notebook on one
line), whether it ran cannot say which of them ran, so such lines are
neither statements nor run: a `return` that never ran is never reported
covered because the line it shares with a call did.

May import: the shared modules, ntdd.cells, ntdd.notebook. Never pytest.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import FrameType
from typing import Any

import coverage
from coverage.exceptions import NoSource
from coverage.parser import PythonParser

from ntdd.cells.cell_code import to_python
from ntdd.errors import NtddError
from ntdd.notebook.positions import FileLines, file_lines, line_in_file
from ntdd.notebook.read import notebook_of_bytes
from ntdd.notebook.text import TEXT_SUFFIXES
from ntdd.values import Notebook

# The names ntdd compiles a notebook's code under: its module, and cells compiled alone.
_COMPILED = re.compile(r" \((?:ntdd module|(?:setup |test )?cell \d+(?:, id [^)]*)?)\)$")


def coverage_init(reg: Any, options: dict[str, str]) -> None:
    """coverage.py's entry point for a plugin module named in `[run] plugins`."""
    reg.add_file_tracer(NotebookCoverage())


class NotebookCoverage(coverage.CoveragePlugin):
    """Traces notebooks' compiled code, and reports it against the notebook files."""

    def file_tracer(self, filename: str) -> coverage.FileTracer | None:
        return _CellTracer() if _COMPILED.search(filename) else None

    def file_reporter(self, filename: str) -> coverage.FileReporter:
        return NotebookReporter(filename)


class _CellTracer(coverage.FileTracer):
    """One name for all of a notebook's code, read from the frame: the notebook's file."""

    def has_dynamic_source_filename(self) -> bool:
        return True

    def dynamic_source_filename(self, filename: str, frame: FrameType) -> str | None:
        # Set before the module's first line runs, so its top level is measured too.
        source = frame.f_globals.get("__ntdd_source_file__")
        return str(source) if source else None

    def line_number_range(self, frame: FrameType) -> tuple[int, int]:
        cells = getattr(frame.f_globals.get("__ntdd__"), "cells", None)
        where = getattr(cells, "line_in_file", None)
        line = where(frame.f_code.co_filename, frame.f_lineno) if where is not None else None
        if line is None or line in _shared(frame.f_globals.get("__ntdd_file_lines__", ())):
            return (-1, -1)
        return (line, line)


_shared_lines: dict[int, tuple[FileLines, frozenset[int]]] = {}


def _shared(lines: FileLines) -> frozenset[int]:
    """The file lines that hold more than one source line (worked out once per notebook)."""
    known = _shared_lines.get(id(lines))
    if known is None or known[0] is not lines:
        known = (lines, shared_lines(lines))
        _shared_lines[id(lines)] = known
    return known[1]


def shared_lines(lines: FileLines) -> frozenset[int]:
    """The file lines that more than one source line of the cells sits on."""
    seen: set[int] = set()
    shared: set[int] = set()
    for cell in lines:
        for line in cell:
            (shared if line in seen else seen).add(line)
    return frozenset(shared)


class NotebookReporter(coverage.FileReporter):
    """A notebook file whose statements are its code cells' statements, at their file lines."""

    def __init__(self, filename: str) -> None:
        super().__init__(filename)
        self._statements: set[int] | None = None
        self._first_lines: dict[int, int] = {}

    def lines(self) -> set[int]:
        if self._statements is None:
            self._statements = self._analyse()
        return self._statements

    def translate_lines(self, lines: Any) -> set[int]:
        """A line of a statement that spans lines counts as its first line, as for `.py`."""
        self.lines()
        return {self._first_lines.get(line, line) for line in lines}

    def source(self) -> str:
        """The text `coverage html` shows, one line for each line of the file: a `.ipynb`'s
        code cells as their source reads, each under a line naming the cell, at the file
        lines that hold them; a jupytext notebook as it is.

        The file's own text is JSON, where a cell's line is a quoted string.
        """
        data, notebook, positions = self._read()
        if Path(self.filename).suffix in TEXT_SUFFIXES:
            return data.decode("utf-8-sig")
        shown = [""] * (data.count(b"\n") + 1)
        for cell, lines in zip(notebook.cells, positions, strict=False):
            if cell.cell_type != "code" or not lines:
                continue
            if lines[0] > 1 and not shown[lines[0] - 2]:
                shown[lines[0] - 2] = f"# {cell.label}"
            for line, text in zip(lines, cell.source.splitlines(), strict=False):
                shown[line - 1] = f"{shown[line - 1]}  {text}" if shown[line - 1] else text
        return "\n".join(shown)

    def _read(self) -> tuple[bytes, Notebook, FileLines]:
        path = Path(self.filename)
        try:
            data = path.read_bytes()
            notebook = notebook_of_bytes(data, path)
        except OSError as e:  # gone since it ran: said as coverage.py says it of a `.py` file
            raise NoSource(f"No source for code: '{self.filename}': {e.strerror}") from e
        except NtddError as e:  # changed since it ran, into a file that is no notebook
            raise NoSource(f"No source for code: {e}") from e
        return data, notebook, file_lines(data, notebook, path.suffix in TEXT_SUFFIXES)

    def _analyse(self) -> set[int]:
        _, notebook, positions = self._read()
        statements: set[int] = set()
        for cell, lines in zip(notebook.cells, positions, strict=False):
            if cell.cell_type == "code" and lines:
                statements |= self._cell_statements(cell.source, lines)
        return statements - shared_lines(positions)

    def _cell_statements(self, source: str, lines: tuple[int, ...]) -> set[int]:
        """The file lines of a cell's statements, as coverage.py parses Python."""
        try:
            parser = PythonParser(text=to_python(source).code)
            parser.parse_source()
        except Exception:  # a cell that is no Python (a broken test cell) has no statements
            return set()

        def in_file(line: int) -> int:
            return line_in_file((lines,), 1, line) or lines[0]

        for line in range(1, len(lines) + 1):
            self._first_lines[in_file(line)] = in_file(parser.first_line(line))
        return {in_file(line) for line in parser.statements}
