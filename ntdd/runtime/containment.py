"""Keeping a notebook's misbehaviour inside the test that ran it.

Notebook code may call `sys.exit()`, raise `KeyboardInterrupt`, hang, or
replace `sys.stdout`. Each is turned into that test's failure (or left
healed), and the run goes on. A real Ctrl-C still stops the run: the SIGINT
handler installed for the session tells it apart from a `raise` in a cell.
What cannot be contained in-process, `os._exit()` or a crash of the
interpreter, needs a separate process: pytest-xdist's workers.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

_ctrl_c = False
_previous_handler: Any = None


class NotebookInterrupt(Exception):
    """Notebook code raised KeyboardInterrupt itself; nobody pressed Ctrl-C."""


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
    global _previous_handler
    if _previous_handler is not None:
        signal.signal(signal.SIGINT, _previous_handler)
        _previous_handler = None


@contextlib.contextmanager
def contained(what: str) -> Iterator[None]:
    """Run one phase of a notebook test; heal what it broke, fail what it must."""
    __tracebackhide__ = True
    streams = sys.stdout, sys.stderr
    try:
        yield
    except KeyboardInterrupt as e:
        if ctrl_c_pressed():
            raise
        raise NotebookInterrupt(
            f"{what}: the notebook's code raised KeyboardInterrupt; "
            "treated as this test's failure (a real Ctrl-C still stops the run)"
        ) from e
    finally:
        sys.stdout, sys.stderr = streams  # a cell that replaced them must not silence the run
