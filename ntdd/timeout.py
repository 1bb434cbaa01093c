"""A deadline for one test, the notebook cells it needed included.

A watchdog thread keeps the time, so nothing a cell does to the process's
timers (`signal.alarm(0)`) can switch it off. When time is up it raises
`NtddTimeout` in the test's thread, and wakes that thread with a signal if
it is blocked in a system call (`time.sleep`, a lock). The exception derives
from `BaseException`, as pytest-timeout's does, so that `except Exception`
in a cell cannot swallow it.

A deadline that falls while the thread is importing a module waits until
the import is done (up to `IMPORT_GRACE` seconds): an exception in the middle
of `import torch` would leave torch half-initialised for every later notebook.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

IMPORT_GRACE = 60.0  # seconds a deadline waits for an import under way to finish
_POLL = 0.02  # seconds between looks at an import under way
_IMPORT_FILES = frozenset(
    {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"}
)


class NtddTimeout(BaseException):
    """A test, or the cells it needed, ran past its deadline."""


class Deadline:
    """A time budget spent across the phases (setup, then call) of one test.

    The watchdog runs only inside `running()`, so the exception can never
    land in pytest's own code between phases.
    """

    def __init__(self, seconds: float, what: str) -> None:
        self.seconds = seconds
        self.remaining = seconds
        self.message = f"{what} timed out after {seconds:g} s (ntdd timeout)"

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        if self.remaining <= 0:
            raise NtddTimeout(self.message)
        start = time.monotonic()
        try:
            with _watch(self.remaining, self.message):
                yield
        finally:
            self.remaining -= time.monotonic() - start


@contextlib.contextmanager
def _watch(seconds: float, message: str) -> Iterator[None]:
    target = threading.get_ident()
    watchdog = _Watchdog(target, seconds, message)
    watchdog.start()
    try:
        yield
    except watchdog.exception:
        watchdog.stop()
        raise
    except BaseException:
        if watchdog.stop():
            _clear_async_exception(target)  # another error got there first
        raise
    else:
        if watchdog.stop():
            # Time ran out as the block finished: the exception may still be
            # pending, and must not go off later in pytest's own code.
            _clear_async_exception(target)
            raise NtddTimeout(message)


class _Watchdog(threading.Thread):
    """Raises `exception` in the target thread once *seconds* have passed."""

    def __init__(self, target: int, seconds: float, message: str) -> None:
        super().__init__(name="ntdd-timeout", daemon=True)
        self.target = target
        self.seconds = seconds
        self._lock = threading.Lock()
        self._done = threading.Event()
        self.fired = False

        class _Timeout(NtddTimeout):
            def __init__(self) -> None:
                super().__init__(message)

        _Timeout.__name__ = _Timeout.__qualname__ = "NtddTimeout"
        self.exception: type[NtddTimeout] = _Timeout

    def run(self) -> None:
        if self._done.wait(self.seconds):
            return
        give_up_waiting = time.monotonic() + IMPORT_GRACE
        while _importing(self.target) and time.monotonic() < give_up_waiting:
            if self._done.wait(_POLL):
                return
        with self._lock:
            if self._done.is_set():
                return
            self.fired = True
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.target), ctypes.py_object(self.exception)
            )
            _wake(self.target)

    def stop(self) -> bool:
        """Stop watching; whether the deadline had fired."""
        with self._lock:
            self._done.set()
        self.join()
        return self.fired


def _importing(thread: int) -> bool:
    """Whether *thread* is executing a module that is being imported."""
    frame: FrameType | None = sys._current_frames().get(thread)
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_FILES:
            return True
        frame = frame.f_back
    return False


def _wake(thread: int) -> None:
    """Interrupt a system call the thread is blocked in, so the exception can land.

    Only the main thread runs Python signal handlers, and only a Python
    handler is safe to trigger: the default action for SIGALRM ends the process.
    """
    if thread != threading.main_thread().ident or not hasattr(signal, "pthread_kill"):
        return
    if callable(signal.getsignal(signal.SIGALRM)):
        signal.pthread_kill(thread, signal.SIGALRM)


def _clear_async_exception(thread: int) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), None)


_NOT_INSTALLED = object()
_previous_alarm_handler: object = _NOT_INSTALLED


def install_wakeup() -> None:
    """Handle SIGALRM with a no-op, so that a watchdog can wake the main thread.

    The handler does nothing itself: running it is what makes a blocked
    system call return, after which the pending `NtddTimeout` is raised.
    """
    global _previous_alarm_handler
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGALRM)
    if previous in (signal.SIG_DFL, None) and _previous_alarm_handler is _NOT_INSTALLED:
        _previous_alarm_handler = signal.SIG_DFL
        signal.signal(signal.SIGALRM, _wake_up)


def uninstall_wakeup() -> None:
    global _previous_alarm_handler
    if _previous_alarm_handler is _NOT_INSTALLED:
        return
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGALRM) is _wake_up:
        signal.signal(signal.SIGALRM, _previous_alarm_handler)  # type: ignore[arg-type]
    _previous_alarm_handler = _NOT_INSTALLED


def _wake_up(signum: int, frame: FrameType | None) -> None:
    """SIGALRM: nothing to do; the watchdog's exception is raised on return."""
    __tracebackhide__ = True
