"""The cells each test ran, on its reports: what the HTML report and the written notebooks read.

Where tests run (a worker under `-n`, or the one process), the runtime logs
each cell it runs while a run records cells (`ntdd.runtime.cell_log`). Each
phase's report takes the cells logged in that phase, with the notebook, the
device and the test's cell, as plain attributes that xdist carries to the
controller, where `--ntdd-report` and `--ntdd-write-notebooks` read them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ntdd.plugin.items import runtime_of
from ntdd.plugin.once import registered
from ntdd.plugin.output_checks import checked_cell
from ntdd.plugin.report_hooks import cell_of_test
from ntdd.runtime.cell_log import CELL_LOG, CellLog
from ntdd.runtime.fixtures import device_under_test


class CellRecords:
    """Turns the run's cell recording on, and hands each phase's cells to its report."""

    def __init__(self, config: pytest.Config) -> None:
        self.log = config.stash.setdefault(CELL_LOG, CellLog())

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        report.ntdd_cells = [run.as_dict() for run in self.log.take()]
        runtime = runtime_of(item)
        if runtime is None or not runtime.points_at_cells:
            return report
        report.ntdd_notebook = str(runtime.cells.notebook)
        report.ntdd_device = device_under_test(item) or ""
        where = cell_of_test(item)
        report.ntdd_cell = where.index if where is not None else checked_cell(item)
        if call.when == "setup":  # once a test: what a complete run runs, the bytes it read
            report.ntdd_runs_cells = runtime.cells.cells_run()
            report.ntdd_read_digest = _read_digest(item, runtime.cells.notebook)
        return report


def _read_digest(item: pytest.Item, notebook: Path) -> str | None:
    """The SHA-256 of the notebook as the run read it: as collected under `--ntdd`; for a
    module ntdd exported, as its first test found it (the module holds no bytes of it)."""
    module = item.getparent(pytest.Module)
    if module is None:
        return None
    if getattr(module, "read_digest", None) is None:
        try:
            module.read_digest = hashlib.sha256(notebook.read_bytes()).hexdigest()  # type: ignore[attr-defined]
        except OSError:
            return None
    return getattr(module, "read_digest", None)


def cell_records(config: pytest.Config) -> CellRecords:
    """The one `CellRecords` of the run, registered by the first plugin that needs it."""
    return registered(config, "ntdd-cell-records", CellRecords)
