"""Compiling notebook code with pytest's assertion rewriting.

pytest's rewriter is private API; this module is its one user, so that a
bare `assert` in a notebook fails with pytest's usual introspection whether
it runs in an in-memory module, in a cell run as notebook code, or in a
test cell run in a Jupyter kernel by the extension.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Callable

import pytest

from ntdd.cells.cell_code import future_first, quiet_syntax_warnings
from ntdd.cells.wrapping import catching_asserts


def compile_rewritten(
    source: str,
    filename: str,
    config: pytest.Config | None,
    flags: int = 0,
    a_cell: bool = False,
    transform: Callable[[ast.Module], object] | None = None,
) -> types.CodeType:
    """Compile *source* as a module, its asserts rewritten unless `--assert=plain`,
    after *transform* has changed its tree.

    *a_cell*: the source is a cell's, run as notebook code; asserts whose error
    it catches stay as written. (A generated module's are rewritten, as
    pytest rewrites the exported module: both ways give one verdict.)
    """
    rewrite = config is not None and config.getoption("assertmode", "rewrite") != "plain"
    return _compile(source, filename, config, flags, rewrite, a_cell, transform)


def compile_always_rewritten(
    source: str,
    filename: str,
    flags: int = 0,
    transform: Callable[[ast.Module], object] | None = None,
) -> types.CodeType:
    """Compile *source* with its asserts rewritten, before any pytest session exists.

    The Jupyter extension compiles a test cell before it starts the pytest run
    that calls it, so that the cell's top-level code runs as the kernel would
    run it (its output shown, its errors the cell's own).
    """
    return _compile(source, filename, None, flags, rewrite=True, a_cell=True, transform=transform)


def caught_asserts_as_written(tree: ast.Module) -> None:
    """Asserts whose `AssertionError` the code catches itself raise what Python raises.

    pytest's rewriting puts its explanation into the error's message, and code
    that reads `str(e)` or `e.args` in its `except AssertionError as e` would
    see that, not what a kernel gives. Those asserts become the `if`/`raise`
    Python compiles an assert to; the others are rewritten, for pytest's report.
    """
    caught = {id(node) for node in catching_asserts(tree)}
    if caught:
        _AsWritten(caught).visit(tree)


class _AsWritten(ast.NodeTransformer):
    def __init__(self, caught: set[int]) -> None:
        self.caught = caught

    def visit_Assert(self, node: ast.Assert) -> ast.stmt:
        """`if __debug__: if not test: raise AssertionError(msg)`, at the assert's lines."""
        if id(node) not in self.caught:
            return node
        error: ast.expr = ast.Name("AssertionError", ast.Load())
        if node.msg is not None:
            error = ast.Call(error, [node.msg], [])
        check = ast.If(ast.UnaryOp(ast.Not(), node.test), [ast.Raise(error, None)], [])
        plain = ast.If(ast.Name("__debug__", ast.Load()), [check], [])
        for made in ast.walk(plain):
            if not hasattr(made, "lineno") and "lineno" in made._attributes:
                ast.copy_location(made, node)
        return plain


def _compile(
    source: str,
    filename: str,
    config: pytest.Config | None,
    flags: int,
    rewrite: bool,
    a_cell: bool,
    transform: Callable[[ast.Module], object] | None = None,
) -> types.CodeType:
    with quiet_syntax_warnings():  # warnings about a cell's style are not errors here
        tree = ast.parse(source, filename)
    if transform is not None:
        transform(tree)
    if a_cell:
        future_first(tree)  # as IPython compiles a cell: statement by statement
    if rewrite:
        from _pytest.assertion.rewrite import rewrite_asserts

        if a_cell:
            caught_asserts_as_written(tree)
        rewrite_asserts(tree, source.encode("utf-8", "surrogatepass"), filename, config)
    with quiet_syntax_warnings():
        code: types.CodeType = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return code
