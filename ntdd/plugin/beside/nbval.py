"""nbval beside ntdd: nbval's kernel runs the `# TEST` cells, ntdd judges them.

A `# TEST` cell is a cell: what it assigns, the cells below read, in nbval's
kernel as in any other. So nbval still executes it; only whether it *raised*
is left to ntdd, whose test of the same cell says so (an `xfail` test cell
does not fail nbval). nbval keeps its own verdicts: a cell timeout, a dead
kernel, and outputs that differ where it compares them (every cell under
`--nbval`, cells marked `NBVAL_CHECK_OUTPUT` under `--nbval-lax`). Where it
judged nothing, its item is skipped with the reason "run by ntdd".
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from ntdd.notebook import markers
from ntdd.values import Cell

REASON = "run by ntdd"
_test_cell_key = pytest.StashKey[bool]()  # an nbval item for a `# TEST` cell


def hand_over(items: list[pytest.Item]) -> None:
    """Mark nbval's items for `# TEST` cells: their exceptions are ntdd's to judge."""
    for item in items:
        if _is_test_cell(item):
            item.stash[_test_cell_key] = True


@contextlib.contextmanager
def verdict_of_ntdd(item: pytest.Item) -> Iterator[None]:
    """nbval runs a `# TEST` cell; where it judged nothing of its own, the item skips.

    The skip is raised, not written into the report, so that nothing after
    the call (`--pdb`, say) takes the cell's exception for nbval's failure.
    """
    if not item.stash.get(_test_cell_key, False):
        yield
        return
    try:
        yield
    except Exception:
        if _the_cell_raised(item):
            raise pytest.skip.Exception(REASON) from None
        raise  # a timeout, a dead kernel, outputs that differ: nbval's failure
    if not _compared(item):
        pytest.skip(REASON)


def at_the_cell(item: pytest.Item, report: pytest.TestReport) -> None:
    """Such a skip is reported at nbval's item, not at the line of ntdd that raised it."""
    skipped = f"Skipped: {REASON}"
    if not item.stash.get(_test_cell_key, False) or not report.skipped:
        return
    if isinstance(report.longrepr, tuple) and report.longrepr[2] == skipped:
        path, line = item.reportinfo()[:2]
        report.longrepr = (os.fspath(path), (line or 0) + 1, skipped)


def cell_properties(item: pytest.Item, notebook: str) -> list[tuple[str, object]]:
    """An nbval item's cell as ntdd numbers it (1-based, markdown counted), with its id,
    for the reports that name cells (JUnit, the job summary): nbval's own node ids
    count code cells from 0 (`Cell 2`)."""
    cell = getattr(item, "cell", None)
    cells = getattr(getattr(item.parent, "nb", None), "cells", None)
    if type(item).__name__ != "IPyNbCell" or cell is None or not cells:
        return []
    index = next((n for n, each in enumerate(cells, 1) if each is cell), None)
    if index is None:
        return []
    return [("notebook", notebook), ("cell", index), ("cell_id", cell.get("id") or "")]


_NBVAL_CELL = re.compile(r"::Cell \d+$")  # nbval's node id of a cell: code cells from 0


def cells_as_ntdd_counts(reports: Iterable[Any]) -> list[str]:
    """A line for each nbval item that failed: the cell it is as ntdd numbers cells, so
    that one failure reported by both (`a.ipynb::Cell 1`, ntdd's `setup cell 3`) reads
    as one cell, not two."""
    lines: dict[str, str] = {}
    for report in reports:
        nodeid = getattr(report, "nodeid", "")
        said = dict(getattr(report, "user_properties", ()))
        if not _NBVAL_CELL.search(nodeid) or "cell" not in said or nodeid in lines:
            continue
        cell_id = f" (id {said['cell_id']})" if said.get("cell_id") else ""
        lines[nodeid] = (
            f"ntdd: nbval's {nodeid} is cell {said['cell']}{cell_id} of {said['notebook']} "
            "as ntdd counts cells (nbval counts code cells from 0, ntdd every cell from 1)"
        )
    return list(lines.values())


def _is_test_cell(item: pytest.Item) -> bool:
    cell = getattr(item, "cell", None)
    if type(item).__name__ != "IPyNbCell" or cell is None:
        return False
    tags = tuple(cell.get("metadata", {}).get("tags", ()))
    return markers.is_test_cell(Cell(0, "code", cell.get("source", ""), None, tags))


def _compared(item: Any) -> bool:
    """Whether nbval compared the cell's outputs (it never does for a cell never run)."""
    options = getattr(item, "options", {})
    return bool(options.get("check")) and item.cell.get("execution_count") is not None


def _the_cell_raised(item: Any) -> bool:
    """The cell's own code raised in nbval's kernel, and nbval timed out no cell.

    After a timeout, nbval interrupts its kernel and expects the cells below
    to fail (as xfails); those verdicts are its own.
    """
    if getattr(item.parent, "timed_out", False):
        return False
    outputs = getattr(item, "test_outputs", None) or ()
    return any(output.get("output_type") == "error" for output in outputs)
