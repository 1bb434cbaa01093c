"""The cells each test ran, on its record: what the ledger gathers for every reader.

Where tests run (a worker under `-n`, or the one process), the runtime logs
each cell it runs while a run records cells (`ntdd.runtime.cell_log`). Each
phase's record takes the cells logged in that phase (`pytest_ntdd_record`),
and its setup's record what a complete run runs and the bytes it read.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ntdd.plugin.items import runtime_of
from ntdd.plugin.once import registered
from ntdd.runtime.cell_log import CELL_LOG, CellLog


class CellRecords:
    """Turns the run's cell recording on, and hands each phase's cells to its record."""

    def __init__(self, config: pytest.Config) -> None:
        self.log = config.stash.setdefault(CELL_LOG, CellLog())

    def pytest_ntdd_record(
        self, item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
    ) -> dict[str, Any] | None:
        fields: dict[str, Any] = {"cells": tuple(self.log.take())}
        runtime = runtime_of(item)
        if runtime is None or not runtime.points_at_cells:
            return fields if fields["cells"] else None
        if call.when == "setup":  # once a test: what a complete run runs, the bytes it read
            fields["runs_cells"] = tuple(runtime.cells.cells_run())
            fields["read_digest"] = _read_digest(item, runtime.cells.notebook)
        return fields


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
    """The one `CellRecords` of the run, registered by the first reader that needs it."""
    return registered(config, "ntdd-cell-records", CellRecords)
