"""Where each cell's source lines sit in the notebook's file, for tools.

A report, an annotation or an editor needs the line *in the file*: in a
`.ipynb`, the line of the JSON text that holds a cell's source line (nbformat
writes one line of source per line of JSON); in a jupytext text notebook, the
line of the `.py` or `.md`. The JSON is scanned with the standard library's
own decoder, which skips each value (outputs included) at C speed and says
where it ends; only the cells' sources are looked at.

A file that does not scan (an old format, a hand-made layout) has no lines:
reports then fall back to the top of the file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

from ntdd.values import Notebook

FileLines = tuple[tuple[int, ...], ...]  # per cell, in order: the file line of each source line

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def file_lines(data: bytes, notebook: Notebook, text_notebook: bool) -> FileLines:
    """For each cell of *notebook*, read from *data*, the 1-based file line of each source line."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return ()
    if text_notebook:
        return _text_lines(text.splitlines(), notebook)
    try:
        found = _json_lines(text)
    except (ValueError, IndexError):  # not the layout of a v4 notebook: no lines
        return ()
    return found if len(found) == len(notebook.cells) else ()


def line_in_file(lines: FileLines, index: int, line: int | None) -> int | None:
    """The file line of line *line* (1-based; None: its first) of cell *index* (1-based)."""
    cell = lines[index - 1] if 0 < index <= len(lines) else ()
    if not cell:
        return None
    at = (line or 1) - 1
    return cell[at] if 0 <= at < len(cell) else cell[-1]


# -- .ipynb ------------------------------------------------------------------------


class _Scanner:
    """A cursor over JSON text that walks objects and arrays and skips other values."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._line = 1  # the line of `_counted`
        self._counted = 0

    def line(self, offset: int) -> int:
        """The 1-based line of *offset*; offsets are asked for in increasing order."""
        self._line += self.text.count("\n", self._counted, offset)
        self._counted = offset
        return self._line

    def peek(self) -> str:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
        return self.text[self.pos]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise ValueError(f"expected {char!r} at {self.pos}")
        self.pos += 1

    def skip(self) -> None:
        self.peek()
        _, self.pos = _DECODER.raw_decode(self.text, self.pos)

    def string(self) -> tuple[str, int]:
        """The string at the cursor, and the offset it starts at."""
        if self.peek() != '"':
            raise ValueError(f"expected a string at {self.pos}")
        start = self.pos
        value, self.pos = _DECODER.raw_decode(self.text, start)
        return value, start

    def members(self) -> Iterator[str]:
        """An object's keys; the caller reads or skips each value before the next."""
        self.expect("{")
        if self.peek() == "}":
            self.pos += 1
            return
        while True:
            key, _ = self.string()
            self.expect(":")
            yield key
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("}")
            return

    def elements(self) -> Iterator[None]:
        """An array's elements; the caller reads or skips each before the next."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            yield
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]")
            return


def _json_lines(text: str) -> FileLines:
    scanner = _Scanner(text)
    cells: list[tuple[int, ...]] = []
    for key in scanner.members():
        if key != "cells":
            scanner.skip()
            continue
        for _ in scanner.elements():
            cells.append(_cell_lines(scanner))
    return tuple(cells)


def _cell_lines(scanner: _Scanner) -> tuple[int, ...]:
    lines: tuple[int, ...] = ()
    for key in scanner.members():
        if key != "source":
            scanner.skip()
        elif scanner.peek() == "[":
            pieces = [scanner.string() for _ in scanner.elements()]
            lines = _lines_of(pieces, scanner)
        else:
            lines = _lines_of([scanner.string()], scanner)
    return lines


def _lines_of(pieces: Sequence[tuple[str, int]], scanner: _Scanner) -> tuple[int, ...]:
    """Each source line's file line: that of the JSON string it starts in."""
    lines: list[int] = []
    at_start = True
    for value, offset in pieces:
        if not value:
            continue
        starts = value.count("\n", 0, len(value) - 1) + (1 if at_start else 0)
        lines += [scanner.line(offset)] * starts
        at_start = value.endswith("\n")
    return tuple(lines)


# -- jupytext text notebooks ------------------------------------------------------


def _text_lines(text: list[str], notebook: Notebook) -> FileLines:
    """Code cells are written as they are (a magic commented out), in order: find each."""
    cells: list[tuple[int, ...]] = []
    cursor = 0
    for cell in notebook.cells:
        source = cell.source.splitlines()
        first = next((n for n, line in enumerate(source) if line.strip()), None)
        if cell.cell_type != "code" or first is None:
            cells.append(())
            continue
        found = next(
            (n for n in range(cursor, len(text)) if _written_as(source[first], text[n])), None
        )
        if found is None:
            cells.append(())
            continue
        start = found - first
        cells.append(tuple(start + n + 1 for n in range(len(source))))
        cursor = start + len(source)
    return tuple(cells)


def _written_as(line: str, written: str) -> bool:
    return written == line or (line.lstrip()[:1] in "%!" and written.endswith(f"# {line}"))
