"""What ntdd says of one test report, declared once: the `TestRecord`.

The one report wrapper (`report_hooks`) fills it where the phase ran, from
its own reading of the item and from each feature's `pytest_ntdd_record`
(`hookspecs`), and puts it on the report as `report.ntdd`. Under xdist it
crosses to the controller as plain JSON data through ntdd's
`pytest_report_to_serializable`/`from_serializable`: every recorded output
was made JSON-safe where it was recorded (`ntdd.runtime.json_safe`). Every
reader, the report page, the notebooks written back, the output checks, the
job summary and the durations file, reads it through `record_of`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

import pytest

from ntdd.errors import SetupError
from ntdd.runtime.cell_log import CellRun

ATTRIBUTE = "ntdd"  # the one attribute of a report that is ntdd's


@dataclass(frozen=True)
class SetupCellError:
    """A setup cell that raised, as the tests it errored tell it."""

    index: int
    cell_id: str
    raised: str  # the class's name
    first: bool  # the test that ran the cell: its message is the whole error

    @classmethod
    def of(cls, error: SetupError) -> SetupCellError:
        raised = error.raised.__name__ if error.raised is not None else "an error"
        return cls(error.index, error.cell_id or "", raised, error.first)


@dataclass(frozen=True, slots=True)  # one on each of a run's reports: no dict of its own
class TestRecord:
    """Everything ntdd puts on one phase's report."""

    __test__ = False

    notebook: str = ""  # the notebook whose cells the test ran; "" for no notebook's cells
    device: str = ""
    cell: int | None = None  # the test's cell, or the cell an output check checks
    cells: tuple[CellRun, ...] = ()  # the cells this phase ran, in the order they ran
    runs_cells: tuple[int, ...] = ()  # setup: the cells a complete run runs
    read_digest: str | None = None  # setup: SHA-256 of the notebook as the run read it
    description: str = ""  # the `-v` line's: the docstring's first line, or the title
    annotate: bool = False  # a failure annotated at its line on GitHub Actions
    message: str = ""  # a setup cell's error in one line, for the page
    setup_cell: SetupCellError | None = None  # the setup cell whose error errored the test
    traceback: str = ""  # the notebook's frames of a failure, for the page
    smoke: tuple[tuple[str, str], ...] = ()  # smoke mode's caps in the phase: where, what
    checks_outputs: bool = False  # a check of a cell's saved outputs (`--ntdd-outputs`)
    figures: tuple[dict[str, str], ...] = ()  # such a check's figures that differ
    unit: str | None = None  # the notebook or test file the durations file times
    cpu: float | None = None  # the CPU seconds the phase took, for `-n auto`'s count
    pinned: tuple[tuple[int, str], ...] = ()  # setup: cells a parameter pinned, and to what
    reuse_key: str = ""  # `--ntdd-reuse`: the notebook's key; "" where it has none
    reuse_tests: int = 0  # the notebook's tests this run selected; 0: not all of them
    reused: str = ""  # the run whose verdicts the test reused (`Entry.label`); "": it ran
    reuse_note: str = ""  # a file in the store that is not an entry, in one line

    def to_data(self) -> dict[str, Any]:
        """Plain JSON data, as a report crosses xdist's execnet and pytest's report logs."""
        return asdict(self)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> TestRecord:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        setup_cell = values.get("setup_cell")
        return cls(
            **{
                **values,
                "cells": tuple(CellRun.from_dict(run) for run in values.get("cells", ())),
                "runs_cells": tuple(values.get("runs_cells", ())),
                "setup_cell": SetupCellError(**setup_cell) if setup_cell else None,
                "smoke": tuple((where, what) for where, what in values.get("smoke", ())),
                "figures": tuple(values.get("figures", ())),
                "pinned": tuple((index, said) for index, said in values.get("pinned", ())),
            }
        )


def record_of(report: pytest.TestReport | pytest.CollectReport) -> TestRecord | None:
    """The report's record; None for a report ntdd said nothing of."""
    found = report.__dict__.get(ATTRIBUTE)
    return found if isinstance(found, TestRecord) else None


def made(report: pytest.TestReport, values: dict[str, Any]) -> TestRecord:
    """The record of *values*, put on *report*."""
    record = TestRecord(**values)
    setattr(report, ATTRIBUTE, record)
    return record


def serialised(data: dict[str, Any]) -> dict[str, Any]:
    """A report's serialised data with its record as plain data."""
    record = data.get(ATTRIBUTE)
    if isinstance(record, TestRecord):
        return {**data, ATTRIBUTE: record.to_data()}
    return data


def deserialised(report: Any) -> None:
    """A report read back from plain data gets its record back as a `TestRecord`."""
    data = getattr(report, "__dict__", {}).get(ATTRIBUTE)
    if isinstance(data, dict):
        setattr(report, ATTRIBUTE, TestRecord.from_data(data))
