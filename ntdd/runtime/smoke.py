"""Smoke mode's setup cells: training loops and epoch counts capped as a cell compiles.

A setup cell is compiled with its caps written in, and its source (the
notebook file) is never touched; a cell with nothing to cap compiles as it
always does (`compile_cell` returns None). Three things are capped:

- a `for` loop over `range(n)`, `tqdm(range(n))` or `trange(n)`, at the cell's
  top level or at the top level of a function the cell defines and calls,
  whose body trains: it calls `.backward()` or `.step()` (then it is sure),
  or it iterates a DataLoader or steps an optimizer through the code it
  calls (seen as it runs, by `ntdd.runtime.smoke_run`). It runs at most the
  run's epochs times; such a loop inside one (a hand-written loop over
  batches) at most its batches times;
- an integer literal given to one of the smoke names (`max_epochs=10`,
  `num_epochs = 200`, `def train(epochs=100)`): at most the epochs;
- neither where a test-only parameter of the run (`--ntdd-param`) is named:
  the parameter pins it.

The capped code calls this module's `loop`, `trange` and `value` as it runs;
each notes what it cut, at the cell and line, in the active smoke run.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ntdd.cells.cell_code import quiet_syntax_warnings, to_python
from ntdd.config import Smoke
from ntdd.runtime import steps
from ntdd.runtime.settings import settings_of
from ntdd.runtime.smoke_run import ACTIVE

if TYPE_CHECKING:
    import pytest

TRAINS = frozenset({"backward", "step"})  # a body that calls these surely trains
WRAPPERS = frozenset({"tqdm"})  # `tqdm(range(n))`: the range is capped inside
RANGES = frozenset({"trange", "tnrange"})  # `trange(n)`: tqdm over range(n)


def compile_setup(
    config: pytest.Config | None, notebook: Path, code: str, filename: str, future: int
) -> types.CodeType | None:
    """A setup cell of *notebook* compiled for this session's smoke mode; None: as usual."""
    settings = settings_of(config) if config is not None else None
    if settings is None or settings.smoke is None:
        return None
    pinned = frozenset(name for name, _ in settings.parameters.for_notebook(notebook))
    return compile_cell(settings.smoke, code, filename, future, pinned)


def compile_cell(
    caps: Smoke | None, code: str, filename: str, future: int, pinned: frozenset[str]
) -> types.CodeType | None:
    """The setup cell *code* compiled with its caps; None where smoke mode is off or
    the cell has nothing to cap (it compiles as it always does)."""
    if caps is None:
        return None
    try:
        python = to_python(code)
    except SyntaxError:
        return None  # the usual compile reports it
    capping = _Capping(caps, filename, pinned)
    tree = capping.visit_cell(python.tree)
    if not capping.changed:
        return None
    steps.remember_lines(code, filename)
    steps.show_last_value(tree.body, python.code)
    ast.fix_missing_locations(tree)
    flags = steps.TOP_LEVEL_AWAIT | future
    with quiet_syntax_warnings():
        compiled: types.CodeType = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return compiled


# -- what the capped code calls as it runs ----------------------------------


@dataclass
class Loop:
    """A training loop's values: at most *cap* of them once its body is seen to train."""

    values: Any  # a range
    cap: int
    where: str
    sure: bool = False  # its body calls `.backward()` or `.step()`

    def __len__(self) -> int:
        return len(self.values)  # what `tqdm` shows as the total: the loop as written

    def __iter__(self) -> Iterator[Any]:
        run = ACTIVE.get()
        start = run.work if run is not None else 0
        for n, item in enumerate(self.values):
            if n >= self.cap and run is not None and (self.sure or run.work > start):
                run.note(self.where, f"a training loop stopped after {self.cap} of {len(self)}")
                return
            yield item


def loop(values: Any, cap: int, where: str, sure: bool = False) -> Any:
    """`for epoch in range(n)`, capped; anything but a range runs as written."""
    return Loop(values, cap, where, sure) if isinstance(values, range) else values


def trange(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], cap: int, where: str, sure: bool
) -> Any:
    """`trange(n, ...)`, capped: tqdm's own over a capped `range(n)`."""
    tqdm = getattr(sys.modules.get(getattr(function, "__module__", ""), None), "tqdm", None)
    if not callable(tqdm):
        return function(*args, **kwargs)  # a `trange` of the notebook's own
    return tqdm(Loop(range(*args), cap, where, sure), **kwargs)


def value(given: Any, cap: int, where: str, name: str) -> Any:
    """`max_epochs=10`, capped at *cap*; anything but an integer as written."""
    if isinstance(given, bool) or not isinstance(given, int) or given <= cap:
        return given
    run = ACTIVE.get()
    if run is not None:
        run.note(where, f"{name}={given} capped to {cap}")
    return cap


# -- the transform ------------------------------------------------------------


class _Capping:
    """Writes the caps into one setup cell's tree."""

    def __init__(self, caps: Smoke, filename: str, pinned: frozenset[str]) -> None:
        self.caps = caps
        self.filename = filename
        self.pinned = pinned
        self.changed = False

    def visit_cell(self, tree: ast.Module) -> ast.Module:
        called = {
            node.func.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        self._body(tree.body, depth=0)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._defaults(node.args)
                if node.name in called:
                    self._body(node.body, depth=0)
        for each in ast.walk(tree):
            if isinstance(each, ast.Call):
                self._keywords(each)
        return tree

    def _where(self, node: ast.AST) -> str:
        return f"{self.filename}, line {getattr(node, 'lineno', '?')}"

    def _body(self, body: list[ast.stmt], depth: int) -> None:
        """Loops of a block, and the assignments of its smoke names; not into defs."""
        for node in body:
            capped = (
                isinstance(node, ast.For) and self._trains(node) and self._cap_loop(node, depth)
            )
            if capped and isinstance(node, ast.For):
                self._body(node.body, depth + 1)
                continue
            if isinstance(node, ast.Assign) and depth == 0:
                self._assignment(node)
            for block in ("body", "orelse", "finalbody"):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self._body(getattr(node, block, []), depth)
            for handler in getattr(node, "handlers", []):
                self._body(handler.body, depth)

    def _trains(self, node: ast.For) -> bool:
        """A body that calls something, or loops: it may train (seen as it runs)."""
        return any(isinstance(n, (ast.Call, ast.For)) for b in node.body for n in ast.walk(b))

    def _sure(self, node: ast.For) -> bool:
        return any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in TRAINS
            for b in node.body
            for n in ast.walk(b)
        )

    def _cap_loop(self, node: ast.For, depth: int) -> bool:
        """Cap a loop over a range (or tqdm's); whether it was one."""
        if depth > 1:
            return False
        cap = self.caps.epochs if depth == 0 else self.caps.batches
        found = _range_call(node.iter)
        if found is None or self._pins(found[1]):
            return False
        kind, call = found
        arguments = [
            ast.Constant(cap),
            ast.Constant(self._where(node)),
            ast.Constant(self._sure(node)),
        ]
        if kind == "trange":
            node.iter = _calling(
                "trange",
                call.func,
                ast.Tuple(call.args, ast.Load()),
                _as_dict(call.keywords),
                *arguments,
            )
        elif kind == "tqdm":
            inner = call.args[0]
            call.args[0] = _calling("loop", inner, arguments[0], arguments[1], arguments[2])
        else:
            node.iter = _calling("loop", call, *arguments)
        self.changed = True
        return True

    def _pins(self, call: ast.Call) -> bool:
        """Whether a test-only parameter sets the loop's length."""
        return any(isinstance(n, ast.Name) and n.id in self.pinned for n in ast.walk(call))

    def _capped(self, node: ast.expr, name: str) -> ast.expr:
        """*node*, capped where it is an integer literal given to a smoke name."""
        if name not in self.caps.names or name in self.pinned:
            return node
        if not isinstance(node, ast.Constant) or type(node.value) is not int:
            return node
        if node.value <= self.caps.epochs:
            return node
        self.changed = True
        where = ast.Constant(self._where(node))
        capped = _calling("value", node, ast.Constant(self.caps.epochs), where, ast.Constant(name))
        return ast.copy_location(capped, node)

    def _assignment(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            node.value = self._capped(node.value, node.targets[0].id)

    def _keywords(self, call: ast.Call) -> None:
        for keyword in call.keywords:
            if keyword.arg is not None:
                keyword.value = self._capped(keyword.value, keyword.arg)

    def _defaults(self, arguments: ast.arguments) -> None:
        positional = [*arguments.posonlyargs, *arguments.args]
        for at, default in enumerate(arguments.defaults):
            argument = positional[len(positional) - len(arguments.defaults) + at]
            arguments.defaults[at] = self._capped(default, argument.arg)
        for at, (argument, given) in enumerate(
            zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
        ):
            if given is not None:
                arguments.kw_defaults[at] = self._capped(given, argument.arg)


def _name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _range_call(node: ast.expr) -> tuple[str, ast.Call] | None:
    """`range(...)`, `tqdm(range(...), ...)` or `trange(...)`: which, and the call."""
    if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    name = _name_of(node.func)
    if name == "range" and isinstance(node.func, ast.Name) and not node.keywords:
        return "range", node
    if name in RANGES and all(k.arg is not None for k in node.keywords):
        return "trange", node
    if name in WRAPPERS and node.args and _range_call(node.args[0]) is not None:
        inner = _range_call(node.args[0])
        if inner is not None and inner[0] == "range":
            return "tqdm", node
    return None


def _calling(helper: str, *arguments: ast.expr) -> ast.Call:
    """A call of this module's *helper*, imported where the cell runs."""
    module = ast.Call(
        ast.Name("__import__", ast.Load()),
        [ast.Constant(__name__)],
        [ast.keyword("fromlist", ast.List([ast.Constant(helper)], ast.Load()))],
    )
    return ast.Call(ast.Attribute(module, helper, ast.Load()), list(arguments), [])


def _as_dict(keywords: Iterable[ast.keyword]) -> ast.Dict:
    pairs = [(ast.Constant(k.arg), k.value) for k in keywords]
    return ast.Dict([k for k, _ in pairs], [v for _, v in pairs])
