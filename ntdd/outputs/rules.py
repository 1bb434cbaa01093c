"""Which cells have their outputs checked, as nbval decides it.

Under strict mode (`--ntdd-outputs`, as `--nbval`) every code cell is checked
unless marked `NBVAL_IGNORE_OUTPUT`; under lax mode (`--ntdd-outputs-lax`,
as `--nbval-lax`) only cells marked `NBVAL_CHECK_OUTPUT`. The markers are
nbval's comments and tags (`ntdd.notebook.markers.nbval_options`). A cell
saved without ever having run (no execution count) is not compared; saved
so with outputs, it fails, as in nbval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ntdd.notebook.markers import directives, is_test_cell, nbval_options, skip_reason
from ntdd.outputs.compare import IMAGES_OFF
from ntdd.values import Cell

TOLERANCE_DIRECTIVE = "image-tolerance"  # `#| image-tolerance: 5`: this cell's figures


@dataclass(frozen=True)
class CheckedCell:
    """A code cell whose outputs a run checks, and how. (A cell marked to raise needs
    nothing here: the run goes on past it, and its error is one of its outputs.)"""

    cell: Cell
    skipped: str | None  # why the run does not run it (`NBVAL_SKIP`, `# NTDD: skip`), or None
    image_tolerance: float | None  # this cell's own tolerance for figures, if it sets one
    problem: str = ""  # why the cell's check cannot run (a tolerance that is no number)


def checked_cells(
    cells: tuple[Cell, ...], strict: bool, stale: frozenset[int] = frozenset()
) -> list[CheckedCell]:
    """The code cells whose outputs are checked, in notebook order: those the mode and
    the markers check, and those saved with outputs but never run (*stale*, by index),
    which nbval fails whatever their markers say.

    Unchecked cells still run: a cell that raises fails the run, as in nbval.
    """
    found: list[CheckedCell] = []
    for cell in cells:
        if cell.cell_type != "code":
            continue
        options = nbval_options(cell)
        if options.get("check", strict) or cell.index in stale:
            try:
                tolerance, problem = image_tolerance(cell), ""
            except ValueError as e:
                tolerance, problem = None, str(e)
            found.append(CheckedCell(cell, skip_reason(cell), tolerance, problem))
    return found


def image_tolerance(cell: Cell) -> float | None:
    """The tolerance a cell sets for its figures (`#| image-tolerance: 0.5` at its top,
    below a `# TEST` line in a test cell; `size`: sizes only; `off`: not compared), or None.

    A value that is not a number >= 0 raises `ValueError` naming the cell.
    """
    source = cell.source.partition("\n")[2] if is_test_cell(cell) else cell.source
    value = directives(source).get(TOLERANCE_DIRECTIVE)
    if value is None:
        return None
    word = value.strip().lower()
    if word in ("size", "off"):
        return math.inf if word == "size" else IMAGES_OFF
    try:
        tolerance = float(value)
    except ValueError:
        tolerance = -1.0
    if not tolerance >= 0:
        raise ValueError(
            f'{cell.label}: `#| {TOLERANCE_DIRECTIVE}: {value}` must be a number >= 0, "size" '
            'or "off"'
        )
    return tolerance
