"""`--ntdd-slow-cells N`: the run's slowest notebook cells, named, after the run.

pytest's `--durations` lists tests, and a notebook's time is mostly its
setup cells, which run inside its first test. Each cell's seconds are on
the records (`cell_records`), so the list is the ledger's: the same where
reports cross xdist to the controller and where they do not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest

from ntdd.plugin.results.ledger import NotebookRun, ledger
from ntdd.settings.typed import settings_of


class SlowCell(NamedTuple):
    seconds: float
    notebook: Path
    number: int  # as Jupyter counts cells: 1 is the first
    cell_id: str | None
    kind: str  # "setup" or "test"
    device: str  # "" where the notebook ran on one device


class SlowCells:
    """Gathers every notebook's cells at the session's end, and lists the slowest."""

    def __init__(self, config: pytest.Config, count: int, least: float) -> None:
        ledger(config, keep=True)  # which calls back with each notebook's run, complete
        self.root = config.rootpath
        self.count, self.least = count, least
        self.cells: list[SlowCell] = []

    def pytest_ntdd_notebook_complete(self, session: pytest.Session, run: NotebookRun) -> None:
        devices = run.devices()
        for device in devices:
            for cell in run.cells(device).values():
                kind = "test" if cell.test else "setup"
                shown = device if len(devices) > 1 else ""
                self.cells.append(
                    SlowCell(cell.seconds, run.path, cell.index, cell.cell_id, kind, shown)
                )

    def slowest(self) -> tuple[list[SlowCell], int]:
        """The cells listed, slowest first, and how many more were quicker than the least."""
        ranked = sorted(self.cells, key=lambda cell: -cell.seconds)[: self.count]
        listed = [cell for cell in ranked if cell.seconds >= self.least]
        return listed, len(ranked) - len(listed)

    def markdown(self) -> str:
        """The list for the job summary (`--ntdd-summary`): a table under the headline."""
        listed, quicker = self.slowest()
        if not listed:
            return ""
        lines = ["| seconds | cell |", "|---|---|"]
        lines += [f"| {cell.seconds:.2f} | `{self.named(cell)}` |" for cell in listed]
        if quicker:
            lines.append(f"\n{quicker} more under {self.least:g} s not listed.")
        return (
            "\n".join(
                ["<details><summary>Slowest cells</summary>", "", *lines, "", "</details>", ""]
            )
            + "\n"
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(terminalreporter.config, "workerinput"):
            return
        listed, quicker = self.slowest()
        many = self.count > 1
        title = f"slowest {self.count} notebook cells" if many else "slowest notebook cell"
        terminalreporter.write_sep("=", f"ntdd: {title}")
        for cell in listed:
            terminalreporter.write_line(f"{cell.seconds:.2f}s {self.named(cell)}")
        if quicker:
            terminalreporter.write_line(
                f"({quicker} cell{'s' * (quicker > 1)} under {self.least:g}s hidden)"
            )
        if not self.cells:
            terminalreporter.write_line("(no notebook cell ran)")

    def named(self, cell: SlowCell) -> str:
        """Where a reader finds the cell: the notebook, the cell's number and id."""
        path = cell.notebook
        shown = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        cell_id = f" (id {cell.cell_id})" if cell.cell_id else ""
        device = f" on {cell.device}" if cell.device else ""
        return f"{shown.as_posix()} cell {cell.number}{cell_id} {cell.kind}{device}"


def slow_cells(config: pytest.Config) -> SlowCells:
    settings = settings_of(config)
    assert settings.slow_cells is not None
    return SlowCells(config, settings.slow_cells, settings.slow_cells_min)
