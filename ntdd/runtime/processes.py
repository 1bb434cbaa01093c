"""Processes a notebook's cells start end with the notebook, as a kernel's shutdown ends them.

A kernel runs in a process group of its own, and its shutdown ends the
group: a server a cell started with `subprocess.Popen`, or a forked
worker, goes with it. Under ntdd the cells run in pytest's process, so
what they start would outlive the run. While a notebook's code runs
(`started_by`), an audit hook notes the first spawn (`subprocess.Popen`,
`os.fork`, `os.posix_spawn`, `os.system`…), and the children the process
has just then are set apart; the children that are new when the code is
done were started by it. When the notebook's last test has run, those
still running, and the processes they started, are ended (`end`): asked
with SIGTERM, then killed after `GRACE` seconds, and their exit status
collected by the objects that own them (a `Popen`, a multiprocessing
worker), so that these know they ended.

Children are read from Linux's `/proc/self/task/*/children`; elsewhere
nothing is tracked, and a notebook's processes end as they would after a
script.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

GRACE = 2.0  # seconds between SIGTERM and SIGKILL

# The audit events that start a process (Python's audit events table).
_SPAWNS = frozenset(
    {
        "subprocess.Popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.system",
        "os.exec",
        "pty.spawn",
    }
)
_TASKS = Path("/proc/self/task")


class _Window:
    """One run of a notebook's code: the children there were at its first spawn."""

    def __init__(self) -> None:
        self.before: frozenset[int] | None = None


class _Watch:
    """The audit hook, installed once per process, and the windows open now."""

    def __init__(self) -> None:
        self.windows: list[_Window] = []
        self.installed = False

    def hook(self, event: str, args: Any) -> None:
        if event in _SPAWNS and self.windows:
            for window in self.windows:
                if window.before is None:
                    window.before = children()

    def install(self) -> None:
        if not self.installed:
            sys.addaudithook(self.hook)  # audit hooks cannot be removed: one, for good
            self.installed = True


_watch = _Watch()


@contextlib.contextmanager
def started_by(found: set[int]) -> Iterator[None]:
    """Add to *found* the children of this process that the code run inside starts."""
    if not _TASKS.is_dir():
        yield
        return
    _watch.install()
    window = _Window()
    _watch.windows.append(window)
    try:
        yield
    finally:
        _watch.windows.remove(window)
        if window.before is not None:
            found |= children() - window.before


def children(pid: int | str = "self") -> frozenset[int]:
    """The processes *pid*'s threads started that are still its children."""
    found: set[int] = set()
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                found |= {int(p) for p in (task / "children").read_text().split()}
    return frozenset(found)


def end(started: set[int], say: Callable[[int, str], None]) -> None:
    """End the processes in *started* still running, and those they started; *say* names
    each one ended (its pid and command line). *started* is emptied."""
    mine = sorted(started & children())  # those still ours: a pid reused is not
    started.clear()
    family = [p for pid in mine for p in _with_descendants(pid)]
    if not family:
        return
    for pid in mine:
        say(pid, _command_line(pid))
    _signal(family, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while any(_running(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.02)
    survivors = [p for p in family if _running(p)]
    _signal(survivors, signal.SIGKILL)
    while any(_running(p) for p in survivors):
        time.sleep(0.01)
    _reap(set(mine))


def _reap(ended: set[int]) -> None:
    """Collect the exit status of *ended*, through the objects that own them where there
    are some (a `subprocess.Popen`, multiprocessing's workers), so that they know it
    (no "still running" warning, `is_alive()` false); the rest directly: no zombie stays."""
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None:
        multiprocessing.active_children()  # polls each worker, which reaps the ended
    for owner in gc.get_objects():
        if isinstance(owner, subprocess.Popen) and owner.pid in ended:
            owner.poll()
    for pid in ended:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _with_descendants(pid: int) -> list[int]:
    """*pid* and every process under it, parents first."""
    found = [pid]
    for child in children(pid):
        found += _with_descendants(child)
    return found


def _signal(pids: list[int], number: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


def _running(pid: int) -> bool:
    """Whether *pid* runs (a zombie does not: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(os.fsdecode(a) for a in raw.split(b"\0") if a)[:120] or "?"
