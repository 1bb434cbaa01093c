"""A generated module's notebook: its files, the cells it registers, the steps a run takes.

The generated module registers its setup cells and test parameters as it
is imported (`setup`, `parameters`); the notebook's first test plans the run
from them and from the module's test cells: one list of steps in cell
order, with the run's parameters in place and pinned against the setup
cells that assign their names. An exported module whose notebook has moved
on says so as it is imported.

The first layer of `NotebookRuntime` (see `ntdd.runtime.notebook_runtime`).
"""

from __future__ import annotations

import ast
import contextlib
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import StaleModuleWarning
from ntdd.format.locate import ModuleLayout
from ntdd.format.stale import stale_reason
from ntdd.notebook.positions import FileLines
from ntdd.runtime import pinning, steps
from ntdd.runtime.settings import settings_of
from ntdd.runtime.steps import ParametersStep, SetupStep, Step, TestStep


class NotebookCells:
    """The notebook as its generated module describes it, and the run's steps through it."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        self.namespace = namespace
        self.uses_device = uses_device
        module_file = namespace.get("__file__") or "."
        self.notebook = (Path(module_file).parent / notebook).resolve()
        self.display_path = _relative_to_cwd(self.notebook)  # now: cells change the cwd
        self.filename: str = namespace.get("__ntdd_filename__") or module_file
        # Collected from a notebook (not exported): the file reports point at, and its lines.
        self.source_file = Path(namespace.get("__ntdd_source_file__") or self.notebook)
        self.file_lines: FileLines = namespace.get("__ntdd_file_lines__") or ()
        # What collecting the notebook said of it (`ntdd: warning: …`), not to be said twice.
        self.announced: tuple[str, ...] = tuple(namespace.get("__ntdd_announced__") or ())
        if "__ntdd_filename__" not in namespace and module_file != ".":
            _warn_if_stale(Path(module_file), self.notebook, namespace.get("__name__", ""))
        self._base = dict(namespace)  # the module before any cell: a fresh kernel
        self._setup: list[SetupStep] = []
        self._parameters: ParametersStep | None = None
        self._pins: dict[int, frozenset[str]] = {}  # setup cells whose assignments are pinned
        self._unassigned = ""  # why the run's parameters cannot be right, or ""
        self._layout: ModuleLayout | None = None
        self._steps: list[Step] = []
        self._positions: list[float] = []  # the steps' positions, for bisection
        self._pristine: dict[str, Any] = {}  # the module once imported
        self._cell_codes: set[types.CodeType] = set()  # tests whose body is a cell's top level
        self._left_out: set[int] = set()  # test cells of `#| eval: false` the run skips
        self._bodies: dict[tuple[int, str], types.CodeType] = {}  # bare cells' top levels

    def setup(
        self,
        index: int,
        cell_id: str | None,
        code: str,
        assigns_device: bool = False,
        expects_exception: bool = False,
        eval_false: bool = False,
    ) -> None:
        """Register a setup cell; it runs when the first test below it needs it (one marked
        `#| eval: false` too, unless the run skips such cells)."""
        self._setup.append(
            SetupStep(index, cell_id, code, assigns_device, expects_exception, eval_false)
        )

    def parameters(self, index: int, values: dict[str, Any], after: bool = True) -> None:
        """Register test-only parameters, assigned after cell *index* (or before it)."""
        self._parameters = ParametersStep(index, after, values)

    def parameters_note(self, config: pytest.Config) -> str:
        """Which parameters go in where, for `-v`; "" when none do."""
        step = self._parameters_step(config)
        if step is None or not step.values:
            return ""
        where = f"after cell {step.index}" if step.after else f"before cell {step.index}"
        values = ", ".join(f"{name}={value!r}" for name, value in step.values.items())
        pinned = [
            f"pinned against cell {index}'s {', '.join(sorted(names))}"
            for index, names in sorted(self._pins_of(step).items())
        ]
        return f"{self.display_path}: test parameters {values} ({'; '.join([where, *pinned])})"

    @property
    def layout(self) -> ModuleLayout:
        """The module's test cells by line, read once."""
        if self._layout is None:
            self._layout = ModuleLayout.of(self.filename, self.namespace)
        return self._layout

    def _plan_steps(self, config: pytest.Config) -> None:
        """The module as imported, and the steps a run takes through its cells, in order."""
        self._pristine = dict(self.namespace)
        skips = settings_of(config).skip_eval_false
        test_steps = steps.test_steps(self.layout, self._pristine, self.filename, skips)
        setup = [s for s in self._setup if not (skips and s.eval_false)]
        cells: list[Step] = [*setup, *test_steps]
        parameters = self._parameters_step(config, cells)
        if parameters is not None:
            cells.append(parameters)
            self._pins = self._pins_of(parameters)
            shared = settings_of(config).parameters.shared_by(self.notebook)
            self._unassigned = pinning.unassigned(parameters.values, self._setup_code(), shared)
        self._left_out = {s.index for s in test_steps if s.eval_false}
        self._steps = sorted(cells, key=lambda s: s.position)
        self._show_values(test_steps, config)
        self._cell_codes = {
            f.__code__ for step in test_steps if not step.code for f in step.functions
        } | set(self._bodies.values())
        self._positions = [s.position for s in self._steps]

    def _show_values(self, test_steps: list[TestStep], config: pytest.Config) -> None:
        """Bare test cells run at the notebook's top level and show their last expression,
        as a kernel's cells do (`steps.at_the_top_level`)."""
        regions = {t.index: t for t in self.layout.tests if t.kind == "statements"}
        for step in test_steps:
            region = regions.get(step.index)
            if region is None:
                continue
            for function in step.functions:
                top = steps.at_the_top_level(function, region, self.layout.lines, config)
                if top is not None:
                    self._bodies[step.index, function.__name__] = top

    def _parameters_step(
        self, config: pytest.Config, cells: list[Step] | None = None
    ) -> ParametersStep | None:
        """The module's parameters with the run's on top (`--ntdd-param`, configuration).

        A module with no place for them (no cell tagged `parameters`) gets the
        run's before its first cell, as papermill injects them.
        """
        given = settings_of(config).parameters.for_notebook(self.notebook)
        overrides = {name: ast.literal_eval(text) for name, text in given}
        step = self._parameters
        if step is None:
            indices = [s.index for s in cells] if cells else [s.index for s in self._setup]
            indices += [t.index for t in self.layout.tests] if cells is None else []
            first = min(indices, default=None)
            if not overrides or first is None:
                return None
            return ParametersStep(first, False, overrides)
        return ParametersStep(step.index, step.after, {**step.values, **overrides})

    def _pins_of(self, step: ParametersStep) -> dict[int, frozenset[str]]:
        """The setup cells below *step* that assign one of its names: each keeps the value."""
        below = [(index, code) for index, code in self._setup_code() if index > step.position]
        return pinning.pins(below, step.values)

    def _setup_code(self) -> list[tuple[int, str]]:
        return [(s.index, s.code) for s in self._setup]


def _warn_if_stale(module: Path, notebook: Path, name: str) -> None:
    """An exported module run by plain pytest says when its notebook has moved on.

    (`pytest --ntdd` compiles the module from the notebook itself: never stale.)
    """
    __tracebackhide__ = True  # a strict run's error is the module's, not ntdd's
    reason = stale_reason(module, notebook)
    if reason is not None:
        message = (
            f"{_relative_to_cwd(module)}: stale: {reason}; its tests run the cells as they "
            "were then (run `ntdd export` again)"
        )
        warnings.warn_explicit(message, StaleModuleWarning, str(module), 1, module=name)


def _relative_to_cwd(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)
