"""Each test's verdict in one run, as the JUnit XML pytest wrote tells it.

JUnit is pytest's own record of a run, and ntdd's tests carry their cell in
it (the `cell` property): `failure` is a test whose own code failed (or the
end test, which *is* the notebook's run), `error` one that failed outside
its cell (a setup cell above it raised, its setup timed out), `skipped` one
left out (an xfail too). A test reported twice (a rerun) is its last report.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import NtddError

PASSED, FAILED, ERROR, SKIPPED = "passed", "failed", "error", "skipped"


@dataclass(frozen=True)
class Verdict:
    outcome: str  # passed, failed, error, skipped
    message: str = ""  # a failure's or an error's message, its first line
    cell: int | None = None  # the test's cell; the end test's: the setup cell that raised

    @property
    def broke(self) -> bool:
        return self.outcome in (FAILED, ERROR)


def read_junit(path: Path) -> dict[str, Verdict]:
    """The verdict of each test in the JUnit XML at *path*, by its name (`test_x[cpu]`)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise NtddError(f"{path}: pytest's JUnit XML does not parse: {e}") from e
    verdicts: dict[str, Verdict] = {}
    for case in root.iter("testcase"):
        name = case.get("name", "")
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        cell = properties.get("cell")
        verdicts[name] = Verdict(*_outcome(case), int(cell) if cell and cell.isdigit() else None)
    return verdicts


def _outcome(case: ET.Element) -> tuple[str, str]:
    for tag, outcome in (("error", ERROR), ("failure", FAILED), ("skipped", SKIPPED)):
        found = case.find(tag)
        if found is not None:
            message = (found.get("message") or (found.text or "")).strip().split("\n", 1)[0]
            return outcome, _unwrapped(message)
    return PASSED, ""


def _unwrapped(message: str) -> str:
    """The error itself, without pytest's `failed on setup with "…"` around it."""
    for phase in ("setup", "teardown"):
        head = f'failed on {phase} with "'
        if message.startswith(head) and message.endswith('"'):
            return message[len(head) : -1]
    return message
