"""Costs that must grow with a notebook's size, not with its square."""

from __future__ import annotations

from typing import Any

import pytest

from ntdd.runtime import steps


def test_reaching_a_test_looks_only_at_the_cells_between_cursor_and_test(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test used to scan every cell of its notebook: 5,000 tests made 25 million looks."""
    tests = 300
    looks = 0

    def counted(step: Any) -> float:
        nonlocal looks
        looks += 1
        return float(step.index)

    for kind in (steps.SetupStep, steps.TestStep):
        monkeypatch.setattr(kind, "position", property(counted))
    cells = ["items = list(range(10))"]
    cells += [f"# TEST: item {i}\nassert items[{i % 10}] == {i % 10}" for i in range(tests)]
    path = notebook(cells)
    result = pytester.runpytest("-p", "no:cacheprovider", "--ntdd", str(path))
    result.assert_outcomes(passed=tests)
    assert looks < 5 * tests  # a scan per test made tests squared (90,000)
