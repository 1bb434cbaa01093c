"""Whether a cell keeps its meaning wrapped as a test: in a function's body, or whole in a module.

`plan` asks these questions of every `# TEST` cell to decide what it becomes:
a test function whose body is the cell, or the cell's own definitions kept
at the module's top level (where pytest collects its `def test*` and
`Test*` classes), or a cell run as notebook code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from ntdd.cells.cell_names import module_level_nodes


def module_only(tree: ast.Module) -> str | None:
    """Why a cell means something else inside a function than at the top level; None if not.

    Such a cell cannot become a test function's body: a star import and a
    `from __future__` import are refused there, an annotated name cannot be
    declared global, and `locals()`, `vars()`, `dir()` and one-argument
    `exec`/`eval` see the function's names, not the notebook's.
    """
    for node in module_level_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return f"line {node.lineno}: a `from __future__` import"
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return f"line {node.lineno}: `from {node.module} import *`"
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return f"line {node.lineno}: the annotated name {node.target.id!r}"
        if isinstance(node, ast.Call) and _reads_the_scope(node):
            assert isinstance(node.func, ast.Name)
            return f"line {node.lineno}: `{node.func.id}()` reads the cell's own scope"
    for assert_ in catching_asserts(tree):
        return f"line {assert_.lineno}: an assert whose AssertionError the cell catches"
    return None


_CATCH_ASSERTION = {"AssertionError", "Exception", "BaseException"}
_RAISES = {"raises", "assertRaises", "assertRaisesRegex"}


def catching_asserts(tree: ast.AST) -> Iterator[ast.Assert]:
    """The asserts whose `AssertionError` the code around them catches (`try`/`except`,
    `with pytest.raises(...)`): code that may read the error's message."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(map(_catches, node.handlers)):
            body: list[ast.stmt] = node.body
        elif isinstance(node, ast.With | ast.AsyncWith) and any(
            _is_raises(item.context_expr) for item in node.items
        ):
            body = node.body
        else:
            continue
        for statement in body:
            yield from (n for n in ast.walk(statement) if isinstance(n, ast.Assert))


def _catches(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(kind is None or _last_name(kind) in _CATCH_ASSERTION for kind in kinds)


def _is_raises(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and _last_name(expr.func) in _RAISES


def _last_name(expr: ast.expr | None) -> str:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _reads_the_scope(call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Name):
        return False
    name, given = call.func.id, len(call.args) + len(call.keywords)
    return (name in ("locals", "vars", "dir") and given == 0) or (
        name in ("exec", "eval") and given == 1
    )


def docstring_end(tree: ast.Module) -> int:
    """The last line of a cell's leading string (a wrapped cell's docstring), or 0."""
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.end_lineno or first.lineno
    return 0


def module_level_problem(tree: ast.Module) -> str | None:
    """Why a cell of definitions cannot sit in the middle of a module; None if it can."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return (
                f"line {node.lineno}: a `from __future__` import must start a module; "
                "put it in a setup cell"
            )
    return None


def test_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level `def test*` functions, as pytest collects them."""
    return [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    ]


def generator_problem(node: ast.AST) -> str | None:
    """Why pytest cannot run the test *node*: it yields (a generator is no test)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    for sub in _own_body_nodes(node):
        if isinstance(sub, (ast.Yield, ast.YieldFrom)):
            return (
                f"line {sub.lineno}: `{node.name}` yields, and pytest cannot run a test "
                "that is a generator; return or assert instead"
            )
    return None


def _own_body_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of *function*'s body, not those of functions or classes inside it."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))


def has_test_classes(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name.startswith("Test") for n in tree.body)


def takes_argument(node: ast.AST, name: str) -> bool:
    """Whether a function (or a method of a class) takes *name* as a parameter."""
    functions = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    if isinstance(node, ast.ClassDef):
        functions = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(
        a.arg == name
        for f in functions
        for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)
    )
