"""ntdd's own hooks, declared as pytest-xdist declares `newhooks.py`.

A feature that puts something on a notebook test's record implements
`pytest_ntdd_record`; the one report wrapper (`report_hooks`) gathers what
every implementation returns into the report's `TestRecord`. Nothing else
puts anything of ntdd's on a report.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_ntdd_record(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> dict[str, Any] | None:
    """The fields of the report's `TestRecord` this feature fills, by name; None for none.

    Called once per phase, after the report is made, in the process that ran
    the phase; the fields must be of the types `TestRecord` declares.
    """
