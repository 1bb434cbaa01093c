"""Which faults smoke mode loses, from `ntdd faults --json`'s report of one notebook, run in
full and in smoke mode: overall, and test by test.

A fault is lost where some test catches it in full and none in smoke mode;
a test loses a fault it catches in full and not in smoke mode (another test
may still catch it there).
"""

from __future__ import annotations

from typing import Any

CAUGHT = "caught"


def _caught_by(report: dict[str, Any]) -> dict[str, list[str]]:
    """Each fault caught, and the tests that caught it."""
    return {
        fault["name"]: list(fault.get("caught_by") or [])
        for fault in report.get("faults", [])
        if fault.get("status") == CAUGHT
    }


def lost(full: dict[str, Any], smoke: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Each fault caught in full and by no test in smoke mode, with the tests that caught it
    in full."""
    in_smoke = _caught_by(smoke)
    return [(name, tests) for name, tests in _caught_by(full).items() if name not in in_smoke]


def lost_by_test(full: dict[str, Any], smoke: dict[str, Any]) -> dict[str, list[str]]:
    """Each test that catches a fault in full and not in smoke mode, and those faults."""
    in_smoke = _caught_by(smoke)
    found: dict[str, list[str]] = {}
    for name, tests in _caught_by(full).items():
        for test in tests:
            if test not in in_smoke.get(name, []):
                found.setdefault(test, []).append(name)
    return found


def caught(report: dict[str, Any]) -> tuple[int, int]:
    """The faults caught, and those that applied."""
    return int(report.get("caught") or 0), int(report.get("applicable") or 0)
