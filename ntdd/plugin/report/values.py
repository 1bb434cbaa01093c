"""What `--ntdd-report` gathers from a run: each test's verdict, each notebook's cells.

Plain values, built on the controller from the reports' attributes (which
xdist carries from the workers), and read by the page (`report_html`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ntdd.plugin.results.record import SetupCellError
from ntdd.runtime.cell_log import CellRun
from ntdd.values import Notebook


@dataclass(frozen=True)
class TestResult:
    """One test's verdict, where it sits, and what it printed."""

    __test__ = False

    nodeid: str
    outcome: str
    device: str
    cell: int | None  # the test cell, as Jupyter counts cells; None: in no cell
    message: str = ""
    traceback: str = ""
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    ran: tuple[int, ...] = ()  # the setup cells this test ran, in order
    setup_cell: SetupCellError | None = None  # the setup cell whose error errored it
    checks_outputs: bool = False  # a check of its cell's saved outputs (`--ntdd-outputs`)
    figures: tuple[dict[str, str], ...] = ()  # such a check's figures that differ


@dataclass(frozen=True)
class OtherFailure:
    """A failure of a test that is not ntdd's (nbval's, a plain test's), for the list."""

    nodeid: str
    outcome: str
    message: str
    notebook: str = ""  # as its node id names it, for a notebook's cell
    cell: int | None = None


@dataclass
class NotebookResults:
    """What the run did with one notebook."""

    path: Path
    tests: list[TestResult] = field(default_factory=list)
    cells: list[CellRun] = field(default_factory=list)
    pinned: dict[int, str] = field(default_factory=dict)  # setup cells a parameter pinned
    read: Notebook | None = None  # the notebook as the run's end found it
    unread: str = ""  # why it could not be read again


@dataclass
class RunResults:
    """Everything the page shows, gathered from the reports."""

    notebooks: list[NotebookResults]
    counts: Counter[str]
    collection_errors: list[tuple[str, str]]
    options: list[tuple[str, str]]
    seconds: float
    totals: tuple[str, str] | None = None  # pytest's terminal line, less its time, and colour
    others: list[OtherFailure] = field(default_factory=list)
