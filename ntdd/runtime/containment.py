"""Keeping a notebook's misbehaviour inside the test that ran it.

Notebook code may call `sys.exit()`, `os._exit()` or `pytest.exit()`, raise
`KeyboardInterrupt`, hang, or replace or close `sys.stdout`. Each is turned
into that test's failure (or left healed), and the run goes on. A real
Ctrl-C still stops the run: the SIGINT handler installed for the session
tells it apart from a `raise` in a cell.

`os._exit` would kill a kernel, and it would end pytest with the status the
cell chose (Colab's restart idiom is `os._exit(00)`: a green run). While a
notebook's test runs, `os._exit` called from its thread raises `KernelDied`
instead, and the test fails even where the cell catches that. A process the
cell forked (multiprocessing's workers) still exits. What cannot be
contained in-process, a crash of the interpreter, needs a separate process:
pytest-xdist's workers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Any, NoReturn

import pytest

from ntdd.errors import KernelDied, NotebookExit, NotebookInterrupt

_ctrl_c = False
_previous_handler: Any = None
_real_exit = os._exit


@dataclass
class _Phase:
    """The test phase running notebook code now: where `os._exit` must not exit."""

    what: str
    pid: int
    thread: int
    exit_called: str = ""


_phase: _Phase | None = None


def ctrl_c_pressed() -> bool:
    """Whether the user interrupted the run (as opposed to a cell raising)."""
    return _ctrl_c


def watch_ctrl_c() -> None:
    """Note real SIGINTs from here on; they still raise KeyboardInterrupt."""
    global _previous_handler, _ctrl_c
    _ctrl_c = False
    if threading.current_thread() is not threading.main_thread():
        return
    _previous_handler = signal.getsignal(signal.SIGINT)

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        global _ctrl_c
        _ctrl_c = True
        if callable(_previous_handler):
            _previous_handler(signum, frame)
        else:
            signal.default_int_handler(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)


def unwatch_ctrl_c() -> None:
    """Put back the SIGINT handler; from another thread (a hard end finishing the
    session as the process ends) there is nothing to put back: only the main
    thread may set handlers."""
    global _previous_handler
    if _previous_handler is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _previous_handler)
        _previous_handler = None


@contextlib.contextmanager
def contained(what: str, runs_code_of: Callable[[str], bool]) -> Iterator[None]:
    """Run one phase of a notebook test; heal what it broke, fail what it must.

    *runs_code_of* tells the notebook's code by its file name: a `pytest.exit`
    from there is the notebook's, one from another plugin is left alone.
    """
    __tracebackhide__ = True
    global _phase
    streams = sys.stdout, sys.stderr
    outer, exit_before = _phase, os._exit
    phase = _phase = _Phase(what, os.getpid(), threading.get_ident())
    os._exit = _exit_in_notebook
    try:
        yield
    except KeyboardInterrupt as e:
        if ctrl_c_pressed():
            raise
        raise NotebookInterrupt(
            f"{what}: the notebook's code raised KeyboardInterrupt; "
            "treated as this test's failure (a real Ctrl-C still stops the run)"
        ) from e
    except pytest.exit.Exception as e:
        if not _raised_in(e.__traceback__, runs_code_of):
            raise
        failure = NotebookExit(
            f"{what}: the notebook's code called pytest.exit({e.msg!r}); in a kernel that is "
            "an ordinary exception, so it fails this test and the run goes on"
        )
        raise failure.with_traceback(e.__traceback__) from None  # the cell's frames
    finally:
        os._exit, _phase = exit_before, outer
        sys.stdout, sys.stderr = streams  # a cell that replaced them must not silence the run
    if phase.exit_called:  # the cell caught KernelDied: a kernel's death cannot be caught
        message = _died(phase.exit_called, what) + " (the cell caught the exception)"
        raise KernelDied(message, phase.exit_called)


def _exit_in_notebook(status: int) -> NoReturn:
    """`os._exit` while a notebook's test runs: fail the test, do not end the run green.

    Only in the test's own process and thread: a forked child (a DataLoader's
    worker) must exit, and a watchdog thread (pytest-timeout's) means it. An
    exit with status 0 from another thread of the process would still be a
    green run: it exits with status 1.
    """
    __tracebackhide__ = True
    phase = _phase
    if phase is None or os.getpid() != phase.pid:
        _real_exit(status)
    if threading.get_ident() != phase.thread:
        if status == 0:
            print(f"ntdd: {_died('os._exit(0)', phase.what)}; exit status 1", file=sys.__stderr__)
        _real_exit(status or 1)
    phase.exit_called = f"os._exit({status!r})"
    raise KernelDied(_died(phase.exit_called, phase.what), phase.exit_called)


def _died(call: str, what: str) -> str:
    return (
        f"{call} was called ({what}): a kernel would die here and Run All would stop; "
        "ntdd kept the test process alive to report it"
    )


def _raised_in(tb: TracebackType | None, runs_code_of: Callable[[str], bool]) -> bool:
    while tb is not None:
        if runs_code_of(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


# -- streams ---------------------------------------------------------------


@contextlib.contextmanager
def streams_kept_open(what: str) -> Iterator[None]:
    """Run one phase with `sys.stdout` and `sys.stderr` kept open; a close fails it.

    The streams are pytest's capture files, or the terminal's: closed, they
    would break the capture of every later test, or the terminal report.
    """
    __tracebackhide__ = True
    closed: list[str] = []
    undo = [_keep_open(name, closed) for name in ("stdout", "stderr")]
    try:
        yield
    finally:
        for put_back in undo:
            put_back()
    if closed:
        pytest.fail(
            f"{what}: the notebook's code closed sys.{closed[0]}; in a kernel the output of "
            "the cells below would be lost (ntdd kept it open for the rest of the run)",
            pytrace=False,
        )


def _keep_open(name: str, closed: list[str]) -> Callable[[], None]:
    """`sys.<name>.close()` notes the close instead; returns what undoes that."""
    stream = getattr(sys, name)

    def close() -> None:
        if name not in closed:
            closed.append(name)

    if stream is None:
        return lambda: None
    try:
        stream.close = close  # pytest's capture files take it: the stream stays the same object
    except (AttributeError, TypeError):  # a built-in stream (`-s`): a stand-in for the phase
        stand_in = _KeptOpen(stream, close)
        setattr(sys, name, stand_in)
        return lambda: setattr(sys, name, stream) if getattr(sys, name) is stand_in else None
    return lambda: vars(stream).pop("close", None)


class _KeptOpen:
    """A stream whose `close` is noted, not done; everything else is the stream's."""

    def __init__(self, stream: Any, close: Callable[[], None]) -> None:
        self._stream = stream
        self.close = close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._stream)


# -- threads ---------------------------------------------------------------


def stray_threads(before: frozenset[threading.Thread]) -> list[threading.Thread]:
    """Threads started since *before* that interpreter exit would wait for."""
    main = threading.main_thread()
    return [
        t
        for t in threading.enumerate()
        if t not in before and t is not main and not t.daemon and t.is_alive()
    ]


def abandon(thread: threading.Thread) -> None:
    """Interpreter exit does not wait for *thread*, as a kernel's shutdown would not.

    `threading._shutdown` joins every non-daemon thread when the process
    exits, and a started thread's `daemon` cannot be set: up to Python 3.12
    the thread's lock leaves the locks it waits on; from 3.13, where the
    waiting is done in C for every non-daemon thread, it waits for the
    threads that are not abandoned instead.
    """
    thread._daemonic = True  # type: ignore[attr-defined]  # what `thread.daemon` says
    locks = getattr(threading, "_shutdown_locks", None)
    if locks is not None:
        with threading._shutdown_locks_lock:  # type: ignore[attr-defined]
            locks.discard(getattr(thread, "_tstate_lock", None))
    elif getattr(threading, "_thread_shutdown", None) is not _join_non_daemon:
        threading._thread_shutdown = _join_non_daemon  # type: ignore[attr-defined]


def _join_non_daemon() -> None:
    """Python 3.13's wait at exit, for the threads that are not daemons (nor abandoned)."""
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon and thread.is_alive():
            thread.join()
