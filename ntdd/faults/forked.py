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

- Every run, the clean one and its children, runs torch on one thread
  (`children.same_threads`): no verdict depends on the thread count, and
  OpenMP's thread pool, which does not survive a fork, is never started.
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
import sys
from collections.abc import Generator, Sequence
from pathlib import Path

import pytest

from ntdd.defaults import DEFAULT_TIMEOUT
from ntdd.faults.catalogue import FAULTS
from ntdd.faults.children import (
    fork,
    import_torch_for,
    read_child,
    same_threads,
    silence,
    warm_up,
)
from ntdd.faults.finding import Namespace
from ntdd.faults.results import FaultResult, Injected, Outcomes, as_dict, judge
from ntdd.faults.runs import (
    FaultInjection,
    Recorder,
    one_run_per_fault,
    run_session,
)
from ntdd.runtime.settings import INJECTION, settings_of

GRACE = 30.0  # seconds past a test's timeout before a silent child is killed


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
    import_torch_for(notebook)
    with same_threads():
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

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        """A test's own code runs: in a child, its fault leaves what it makes alone."""
        if self._child is None:
            return (yield)
        with self._child.injection.testing():
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
        warm_up()
        gc.freeze()  # a child's collections skip the parent's objects: fewer pages copied
        try:
            for name in self.names:
                read, write = os.pipe()
                try:
                    pid = fork()
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
        silence()
        self._child = _Child(FaultInjection(FAULTS[name], self.notebook), pipe)
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


def _collect(pid: int, pipe: int, limit: float) -> tuple[Outcomes, Injected]:
    """Wait for a child's results; a child that dies or falls silent is its fault's error."""
    end = read_child(pid, pipe, done=lambda data: data.endswith(b"}\n"), silent_limit=limit)
    if end.status is None:
        return Outcomes(), Injected(error=f"its run said nothing for {limit:g} s; killed")
    last = end.last_line
    if os.WIFEXITED(end.status) and os.WEXITSTATUS(end.status) == 0 and last.startswith(b"{"):
        found = json.loads(last)
        return Outcomes(**found["outcomes"]), Injected(**found["injected"])
    return Outcomes(), Injected(error=f"its run {end.how} before its tests finished")
