"""Costs that must grow with a notebook's size, not with its square."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from ntdd.runtime import steps


def test_reaching_a_test_looks_only_at_the_cells_between_cursor_and_test(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test used to scan every cell of its notebook: 5,000 tests made 25 million looks."""
    tests = 100  # a scan per test would make 10,000 looks: 20 times the bound below
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
    assert looks < 5 * tests  # a scan per test made tests squared


def test_notebooks_named_one_by_one_are_each_read_once(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest asks for a folder's files once per argument naming a file in it: with
    every notebook read each time, 21 notebooks were read 441 times."""
    collect = importlib.import_module("ntdd.plugin.collection.collect")  # the one in sys.modules
    reads: list[str] = []
    real = collect.read_bytes

    def counted(path: Any) -> bytes:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(collect, "read_bytes", counted)
    names = [notebook([f"# TEST\nassert {i} == {i}"], name=f"nb{i}.ipynb").name for i in range(6)]
    result = pytester.runpytest("-p", "no:cacheprovider", "--ntdd", *names)
    result.assert_outcomes(passed=6)
    assert sorted(reads) == sorted(set(reads)) and len(reads) == 6
