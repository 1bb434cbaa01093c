"""The test at the end of a module: the cells below the last test run too.

Run All runs every code cell; a cell after the notebook's last test (a final
plain `assert`, a crash) would otherwise never run under test, and the run
would pass where Run All raises. The plan gives such a notebook one more
test, which reaches the end of the notebook.

A notebook without tests gets that test alone when the run asks for it
(`--ntdd-run-untested`): it runs every code cell, so its verdict is Run All's.
"""

from __future__ import annotations

from ntdd.format import names
from ntdd.values import EndTest, Mark, Notebook, SetupCell, TestCell

NAME = "test_notebook_runs_to_the_end"
# Marks that never keep a test from reaching its cell (pytest runs its fixtures);
# any other mark may (`skip`, `@cuda` without CUDA, `slow` under `-m "not slow"`).
_REACHING_MARKS = frozenset({"xfail", "timeout", "parametrize", "usefixtures", "filterwarnings"})


def end_test(
    notebook: Notebook,
    setup: list[SetupCell],
    tests: list[TestCell],
    registry: names.NameRegistry,
    run_untested: bool = False,
) -> EndTest | None:
    """The test that runs the setup cells no test is sure to reach; None when there are none.

    A test reaches its cell when pytest runs its fixtures: not when a mark
    skips or deselects it. So the cells below the last test that carries no
    such mark are run by one more test, as Run All would run them. It carries
    the marks every test cell carries, so a run that leaves out all of a
    notebook's tests (`-m "not slow"`, `@cuda` without CUDA) leaves it out
    too; and those marks leave no test less sure to run than it.

    A notebook without tests is no test suite, and gets no test, unless
    *run_untested*: then this one test runs every cell that runs under test.
    """
    if not tests and not run_untested:
        return None  # not a test suite: ntdd runs nothing of it
    marks = _common_marks(tests) if tests else ()
    last = max((t.cell.index for t in tests if _reaches_its_cell(t, marks)), default=0)
    cells = tuple(s.cell.index for s in setup if s.cell.index > last and not s.inert)
    if not cells:
        return None
    code_cells = [c.index for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
    return EndTest(registry.claim(NAME), max(code_cells), cells, marks)


def _reaches_its_cell(test: TestCell, shared: tuple[Mark, ...]) -> bool:
    """Whether pytest runs this test's fixtures wherever it runs the end test's
    (which carries the *shared* marks), so the cells above the test run."""
    return not test.own_marks and all(_reaching(m) or m in shared for m in test.marks)


def _reaching(mark: Mark) -> bool:
    return mark.name in _REACHING_MARKS and ("run", "False") not in mark.kwargs


def _common_marks(tests: list[TestCell]) -> tuple[Mark, ...]:
    """The marks that could leave a test out, that every test cell carries."""
    first, *others = tests
    return tuple(m for m in first.marks if not _reaching(m) and all(m in t.marks for t in others))
