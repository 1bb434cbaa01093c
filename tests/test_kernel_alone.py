"""A `Kernel` on its own: a notebook's module exported and collected, its `CellMap`, and a
kernel built on it by hand, with no `NotebookRuntime` facade and no fixture in between.

The module is what `ntdd export` writes; pytest collects it (so the items
and the config are pytest's own), and the test drives the kernel as the
facade would: fresh, advanced to a test's cell, restarted by a test above
its cursor, put aside while another kernel of the notebook runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from ntdd.commands.cli import main
from ntdd.errors import SetupError
from ntdd.runtime.cell_map import CellMap
from ntdd.runtime.isolation import BASELINE, ProcessState, current_cwd
from ntdd.runtime.kernel import Kernel, RunContext
from ntdd.runtime.settings import counts_of

CELLS = [
    "import os\nsteps = []\nsteps.append('first')\ncount = 1",
    "count += 1",
    "# TEST: two\nassert count == 2",
    "count += 10\nos.chdir('data')",
    "# TEST: twelve\nassert count == 12",
    "# TEST: in its folder\nassert os.path.basename(os.getcwd()) == 'data'",
]


def collected(pytester: pytest.Pytester, cells: list[str]) -> dict[str, pytest.Item]:
    """The exported module of a notebook of *cells*, collected: its items by name."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, str(pytester.path / "nb.ipynb"))
    (pytester.path / "data").mkdir()
    assert main(["export", str(pytester.path / "nb.ipynb")]) == 0
    return {item.name: item for item in pytester.getitems(Path("test_nb.py"))}


@pytest.fixture
def items(pytester: pytest.Pytester) -> Iterator[dict[str, pytest.Item]]:
    """The module's items; the process as it was after (a fresh kernel changes it)."""
    outside = ProcessState.capture()
    cwd = current_cwd()
    try:
        yield collected(pytester, CELLS)
    finally:
        outside.apply()
        os.chdir(cwd)


def cell_map_of(item: pytest.Item) -> CellMap:
    cells: CellMap = item.module.__ntdd__.cells  # type: ignore[attr-defined]
    if BASELINE not in item.config.stash:
        item.config.stash[BASELINE] = ProcessState.baseline()  # as the session starts
    cells.plan(item.config)
    return cells


def kernel_on(cells: CellMap, item: pytest.Item, device: str = "cpu") -> Kernel:
    return Kernel(cells, device, RunContext(config=item.config))


def advance(kernel: Kernel, item: pytest.Item) -> None:
    with kernel.in_its_folder():
        kernel.advance_to(kernel.cells.position_of(item), item)


def test_a_fresh_kernel_has_run_no_cell(items: dict[str, pytest.Item]) -> None:
    two = items["test_two"]
    cells = cell_map_of(two)
    kernel = kernel_on(cells, two)
    cells.namespace["count"] = 99  # left by an earlier run
    kernel.fresh()
    assert "count" not in cells.namespace
    assert cells.namespace["__name__"] == "__main__"
    assert callable(cells.namespace["get_ipython"])
    assert (kernel.cursor, kernel.cells_run) == (-1, 0)
    assert Path(kernel.cwd) == two.path.parent


def test_advancing_runs_the_cells_between_its_cursor_and_the_test_s_cell(
    items: dict[str, pytest.Item],
) -> None:
    two, twelve = items["test_two"], items["test_twelve"]
    cells = cell_map_of(two)
    kernel = kernel_on(cells, two)
    kernel.fresh()
    advance(kernel, two)
    assert cells.namespace["count"] == 2
    assert kernel.cursor == cells.position_of(two)
    assert kernel.cells_run == 3  # two setup cells, and the test's own
    advance(kernel, twelve)
    assert cells.namespace["count"] == 12
    assert cells.namespace["steps"] == ["first"]  # the first cell ran once
    assert kernel.cursor == cells.position_of(twelve)
    assert Path(kernel.cwd) == two.path.parent / "data"  # the cell's chdir, kept
    assert Path(current_cwd()) != Path(kernel.cwd)  # the session's, around its cells


def test_a_test_above_the_cursor_restarts_the_kernel_and_replays(
    items: dict[str, pytest.Item],
) -> None:
    two, twelve = items["test_two"], items["test_twelve"]
    cells = cell_map_of(two)
    kernel = kernel_on(cells, two)
    kernel.fresh()
    advance(kernel, twelve)
    cells.namespace["steps"].append("by hand")
    advance(kernel, two)
    assert cells.namespace["count"] == 2
    assert cells.namespace["steps"] == ["first"]  # a new kernel's list, not the old one
    assert Path(kernel.cwd) == two.path.parent  # a new kernel starts in the folder
    assert counts_of(two.config).replayed_tests == [two.nodeid]


def test_the_same_test_twice_restarts_too(items: dict[str, pytest.Item]) -> None:
    two = items["test_two"]
    cells = cell_map_of(two)
    kernel = kernel_on(cells, two)
    kernel.fresh()
    advance(kernel, two)
    advance(kernel, two)
    assert cells.namespace["count"] == 2
    assert counts_of(two.config).replays == 1


def test_a_kernel_put_aside_keeps_its_names_while_another_runs(
    items: dict[str, pytest.Item],
) -> None:
    two, twelve = items["test_two"], items["test_twelve"]
    cells = cell_map_of(two)
    context = RunContext(config=two.config)
    first, second = Kernel(cells, "cpu", context), Kernel(cells, "meta", context)
    first.activate()  # never ran: a fresh kernel
    advance(first, twelve)
    first.put_aside()
    assert first.started and first.names is not None and first.names["count"] == 12
    second.activate()
    assert "count" not in cells.namespace  # the other kernel's names are not the module's
    advance(second, two)
    assert cells.namespace["count"] == 2
    second.put_aside()
    first.activate()
    assert cells.namespace["count"] == 12
    assert first.cursor == cells.position_of(twelve)
    assert second.cursor == cells.position_of(two)


def test_a_setup_cell_that_raises_errors_each_test_below_it_naming_the_cell(
    pytester: pytest.Pytester,
) -> None:
    outside, cwd = ProcessState.capture(), current_cwd()
    try:
        found = collected(pytester, ["x = 1", "1 / 0", "# TEST: below\nassert x", "# TEST\nx"])
        below, other = found["test_below"], next(i for n, i in found.items() if n != "test_below")
        cells = cell_map_of(below)
        kernel = kernel_on(cells, below)
        kernel.fresh()
        with pytest.raises(SetupError) as raised:
            advance(kernel, below)
        assert (raised.value.index, raised.value.raised) == (2, ZeroDivisionError)
        assert isinstance(raised.value.__cause__, ZeroDivisionError)
        with pytest.raises(SetupError) as again:
            advance(kernel, other)
        assert "its traceback is under test_below" in str(again.value)
        assert again.value.__cause__ is None
    finally:
        outside.apply()
        os.chdir(cwd)
