"""A `# TEST` cell run in the kernel: rendered as `ntdd export` writes it, then defined.

The cell goes through ntdd's own pipeline: planned as a one-cell notebook
(`plan.make_plan`) and rendered (`render.render_module`). The test region of
that rendering, the lines `ntdd export` would write for the cell, is what
the kernel runs: a bare cell becomes the same wrapping function (its `global`
line making its assignments land in the kernel's namespace), a cell of
`def test_*` is run as written, and marks become the same decorators.

`KernelTests` keeps the tests of every test cell run so far, the latest run of
each cell, for `%ntdd` to run again.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ntdd.format import module as fmt
from ntdd.format.names import NameRegistry
from ntdd.kernel.regions import CellScope, KernelRuntime
from ntdd.pipeline import build_module
from ntdd.runtime.steps import show_values_of
from ntdd.values import Cell, Notebook, TestCell


@dataclass(frozen=True)
class RanCell:
    """A test cell as it last ran in the kernel, and the tests it defined."""

    key: str  # tells the cell's runs apart from other cells': its id, else its tests' names
    index: int  # the execution count it ran with (`In [7]`)
    tests: tuple[tuple[str, Any], ...]  # (name, function or class), in the cell's order


@dataclass(frozen=True)
class Rendered:
    """What `ntdd export` writes for a cell: its region's marker line and text."""

    test: TestCell
    marker: str
    region: str


def render_cell(source: str, index: int, cell_id: str | None, notebook: str) -> Rendered:
    """The test region `ntdd export` would write for a notebook of this one cell."""
    cell = Cell(index, "code", source, cell_id)
    plan, text = build_module(Notebook(Path(notebook), (cell,)))
    assert text is not None
    (region,) = [r for r in fmt.parse_regions(text) if r.kind == "test"]
    marker = text.split("\n")[region.marker_line - 1]
    return Rendered(plan.tests[0], marker, region.text)


class KernelTests:
    """The test cells run in one kernel: their regions, and their tests for `%ntdd`."""

    def __init__(self, namespace: dict[str, Any], notebook: str) -> None:
        self.runtime = KernelRuntime(namespace, notebook)
        self.cells: dict[str, RanCell] = {}  # in the order they last ran

    def define(self, source: str, index: int, cell_id: str | None) -> RanCell:
        """Run the cell's test region in the kernel: its tests are defined, not yet run.

        A cell of `def test_*` runs its top-level code here, as the kernel
        would run the cell; an error there is the cell's own.
        """
        __tracebackhide__ = True
        runtime = self.runtime
        runtime.namespace["__ntdd__"] = runtime  # what the region calls (`__ntdd__.needs`)
        rendered = render_cell(source, index, cell_id, runtime.display_path)
        first_line = runtime.append(rendered.marker, rendered.region)
        region = runtime.layout.tests[-1]
        wrapped = region.kind != "functions"  # also a cell of functions that cannot be run
        scope = CellScope(runtime.namespace, keep_apart=wrapped)
        runtime.execute(rendered.region, first_line, scope)
        names = rendered.test.names[:1] if wrapped else rendered.test.names
        tests = tuple((name, scope[name]) for name in names if name in scope)
        if region.kind == "statements":  # its last expression is shown, as the kernel shows it
            for _, function in tests:
                if isinstance(function, types.FunctionType):
                    show_values_of(function, region, runtime.layout.lines)
        ran = RanCell(cell_id or "names: " + ", ".join(names), index, tests)
        self.cells.pop(ran.key, None)
        self.cells[ran.key] = ran
        return ran

    def module(self, cells: list[RanCell]) -> types.ModuleType:
        """A module of *cells*' tests for pytest to collect, each name once.

        The functions' globals are the kernel's namespace; the module only
        lists them, so that pytest collects these tests and no other name
        the kernel holds.
        """
        module = types.ModuleType("ntdd_kernel_tests")
        names = NameRegistry()
        for cell in cells:
            for name, test in cell.tests:
                setattr(module, names.claim(name), test)
        module.__ntdd__ = self.runtime  # type: ignore[attr-defined]
        module._ntdd_device = _device_fixture(self.runtime)  # type: ignore[attr-defined]
        return module


def _device_fixture(runtime: KernelRuntime) -> Any:
    @pytest.fixture(name="device")
    def _ntdd_device() -> Any:
        """The notebook's own `device`: the kernel runs the notebook on one."""
        return runtime.device()

    return _ntdd_device
