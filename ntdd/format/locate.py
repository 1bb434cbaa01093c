"""Map a line of a generated module back to its notebook cell.

Used on failures, to say "in nb.ipynb, cell 4 (id 9ba5), line 3", for test
descriptions, and by the runtime to know at which cell a test sits. Works
the same for exported and in-memory modules: both carry `# %% ntdd` region
markers. A module's layout is read once; each lookup is a bisection.
"""

from __future__ import annotations

import bisect
import linecache
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ntdd.format.module import GLOBAL_NOTE, MARKS_COMMENT, Region, regions_of_lines

_TEST_TITLE = re.compile(r"#\s*TEST\s*:?\s*(?P<title>.*?)\s*(?:(?<=\s)@|$)")
_DEF_LINE = re.compile(r"\s*(?:async\s+)?def\s")


@dataclass(frozen=True)
class CellLocation:
    """Where in a notebook a line of a generated module came from."""

    notebook: str
    index: int
    id: str | None
    line: int | None  # 1-based line in the cell, when known
    title: str = ""
    text: str = ""  # the cell's line, stripped

    def describe(self) -> str:
        ident = f" (id {self.id})" if self.id else ""
        where = f"{self.notebook}, cell {self.index}{ident}"
        if self.line is not None:
            where += f", line {self.line}"
            if self.text:
                where += f": {self.text}"
        return where


@dataclass(frozen=True)
class TestRegion:
    """A test cell's lines in the module, and which module line is which cell line."""

    __test__ = False

    region: Region
    kind: str  # "statements": one wrapping function; "functions": the cell as written
    cell_lines: tuple[int, ...]  # module line of cell line 1, 2, ...
    title: str

    @property
    def index(self) -> int:
        return self.region.index


class ModuleLayout:
    """The test cells of one generated module, by line."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        tests = [r for r in regions_of_lines(lines, with_text=False) if r.kind == "test"]
        self.tests = [_test_region(r, lines) for r in tests]
        self._starts = [r.marker_line for r in tests]

    @classmethod
    def of(cls, filename: str, namespace: Mapping[str, Any]) -> ModuleLayout:
        return cls(linecache.getlines(filename, dict(namespace)))

    def test_at(self, lineno: int) -> TestRegion | None:
        """The test cell holding module line *lineno*."""
        at = bisect.bisect_right(self._starts, lineno) - 1
        if at < 0 or lineno > self.tests[at].region.end:
            return None
        return self.tests[at]

    def locate(self, lineno: int, notebook: str) -> CellLocation | None:
        test = self.test_at(lineno)
        if test is None:
            return None
        try:
            cell_line: int | None = test.cell_lines.index(lineno) + 1
        except ValueError:
            cell_line = None
        text = self.lines[lineno - 1].strip() if 0 < lineno <= len(self.lines) else ""
        return CellLocation(notebook, test.index, test.region.id, cell_line, test.title, text)


def _test_region(region: Region, lines: list[str]) -> TestRegion:
    body = range(region.start, region.end + 1)
    text = [lines[n - 1].rstrip("\n") if n <= len(lines) else "" for n in body]
    first_text = next((t for t in text if t.strip()), "")  # a cell may start with blank lines
    if first_text.lstrip().startswith("#"):  # a cell of `def test_*`, written as is
        tail = next((i for i, t in enumerate(text) if t.startswith(MARKS_COMMENT)), len(text))
        cell = tuple(body[:tail])
        kind = "functions"
    else:  # bare statements: the lines after the `def`, less ntdd's own `global` line
        first = next((i for i, t in enumerate(text) if _DEF_LINE.match(t)), len(text) - 1)
        cell = tuple(n for i, n in enumerate(body) if i > first and GLOBAL_NOTE not in text[i])
        kind = "statements"
    title = ""
    for n in cell:
        match = _TEST_TITLE.match(lines[n - 1].strip())
        if match:
            title = match["title"]
            break
    return TestRegion(region, kind, cell, title)
