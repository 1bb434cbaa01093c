"""A notebook's `async def` tests stay ntdd's under pytest-asyncio.

In auto mode (or with `@pytest.mark.asyncio`) pytest-asyncio collects a
coroutine test as an item of its own that runs on its own event loop; a task
a notebook's setup cell started on the notebook's loop then fails with
"attached to a different loop". A kernel awaits every cell on one loop, so
these items go back to plain functions, which ntdd awaits on the notebook's.
"""

from __future__ import annotations

from typing import Any

import pytest

from ntdd.plugin.collection.collect import NotebookModule, as_notebook_test

_PYTEST_ASYNCIO = "pytest_asyncio"


def plain_functions(collected: Any) -> Any:
    """*collected* (an item or a list, as `pytest_pycollect_makeitem` answers), with
    pytest-asyncio's items made plain `pytest.Function`s again."""
    if isinstance(collected, list):
        return [_plain(node) for node in collected]
    return _plain(collected)


def _plain(node: Any) -> Any:
    if not (isinstance(node, pytest.Function) and _from_pytest_asyncio(node)):
        return node
    plain = pytest.Function.from_parent(
        node.parent,
        name=node.name,
        callspec=getattr(node, "callspec", None),
        callobj=node.obj,
        fixtureinfo=node._fixtureinfo,
        keywords={k: v for k, v in node.keywords.items() if k != "asyncio"},
        originalname=node.originalname,
    )
    # Its asyncio mark would have pytest-asyncio warn that the test is not async.
    plain.own_markers = [m for m in node.own_markers if m.name != "asyncio"]
    if isinstance(node.getparent(pytest.Module), NotebookModule):
        as_notebook_test(plain)  # made after ntdd's collector made the notebook's others so
    return plain


def _from_pytest_asyncio(node: pytest.Function) -> bool:
    return any(c.__module__.partition(".")[0] == _PYTEST_ASYNCIO for c in type(node).__mro__)
