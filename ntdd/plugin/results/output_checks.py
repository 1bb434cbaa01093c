"""`--ntdd-outputs`: each checked cell's saved outputs against the run's fresh ones.

What nbval does in a kernel, done in the run that runs the tests: one item
per checked cell (`nb.ipynb::outputs_of_cell_4`), after the notebook's
tests, whose setup runs the notebook to its end (as the test of the cells
below the last test does) and whose call compares the outputs the run
recorded for that cell with those saved in the file. Which cells, and how
they compare, are nbval's rules (`ntdd.outputs`); a difference fails the
item with a diff at the cell's line, and a figure that differs carries the
two images to the HTML report.

The recorded outputs reach the items through the run's ledger (`ledger`),
in the process that runs the notebook; the saved ones are read from the
file once per notebook, and both are let go after its last check.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ntdd.errors import NtddError, NtddTimeout, SetupError
from ntdd.notebook.read import (
    SavedCell,
    notebook_with_outputs,
    read_bytes,
    saved_outputs,
)
from ntdd.outputs.compare import Comparison, compare_outputs
from ntdd.outputs.rules import CheckedCell, checked_cells
from ntdd.plugin.once import registered
from ntdd.plugin.results.ledger import ledger
from ntdd.settings.typed import settings_of

NAME = "outputs_of_cell_{index}"  # a check's name: the cell, as Jupyter counts cells


class OutputCheck(pytest.Function):
    """One cell's outputs, checked once the notebook ran to its end."""

    checked: CheckedCell
    notebook: Path  # the file the saved outputs are read from
    call_runs_no_cell = True  # its call runs ntdd's code alone: its deadline interrupts C code

    def setup(self) -> None:
        """The notebook run to its end. Where a cell below this one raised, the cells above
        it ran all the same: this one's outputs are checked, as nbval checks them (the
        test that ran the cell that raised reports its error)."""
        try:
            super().setup()
        except SetupError as error:
            if error.first or error.index <= self.checked.cell.index:
                raise

    def runtest(self) -> None:
        cell = self.checked.cell
        if self.checked.problem:
            pytest.fail(f"{self.notebook}: {self.checked.problem}", pytrace=False)
        if self.checked.skipped:
            self._skip(f"{self.checked.skipped}: not run, so its outputs are not checked")
        records = output_records(self.config)
        saved = records.saved(self.notebook).get(cell.index)
        if saved is None:
            pytest.fail(f"{self.notebook}: {cell.label} is no longer a code cell", pytrace=False)
        if saved.execution_count is None:
            if saved.outputs:
                pytest.fail(_UNRUN.format(cell=cell.label), pytrace=False)
            self._skip(_NEVER_RUN.format(cell=cell.label))  # nothing to compare (nbval's rule)
        runtime = getattr(self.module, "__ntdd__", None)
        device = runtime.kernel.device if runtime is not None and runtime.kernel else ""
        ran = records.fresh(str(runtime.cells.notebook) if runtime else "", device, cell.index)
        if ran is None:
            self._skip(f"{cell.label}: the run ran none of its code; its outputs are not checked")
        fresh, fresh_whole = ran
        checking = settings_of(self.config).outputs
        assert checking is not None  # the check was collected because outputs are checked
        tolerance = self.checked.image_tolerance
        try:
            comparison = compare_outputs(
                saved.outputs,
                fresh,
                checking.cleaning,
                tolerance if tolerance is not None else checking.image_tolerance,
                saved.shortened,
                fresh_whole,
            )
        except NtddTimeout as e:  # a sanitize pattern that backtracks, most likely
            timed_out = _TIMED_OUT.format(cell=cell.label, error=e)
        else:
            timed_out = ""
        if timed_out:  # said alone, not as an error raised while handling the timeout
            pytest.fail(timed_out, pytrace=False)
        if not comparison.same:
            self.stash[_FIGURES] = comparison
            pytest.fail(self._message(comparison), pytrace=False)

    def _skip(self, reason: str) -> NoReturn:
        """Skipped at the cell's line, as a skip mark is reported, not at this module's; an
        empty cell has no line of its own in the file: it is skipped where it is named."""
        where = self.reportinfo()[1] is not None
        raise pytest.skip.Exception(reason, _use_item_location=where)

    def _message(self, comparison: Comparison) -> str:
        head = f"{self.checked.cell.label}: its outputs differ from those saved in the notebook"
        return "\n".join([head, *comparison.differences])

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        runtime = getattr(self.module, "__ntdd__", None)
        line = runtime.cells.cell_line_in_file(self.checked.cell.index, None) if runtime else None
        return self.notebook, line - 1 if line is not None else None, self.name


_FIGURES = pytest.StashKey[Comparison]()
_TIMED_OUT = (
    "{cell}: {error} while its saved and fresh outputs were cleaned and compared "
    "(a sanitize pattern that backtracks?)"
)
_NEVER_RUN = (
    "{cell} was saved without having been run (it has no execution count): "
    "it has no outputs to compare"
)
_UNRUN = (
    "{cell} was saved with outputs but never run (it has no execution count), "
    "as nbval fails it too: run the notebook and save it, or clear the cell's outputs"
)


# The cells whose saved outputs a notebook's run checks, or why they cannot be known.
PlannedChecks = tuple[CheckedCell, ...] | NtddError


def planned_checks(config: pytest.Config, data: bytes, notebook: Path) -> PlannedChecks:
    """The checked cells of the notebook whose bytes the collector read (its one read)."""
    checking = settings_of(config).outputs
    if checking is None or notebook.suffix != ".ipynb":
        return ()  # a text notebook holds no outputs
    try:
        read, saved = notebook_with_outputs(data, notebook)
        stale = frozenset(i for i, c in saved.items() if c.execution_count is None and c.outputs)
        return tuple(checked_cells(read.cells, checking.strict, stale))
    except NtddError as e:
        return e


def check_items(module: pytest.Module, notebook: Path, checked: PlannedChecks) -> list[OutputCheck]:
    """The checks of a notebook's cells, in notebook order, for its module to collect."""
    if isinstance(checked, NtddError):
        raise module.CollectError(f"ntdd: {checked}") from checked
    items = []
    for each in checked:
        item = OutputCheck.from_parent(
            module, name=NAME.format(index=each.cell.index), callobj=_compared_in_runtest
        )
        item.checked, item.notebook = each, notebook
        shown = item.nodeid.partition("::")[0]  # JUnit and the job summary name the cell
        item.user_properties += [
            ("notebook", shown),
            ("cell", each.cell.index),
            ("cell_id", each.cell.id or ""),
        ]
        items.append(item)
    return items


def _compared_in_runtest() -> None:
    """outputs as saved in the notebook"""  # `-v`'s description; `runtest` compares them


def figures_of(item: pytest.Item) -> list[dict[str, str]]:
    """A failed check's figures that differ: saved, fresh and their difference, as base64 PNGs."""
    comparison = item.stash.get(_FIGURES, None)
    if comparison is None or not comparison.figures:
        return []
    from ntdd.outputs.images import difference_png

    return [
        {
            "saved": pair.saved,
            "fresh": pair.fresh,
            "difference": difference_png(pair.saved, pair.fresh) or "",
            "verdict": pair.verdict,
        }
        for pair in comparison.figures
    ]


class OutputRecords:
    """The notebooks' saved outputs, and each check's part of its record; the fresh
    outputs are the run's ledger's (`ledger`)."""

    def __init__(self, config: pytest.Config) -> None:
        self.ledger = ledger(config, checks=True)  # the run records cells, the ledger has them
        self._saved: dict[Path, dict[int, SavedCell]] = {}
        self._left: dict[Path, int] = {}  # checks still to run, per notebook

    def pytest_ntdd_record(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> dict[str, Any] | None:
        """A check's record says so, names its cell, and carries its figures that differ."""
        if not isinstance(item, OutputCheck):
            return None
        fields: dict[str, Any] = {"checks_outputs": True, "cell": item.checked.cell.index}
        if report.failed and call.when == "call":
            fields["figures"] = tuple(figures_of(item))
        return fields

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if isinstance(item, OutputCheck):
                self._left[item.notebook] = self._left.get(item.notebook, 0) + 1

    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        """After a notebook's last check, its saved outputs and its records go."""
        if isinstance(item, OutputCheck):
            self._left[item.notebook] = self._left.get(item.notebook, 1) - 1
            if self._left[item.notebook] <= 0:
                self._saved.pop(item.notebook, None)
                runtime = getattr(item.module, "__ntdd__", None)
                if runtime is not None:
                    self.ledger.release(str(runtime.cells.notebook))

    def saved(self, notebook: Path) -> dict[int, SavedCell]:
        found = self._saved.get(notebook)
        if found is None:
            try:
                found = saved_outputs(read_bytes(notebook), notebook)
            except NtddError as e:
                pytest.fail(str(e), pytrace=False)
            self._saved[notebook] = found
        return found

    def fresh(
        self, notebook: str, device: str, index: int
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None:
        """The cell's outputs as the run left them (a later cell's `update_display` applied),
        and the streams it kept as tails, summed up whole; None when the run did not run it."""
        ran = self.ledger.run_of(notebook)
        run = ran.cells(device).get(index) if ran is not None else None
        if run is None:
            return None
        if run.test == "functions":  # defining tests shows nothing
            return [], {}
        return run.outputs, run.shortened


def output_records(config: pytest.Config) -> OutputRecords:
    """The one `OutputRecords` of the run."""
    return registered(config, "ntdd-output-records", OutputRecords)
