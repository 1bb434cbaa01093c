"""Map a line of a generated module back to its notebook cell.

Used on failures, to say "in nb.ipynb, cell 4 (id 9ba5), line 3", and for
test descriptions. Works the same for exported and in-memory modules: both
carry `# %% ntdd` region markers.
"""

from __future__ import annotations

import linecache
import re
import types
from dataclasses import dataclass
from typing import Any

from ntdd.regions import Region, parse_regions

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


def module_filename(module: types.ModuleType) -> str | None:
    """The filename the module's code was compiled under."""
    runtime = getattr(module, "__ntdd__", None)
    if runtime is None:
        return None
    return getattr(module, "__ntdd_filename__", None) or getattr(module, "__file__", None)


def locate(module: types.ModuleType, lineno: int) -> CellLocation | None:
    """The cell of a generated *module* that holds module line *lineno*."""
    filename = module_filename(module)
    if filename is None:
        return None
    lines = linecache.getlines(filename, module.__dict__)
    region = _region_at(_regions(filename, lines), lineno)
    if region is None:
        return None
    region_lines = region.text.split("\n")
    start = _cell_start(region, region_lines)
    cell_line = lineno - start + 1 if lineno >= start else None
    text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    first = lines[start - 1].strip() if 0 < start <= len(lines) else ""
    title_match = _TEST_TITLE.match(first)
    return CellLocation(
        notebook=module.__ntdd__.display_path,
        index=region.index,
        id=region.id,
        line=cell_line,
        title=title_match["title"] if title_match else "",
        text=text,
    )


def failure_location(module: types.ModuleType, tb: types.TracebackType | None) -> Any:
    """The deepest frame of *tb* that runs a line of *module*'s test cells."""
    filename = module_filename(module)
    found: CellLocation | None = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            found = locate(module, tb.tb_lineno) or found
        tb = tb.tb_next
    return found


_cache: dict[str, tuple[int, list[Region]]] = {}


def _regions(filename: str, lines: list[str]) -> list[Region]:
    cached = _cache.get(filename)
    if cached is None or cached[0] != len(lines):
        cached = (len(lines), [r for r in parse_regions("".join(lines)) if r.kind == "test"])
        _cache[filename] = cached
    return cached[1]


def _region_at(regions: list[Region], lineno: int) -> Region | None:
    for region in regions:
        if region.marker_line <= lineno <= region.end:
            return region
    return None


def _cell_start(region: Region, lines: list[str]) -> int:
    """The module line of the cell's first line: the region's first, or the body's."""
    if lines and lines[0].lstrip().startswith("#"):
        return region.start  # a cell of `def test_*`, written as is
    for offset, line in enumerate(lines):
        if _DEF_LINE.match(line):
            return region.start + offset + 1  # the body of a wrapped cell
    return region.start
