"""A deadline for one test, the notebook cells it needed included.

A watchdog thread keeps the time, so nothing a cell does to the process's
timers (`signal.alarm(0)`) can switch it off. When time is up it raises
`NtddTimeout` in the test's thread, and wakes that thread with a signal if
it is blocked in a system call (`time.sleep`, a lock; see `wakeup`). The
exception derives from `BaseException`, as pytest-timeout's does, so that
`except Exception` in a cell cannot swallow it.

A bare `except:` can, and a retry loop around it would run forever. So the
exception is raised again every `REFIRE_EVERY` seconds while one of the
notebook's cells is still running, until the test's phase ends; a test still
running `HARD_END_GRACE` seconds after its timeout was raised ends the
process, as pytest-timeout's thread method does: a line naming the test and
its cell, the stacks of all threads (faulthandler) on stderr, then exit
status `HARD_END_STATUS`. Under pytest-xdist that ends one worker, and the
controller reports its test as failed.

A deadline that falls while the thread is importing a module waits until
the import is done (up to `IMPORT_GRACE` seconds): an exception in the middle
of `import torch` would leave torch half-initialised for every later notebook.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import NoReturn

from ntdd.errors import NtddTimeout
from ntdd.runtime import wakeup

IMPORT_GRACE = 60.0  # seconds a deadline waits for an import under way to finish
REFIRE_EVERY = 0.5  # seconds between raises while a cell goes on after its timeout
HARD_END_GRACE = 5.0  # seconds a test may go on after its timeout, before the process ends
HARD_END_STATUS = 124  # the exit status then: GNU timeout's for "timed out"
_LAST_WORDS_LIMIT = 10.0  # seconds the hard end may take to say why, before it ends regardless
_POLL = 0.02  # seconds between looks at an import under way
_IMPORT_FILES = frozenset(
    {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"}
)
__tracebackhide__ = True  # pytest leaves ntdd's frames out: the reader needs the cell's line


def _no_cell(frame: FrameType) -> str | None:
    return None


def _nothing_to_leave(message: str) -> None:
    return None


def _nothing_to_say() -> str:
    return ""


@dataclass(frozen=True)
class Overrun:
    """What a deadline does when its test goes on after the timeout was raised.

    The timeout is raised again only while a frame of the notebook's cells
    runs (*cell_of* describes such a frame, and answers None for any other):
    as the first exception travels up through pytest's code, another must
    not land there.
    """

    cell_of: Callable[[FrameType], str | None] = _no_cell
    grace: float | None = HARD_END_GRACE  # None: the process is never ended (a user's kernel)
    last_words: Callable[[], str] = _nothing_to_say  # before the end: lets stderr through,
    # and returns what to show first (what the test printed)
    leave_results: Callable[[str], None] = _nothing_to_leave  # then: the run's results
    # files written with what it has, this test failed with the message given


class Budget:
    """Seconds that the deadlines of several tests draw on together: a notebook's, for all
    its tests (`--ntdd-notebook-timeout`). *message* is what the timeout says when the
    budget, not the test's own deadline, is the limit that strikes."""

    def __init__(self, seconds: float, message: str) -> None:
        self.seconds = seconds
        self.remaining = seconds
        self.message = message

    @property
    def spent(self) -> bool:
        return self.remaining <= 0


class Deadline:
    """A time budget spent across the phases (setup, then call) of one test.

    The watchdog runs only inside `running()`, so the exception can never
    land in pytest's own code between phases.
    """

    def __init__(self, seconds: float, what: str, overrun: Overrun | None = None) -> None:
        self.seconds = seconds
        self.remaining = seconds
        self.message = f"{what} timed out after {seconds:g} s (ntdd timeout)"
        self.overrun = overrun or Overrun()

    @contextlib.contextmanager
    def running(self, own_code: bool = False, shared: Budget | None = None) -> Iterator[None]:
        """The block runs within what is left of the budget, and of *shared* (its
        notebook's), whichever is less; the timeout names the limit that struck.

        *own_code*: the block runs ntdd's own code, no cell of the notebook (an
        output check comparing outputs). Then a timer signal keeps the time
        where it can: it interrupts even C code that holds the interpreter (a
        sanitize pattern that backtracks), where the watchdog thread never gets
        to run; no cell runs to have its own use of the signal disturbed.
        """
        seconds, message = self.remaining, self.message
        if shared is not None and shared.remaining < seconds:
            seconds, message = shared.remaining, shared.message
        if seconds <= 0:
            raise NtddTimeout(message)
        start = time.monotonic()
        watch = _alarm if own_code and _alarm_possible() else _watch
        try:
            with watch(seconds, message, self.overrun):
                yield
        finally:
            spent = time.monotonic() - start
            self.remaining -= spent
            if shared is not None:
                shared.remaining -= spent


@contextlib.contextmanager
def _watch(seconds: float, message: str, overrun: Overrun) -> Iterator[None]:
    job = _Job(threading.get_ident(), time.monotonic() + seconds, message, overrun)
    _WATCHDOG.arm(job)
    try:
        yield
    except NtddTimeout:
        # The timeout itself is on its way out: nothing is pending. (Dropping
        # a raise that is not pending leaves CPython 3.11's pending flag set,
        # and a frame run under a profiler later spins on it for ever.)
        _WATCHDOG.disarm(job)
        raise
    except BaseException:
        if _WATCHDOG.disarm(job):
            # Another error got there first: the raise still pending must
            # not go off later in pytest's own code.
            _clear_async_exception(job.thread)
        raise
    else:
        if _WATCHDOG.disarm(job):
            # Time ran out as the block finished, or the block swallowed
            # the timeout: the test still failed.
            _clear_async_exception(job.thread)
            raise NtddTimeout(message)


def _alarm_possible() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _alarm(seconds: float, message: str, overrun: Overrun) -> Iterator[None]:
    """`SIGALRM` raises the timeout after *seconds*; the handler and timer that were
    set before (a cell's own alarm) are put back after."""

    def expired(signum: int, frame: FrameType | None) -> None:
        raise NtddTimeout(message)

    previous = signal.signal(signal.SIGALRM, expired)
    started = time.monotonic()
    before, interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if before:  # an alarm set before, still to go off: it goes off when it would have
            left = max(before - (time.monotonic() - started), 1e-6)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


def phase_ended() -> None:
    """After a test's phase: forget a deadline its block left armed.

    A timeout raised just as the block finished can land in the code that
    leaves it, before the disarm; the deadline would go on, and end the
    process once its grace is over.
    """
    job = _WATCHDOG.drop(threading.get_ident())
    if job is not None and job.fired_at is not None:
        _clear_async_exception(job.thread)


class _Job:
    """One thread's deadline, and what the watchdog did about it."""

    def __init__(self, thread: int, deadline: float, message: str, overrun: Overrun) -> None:
        self.thread = thread
        self.deadline = deadline
        self.message = message
        self.overrun = overrun
        self.due = deadline  # when the watchdog looks at this job next
        self.fired_at: float | None = None  # when the timeout was first raised

    def look(self, now: float) -> None:
        """Time is up: raise the timeout, raise it again, or end the process."""
        if self.fired_at is None:
            if not self._may_raise(now):
                self.due = now + _POLL
                return
            self.fired_at = now
            self._raise()
        elif self.overrun.grace is not None and now >= self.fired_at + self.overrun.grace:
            _end_process(self, self.overrun.grace)
        elif self._may_raise(now) and self.running_cell() is not None:
            self._raise()
        self.due = now + REFIRE_EVERY
        if self.overrun.grace is not None:
            self.due = min(self.due, self.fired_at + self.overrun.grace)

    def running_cell(self) -> str | None:
        """The innermost notebook cell the thread is running, described; None if none."""
        frame: FrameType | None = sys._current_frames().get(self.thread)
        while frame is not None:
            with contextlib.suppress(Exception):  # a broken describer must not stop the watchdog
                where = self.overrun.cell_of(frame)
                if where is not None:
                    return where
            frame = frame.f_back
        return None

    def _may_raise(self, now: float) -> bool:
        return not _importing(self.thread) or now >= self.deadline + IMPORT_GRACE

    def _raise(self) -> None:
        message = self.message

        class _Timeout(NtddTimeout):
            def __init__(self) -> None:
                super().__init__(message)

        _Timeout.__name__ = _Timeout.__qualname__ = "NtddTimeout"
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(self.thread), ctypes.py_object(_Timeout)
        )
        wakeup.wake(self.thread)


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
            if job.due < self._sleeps_until:
                self._condition.notify()

    def disarm(self, job: _Job) -> bool:
        """Stop keeping *job*'s deadline; whether it had fired."""
        with self._condition:
            if self._jobs.get(job.thread) is job:
                del self._jobs[job.thread]
            return job.fired_at is not None

    def drop(self, thread: int) -> _Job | None:
        """Stop keeping *thread*'s deadline, whichever it is."""
        if thread not in self._jobs:  # most phases: no lock taken
            return None
        with self._condition:
            return self._jobs.pop(thread, None)

    def _run(self) -> None:
        with self._condition:
            while True:
                job = min(self._jobs.values(), key=lambda j: j.due, default=None)
                if job is None:
                    self._sleep(math.inf)
                elif time.monotonic() < job.due:
                    self._sleep(job.due)
                else:
                    job.look(time.monotonic())

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


def _end_process(job: _Job, grace: float) -> NoReturn:
    """The test went on past every raise: say which and where, dump the stacks, end.

    faulthandler ends the process by itself should saying so hang (a lock
    held by the stuck thread).
    """
    faulthandler.dump_traceback_later(_LAST_WORDS_LIMIT, exit=True, file=2)
    where = job.running_cell() or _innermost_line(job.thread)
    shown = ""
    with contextlib.suppress(Exception):
        shown = job.overrun.last_words()
    _write_stderr(
        f"\nntdd: {job.message}, and it went on for {grace:g} s after NtddTimeout was "
        f"raised (its code catches it: a bare `except:`?), in {where}\n{shown}"
        f"ntdd: ending the process (exit status {HARD_END_STATUS}); the stacks of its "
        "threads follow\n"
    )
    faulthandler.dump_traceback(file=2, all_threads=True)
    with contextlib.suppress(Exception):
        job.overrun.leave_results(
            f"{job.message}; the process was ended {grace:g} s later (exit {HARD_END_STATUS})"
        )
    os._exit(HARD_END_STATUS)


def _innermost_line(thread: int) -> str:
    frame = sys._current_frames().get(thread)
    if frame is None:
        return "a thread that has ended"
    return f"{frame.f_code.co_filename}, line {frame.f_lineno}"


def _write_stderr(text: str) -> None:
    """To file descriptor 2: a cell may have replaced `sys.stderr`."""
    data = text.encode("utf-8", "replace")
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(2, data) :]


def _importing(thread: int) -> bool:
    """Whether *thread* is executing a module that is being imported."""
    frame: FrameType | None = sys._current_frames().get(thread)
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_FILES:
            return True
        frame = frame.f_back
    return False


class _Drained(BaseException):
    """Takes the place of a timeout still pending for a thread, and is caught at once."""


def _clear_async_exception(thread: int) -> None:
    """Drop a timeout still pending for *thread*, the calling thread.

    `PyThreadState_SetAsyncExc(thread, NULL)` drops it, but leaves the
    interpreter's "exception pending" flag set (CPython 3.11): a frame run
    under a profiler (cProfile, as `%prun` runs a statement) then spins on
    its first instruction for ever. A stand-in exception, set and caught
    inside one `try` (it may land as soon as the call returns), clears both.
    """
    if thread != threading.get_ident():
        return  # only the thread itself can take its exception, and it always is
    try:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread), ctypes.py_object(_Drained)
        )
        for _ in range(1_000_000):  # a backward jump looks for it: it lands at once
            pass
    except _Drained:
        pass
