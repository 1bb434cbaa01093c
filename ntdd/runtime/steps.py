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
import builtins
import copy
import functools
import inspect
import keyword
import linecache
import operator
import re
import sys
import types
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from ntdd.cells.cell_code import future_first, quiet_syntax_warnings, source_lines, to_python
from ntdd.cells.cell_names import bound_names
from ntdd.errors import NtddTimeout
from ntdd.format.locate import ModuleLayout, TestRegion
from ntdd.notebook import markers
from ntdd.runtime import loop as event_loop
from ntdd.runtime.containment import ctrl_c_pressed
from ntdd.values import DEVICE

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
# From 3.13 (PEP 667) a function frame's `f_locals` writes to the frame, never to the dict
# `exec` ran it with: a bare test cell's statements are compiled again, as module code.
LOCALS_OF_THE_FRAME = sys.version_info >= (3, 13)


@dataclass(frozen=True)
class SetupStep:
    """A setup cell, as the generated module carries it."""

    index: int
    id: str | None
    code: str
    assigns_device: bool = False
    expects_exception: bool = False
    eval_false: bool = False  # marked `#| eval: false`: left out where the run skips those

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
    eval_false: bool = False  # marked `#| eval: false`, and the run skips such cells

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


def test_steps(
    layout: ModuleLayout, pristine: dict[str, Any], filename: str, skip_eval_false: bool = False
) -> list[TestStep]:
    """The module's test cells, each with the functions pytest collects from it.

    *skip_eval_false*: the run leaves out the cells marked `#| eval: false`,
    so a test cell so marked is skipped, and never runs on the way below."""
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
    return [
        _test_step(t, functions.get(t.index, []), layout, skip_eval_false) for t in layout.tests
    ]


def _test_step(
    test: TestRegion,
    functions: list[types.FunctionType],
    layout: ModuleLayout,
    skip_eval_false: bool,
) -> TestStep:
    ordered = tuple(sorted(functions, key=lambda f: f.__code__.co_firstlineno))
    code = ""
    if test.kind == "functions":
        code = "".join(layout.lines[n - 1] for n in test.cell_lines)
    cell = "".join(layout.lines[n - 1] for n in test.cell_lines)
    eval_false = skip_eval_false and markers.not_evaluated(cell)
    skipped = eval_false or (bool(ordered) and all(_never_runs(f) for f in ordered))
    return TestStep(test.index, test.region.id, ordered, skipped, code, eval_false)


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
    holds the future flags of the cells above. The cell's last expression
    goes to `get_ipython().displayhook`, which formats it as a kernel's
    display hook does.
    """
    remember_lines(code, filename)
    flags = TOP_LEVEL_AWAIT | future
    if not may_end_in_an_expression(code):
        return _compile_source(code, filename, flags)  # no parse of its own: most cells
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = None
    if tree is None or not show_last_value(tree.body, code):
        return _compile_source(code, filename, flags)
    future_first(tree)
    try:
        shown: types.CodeType = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
        return shown
    except SyntaxError:
        return _compile_source(code, filename, flags)  # the error as the cell's own source says it


def _compile_source(code: str, filename: str, flags: int) -> types.CodeType:
    try:
        compiled: types.CodeType = compile(code, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as error:
        try:
            python = to_python(code)
        except SyntaxError:
            raise error from None
        tree = python.tree  # IPython syntax, transformed: its last value shows all the same
        future_first(tree)
        show_last_value(tree.body, code)
        compiled = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return compiled


_STATEMENT_START = re.compile(
    r"\s*(?:(?:assert|return|import|from|raise|pass|del|global|nonlocal|break|continue"
    r"|for|if|elif|else|while|with|try|except|finally|def|class|async|print)\b"
    r"|[\w.]+(?:\s*,\s*[\w.]+)*\s*(?:[-+*/%&|^@]|//|<<|>>|\*\*)?=(?!=))"
)


def may_end_in_an_expression(code: str) -> bool:
    """A quick look at a cell's last line: False where it surely ends in a statement
    (an assignment, `assert`, a block), so that most cells need no parse of their own.
    (`print(...)` shows None: nothing either.)"""
    stripped = code.rstrip()
    last = stripped[stripped.rfind("\n") + 1 :]
    if any(last.count(close) > last.count(open_) for open_, close in ("()", "[]", "{}")):
        return True  # the end of a call begun above: `f(\n    a=1)` is an expression
    if ";" in last.rstrip().rstrip(";"):
        return True  # `a = 1; a`: the last statement is not the line's first
    return bool(last) and _STATEMENT_START.match(last) is None


def show_last_value(body: list[ast.stmt], code: str) -> bool:
    """Send a cell's last expression to `get_ipython().displayhook`, as a kernel shows
    it (a trailing `;` hides it); whether there was one to send."""
    last = body[-1] if body else None
    if not isinstance(last, ast.Expr):
        return False
    last_line = code.rstrip().rsplit("\n", 1)[-1].split("#", 1)[0]
    if last_line.rstrip().endswith(";"):
        return False
    shell = ast.Call(func=ast.Name("get_ipython", ast.Load()), args=[], keywords=[])
    hook = ast.Attribute(value=shell, attr="displayhook", ctx=ast.Load())
    last.value = ast.copy_location(ast.Call(func=hook, args=[last.value], keywords=[]), last.value)
    ast.fix_missing_locations(last)
    return True


def at_the_top_level(
    function: types.FunctionType,
    test: TestRegion,
    lines: list[str],
    config: pytest.Config | None = None,
) -> types.CodeType | None:
    """A bare test cell's statements as a kernel runs them: at the notebook's top level.

    The function pytest calls keeps its name, line and marks, and runs the
    cell's statements in the notebook's namespace through `__ntdd__.run_body`,
    with the namespace as the frame's locals: so that code the cell calls
    that binds names in its caller's frame (`sys._getframe(1).f_locals[name] =
    …`, fastcore's `mk_class`) binds them in the notebook's, as in a kernel.
    The cell's last expression is shown as a kernel shows it. Returns the
    code `run_body` runs: the function's own (its asserts rewritten as the
    module's are; a frame of it run with `exec` has the namespace as its
    locals), and from Python 3.13, whose frames' locals write to the frame
    alone, the cell's lines compiled as module code. None for an `async def`,
    left as it is, and for a cell that only compiles in a function (a
    `return`).
    """
    show_values_of(function, test, lines)
    if function.__code__.co_flags & inspect.CO_COROUTINE:
        return None
    body = function.__code__
    if LOCALS_OF_THE_FRAME:
        start, end = test.region.start, test.region.end
        with quiet_syntax_warnings():
            tree = ast.parse("\n" * (start - 1) + "".join(lines[start - 1 : end]))
        node = next((n for n in tree.body if getattr(n, "name", None) == function.__name__), None)
        if not isinstance(node, ast.FunctionDef):
            return None
        cell = "".join(lines[n - 1] for n in test.cell_lines)
        moved = _moved_to_the_top_level(function, lines, node, cell, config)
        if moved is None:
            return None
        body = moved
    wrapper = compile(
        f"def {function.__name__}():\n    __tracebackhide__ = True\n"
        f"    return __ntdd__.run_body({test.index}, {function.__name__!r})\n",
        function.__code__.co_filename,
        "exec",
        dont_inherit=True,
    )
    code = next(c for c in wrapper.co_consts if isinstance(c, types.CodeType))
    function.__code__ = code.replace(co_firstlineno=function.__code__.co_firstlineno)
    return body


def show_values_of(function: types.FunctionType, test: TestRegion, lines: list[str]) -> None:
    """A bare test cell's function shows its last expression as a kernel shows it (the
    Jupyter extension's: a kernel's cell runs it, at its own top level)."""
    start, end = test.region.start, test.region.end
    with quiet_syntax_warnings():
        tree = ast.parse("\n" * (start - 1) + "".join(lines[start - 1 : end]))
    node = next((n for n in tree.body if getattr(n, "name", None) == function.__name__), None)
    cell = "".join(lines[n - 1] for n in test.cell_lines)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not cell.strip():
        return
    if may_end_in_an_expression(cell.rstrip().rsplit("\n", 1)[-1]) and show_last_value(
        node.body, cell
    ):
        _recompile(function, ast.Module(body=[node], type_ignores=[]), lines, constant=True)


def _moved_to_the_top_level(
    function: types.FunctionType,
    lines: list[str],
    node: ast.FunctionDef,
    cell: str,
    config: pytest.Config | None,
) -> types.CodeType | None:
    """The body of *node*, the function of the test cell *cell*, compiled as top-level
    code (its asserts rewritten with *config*, as pytest rewrote the module's), its
    last expression shown; None where it only compiles in a function."""
    body = [n for n in node.body if not isinstance(n, ast.Global)]
    if cell.strip() and may_end_in_an_expression(cell.rstrip().rsplit("\n", 1)[-1]):
        show_last_value(body, cell)
    first = function.__code__.co_firstlineno  # reports show its source from there, as before
    try:
        module = ast.Module(body=body, type_ignores=[])
        top = _recompile(function, module, lines, first=first, config=config)
    except SyntaxError:  # `return` in the cell: a function's statement only
        return None
    return top.replace(co_name=function.__name__)


def _lines_from(code: types.CodeType, first: int) -> types.CodeType:
    """*code*, compiled with its lines counted from 1, counted from *first* (the code
    objects of the functions and classes it defines too)."""
    consts = tuple(
        _lines_from(c, first) if isinstance(c, types.CodeType) else c for c in code.co_consts
    )
    return code.replace(co_firstlineno=code.co_firstlineno + first - 1, co_consts=consts)


def _recompile(
    function: types.FunctionType,
    module: ast.Module,
    lines: list[str],
    constant: bool = False,
    first: int = 1,
    config: pytest.Config | None = None,
) -> types.CodeType:
    """*module* compiled as the module's code is (its asserts rewritten where the module's
    were); with *constant*, the function it defines gets that code. The code starts at
    line *first*, where reports start showing its source."""
    filename = function.__code__.co_filename
    ast.fix_missing_locations(module)
    if "@pytest_ar" in function.__globals__:  # the module's asserts were rewritten
        from _pytest.assertion.rewrite import rewrite_asserts

        source = "".join(lines).encode("utf-8", "surrogatepass")
        rewrite_asserts(module, source, filename, config)
    if first > 1:  # a code object's lines count from its first: shifted back below
        seen: set[int] = set()
        for node in ast.walk(module):
            if id(node) in seen:  # the rewriter uses some nodes twice: shifted once
                continue
            seen.add(id(node))
            for attribute in ("lineno", "end_lineno"):
                if getattr(node, attribute, None) is not None:
                    setattr(node, attribute, max(1, getattr(node, attribute) - first + 1))
    with quiet_syntax_warnings():
        compiled = compile(module, filename, "exec", dont_inherit=True)
    if first > 1:
        compiled = _lines_from(compiled, first)
    if constant:
        for made in compiled.co_consts:
            if isinstance(made, types.CodeType) and made.co_name == function.__name__:
                function.__code__ = made
    return compiled


_AUTOMAGIC_HEAD = re.compile(r"([^\W\d]\w*)(?:[ \t]|$)")


def automagic_head(line: str) -> str | None:
    """The word a one-line cell starts with, where IPython's automagic may take it
    for a magic (`cd data`); None for a cell that cannot be one."""
    if "\n" in line:
        return None
    found = _AUTOMAGIC_HEAD.match(line)
    if found is None or keyword.iskeyword(found[1]) or hasattr(builtins, found[1]):
        return None
    return found[1]


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


def run_quietly(
    step: TestStep, device_value: Callable[[], Any], loop: Callable[[], Any]
) -> BaseException | None:
    """Run a test cell's tests as the notebook passes by: its failures stay its own
    (the last is returned, as a kernel keeps it in `sys.last_value`).

    Tests that take fixtures other than `device` cannot run outside pytest;
    they are left out (their cell's names are still defined).
    """
    last: BaseException | None = None
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
            note_last_error(e)
            last = e
    return last


def note_last_error(error: BaseException) -> None:
    """`sys.last_value` and its kin, as a kernel sets them when it shows a cell's error."""
    sys.last_type, sys.last_value = type(error), error
    sys.last_traceback = error.__traceback__
    if sys.version_info >= (3, 12):
        sys.last_exc = error


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
    """An error a cell raised that a kernel would show and go on from (not a timeout,
    nor the user's Ctrl-C, which stops the run)."""
    if isinstance(error, KeyboardInterrupt) and ctrl_c_pressed():
        return False
    return isinstance(error, _CELL_ERRORS) and not isinstance(error, NtddTimeout)
