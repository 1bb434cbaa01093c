"""The notebook's event loop, running in every cell as a kernel's loop runs.

A kernel executes each cell inside its running asyncio loop, so that
`asyncio.get_running_loop()` answers in any cell, `asyncio.ensure_future()`
from a cell that does not await makes a task that runs between cells, and
`asyncio.run()` is refused. ntdd gives each notebook run a loop and marks it
as the thread's running loop while the notebook's code runs; the loop itself
runs when a cell awaits, and for a moment after each cell, as a kernel's
loop runs while it waits for the next cell.

Every notebook run gets one, whether or not its code names asyncio: library
code calls `asyncio.get_running_loop()` too, and a loop made and closed costs
about 0.05 ms.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

T = TypeVar("T")
_IDLE_TURNS = 10  # loop iterations between cells, for tasks that are ready to go on


def new_loop() -> asyncio.AbstractEventLoop:
    import asyncio

    return asyncio.new_event_loop()


class Running:
    """The notebook's loop is the running loop while the notebook's code runs.

    A class, not a generator: it is entered twice for every test of a
    notebook that can use asyncio.
    """

    def __init__(self, loop_of: Callable[[], asyncio.AbstractEventLoop]) -> None:
        self._loop_of = loop_of
        self._outer: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> None:
        import asyncio

        self._outer = asyncio._get_running_loop()
        asyncio._set_running_loop(self._loop_of())

    def __exit__(self, *exc_info: object) -> None:
        import asyncio

        asyncio._set_running_loop(self._outer)


def run_until_complete(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """Run *awaitable* on *loop*, which the cell may have seen as running already."""
    import asyncio

    outer = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        return loop.run_until_complete(awaitable)
    finally:
        asyncio._set_running_loop(outer)


def idle(loop: asyncio.AbstractEventLoop | None) -> None:
    """Let the tasks a cell started go on, as a kernel's loop does between cells."""
    if loop is None or loop.is_closed() or loop.is_running():
        return
    import asyncio

    for _ in range(_IDLE_TURNS):
        if all(task.done() for task in asyncio.all_tasks(loop)):
            return
        run_until_complete(loop, asyncio.sleep(0))


def restart(loop: asyncio.AbstractEventLoop | None, fresh: Callable[[], Any]) -> None:
    """A replay: *loop* is closed; where it was the running loop, *fresh()*'s is."""
    if loop is None:
        return
    import asyncio

    was_running = asyncio._get_running_loop() is loop
    close(loop)
    if was_running:
        asyncio._set_running_loop(fresh())


def close(loop: asyncio.AbstractEventLoop | None) -> None:
    """The notebook is done: its pending tasks are cancelled, as `asyncio.run` does."""
    if loop is None or loop.is_closed():
        return
    import asyncio

    with contextlib.suppress(Exception):  # a broken task must not stop the release
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            gathered: Any = asyncio.gather(*pending, return_exceptions=True)
            run_until_complete(loop, gathered)
        run_until_complete(loop, loop.shutdown_asyncgens())
    loop.close()
