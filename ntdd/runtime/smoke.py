"""Smoke mode's setup cells: training loops and epoch counts capped as a cell compiles.

A setup cell is compiled with its caps written in, and its source (the
notebook file) is never touched; a cell with nothing to cap compiles as it
always does (`compile_cell` returns None). What is capped:

- a `for` loop over `range(n)`, `tqdm(range(n))` or `trange(n)`, at the cell's
  top level or at the top level of a function the cell defines (or a method
  of a class it defines), whose body trains: it calls `.backward()` or
  `.step()`, itself or through a function the cell defines (then it is
  sure), or it iterates a DataLoader or steps an optimizer through the code
  it calls (seen as it runs, by `ntdd.runtime.smoke_run`). It runs its first
  passes and its last, at most the run's epochs in all; such a loop inside
  one (a hand-written loop over batches) at most its batches. A loop whose
  pass makes an optimizer is a loop over trainings, not a training's passes,
  and runs in full; so does one whose skipped passes would take less than
  the run's `min_seconds` (`ntdd.runtime.smoke_loops`);
- a `for` loop over a `torch.utils.data.Dataset` itself, not a DataLoader
  (`for x, y in train_set:`, a `Subset` too), that trains the same way: at
  the top level where its body surely trains, or inside a training loop. It
  sees at most the run's examples a pass, the first ones and the last, as a
  `Subset` of them would; any other iterable runs as written;
- an integer literal given to one of the smoke names (`max_epochs=10`,
  `num_epochs = 200`, `def train(epochs=100)`): at most the epochs, unless
  the notebook's own loops run over `range()` of that name: those loops are
  cut instead, and meet its last value;
- none of these where a test-only parameter of the run (`--ntdd-param`) is named:
  the parameter pins it.

Each block inside a capped loop's body (an `if`'s branches, an inner loop's
body, an `except`) notes that it ran, so that the summary names those a cut
loop never ran. And `len(dataset)` divided into a sum (`total /
len(loader.dataset)`) reads the examples of the pass smoke mode cut, so that
a mean stays a mean.

The capped code calls `ntdd.runtime.smoke_loops` as it runs; each of its
helpers notes what it cut, at the cell and line, in the active smoke run.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

from ntdd.cells.cell_code import quiet_syntax_warnings, to_python
from ntdd.config import Smoke
from ntdd.runtime import smoke_loops, steps
from ntdd.runtime.settings import settings_of

if TYPE_CHECKING:
    import pytest

    from ntdd.runtime.cell_map import CellMap

TRAINS = frozenset({"backward", "step"})  # a body that calls these surely trains
WRAPPERS = frozenset({"tqdm"})  # `tqdm(range(n))`: the range is capped inside
RANGES = frozenset({"trange", "tnrange"})  # `trange(n)`: tqdm over range(n)


def compile_setup(
    config: pytest.Config | None, cells: CellMap, code: str, filename: str, future: int
) -> types.CodeType | None:
    """A setup cell of *cells*' notebook compiled for this session's smoke mode; None: as
    usual."""
    settings = settings_of(config) if config is not None else None
    if settings is None or settings.smoke is None:
        return None
    pinned = frozenset(name for name, _ in settings.parameters.for_notebook(cells.notebook))
    if cells.looped is None:
        cells.looped = looped_names(step.code for step in cells.setup_steps)
    return compile_cell(settings.smoke, code, filename, future, pinned, cells.looped)


def looped_names(codes: Iterable[str]) -> frozenset[str]:
    """The names whose `range()` the notebook's setup cells loop over (`for epoch in
    range(num_epochs)`, in a function too): smoke mode cuts those loops, and leaves the
    names their values, so that the loop meets its last epoch and an array sized by the
    name holds it."""
    names: set[str] = set()
    for code in codes:
        try:
            tree = to_python(code).tree
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            found = _range_call(node.iter) if isinstance(node, ast.For) else None
            if found is not None:
                names.update(n.id for n in ast.walk(found[1]) if isinstance(n, ast.Name))
    return frozenset(names)


def compile_cell(
    caps: Smoke | None,
    code: str,
    filename: str,
    future: int,
    pinned: frozenset[str],
    looped: frozenset[str] = frozenset(),
) -> types.CodeType | None:
    """The setup cell *code* compiled with its caps; None where smoke mode is off or
    the cell has nothing to cap (it compiles as it always does). The names in *pinned*
    are left as they are, and so are those in *looped*, whose loops are cut instead."""
    if caps is None:
        return None
    try:
        python = to_python(code)
    except SyntaxError:
        return None  # the usual compile reports it
    capping = _Capping(caps, filename, pinned, looped)
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


# -- the transform ------------------------------------------------------------


class _Capping:
    """Writes the caps into one setup cell's tree."""

    def __init__(
        self, caps: Smoke, filename: str, pinned: frozenset[str], looped: frozenset[str]
    ) -> None:
        self.caps = caps
        self.filename = filename
        self.pinned = pinned
        self.looped = looped
        self.changed = False
        self.trainers: frozenset[str] = frozenset()  # the cell's functions that train

    def visit_cell(self, tree: ast.Module) -> ast.Module:
        self.trainers = _trainers(tree.body)
        self._body(tree.body, depth=0)
        for function in _functions(tree.body):
            self._defaults(function.args)
            self._body(function.body, depth=0)
        for each in ast.walk(tree):
            if isinstance(each, ast.Call):
                self._keywords(each)
        self._divisions(tree)
        return tree

    def _where(self, node: ast.AST) -> str:
        return f"{self.filename}, line {getattr(node, 'lineno', '?')}"

    def _body(self, body: list[ast.stmt], depth: int) -> None:
        """Loops of a block, and the assignments of its smoke names; not into defs."""
        for node in body:
            blocks = (
                self._cap_loop(node, depth)
                if isinstance(node, ast.For) and self._trains(node)
                else None
            )
            if blocks is not None and isinstance(node, ast.For):
                self._body(node.body, depth + 1)
                watched = _watch(node.body, self._where)
                blocks.elts = [
                    ast.Tuple([ast.Constant(place), ast.Constant(within)], ast.Load())
                    for place, within in watched
                ]
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
        """A body that calls `.backward()` or `.step()`, or a function of the cell that does."""
        return _calls_training(node.body, self.trainers)

    def _cap_loop(self, node: ast.For, depth: int) -> ast.Tuple | None:
        """Cap a loop over a range (or tqdm's), or over what may be a Dataset: the tuple
        of its blocks' places, filled once its body is capped; None where it is not."""
        if depth > 1:
            return None
        cap = self.caps.epochs if depth == 0 else self.caps.batches
        found = _range_call(node.iter)
        if found is None:
            return self._cap_examples(node, depth)
        if self._pins(found[1]):
            return None
        kind, call = found
        blocks = ast.Tuple([], ast.Load())
        arguments = [
            ast.Constant(cap),
            ast.Constant(self._where(node)),
            ast.Constant(self._sure(node)),
            blocks,
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
            assert isinstance(inner, ast.Call)  # `_range_call` found `range(...)` there
            call.args[0] = _ranging(inner, arguments)
        else:
            node.iter = _ranging(call, arguments)
        self.changed = True
        return blocks

    def _cap_examples(self, node: ast.For, depth: int) -> ast.Tuple | None:
        """`for x, y in train_set:` in a training loop, or one that surely trains: capped as it
        runs where it iterates a Dataset (`examples`)."""
        sure = self._sure(node)
        if not (sure or depth == 1) or self._pins(node.iter):
            return None
        blocks = ast.Tuple([], ast.Load())
        arguments = [ast.Constant(self.caps.examples), ast.Constant(self._where(node))]
        node.iter = _calling("examples", node.iter, *arguments, ast.Constant(sure), blocks)
        self.changed = True
        return blocks

    def _divisions(self, tree: ast.Module) -> None:
        """`total / len(loader.dataset)`: the length of what a cut pass yielded."""
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, DIVIDES):
                node.right = self._lengths(node.right)
            elif isinstance(node, ast.AugAssign) and isinstance(node.op, DIVIDES):
                node.value = self._lengths(node.value)

    def _lengths(self, node: ast.expr) -> ast.expr:
        """*node* with each `len(x)` in it read by `smoke_loops.length`."""
        if _is_len(node):
            assert isinstance(node, ast.Call)
            self.changed = True
            said = ast.Constant(ast.unparse(node))
            found = _calling("length", node.args[0], ast.Constant(self._where(node)), said)
            return ast.copy_location(found, node)
        for name, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                setattr(node, name, self._lengths(value))
            elif isinstance(value, list):
                setattr(
                    node,
                    name,
                    [self._lengths(v) if isinstance(v, ast.expr) else v for v in value],
                )
        return node

    def _pins(self, call: ast.expr) -> bool:
        """Whether a test-only parameter sets the loop's length."""
        return any(isinstance(n, ast.Name) and n.id in self.pinned for n in ast.walk(call))

    def _capped(self, node: ast.expr, name: str) -> ast.expr:
        """*node*, capped where it is an integer literal given to a smoke name."""
        if name not in self.caps.names or name in self.pinned or name in self.looped:
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


DIVIDES = (ast.Div, ast.FloorDiv)


def _functions(body: list[ast.stmt]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions a cell defines at its top level, and the methods of its classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node.body)


def _is_len(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "len"
        and len(node.args) == 1
        and not isinstance(node.args[0], ast.Starred)
        and not node.keywords
    )


def _watch(
    body: list[ast.stmt], where: Callable[[ast.AST], str], within: str = ""
) -> list[tuple[str, str]]:
    """The blocks nested in a loop's *body* that may not run when it does (an `if`'s
    branches, an inner loop's body, an `except`), not into functions or classes: each now
    starts with a call that notes it ran (once, where loops nest). Each is given with the
    block it lies in (*within*, "" for the loop's body), so that only the outermost of
    those that never ran is named."""
    places: list[tuple[str, str]] = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for block in _branches(node):
            if not block:
                continue
            first = block[0]
            place = getattr(first, MARKED, None)
            if place is None:
                place = where(first)
                marker = ast.Expr(_calling("reached", ast.Constant(place)))
                marker = ast.copy_location(marker, first)
                setattr(marker, MARKED, place)
                block.insert(0, marker)
            places.append((place, within))
            places.extend(_watch(block[1:], where, place))
        for block in _always(node):
            places.extend(_watch(block, where, within))
    return places


TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))  # `except*` from Python 3.11


def _branches(node: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of *node* that may not run when it does."""
    if isinstance(node, (ast.If, ast.For, ast.AsyncFor, ast.While)):
        return [node.body, node.orelse]
    if isinstance(node, TRIES):
        return [*(handler.body for handler in node.handlers), node.orelse]
    if isinstance(node, ast.Match):
        return [case.body for case in node.cases]
    return []


def _always(node: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks of *node* that run whenever it does."""
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [node.body]
    if isinstance(node, TRIES):
        return [node.body, node.finalbody]
    return []


MARKED = "_ntdd_reached"  # on a block's first statement: the note that it ran, and where


def _ranging(call: ast.Call, arguments: list[ast.expr]) -> ast.Call:
    """`range(a, b)` as `smoke_loops.loop(range(a, b), ...)`."""
    return _calling("loop", call, *arguments)


def _calls_training(body: list[ast.stmt], trainers: frozenset[str]) -> bool:
    """Whether *body* calls `.backward()` or `.step()`, or one of *trainers*."""
    for node in (n for statement in body for n in ast.walk(statement)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in TRAINS:
            return True
        if isinstance(node.func, ast.Name) and node.func.id in trainers:
            return True
    return False


def _trainers(body: list[ast.stmt]) -> frozenset[str]:
    """The functions a cell defines at its top level that train: call `.backward()` or
    `.step()`, themselves or through another of them (`def train_step(): loss.backward()`)."""
    functions = {
        node.name: node.body
        for node in body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    found: frozenset[str] = frozenset()
    while True:
        more = frozenset(n for n, b in functions.items() if _calls_training(b, found))
        if more == found:
            return found
        found = more


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
    """A call of `ntdd.runtime.smoke_loops`' *helper*, imported where the cell runs."""
    module = ast.Call(
        ast.Name("__import__", ast.Load()),
        [ast.Constant(smoke_loops.__name__)],
        [ast.keyword("fromlist", ast.List([ast.Constant(helper)], ast.Load()))],
    )
    return ast.Call(ast.Attribute(module, helper, ast.Load()), list(arguments), [])


def _as_dict(keywords: Iterable[ast.keyword]) -> ast.Dict:
    pairs = [(ast.Constant(k.arg), k.value) for k in keywords]
    return ast.Dict([k for k, _ in pairs], [v for _, v in pairs])
