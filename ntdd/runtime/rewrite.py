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

from ntdd.notebook.cell_code import quiet_syntax_warnings


def compile_rewritten(
    source: str,
    filename: str,
    config: pytest.Config | None,
    flags: int = 0,
    transform: Callable[[ast.Module], object] | None = None,
) -> types.CodeType:
    """Compile *source* as a module, its asserts rewritten unless `--assert=plain`,
    after *transform* has changed its tree."""
    rewrite = config is not None and config.getoption("assertmode", "rewrite") != "plain"
    return _compile(source, filename, config, flags, rewrite, transform)


def compile_always_rewritten(source: str, filename: str, flags: int = 0) -> types.CodeType:
    """Compile *source* with its asserts rewritten, before any pytest session exists.

    The Jupyter extension compiles a test cell before it starts the pytest run
    that calls it, so that the cell's top-level code runs as the kernel would
    run it (its output shown, its errors the cell's own).
    """
    return _compile(source, filename, None, flags, rewrite=True)


def _compile(
    source: str,
    filename: str,
    config: pytest.Config | None,
    flags: int,
    rewrite: bool,
    transform: Callable[[ast.Module], object] | None = None,
) -> types.CodeType:
    with quiet_syntax_warnings():  # warnings about a cell's style are not errors here
        tree = ast.parse(source, filename)
    if transform is not None:
        transform(tree)
    if rewrite:
        from _pytest.assertion.rewrite import rewrite_asserts

        rewrite_asserts(tree, source.encode("utf-8", "surrogatepass"), filename, config)
    with quiet_syntax_warnings():
        code: types.CodeType = compile(tree, filename, "exec", flags=flags, dont_inherit=True)
    return code
