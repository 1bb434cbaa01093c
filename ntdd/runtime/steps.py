"""A notebook's code cells as the runtime runs them: setup cells and test cells, in order.

A setup cell is code carried as a string; it runs with `exec` in the
notebook's namespace, as a kernel runs a cell. A test cell is code in the
module itself: pytest runs its tests when they are selected, and when the
notebook runs past a test cell on the way to a later one (a test chosen out
of order), its tests run quietly, as the cell would have run in a kernel.
"""

from __future__ import annotations
import __future__

import ast
import copy
import functools
import inspect
import linecache
import operator
import types
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from ntdd.format.locate import ModuleLayout, TestRegion
from ntdd.notebook.cell_code import DEVICE, bound_names, source_lines, to_python
from ntdd.runtime import loop as event_loop
from ntdd.runtime.containment import ctrl_c_pressed
from ntdd.runtime.timeout import NtddTimeout

if TYPE_CHECKING:
    import asyncio

# What a cell may raise without the notebook stopping: a kernel shows it and goes on.
# (pytest's outcomes too: a test that calls pytest.skip() or .xfail() on the way.)
_CELL_ERRORS = (
    Exception,
    SystemExit,
    KeyboardInterrupt,
    pytest.fail.Exception,
    pytest.skip.Exception,
    pytest.xfail.Exception,
)
TOP_LEVEL_AWAIT = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


@dataclass(frozen=True)
class SetupStep:
    """A setup cell, as the generated module carries it."""

    index: int
    id: str | None
    code: str
    assigns_device: bool = False
    expects_exception: bool = False

    @property
    def position(self) -> float:
        return self.index


@dataclass(frozen=True)
class TestStep:
    """A test cell: its test functions, and for a cell of `def`s, its lines."""

    __test__ = False

    index: int
    id: str | None
    functions: tuple[types.FunctionType, ...]
    skipped: bool = False  # marked to be skipped: never run
    code: str = ""  # a cell of `def test_*` as written: its top level binds names

    @property
    def position(self) -> float:
        return self.index

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """The names a cell of `def test_*` binds at its top level."""
        if not self.code:
            return ()
        try:
            return tuple(bound_names(ast.parse(self.code)))
        except SyntaxError:
            return tuple(f.__name__ for f in self.functions)


@dataclass(frozen=True)
class ParametersStep:
    """Test-only parameters: assigned right after the cell tagged `parameters`."""

    index: int
    after: bool  # after cell *index*; or before it, in a notebook with no such cell
    values: dict[str, Any]

    @property
    def position(self) -> float:
        return self.index + (0.5 if self.after else -0.5)

    def assign(self, namespace: dict[str, Any]) -> None:
        namespace.update(copy.deepcopy(self.values))  # a run never sees another's changes


Step = SetupStep | TestStep | ParametersStep


def test_steps(layout: ModuleLayout, pristine: dict[str, Any], filename: str) -> list[TestStep]:
    """The module's test cells, each with the functions pytest collects from it."""
    functions: dict[int, list[types.FunctionType]] = {}
    for value in pristine.values():
        code = getattr(value, "__code__", None)
        if not isinstance(value, types.FunctionType) or code is None:
            continue
        if code.co_filename != filename or not value.__name__.startswith("test"):
            continue
        test = layout.test_at(code.co_firstlineno)
        if test is not None:
            functions.setdefault(test.index, []).append(value)
    return [_test_step(t, functions.get(t.index, []), layout) for t in layout.tests]


def _test_step(
    test: TestRegion, functions: list[types.FunctionType], layout: ModuleLayout
) -> TestStep:
    ordered = tuple(sorted(functions, key=lambda f: f.__code__.co_firstlineno))
    code = ""
    if test.kind == "functions":
        code = "".join(layout.lines[n - 1] for n in test.cell_lines)
    skipped = bool(ordered) and all(_never_runs(f) for f in ordered)
    return TestStep(test.index, test.region.id, ordered, skipped, code)


def _never_runs(function: Callable[..., Any]) -> bool:
    """Marked `skip`, `skipif(True)` or `xfail(run=False)`: pytest never calls it."""
    for mark in getattr(function, "pytestmark", ()):
        if mark.name == "skip":
            return True
        if mark.name == "skipif" and mark.args and mark.args[0] is True:
            return True
        if mark.name == "xfail" and mark.kwargs.get("run") is False:
            return True
    return False


# -- running cells ---------------------------------------------------------


# The flags of `from __future__` imports, which IPython carries from a cell to the next.
FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, name).compiler_flag for name in __future__.all_feature_names)
)


def compile_cell(code: str, filename: str, future: int = 0) -> types.CodeType:
    """Compile a cell under its own name, as a kernel would; IPython syntax is transformed.

    Top-level `await` is allowed, as IPython's autoawait allows it; *future*
    holds the future flags of the cells above.
    """
    remember_lines(code, filename)
    flags = TOP_LEVEL_AWAIT | future
    try:
        compiled: types.CodeType = compile(code, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as error:
        try:
            python = to_python(code)
        except SyntaxError:
            raise error from None
        compiled = compile(python.code, filename, "exec", flags=flags, dont_inherit=True)
    return compiled


def remember_lines(code: str, filename: str) -> None:
    """Put a cell's lines where tracebacks look for them."""
    linecache.cache[filename] = (len(code), None, source_lines(code), filename)


def execute(
    code: types.CodeType,
    namespace: dict[str, Any],
    loop: Callable[[], asyncio.AbstractEventLoop],
    names: MutableMapping[str, Any] | None = None,
) -> None:
    """Run compiled cell code; a cell that awaits runs on the notebook's event loop."""
    __tracebackhide__ = True
    result = eval(code, namespace, names if names is not None else namespace)
    if inspect.iscoroutine(result):
        event_loop.run_until_complete(loop(), result)


def run_quietly(step: TestStep, device_value: Callable[[], Any], loop: Callable[[], Any]) -> None:
    """Run a test cell's tests as the notebook passes by: its failures stay its own.

    Tests that take fixtures other than `device` cannot run outside pytest;
    they are left out (their cell's names are still defined).
    """
    for function in step.functions:
        arguments = _arguments(function, device_value)
        if arguments is None:
            continue
        try:
            result = function(**arguments)
            if inspect.iscoroutine(result):
                event_loop.run_until_complete(loop(), result)
        except _CELL_ERRORS as e:
            if isinstance(e, KeyboardInterrupt) and ctrl_c_pressed():
                raise


def _arguments(
    function: Callable[..., Any], device_value: Callable[[], Any]
) -> dict[str, Any] | None:
    """The arguments a quiet run can give *function*: none, or the device."""
    arguments: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name == DEVICE:
            arguments[DEVICE] = device_value()
        elif parameter.default is inspect.Parameter.empty and parameter.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            return None
    return arguments


def is_cell_error(error: BaseException) -> bool:
    """An error a cell raised that a kernel would show and go on from (not a timeout)."""
    return isinstance(error, _CELL_ERRORS) and not isinstance(error, NtddTimeout)
