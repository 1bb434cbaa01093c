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
import math
import os
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
    job = _Job(threading.get_ident(), time.monotonic() + seconds, message)
    _WATCHDOG.arm(job)
    try:
        yield
    except NtddTimeout:
        _WATCHDOG.disarm(job)
        raise
    except BaseException:
        if _WATCHDOG.disarm(job):
            _clear_async_exception(job.thread)  # another error got there first
        raise
    else:
        if _WATCHDOG.disarm(job):
            # Time ran out as the block finished: the exception may still be
            # pending, and must not go off later in pytest's own code.
            _clear_async_exception(job.thread)
            raise NtddTimeout(message)


class _Job:
    """One thread's deadline."""

    def __init__(self, thread: int, deadline: float, message: str) -> None:
        self.thread = thread
        self.deadline = deadline
        self.message = message
        self.fired = False

    def fire(self) -> None:
        message = self.message

        class _Timeout(NtddTimeout):
            def __init__(self) -> None:
                super().__init__(message)

        _Timeout.__name__ = _Timeout.__qualname__ = "NtddTimeout"
        self.fired = True
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(self.thread), ctypes.py_object(_Timeout)
        )
        _wake(self.thread)


class _Watchdog:
    """One thread for the whole process that keeps every running deadline.

    Arming and disarming take a lock, and wake the thread only when the new
    deadline comes before the one it sleeps until: a test's phases, each
    with its own later deadline, cost microseconds and no thread switch.
    """

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._jobs: dict[int, _Job] = {}
        self._thread: threading.Thread | None = None
        self._sleeps_until = math.inf  # when the thread wakes up next by itself

    def arm(self, job: _Job) -> None:
        with self._condition:
            self._jobs[job.thread] = job
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="ntdd-timeout", daemon=True)
                self._thread.start()
            if job.deadline < self._sleeps_until:
                self._condition.notify()

    def disarm(self, job: _Job) -> bool:
        """Stop keeping *job*'s deadline; whether it had fired."""
        with self._condition:
            if self._jobs.get(job.thread) is job:
                del self._jobs[job.thread]
            return job.fired

    def _run(self) -> None:
        with self._condition:
            while True:
                now = time.monotonic()
                job = min(self._jobs.values(), key=lambda j: j.deadline, default=None)
                if job is None:
                    self._sleep(math.inf)
                elif now < job.deadline:
                    self._sleep(job.deadline)
                elif _importing(job.thread) and now < job.deadline + IMPORT_GRACE:
                    self._sleep(now + _POLL)
                else:
                    del self._jobs[job.thread]
                    job.fire()

    def after_fork(self) -> None:
        """In a forked child (`ntdd faults`): the thread is gone, and the lock may be held
        by it forever; start afresh, and start a thread again at the next deadline."""
        self._condition = threading.Condition()
        self._jobs = {}
        self._thread = None
        self._sleeps_until = math.inf

    def _sleep(self, until: float) -> None:
        self._sleeps_until = until
        self._condition.wait(None if until == math.inf else until - time.monotonic())
        self._sleeps_until = -math.inf  # awake: an arm need not notify


_WATCHDOG = _Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WATCHDOG.after_fork)


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
