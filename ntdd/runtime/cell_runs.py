"""How a kernel runs one setup cell: as a kernel runs a cell, around it what a kernel does.

The notebook's `pre_run_cell` and `post_run_cell` callbacks fire around it;
a one-line magic without its `%` runs as IPython's automagic reads it; the
cell is compiled once per notebook (with the future flags of the cells
above it, and smoke mode's caps); what it warns is reported as the
notebook's, at the cell's line; its output and time go to the run's report,
when there is one: its outputs too, as a kernel records them, and a test
cell's as its test runs it.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ntdd.runtime import cell_outputs, inline_figures, smoke, steps
from ntdd.runtime.cell_log import cell_log_of, notebook_traceback
from ntdd.runtime.cell_log import recorded as cell_recorded
from ntdd.runtime.cell_map import CellMap
from ntdd.runtime.isolation import set_filters
from ntdd.runtime.steps import SetupStep


def trigger(namespace: dict[str, Any], event: str, raw_cell: str = "") -> None:
    """Call the notebook's callbacks on `get_ipython().events`, as a kernel does
    around each cell; nothing to do (not even IPython to import) for most notebooks."""
    events = events_of(namespace)
    if events is None:
        return
    from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult

    info = ExecutionInfo(raw_cell, False, False, True, None)  # a cell, as events see it
    if event == "pre_run_cell":
        events.trigger("pre_execute")
        events.trigger("pre_run_cell", info)
    else:
        events.trigger("post_execute")
        events.trigger("post_run_cell", ExecutionResult(info))


def events_of(namespace: dict[str, Any]) -> Any:
    """The notebook's `get_ipython().events` where it registered a callback; else None."""
    factory = namespace.get("get_ipython")
    shell = getattr(factory, "shell", None)
    events = shell.__dict__.get("events") if shell is not None else None
    return events if events is not None and any(events.callbacks.values()) else None


def compiled(
    cells: CellMap, step: SetupStep, future: int, config: pytest.Config | None
) -> types.CodeType:
    """The cell's code, compiled once for the notebook, with the *future* flags of the
    cells run above it."""
    code = cells.compiled.get(step.index)
    if code is None:
        filename = cells.cell_filename(step.index, step.id)
        code = smoke.compile_setup(config, cells, step.code, filename, future) or (
            steps.compile_cell(step.code, filename, future)
        )
        cells.compiled[step.index] = code
    return code


def automagic(cells: CellMap, step: SetupStep) -> types.CodeType | None:
    """A one-line cell that names a magic without its `%` (`cd data`, `pwd`) runs
    the magic, as IPython's automagic does, unless a notebook name shadows it."""
    line = step.code.strip()
    head = steps.automagic_head(line)
    if head is None or head in cells.namespace:
        return None
    call = cells.namespace["get_ipython"]().automagic(line)
    if call is None:
        return None
    return steps.compile_cell(call, cells.cell_filename(step.index, step.id))


def recorded(
    cells: CellMap, step: SetupStep, device: str, config: pytest.Config | None
) -> contextlib.AbstractContextManager[None]:
    """The cell's outputs (its figures at its end, as the inline backend shows them) and
    time, for the run's report, when there is one; without one, its figures still
    checked at its end (`figures_checked`)."""
    log = cell_log_of(config)
    if log is None:
        return figures_checked(cells.namespace)

    def describe(error: BaseException) -> str:
        return notebook_traceback(error, cells.place_of)

    def at_the_end() -> None:
        inline_figures.show_open(cells.namespace)

    return cell_recorded(log, step.index, step.id, device, describe, at_the_end)


def test_recorded(
    cells: CellMap, item: pytest.Item, device: str
) -> contextlib.AbstractContextManager[None]:
    """A test cell's outputs as its test runs it (its figures at its end), for the run's
    report and the notebooks written back, when there are any; without them, its figures
    still checked at its end (`figures_checked`)."""
    log = cell_log_of(item.config)
    if log is None:
        return figures_checked(cells.namespace)
    test = cells.test_region(item)
    if test is None:
        return contextlib.nullcontext()

    def describe(error: BaseException) -> str:
        return notebook_traceback(error, cells.place_of)

    def at_the_end() -> None:
        inline_figures.show_open(cells.namespace)

    where = (test.index, test.region.id, device)
    return cell_recorded(log, *where, describe, at_the_end, test=test.kind)


@contextlib.contextmanager
def figures_checked(namespace: dict[str, Any]) -> Iterator[None]:
    """Where nothing records the cell: the figures it left open drawn for their errors at
    its end, as a recorded cell's are shown (`inline_figures.show_open`), so that a figure
    a kernel cannot draw fails the cell in every run."""
    try:
        yield
    finally:
        inline_figures.show_open(namespace)


@contextlib.contextmanager
def warnings_of_the_cell(
    config: pytest.Config | None, nodeid: str, notebooks: Callable[[str], bool]
) -> Iterator[None]:
    """What a setup cell warns is reported as the notebook's (*nodeid*), at the cell's
    line, not as a warning of the test that happened to reach the cell; where its outputs
    are recorded, shown there too as a kernel shows it (*notebooks*: whether a file name
    is the notebook's code)."""
    if config is None or not nodeid:
        yield
        return
    caught: list[warnings.WarningMessage] = []
    kept: tuple[Any, ...] = ()
    try:
        with warnings.catch_warnings(record=True) as caught:
            outputs = cell_outputs.current()
            if outputs is not None:  # a kernel prints it under the cell, on stderr
                warnings.showwarning = _also_shown(caught, outputs, notebooks)
            try:
                yield
            finally:
                kept = tuple(warnings.filters)  # what the cell set lasts
    finally:
        set_filters(kept)
        for message in caught:
            config.hook.pytest_warning_recorded.call_historic(
                kwargs={
                    "warning_message": message,
                    "nodeid": nodeid,
                    "when": "runtest",
                    "location": None,
                }
            )


# What Python's default filters hide, and a kernel with them, but from the notebook's own
# code (IPython shows a `DeprecationWarning` its user's code raises); pytest shows them all.
_HIDDEN_IN_A_KERNEL = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)


def _also_shown(
    caught: list[warnings.WarningMessage],
    outputs: cell_outputs.Outputs,
    notebooks: Callable[[str], bool],
) -> Callable[..., None]:
    """`warnings.showwarning` while a recorded cell runs: the warning is recorded for
    pytest, and shown in the cell's outputs as a kernel prints it, where it was raised,
    unless a kernel's filters would have hidden it."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        caught.append(warnings.WarningMessage(message, category, filename, lineno, file, line))
        if issubclass(category, _HIDDEN_IN_A_KERNEL) and not notebooks(filename):
            return
        text = warnings.formatwarning(message, category, filename, lineno, line)
        outputs.stream("stderr", text)

    return show
