"""Fault runs forked from one clean run, before its first cell: start-up runs once.

The clean run of a notebook carries this plugin as its injection. When the
first test's setup phase begins, before the notebook's first cell ran (and
with torch imported when the notebook imports it), the process forks one
child per fault, one after another. A child patches torch for its fault
(where the fault acts at creation) and runs the session, as a run with that
fault would; it reports its outcomes over a pipe and ends with `os._exit`,
so that nothing of the parent's (its terminal, files, `atexit` handlers)
runs in it. The parent waits for each child, then goes on as the clean run.

Up to the fork, a run with a fault is the clean run: no cell ran yet. So the
results are the ones the one-run-per-fault way gives
(`tests/test_faults_fork.py` holds them equal).

- A child runs torch on one thread: OpenMP's thread pool does not survive a
  fork, and a child that used the parent's would wait for it forever.
- A child that dies (a crash) or says nothing for longer than a test's
  timeout plus `GRACE` is an error for its fault, not a catch: its tests
  said nothing. (`os._exit` in a cell fails its test, in a child as in the
  clean run: see `ntdd.runtime.containment`.)
- Where forking is not safe (no `os.fork`, macOS, CUDA in use: CUDA does
  not survive a fork), the clean run goes on without forking, and the
  faults run one after another (`runs.one_run_per_fault`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import sys
import time
import warnings
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from ntdd.defaults import DEFAULT_TIMEOUT
from ntdd.faults.catalogue import FAULTS
from ntdd.faults.finding import Namespace
from ntdd.faults.results import FaultResult, Injected, Outcomes, as_dict, judge
from ntdd.faults.runs import (
    FaultInjection,
    Recorder,
    import_torch_for,
    one_run_per_fault,
    run_session,
)
from ntdd.runtime.settings import INJECTION, settings_of

GRACE = 30.0  # seconds past a test's timeout before a silent child is killed
_POLL = 0.5  # seconds between looks at a child that says nothing


def fork_unsafe() -> str:
    """Why this process cannot fork its fault runs, or "" when it can."""
    if not hasattr(os, "fork"):
        return "this platform has no os.fork"
    if sys.platform == "darwin":
        return "forking is not safe on macOS once system frameworks are loaded"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available():
        return "CUDA is available, and CUDA does not survive a fork"
    return ""


def forked_runs(
    notebook: Path, names: Sequence[str], args: Sequence[str]
) -> tuple[Outcomes, list[FaultResult], str]:
    """The clean run's outcomes, each fault's result, and how the fault runs were made."""
    plan = ForkedFaults(names, notebook)
    baseline = run_session(notebook, args, plan, recorder=plan.recorder)
    if plan.declined:
        _, results = one_run_per_fault(notebook, names, args, baseline)
        return baseline, results, "process"
    empty = (Outcomes(), Injected())
    results = [judge(name, baseline, *plan.found.get(name, empty)) for name in names]
    return baseline, results, "fork"


class ForkedFaults:
    """The clean run's injection, and the plugin that forks a child per fault."""

    def __init__(self, names: Sequence[str], notebook: Path | None = None) -> None:
        self.names = list(names)
        self.notebook = notebook
        self.recorder = Recorder()
        self.found: dict[str, tuple[Outcomes, Injected]] = {}  # from the children
        self.declined = ""  # why the faults were not forked
        self.limit = DEFAULT_TIMEOUT + GRACE
        self._forked = False
        self._child: _Child | None = None  # in a child: its fault, and the pipe home

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[INJECTION] = self
        self.limit = (settings_of(config).timeout or DEFAULT_TIMEOUT) + GRACE

    def cell_ran(self, namespace: Namespace, device: str) -> None:
        """A setup cell ran: in a child, its fault acts on what the cell made."""
        if self._child is not None:
            self._child.injection.cell_ran(namespace, device)

    def apply(self, namespace: Namespace, device: str) -> None:
        """A test reached its cell: in a child, its fault acts there too."""
        if self._child is not None:
            self._child.injection.apply(namespace, device)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        """Fork before the first setup phase, outside its timeout (the parent's clock must
        not run while its children do), and before any cell made an object."""
        if not self._forked:
            self._fork_children()
        return (yield)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._child is not None:
            self._child.send(b"\n")  # alive: the parent's clock starts again

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        try:
            return (yield)
        finally:
            if self._child is not None:
                self._child.finish(self.recorder.outcomes)  # never returns

    def _fork_children(self) -> None:
        self._forked = True
        self.declined = fork_unsafe()
        if self.declined:
            return
        if self.notebook is not None:
            import_torch_for(self.notebook)
        _warm_up()
        gc.freeze()  # a child's collections skip the parent's objects: fewer pages copied
        try:
            for name in self.names:
                read, write = os.pipe()
                try:
                    pid = _fork()
                except OSError as e:  # out of processes or memory: the slow way, for all
                    os.close(read)
                    os.close(write)
                    self.declined = f"os.fork failed: {e}"
                    return
                if pid == 0:
                    os.close(read)
                    self._become(name, write)
                    return  # the child goes on with the session, with its fault
                os.close(write)
                self.found[name] = _collect(pid, read, self.limit)
        finally:
            if self._child is None:
                gc.unfreeze()

    def _become(self, name: str, pipe: int) -> None:
        """This process is now the run with fault *name*, from before the notebook's first cell."""
        _silence()
        _one_thread()
        self._child = _Child(FaultInjection(FAULTS[name]), pipe)
        self._child.injection.hook()  # for good: the child ends with its run


class _Child:
    """A forked run's end of the pipe: heartbeats while tests run, then its results."""

    def __init__(self, injection: FaultInjection, pipe: int) -> None:
        self.injection = injection
        self.pipe = pipe

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self.pipe, data) :]

    def finish(self, outcomes: Outcomes) -> None:
        try:
            results = {"outcomes": as_dict(outcomes), "injected": as_dict(self.injection.injected)}
            self.send(json.dumps(results).encode() + b"\n")
        finally:
            os._exit(0)


def _fork() -> int:
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    with warnings.catch_warnings():  # 3.12 warns when threads exist: see _one_thread, and the
        # watchdog of ntdd.runtime.timeout, which starts afresh in a child
        warnings.simplefilter("ignore", DeprecationWarning)
        return os.fork()


def _warm_up() -> None:
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


def _silence() -> None:
    """A child never writes to the terminal: file descriptors 1 and 2 go to the null device."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)


def _one_thread() -> None:
    """torch on one thread for good: the parent's OpenMP pool is gone in a child."""
    torch: Any = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "set_num_threads"):
        return
    torch.set_num_threads(1)
    torch.set_num_threads = _keep_one_thread


def _keep_one_thread(count: int) -> None:
    """`torch.set_num_threads` in a forked child: more threads would wait on the dead pool."""


def _collect(pid: int, pipe: int, limit: float) -> tuple[Outcomes, Injected]:
    """Wait for a child's results; a child that dies or falls silent is its fault's error."""
    data = bytearray()
    silent_since = time.monotonic()
    status: int | None = None
    try:
        while not data.endswith(b"}\n"):
            if time.monotonic() - silent_since > limit:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return Outcomes(), Injected(error=f"its run said nothing for {limit:g} s; killed")
            if select.select([pipe], [], [], _POLL)[0]:
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
    return _results(bytes(data), status)


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


def _results(data: bytes, status: int) -> tuple[Outcomes, Injected]:
    last = data.strip().rsplit(b"\n", 1)[-1]
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and last.startswith(b"{"):
        found = json.loads(last)
        return Outcomes(**found["outcomes"]), Injected(**found["injected"])
    if os.WIFSIGNALED(status):
        how = f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    return Outcomes(), Injected(error=f"its run {how} before its tests finished")
