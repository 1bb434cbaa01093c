"""The notebook's event loop, running in every cell as a kernel's loop runs.

A kernel executes each cell inside its running asyncio loop, so that
`asyncio.get_running_loop()` answers in any cell, `asyncio.ensure_future()`
from a cell that does not await makes a task that runs between cells, and
`asyncio.run()` is refused. ntdd gives each notebook run a loop and, while
the notebook's code runs, marks it running as a kernel's is: it is the
thread's running loop, `loop.is_running()` says so (so `run_until_complete`
and `run_forever` are refused, and nest_asyncio's patched ones nest), and
`asyncio.current_task()` is the notebook's own task, as a kernel's cell runs
in its task. The loop itself turns when a cell awaits, and for a moment after
each cell, as a kernel's loop runs while it waits for the next cell.

Every notebook run gets one, whether or not its code names asyncio: library
code calls `asyncio.get_running_loop()` too, and a loop made and closed costs
about 0.05 ms.
"""

from __future__ import annotations

import contextlib
import threading
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
        mark(self._loop_of())

    def __exit__(self, *exc_info: object) -> None:
        import asyncio

        unmark(asyncio._get_running_loop())  # a replay's may be another than the one marked
        asyncio._set_running_loop(self._outer)


_KERNEL_TASK = "_ntdd_kernel_task"  # the loop's attribute: the task its cells run in


def mark(loop: asyncio.AbstractEventLoop) -> None:
    """*loop* runs, as a kernel's does while a cell runs: the running loop, running by
    its own account, with the notebook's task as the current one."""
    import asyncio

    asyncio._set_running_loop(loop)
    if not isinstance(loop, asyncio.BaseEventLoop) or loop.is_running():
        return  # another kind of loop (uvloop's) is only the running loop
    loop._thread_id = threading.get_ident()  # type: ignore[attr-defined]
    with contextlib.suppress(RuntimeError):  # another task is current already: it stays
        asyncio.tasks._enter_task(loop, _kernel_task(loop))


def unmark(loop: asyncio.AbstractEventLoop | None) -> None:
    """*loop*, which `mark` marked, no longer runs, nor is the running loop."""
    import asyncio

    asyncio._set_running_loop(None)
    task = getattr(loop, _KERNEL_TASK, None)
    if loop is None or task is None or not _marked(loop):
        return
    with contextlib.suppress(RuntimeError):
        asyncio.tasks._leave_task(loop, task)
    loop._thread_id = None  # type: ignore[attr-defined]


def _marked(loop: Any) -> bool:
    import asyncio

    return bool(
        loop is not None
        and getattr(loop, "_thread_id", None) == threading.get_ident()
        and asyncio.current_task(loop) is getattr(loop, _KERNEL_TASK, None)
    )


def _kernel_task(loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
    """The task a kernel's cells run in (ipykernel's shell task): made once per loop,
    waiting until the notebook is done (`close` cancels it)."""
    task: asyncio.Task[None] | None = getattr(loop, _KERNEL_TASK, None)
    if task is None:

        async def kernel() -> None:
            await loop.create_future()

        task = loop.create_task(kernel(), name="ntdd-notebook")
        setattr(loop, _KERNEL_TASK, task)
    return task


def run_until_complete(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T]) -> T:
    """Run *awaitable* on *loop*, which the cell may have seen as running already."""
    import asyncio

    outer = asyncio._get_running_loop()
    was_marked = _marked(outer) and outer is loop
    if was_marked:
        unmark(loop)
    asyncio._set_running_loop(None)
    try:
        return loop.run_until_complete(awaitable)
    finally:
        if was_marked:
            mark(loop)
        else:
            asyncio._set_running_loop(outer)


def idle(loop: asyncio.AbstractEventLoop | None) -> None:
    """Let the tasks a cell started go on, as a kernel's loop does between cells."""
    if loop is None or loop.is_closed() or loop.is_running():
        return
    import asyncio

    kernel = getattr(loop, _KERNEL_TASK, None)
    for _ in range(_IDLE_TURNS):
        if all(task.done() or task is kernel for task in asyncio.all_tasks(loop)):
            return
        run_until_complete(loop, asyncio.sleep(0))


def restart(loop: asyncio.AbstractEventLoop | None, fresh: Callable[[], Any]) -> None:
    """A replay: *loop* is closed; where it was the running loop, *fresh()*'s is."""
    if loop is None:
        return
    import asyncio

    was_running = asyncio._get_running_loop() is loop
    if was_running:
        unmark(loop)
    close(loop)
    if was_running:
        mark(fresh())


def close(loop: asyncio.AbstractEventLoop | None) -> None:
    """The notebook is done: its pending tasks are cancelled, as `asyncio.run` does."""
    if loop is None or loop.is_closed():
        return
    import asyncio

    if _marked(loop):
        unmark(loop)
    if loop.is_running():  # a cell still runs in it, in another thread: the process ends
        return
    with contextlib.suppress(Exception):  # a broken task must not stop the release
        pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            gathered: Any = asyncio.gather(*pending, return_exceptions=True)
            run_until_complete(loop, gathered)
        run_until_complete(loop, loop.shutdown_asyncgens())
    loop.close()
