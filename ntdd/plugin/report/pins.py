"""Which setup cells of a notebook a test-only parameter pinned, for `--ntdd-report`.

`--ntdd-param epochs=1` keeps `epochs = 100` in a setup cell from taking
effect: the page marks that cell, so that a reader sees why the training
cell ran one epoch. The answer is the plan's (where the parameters go in)
and `ntdd.runtime.pinning`'s (which cells below bind their names), the two
the run itself follows.
"""

from __future__ import annotations

from ntdd.errors import NtddError
from ntdd.parameters import Values
from ntdd.pipeline.plan import make_plan
from ntdd.runtime.pinning import pins
from ntdd.values import Notebook


def pinned_cells(notebook: Notebook, values: Values) -> dict[int, str]:
    """Each setup cell whose assignments *values* pin, with the values it keeps
    (`{6: "epochs=1"}`); empty for a notebook that cannot be planned."""
    try:
        plan = make_plan(notebook, values)
    except NtddError:
        return {}
    where = plan.parameters
    if where is None:
        return {}
    # After the cell tagged `parameters`, or before the first code cell (papermill's rule).
    below = [
        (setup.cell.index, setup.code)
        for setup in plan.setup
        if setup.cell.index > where.index or (not where.after and setup.cell.index == where.index)
    ]
    given = dict(values)
    return {
        index: ", ".join(f"{name}={given[name]}" for name in sorted(names))
        for index, names in pins(below, given).items()
    }
