"""Beside VS Code's Python extension: a notebook's parametrized tests in its test tree.

The extension's pytest plugin (`vscode_pytest`) groups a parametrized test's
variants under their function by cutting the node id at `.py`; a notebook's
node id (`nb.ipynb::test_n[1]`) has none, and its tree building raises: the
explorer shows no test of the workspace at all. While its
`pytest_sessionfinish` builds the tree, a notebook test's `callspec` is out of
its sight, so each variant is a test of its own under its notebook, as the
device variants are (`ntdd.runtime.fixtures`); the callspec is put back after.
The session's tests have run by then (or, in discovery, never run).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from ntdd.plugin.items import notebook_module


class VariantsAsTests:
    """Hides notebook tests' callspecs from the extension's `pytest_sessionfinish`."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, object, object]:
        hidden = []
        for item in session.items:
            callspec = getattr(item, "callspec", None)
            if callspec is not None and notebook_module(item) is not None:
                hidden.append((item, callspec))
                delattr(item, "callspec")
        try:
            return (yield)
        finally:
            for item, callspec in hidden:
                setattr(item, "callspec", callspec)  # noqa: B010 - as pytest's own
