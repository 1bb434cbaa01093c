"""ntdd's own hooks, declared as pytest-xdist declares `newhooks.py`.

A feature that puts something on a notebook test's record implements
`pytest_ntdd_record`; the one report wrapper (`report_hooks`) gathers what
every implementation returns into the report's `TestRecord`. Nothing else
puts anything of ntdd's on a report. A feature that reads each notebook's
whole run at the end (the page, the written notebooks) implements
`pytest_ntdd_notebook_complete`, called by the run's ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ntdd.plugin.results.ledger import NotebookRun


def pytest_ntdd_record(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> dict[str, Any] | None:
    """The fields of the report's `TestRecord` this feature fills, by name; None for none.

    Called once per phase, after the report is made, in the process that ran
    the phase; the fields must be of the types `TestRecord` declares.
    """


def pytest_ntdd_notebook_complete(session: pytest.Session, run: NotebookRun) -> None:
    """Every test of *run*'s notebook has reported: its run, whole, as the ledger has it.

    Called once per notebook, in collection order, where the run's results
    come together (xdist's controller, or the one process), as the session
    finishes, before any results file is written. `run.read_again()` gives the
    notebook's bytes as the end of the run finds them, read once for all.
    """
