"""Forked children and what they send home: the plumbing `forked` and `apart` share.

Both fork a child that runs tests and writes one JSON line to a pipe; the
parent reads until the child is done, closes the pipe or dies, and a child
that falls silent for too long is killed. Where the parent is interrupted,
the child is killed too, so that nothing runs on unseen. Before forking,
both import what every child would import for itself (torch, where the
notebook imports it: `import_torch_for`, `warm_up`).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import re
import select
import signal
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

POLL = 0.5  # seconds between looks at a child that says nothing
_IMPORTS_TORCH = re.compile(r"\b(?:import|from)\s+torch\b")


@dataclass(frozen=True)
class ChildEnd:
    """What a child wrote, and how it ended: its wait status, or None when it was
    killed for saying nothing for too long."""

    data: bytes
    status: int | None

    @property
    def how(self) -> str:
        """How a child that sent no report ended, for its error message."""
        if self.status is not None and os.WIFSIGNALED(self.status):
            return f"was killed by {signal.Signals(os.WTERMSIG(self.status)).name}"
        return f"exited with status {os.WEXITSTATUS(self.status or 0)}"

    @property
    def last_line(self) -> bytes:
        return self.data.strip().rsplit(b"\n", 1)[-1]


def fork() -> int:
    """`os.fork()`, with the parent's buffered output written first (not twice)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    with warnings.catch_warnings():  # 3.12 warns when threads exist: see `forked`, and the
        # watchdog of ntdd.runtime.timeout, which starts afresh in a child
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def import_torch_for(notebook: Path) -> None:
    """Import torch now when the notebook imports it: faults patch it before its first cell."""
    try:
        text = notebook.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    if "torch" not in sys.modules and _IMPORTS_TORCH.search(text):
        with contextlib.suppress(Exception):
            importlib.import_module("torch")


@contextlib.contextmanager
def same_threads(count: int = 1) -> Iterator[Callable[[int], None]]:
    """torch on *count* threads in every run of `ntdd faults`, the clean runs' and each
    fault's, and `torch.set_num_threads` a no-op meanwhile; yields the real setter, for a
    run that is to use another count.

    The order of a multi-threaded sum depends on the thread count, and a chaotic
    training amplifies the difference: the runs a verdict compares use one count.
    One thread is also what the parent of forked children must keep (OpenMP's
    pool does not survive a fork; a child may start a pool of its own). Put
    back when the runs end.
    """
    torch: Any = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "set_num_threads"):
        yield lambda _count: None
        return
    threads, setter = torch.get_num_threads(), torch.set_num_threads
    setter(count)
    torch.set_num_threads = _keep_threads
    try:
        yield setter
    finally:
        torch.set_num_threads = setter
        setter(threads)


def _keep_threads(count: int) -> None:
    """`torch.set_num_threads` while `ntdd faults` runs: every run keeps its count."""


def warm_up() -> None:
    """Import once, in the parent, what each child would import for itself.

    torch's first optimizer step imports some 800 modules (dynamo, sympy): two
    seconds, in every child of a notebook that trains, and the meta device of
    the `device` fault needs many of them too. A step on a throwaway tensor
    with no gradient changes nothing else: no random draw, no global switch.
    """
    torch: Any = sys.modules.get("torch")
    if torch is None or "torch._dynamo" in sys.modules:
        return
    with contextlib.suppress(Exception), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weight = torch.zeros(1, device="cpu", dtype=torch.float32, requires_grad=True)
        torch.optim.SGD([weight], lr=0.1).step()


def silence() -> None:
    """A child never writes to the terminal: file descriptors 1 and 2 go to the null device."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def read_child(
    pid: int,
    pipe: int,
    done: Callable[[bytes], bool] = lambda data: False,
    silent_limit: float = math.inf,
) -> ChildEnd:
    """Read what child *pid* writes to *pipe* until *done* says it is, the pipe closes
    or the child ends; a child silent for *silent_limit* seconds is killed."""
    data = bytearray()
    silent_since = time.monotonic()
    status: int | None = None
    try:
        while not done(bytes(data)):
            if time.monotonic() - silent_since > silent_limit:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return ChildEnd(bytes(data), None)
            if select.select([pipe], [], [], POLL)[0]:
                chunk = os.read(pipe, 1 << 16)
                if not chunk:
                    break
                data += chunk
                silent_since = time.monotonic()
            elif (status := _exited(pid)) is not None:
                data += _drain(pipe)  # what it wrote just before it ended
                break
    except BaseException:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(pipe)
    if status is None:
        status = os.waitpid(pid, 0)[1]
    return ChildEnd(bytes(data), status)


def _drain(pipe: int) -> bytes:
    """What is left in the pipe, without waiting (a grandchild may hold its other end)."""
    data = b""
    while select.select([pipe], [], [], 0)[0]:
        chunk = os.read(pipe, 1 << 16)
        if not chunk:
            break
        data += chunk
    return data


def _exited(pid: int) -> int | None:
    done, status = os.waitpid(pid, os.WNOHANG)
    return status if done else None
