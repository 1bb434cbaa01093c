"""Which pytest items are a notebook's, and the runtime that runs their cells.

A module ntdd generated (exported, or compiled from a notebook) holds its
runtime as `__ntdd__`: a `NotebookRuntime`, or the kernel extension's
`KernelRuntime`, which tests a live kernel's namespace; both answer the
`Runtime` protocol.
"""

from __future__ import annotations

from typing import Any

import pytest

from ntdd.runtime.protocol import Runtime


def runtime_of(item: pytest.Item) -> Runtime | None:
    module = notebook_module(item)
    return module.__ntdd__ if module is not None else None


def notebook_module(node: object) -> Any:
    """The generated module a test item was collected from; None for anything else.

    Plugins call ntdd's hooks with nodes of every kind: pytest-timeout's
    `pytest_exception_interact` hands `pytest_timeout_cancel_timer` the
    collector that just failed. A collector's `module` imports its module
    (again, for one that failed: its error raised once more, or its code run
    twice), so only an item's, which collection already imported, is read.
    """
    if not isinstance(node, pytest.Item):
        return None
    module = getattr(node, "module", None)
    return module if module is not None and hasattr(module, "__ntdd__") else None
