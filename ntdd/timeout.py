"""A deadline for one test, setup included: a hung cell fails instead of hanging the run."""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType


class NtddTimeout(Exception):
    """A test, or the setup it needed, ran past its deadline."""


class Deadline:
    """A time budget spent across phases (setup, then call) of one test.

    The alarm is armed only inside `running()`, so it can never fire in
    pytest's own code between phases. Uses SIGALRM where it can (the main
    thread on POSIX), which interrupts `time.sleep` and Python loops alike;
    elsewhere a watchdog thread raises the exception in the test's thread.
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
        use_signal = hasattr(signal, "setitimer") and (
            threading.current_thread() is threading.main_thread()
        )
        arm = self._alarm if use_signal else self._watchdog
        try:
            with arm(self.remaining):
                yield
        finally:
            self.remaining -= time.monotonic() - start

    @contextlib.contextmanager
    def _alarm(self, seconds: float) -> Iterator[None]:
        def on_alarm(signum: int, frame: FrameType | None) -> None:
            __tracebackhide__ = True
            raise NtddTimeout(self.message)

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @contextlib.contextmanager
    def _watchdog(self, seconds: float) -> Iterator[None]:
        target = threading.get_ident()
        done = threading.Event()
        message = self.message

        class _Timeout(NtddTimeout):
            def __init__(self) -> None:
                super().__init__(message)

        def fire() -> None:
            if not done.wait(seconds):
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(target), ctypes.py_object(_Timeout)
                )

        watcher = threading.Thread(target=fire, name="ntdd-timeout", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            done.set()
            watcher.join()
