"""Which cells take a `# TEST` line, which are left alone and why, and the line added.

A cell takes the line when it is a code cell, not yet a test, run under test
(not `# NTDD: skip`, `# NBVAL_SKIP` or a skip tag), not meant to raise
(`raises-exception`), and all checks. A cell of checks is left alone, with a
line that says why, where the marker would change its meaning: a cell magic
(`%%time`) must stay a cell's first line.
"""

from __future__ import annotations

import re

from ntdd.cells.cell_code import to_python
from ntdd.cells.checks import is_check
from ntdd.notebook import markers
from ntdd.values import Cell

MARKER = "# TEST"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def marked(source: str) -> str:
    """*source* with `# TEST` as the line the grammar reads first, and no other change."""
    at = markers.test_line_index(_normalized(source).split("\n")) or 0
    breaks = list(_LINE_BREAK.finditer(source))
    offset = breaks[at - 1].end() if at else 0
    end = breaks[0].group() if breaks else "\n"
    return source[:offset] + MARKER + end + source[offset:]


def proposed(cell: Cell) -> bool:
    """A code cell, not yet a test, run under test, not meant to raise, and all checks."""
    if cell.cell_type != "code" or markers.is_test_cell(cell):
        return False
    if markers.skip_reason(cell) is not None or markers.expects_exception(cell):
        return False
    return _all_checks(cell.source)


def refusal(cell: Cell) -> str | None:
    """Why a cell of checks cannot take the marker without changing what it does."""
    if cell.cell_type != "code" or markers.is_test_cell(cell) or not _proposed_but_magic(cell):
        return None
    magic = markers.first_line(cell.source).split()[0]
    return (
        f"its checks run under the cell magic {magic}, which must stay the cell's first "
        "line (a `# TEST` line above it would end the magic)"
    )


def _proposed_but_magic(cell: Cell) -> bool:
    """A cell that would be proposed, but for the cell magic (`%%time`) on its first line."""
    lines = _normalized(cell.source).split("\n")
    at = markers.test_line_index(lines)
    if at is None or not lines[at].lstrip().startswith("%%"):
        return False
    if markers.skip_reason(cell) is not None or markers.expects_exception(cell):
        return False
    return _all_checks("\n".join(lines[at + 1 :]))


def _all_checks(source: str) -> bool:
    try:
        return is_check(to_python(source).tree)
    except SyntaxError:
        return False


def _normalized(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")
