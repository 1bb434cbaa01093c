"""The signal that wakes the main thread from a blocking call, so a timeout can land.

An exception set for a thread (`PyThreadState_SetAsyncExc`) is raised when
the thread next runs Python code; a thread blocked in `time.sleep` or on a
lock runs none until a signal's Python handler does. ntdd's handler does
nothing: running it is what makes the blocked call return, after which the
pending `NtddTimeout` is raised.

The signal is ntdd's own, SIGURG, not SIGALRM: a cell that ignores SIGALRM,
or handles it for its own timeouts, keeps its setting for the cells below,
as in a kernel, and ntdd never sets off the cell's handler. SIGURG is
ignored by default, and nothing a notebook runs uses it.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

SIGNAL: signal.Signals | None = getattr(signal, "SIGURG", None)
__tracebackhide__ = True  # a timeout lands in the handler before any line of it runs

_installed = 0  # sessions that installed the handler and are still running (pytester nests them)
_previous_handler: object = None


def wake(thread: int) -> None:
    """Interrupt a system call *thread* is blocked in, so that its exception can land.

    Only the main thread runs Python signal handlers, and a blocked call
    returns only for a signal that has one: ntdd's, unless something
    replaced it.
    """
    if SIGNAL is None or thread != threading.main_thread().ident:
        return
    if signal.getsignal(SIGNAL) is _wake_up:
        signal.pthread_kill(thread, SIGNAL)


def install() -> None:
    """Handle the wake-up signal with ntdd's no-op (in the main thread, where a session starts)."""
    global _installed, _previous_handler
    if SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return
    if _installed == 0:
        previous = signal.getsignal(SIGNAL)
        if previous not in (signal.SIG_DFL, signal.SIG_IGN, None):
            return  # someone else's handler: ntdd does not set it off
        _previous_handler = previous
        signal.signal(SIGNAL, _wake_up)
    _installed += 1


def uninstall() -> None:
    """The session is over: the last one to end puts the previous setting back."""
    global _installed
    if SIGNAL is None or threading.current_thread() is not threading.main_thread():
        return
    if _installed == 0:
        return
    _installed -= 1
    if _installed == 0 and signal.getsignal(SIGNAL) is _wake_up:
        signal.signal(SIGNAL, _previous_handler or signal.SIG_DFL)  # type: ignore[arg-type]


def _wake_up(signum: int, frame: FrameType | None) -> None:
    """The wake-up signal: nothing to do; the watchdog's exception is raised on return."""
