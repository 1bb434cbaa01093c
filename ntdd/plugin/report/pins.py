"""Which setup cells of a notebook a test-only parameter pinned, for `--ntdd-report`.

`--ntdd-param epochs=1` keeps `epochs = 100` in a setup cell from taking
effect: the page marks that cell, so that a reader sees why the training
cell ran one epoch. The answer is the run's own: the cells its runtime
pinned (`CellMap.pins`, from `ntdd.runtime.pinning`), each with the values
given for the run, put on the setup's record where the test ran.
"""

from __future__ import annotations

from ntdd.runtime.protocol import Runtime
from ntdd.settings.typed import Settings


def pinned_cells(runtime: Runtime, settings: Settings) -> tuple[tuple[int, str], ...]:
    """Each setup cell whose assignments the run's parameters pinned, with the values it
    keeps (`((6, "epochs=1"),)`); none where the run gives no parameters."""
    given = dict(settings.parameters.for_notebook(runtime.cells.notebook))
    return tuple(
        (index, ", ".join(f"{name}={given[name]}" for name in sorted(names & given.keys())))
        for index, names in sorted(runtime.cells.pins.items())
        if names & given.keys()
    )
