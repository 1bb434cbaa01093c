"""What a notebook's full run and smoke run say, test by test: which need `@full_run`.

A test that passes in full and fails in smoke mode, in its own cell, needs
the full run: its cell gets `@full_run`, which smoke mode skips. Nothing else
is marked. A test that does not pass in full is left alone (a smoke run
cannot tell what it needs). A test that breaks in smoke mode outside its own
cell is no test to mark: a setup cell above it raised (its setup still runs
when the test is skipped, for the tests below), or it is the end test
(`test_notebook_runs_to_the_end`), which runs the cells below the last test.
Each such test is named, with the cell and why.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ntdd.marking.full_run import needs_the_full_run
from ntdd.marking.verdicts import ERROR, PASSED, Verdict
from ntdd.pipeline.end import NAME as END_TEST
from ntdd.pipeline.plan import make_plan
from ntdd.values import Cell, Notebook


@dataclass
class Adoption:
    """One notebook's findings, each test by its id (`test_x`, `test_x[cpu]`)."""

    to_mark: dict[int, list[str]] = field(default_factory=dict)  # cell -> its tests smoke broke
    tests_of: dict[int, tuple[str, ...]] = field(default_factory=dict)  # cell -> all its tests
    smoke_says: dict[str, str] = field(default_factory=dict)  # test -> its smoke failure
    failing_in_full: list[str] = field(default_factory=list)  # "test_x: why"
    not_curable: list[str] = field(default_factory=list)  # "test_x: what broke, and why"
    already: list[str] = field(default_factory=list)  # tests already `@full_run`
    compared: int = 0  # the notebook's tests the full run ran

    @property
    def cells(self) -> tuple[int, ...]:
        return tuple(sorted(self.to_mark))


def compare(notebook: Notebook, full: dict[str, Verdict], smoke: dict[str, Verdict]) -> Adoption:
    """Each test of *notebook* by its verdicts in the full run and the smoke run."""
    plan = make_plan(notebook)
    cell_of = {name: t.cell for t in plan.tests for name in t.names}
    found = Adoption(tests_of={t.cell.index: t.names for t in plan.tests})
    for test, verdict in full.items():
        name = test.partition("[")[0]
        cell = cell_of.get(name)
        if cell is None and name != END_TEST:
            continue  # not the notebook's test (nbval's, beside ntdd's; a collection error)
        found.compared += 1
        if cell is not None and needs_the_full_run(cell):
            found.already.append(test)
        if verdict.broke:
            found.failing_in_full.append(f"{test} ({verdict.message})")
            continue
        ran = smoke.get(test)
        if verdict.outcome == PASSED and ran is None:
            found.not_curable.append(f"{test} passes in full, and the smoke run did not run it")
        if verdict.outcome != PASSED or ran is None or not ran.broke:
            continue
        if cell is None:
            found.not_curable.append(_end_test(test, ran, notebook))
        elif ran.outcome == ERROR:
            found.not_curable.append(_outside_its_cell(test, ran, cell))
        else:
            found.to_mark.setdefault(cell.index, []).append(test)
            found.smoke_says[test] = ran.message
    return found


def _end_test(test: str, ran: Verdict, notebook: Notebook) -> str:
    cell = f", at {_label(notebook, ran.cell)}," if ran.cell is not None else ""
    return (
        f"{test}{cell} breaks in smoke mode only ({ran.message}): it runs the cells below "
        "the last test, which no `@full_run` leaves out; make that cell hold in smoke mode "
        "too (or move the check it makes into a test)"
    )


def _outside_its_cell(test: str, ran: Verdict, cell: Cell) -> str:
    return (
        f"{test}, {cell.label}, errors in smoke mode only, before its cell runs "
        f"({ran.message}): a `@full_run` test's setup cells still run for the tests below, "
        "so no mark cures it; make that setup cell hold in smoke mode too"
    )


def _label(notebook: Notebook, index: int) -> str:
    for cell in notebook.cells:
        if cell.index == index:
            return f"setup {cell.label}"
    return f"cell {index}"
