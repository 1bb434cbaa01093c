"""What is fixed once a generated module is imported: its cells, their places, the run's steps.

The module registers its setup cells and test parameters as it is imported
(`setup`, `parameters`); the notebook's first test plans the run from them
and from the module's test cells (`plan`): one list of steps in cell order,
with the run's parameters in place and pinned against the setup cells that
assign their names. An exported module whose notebook has moved on says so
as it is imported.

The module's code and the cells compiled on their own (setup cells, test
cells run as notebook code) are named after the notebook and the cell
(`nb.ipynb (setup cell 3, id 1a2b)`), so that a traceback reads as the
notebook; `place_of` and `line_in_file` map each of their lines to the cell
and to the line of the notebook's file that holds it.

One `CellMap` serves every device's `Kernel` of the notebook, and the
kernel extension's `KernelRuntime` keeps one for the test cells it ran.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import inspect
import sys
import textwrap
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from ntdd.cells.cell_code import to_python
from ntdd.cells.cell_names import bound_names
from ntdd.errors import StaleModuleWarning
from ntdd.format.locate import ModuleLayout, TestRegion
from ntdd.format.stale import stale_reason
from ntdd.notebook.positions import FileLines, line_in_file
from ntdd.runtime import pinning, steps
from ntdd.runtime.notes import note_at
from ntdd.runtime.settings import settings_of
from ntdd.runtime.steps import ParametersStep, SetupStep, Step, TestStep

END = sys.maxsize  # the position of a test found in no cell: after every cell


class CellMap:
    """The notebook as its generated module describes it, where each line of its code sits,
    and the run's steps through it."""

    def __init__(
        self,
        namespace: dict[str, Any],
        notebook: Path,
        filename: str,
        uses_device: bool = False,
        display_path: str | None = None,
    ) -> None:
        self.namespace = namespace  # the module's globals: the notebook's names
        self.notebook = notebook
        self.uses_device = uses_device
        self.display_path = display_path or relative_to_cwd(notebook)  # now: cells change cwd
        self.filename = filename  # the module's code's
        # Collected from a notebook (not exported): the file reports point at, and its lines.
        self.source_file = Path(namespace.get("__ntdd_source_file__") or notebook)
        self.file_lines: FileLines = namespace.get("__ntdd_file_lines__") or ()
        # What collecting the notebook said of it (`ntdd: warning: …`), not to be said twice.
        self.announced: tuple[str, ...] = tuple(namespace.get("__ntdd_announced__") or ())
        self.base: dict[str, Any] = {}  # the module before any cell: a fresh kernel
        self.setup_steps: list[SetupStep] = []
        self._parameters: ParametersStep | None = None
        self.pins: dict[int, frozenset[str]] = {}  # setup cells whose assignments are pinned
        self.unassigned = ""  # why the run's parameters cannot be right, or ""
        self._layout: ModuleLayout | None = None
        self.steps: list[Step] = []
        self.positions: list[float] = []  # the steps' positions, for bisection
        self.pristine: dict[str, Any] = {}  # the module once imported
        self.cell_codes: set[types.CodeType] = set()  # tests whose body is a cell's top level
        self.left_out: set[int] = set()  # test cells of `#| eval: false` the run skips
        self.bodies: dict[tuple[int, str], types.CodeType] = {}  # bare cells' top levels
        self.compiled: dict[int, types.CodeType] = {}  # setup cells, compiled once
        self.looped: frozenset[str] | None = None  # smoke mode: names looped over `range()` of
        self.cell_files: dict[str, tuple[int, str | None]] = {}  # test cells run as code
        self._in_file: dict[tuple[str, int], int | None] = {}  # asked per line, under coverage

    @classmethod
    def of_module(
        cls, namespace: dict[str, Any], notebook: str, uses_device: bool = False
    ) -> CellMap:
        """The map of a generated module, as it is imported (its globals, its notebook's
        path relative to it); an exported module whose notebook moved on says so."""
        module_file = namespace.get("__file__") or "."
        path = (Path(module_file).parent / notebook).resolve()
        cells = cls(namespace, path, namespace.get("__ntdd_filename__") or module_file, uses_device)
        cells.base = dict(namespace)
        if "__ntdd_filename__" not in namespace and module_file != ".":
            _warn_if_stale(Path(module_file), path, namespace.get("__name__", ""))
        return cells

    # -- what the module registers, and the run's steps ----------------------

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
        self.setup_steps.append(
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

    @layout.setter
    def layout(self, layout: ModuleLayout) -> None:
        """A kernel's virtual module grows as its test cells run."""
        self._layout = layout

    @property
    def planned(self) -> bool:
        return bool(self.pristine)

    def plan(self, config: pytest.Config) -> None:
        """The module as imported, and the steps a run takes through its cells, in order."""
        self.pristine = dict(self.namespace)
        skips = settings_of(config).skip_eval_false
        test_steps = steps.test_steps(self.layout, self.pristine, self.filename, skips)
        setup = [s for s in self.setup_steps if not (skips and s.eval_false)]
        cells: list[Step] = [*setup, *test_steps]
        parameters = self._parameters_step(config, cells)
        if parameters is not None:
            cells.append(parameters)
            self.pins = self._pins_of(parameters)
            shared = settings_of(config).parameters.shared_by(self.notebook)
            self.unassigned = pinning.unassigned(parameters.values, self._setup_code(), shared)
        self.left_out = {s.index for s in test_steps if s.eval_false}
        self.steps = sorted(cells, key=lambda s: s.position)
        self._show_values(test_steps, config)
        self.cell_codes = {
            f.__code__ for step in test_steps if not step.code for f in step.functions
        } | set(self.bodies.values())
        self.positions = [s.position for s in self.steps]

    def cells_run(self) -> list[int]:
        """The cells a run that reaches the notebook's end runs, by number: those it leaves
        out by design (`# NTDD: skip`, a test marked to be skipped, `#| eval: false` where
        the run skips such cells) are not among them."""
        return sorted(
            s.index
            for s in self.steps
            if isinstance(s, SetupStep) or (isinstance(s, TestStep) and not s.skipped)
        )

    def test_region(self, item: pytest.Item) -> TestRegion | None:
        """The test cell *item*'s function was written in; None for a test of no cell."""
        return self._test_region(item)

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
                    self.bodies[step.index, function.__name__] = top

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
            indices = [s.index for s in cells] if cells else [s.index for s in self.setup_steps]
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
        return [(s.index, s.code) for s in self.setup_steps]

    @functools.cached_property
    def mentions(self) -> frozenset[str]:
        """Which of the modules the runtime keeps apart the module's code (its setup cells'
        included) names: logging."""
        text = "".join(self.layout.lines)
        return frozenset(word for word in ("logging",) if word in text)

    # -- where the notebook's code sits --------------------------------------

    def position_of(self, item: pytest.Item) -> int:
        """The index of the cell a test's function was written in."""
        test = self._test_region(item)
        return test.index if test is not None else END

    def test_cell_name(self, item: pytest.Item) -> str:
        """How messages name the cell of *item*'s test: `nb.ipynb (test cell 4, id 1a2b)`."""
        test = self._test_region(item)
        return self.cell_filename(test.index, test.region.id, "test cell") if test else ""

    def _test_region(self, item: pytest.Item) -> TestRegion | None:
        function = getattr(item, "function", None)
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        if code is None or code.co_filename != self.filename:
            return None
        return self.layout.test_at(code.co_firstlineno)

    def runs_code_of(self, filename: str) -> bool:
        """Whether code compiled under *filename* is this notebook's: its module or a cell."""
        return filename == self.filename or filename.startswith(f"{self.display_path} (")

    def place_of(self, filename: str, line: int) -> str | None:
        """A frame's place as the notebook's cell and line; None for code not the notebook's."""
        if filename == self.filename:
            where = self.layout.locate(line, self.display_path)
            return dataclasses.replace(where, text="").describe() if where else filename
        if self.runs_code_of(filename):
            return f"{filename}, line {line}"  # a cell run as code: its own lines
        return None

    def line_in_file(self, filename: str, lineno: int) -> int | None:
        """The line of the notebook's file that line *lineno* of *filename* came from,
        when *filename* is the notebook's code (its module, or a cell compiled alone)."""
        key = (filename, lineno)
        if key not in self._in_file:
            self._in_file[key] = self._line_in_file(filename, lineno)
        return self._in_file[key]

    def _line_in_file(self, filename: str, lineno: int) -> int | None:
        if not self.file_lines:
            return None
        if filename == self.filename:
            where = self.layout.locate(lineno, "")
            return self.cell_line_in_file(where.index, where.line) if where is not None else None
        index = self.cell_of(filename)
        return self.cell_line_in_file(index, lineno) if index is not None else None

    def cell_line_in_file(self, index: int, line: int | None) -> int | None:
        """The file line of line *line* of cell *index* (None: its first line)."""
        return line_in_file(self.file_lines, index, line)

    def cell_of(self, filename: str) -> int | None:
        """The cell compiled under *filename*: a setup cell, or a test cell run as code."""
        if filename in self.cell_files:
            return self.cell_files[filename][0]
        if not filename.startswith(f"{self.display_path} ("):
            return None
        return next(
            (s.index for s in self.setup_steps if self.cell_filename(s.index, s.id) == filename),
            None,
        )

    def assigned_below(self, name: str, index: int) -> int | None:
        """The first cell below cell *index* that assigns *name*, or None.

        For a NameError: Run All reaches a cell before the cells below it, so a
        name that only a later cell assigns is not defined yet.
        """
        for cell, names in self._names_by_cell:
            if cell > index and name in names:
                return cell
        return None

    @functools.cached_property
    def _names_by_cell(self) -> list[tuple[int, frozenset[str]]]:
        """The names each code cell assigns at its top level, in notebook order."""
        found = [(s.index, _assigned(s.code)) for s in self.setup_steps]
        for test in self.layout.tests:
            text = "".join(self.layout.lines[n - 1] for n in test.cell_lines)
            found.append((test.index, _assigned(textwrap.dedent(text))))
        return sorted(found, key=lambda pair: pair[0])

    def cell_filename(self, index: int, cell_id: str | None, kind: str = "setup cell") -> str:
        """How tracebacks name a cell run as code: `nb.ipynb (setup cell 3, id 1a2b)`.

        No angle brackets: pytest hides frames of files named `<...>`, and these
        frames are the ones a reader needs to see.
        """
        ident = f", id {cell_id}" if cell_id else ""
        return f"{self.display_path} ({kind} {index}{ident})"

    def dropped(self, spelled: str, message: str) -> None:
        """A magic not run under test, said once, at the notebook's line that asked for it.

        Collected from the notebook, its reading said so already (`ntdd: warning: …`
        after collection): no second word of it in the warnings summary.
        """
        if any(repr(spelled) in said for said in self.announced):
            return
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None and not self.runs_code_of(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            note_at(message, self.display_path, 1)
            return
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        line = self.line_in_file(filename, lineno)
        if line is not None:  # a line of the notebook's file
            note_at(message, self.display_path, line)
            return
        where = self.layout.locate(lineno, "") if filename == self.filename else None
        if where is not None:  # an exported module's line: its cell's, as a cell's name says
            filename = self.cell_filename(where.index, where.id, "test cell")
            lineno = where.line or 1
        note_at(message, filename, lineno)


def _assigned(code: str) -> frozenset[str]:
    """The names a cell's code binds at its top level (none where it does not parse)."""
    try:
        return frozenset(bound_names(to_python(code).tree))
    except (SyntaxError, RecursionError):
        return frozenset()


def _warn_if_stale(module: Path, notebook: Path, name: str) -> None:
    """An exported module run by plain pytest says when its notebook has moved on.

    (`pytest --ntdd` compiles the module from the notebook itself: never stale.)
    """
    __tracebackhide__ = True  # a strict run's error is the module's, not ntdd's
    reason = stale_reason(module, notebook)
    if reason is not None:
        message = (
            f"{relative_to_cwd(module)}: stale: {reason}; its tests run the cells as they "
            "were then (run `ntdd export` again)"
        )
        warnings.warn_explicit(message, StaleModuleWarning, str(module), 1, module=name)


def relative_to_cwd(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)
