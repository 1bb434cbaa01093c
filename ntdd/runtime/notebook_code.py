"""While a kernel's code runs: its event loop running, its root logger where it uses logging,
its shell IPython's (`ipython_display`).

A kernel's cells run inside its event loop, whatever the code (library code
calls `asyncio.get_running_loop()` where the notebook never names asyncio; a
loop is 0.05 ms); its root logger is swapped in for a module whose code
names logging (the others cannot tell). After, the tasks its cells started
go on for a moment, as between a kernel's cells.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ntdd.runtime import loop as event_loop
from ntdd.runtime import root_logger
from ntdd.runtime.ipython_display import Singleton
from ntdd.runtime.root_logger import RootLogger


class Kernel(Protocol):
    """What of a `ntdd.runtime.kernel.Kernel` its code's stretch reads and keeps."""

    root_logger: RootLogger
    loop: Any

    def event_loop(self) -> Any: ...


class NotebookCode:
    """Entered around each stretch of a kernel's code: a setup, a test's call.

    A class, not a generator: it is entered twice for every test.
    """

    def __init__(
        self,
        kernel: Kernel,
        keep_pytests: bool,
        uses_logging: bool,
        shell: Callable[[], Any],
        after: Callable[[], None] | None = None,
    ) -> None:
        self._kernel = kernel
        self._after = after  # what the stretch imported is noted (`library_state`)
        self._singleton = Singleton(shell)
        self._keep_pytests = keep_pytests
        self._loop = event_loop.Running(kernel.event_loop)
        self._logging = uses_logging
        self._outside = RootLogger()

    def __enter__(self) -> None:
        if self._logging:
            self._outside = root_logger.swap_in(self._kernel.root_logger, self._keep_pytests)
        self._singleton.__enter__()
        self._loop.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._loop.__exit__()
            event_loop.idle(self._kernel.loop)
            if self._after is not None:
                self._after()
        finally:
            self._singleton.__exit__()
            if self._logging:
                self._kernel.root_logger = root_logger.swap_out(self._outside, self._keep_pytests)
