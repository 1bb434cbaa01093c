"""`ntdd faults`' runs forked from one pytest run, before the notebook's first cell.

Start-up (Python, pytest, collection, `import torch`) happens once. The
pytest run of `forked_runs` makes no run itself: as its test loop starts,
before any cell ran, it asks `trials.run_trials` which runs to make, and forks
a child for each, one after another: the clean notebook or a fault, under a
seed and a thread count. A child sets its seed and threads, patches torch for
its fault (`runs.SeededRun`), and goes on with the session's test loop, as a
run with that fault would; it reports its outcomes over a pipe and ends with
`os._exit`, so that nothing of the parent's (its terminal, files, `atexit`
handlers) runs in it.

Up to the fork no cell ran: a forked run is the run a pytest run of its own
would make (`one_after_another`; `tests/test_faults_fork.py` holds them equal).

- The parent keeps torch on one thread (`children.same_threads`): OpenMP's
  thread pool does not survive a fork, and a child at two threads starts
  one of its own.
- A child that dies (a crash) or says nothing for longer than a test's
  timeout plus `GRACE` is an error for its fault, not a catch: its tests
  said nothing. (`os._exit` in a cell fails its test, in a child as in the
  clean run: see `ntdd.runtime.containment`.)
- Where forking is not safe (no `os.fork`, macOS, CUDA in use: CUDA does
  not survive a fork), every run is a pytest run of its own
  (`runs.one_after_another`).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import subprocess
import sys
from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

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
from ntdd.faults.results import Injected, Outcomes, as_dict
from ntdd.faults.rule import KillRule
from ntdd.faults.runs import (
    FaultInjection,
    Recorder,
    SeededRun,
    one_after_another,
    run_session,
)
from ntdd.faults.trials import RunOne, Trial, run_trials
from ntdd.runtime.settings import INJECTION, settings_of

T = TypeVar("T")
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
    notebook: Path,
    names: Sequence[str],
    args: Sequence[str],
    rule: KillRule,
    seed: int = 0,
    threads: int = 1,
) -> tuple[Trial, str]:
    """The notebook's runs and verdicts, and how the runs were made."""

    def schedule(run: RunOne) -> Trial:
        batch = functools.partial(threads_apart, notebook, args)
        return run_trials(names, run, rule, seed, threads, batch)

    trial = serve_forks(notebook, args, schedule)
    if trial is None:  # forking was not safe, or no run happened in this session
        return one_after_another(notebook, names, args, rule, seed, threads), "process"
    return trial, "fork"


def serve_forks(notebook: Path, args: Sequence[str], schedule: Callable[[RunOne], T]) -> T | None:
    """What *schedule* makes of the runs it asks for, each forked from one pytest run of
    *notebook*; None where forking is not safe."""
    plan: ForkedFaults[T] = ForkedFaults(schedule, notebook)
    import_torch_for(notebook)
    with same_threads() as pin:
        plan.pin = pin
        run_session(notebook, args, plan, _Server(plan), recorder=plan.recorder)
    return plan.result


def threads_apart(
    notebook: Path, args: Sequence[str], variants: Sequence[str | None], seed: int, threads: int
) -> list[tuple[Outcomes, Injected]]:
    """One run of each of *variants* at *threads*, in a new process that forks them.

    A child forked from a process whose OpenMP pool has ever run (an
    earlier op at torch's default thread count: a pytest session that ran
    other tests, a notebook's process) hangs at its first parallel region
    with more than one thread: the pool's threads did not survive the fork.
    A new Python process has started no pool: its children may start one."""
    request: dict[str, object] = {"notebook": str(notebook), "args": list(args)}
    request |= {"variants": list(variants), "seed": seed, "threads": threads}
    done = subprocess.run(
        [sys.executable, "-m", "ntdd.faults.threads", json.dumps(request)],
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},  # the parent's own pool: none
    )
    lines = done.stdout.strip().splitlines()
    found = json.loads(lines[-1]) if lines and lines[-1].startswith("[") else None
    if done.returncode != 0 or found is None:
        why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        error = Injected(error=f"its runs at {threads} threads failed: {why}")
        return [(Outcomes(), error) for _ in variants]
    return [(Outcomes(**o), Injected(**i)) for o, i in found]


class ForkedFaults(Generic[T]):
    """A pytest run that serves forks: the parent makes no run itself, each child makes one.

    In the parent, `_Server` forks a child for each run the schedule asks for,
    from before the notebook's first cell, and waits for it. In a child, this
    plugin is the runtime's injection, through the child's `SeededRun`.
    """

    def __init__(self, schedule: Callable[[RunOne], T], notebook: Path | None = None) -> None:
        self.schedule = schedule
        self.notebook = notebook
        self.recorder = Recorder()
        self.result: T | None = None  # the parent's, once every run is done
        self.declined = ""  # why the runs were not forked
        self.limit = DEFAULT_TIMEOUT + GRACE
        self.pin: Callable[[int], None] = lambda _count: None
        self._child: _Child | None = None  # in a child: its run, and the pipe home

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[INJECTION] = self
        self.limit = (settings_of(config).timeout or DEFAULT_TIMEOUT) + GRACE

    def cell_ran(self, namespace: Namespace, device: str) -> None:
        """A setup cell ran: in a child, its fault acts on what the cell made."""
        if self._child is not None:
            self._child.run.cell_ran(namespace, device)

    def apply(self, namespace: Namespace, device: str) -> None:
        """A test reached its cell: in a child, its fault acts there too."""
        if self._child is not None:
            self._child.run.apply(namespace, device)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        """A test's own code runs: in a child, its fault leaves what it makes alone."""
        if self._child is None:
            return (yield)
        with self._child.run.testing():
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

    @property
    def in_child(self) -> bool:
        return self._child is not None

    def serve(self, config: pytest.Config) -> bool:
        """In the parent: every run in a child of its own; False where forking is not safe.
        A child returns from here too, and goes on with the session as its run."""
        self.declined = fork_unsafe()
        if self.declined:
            return False
        if self.notebook is not None:
            import_torch_for(self.notebook)
        warm_up()
        gc.freeze()  # a child's collections skip the parent's objects: fewer pages copied
        try:
            self.result = self.schedule(functools.partial(self._fork, config))
        except _BecameChild:
            return True
        except _ForkFailed as e:
            self.declined = str(e)
            return False
        finally:
            if self._child is None:
                gc.unfreeze()
        return True

    def _fork(
        self, config: pytest.Config, variant: str | None, seed: int, threads: int
    ) -> tuple[Outcomes, Injected]:
        read, write = os.pipe()
        try:
            pid = fork()
        except OSError as e:  # out of processes or memory: the slow way, for all
            os.close(read)
            os.close(write)
            raise _ForkFailed(f"os.fork failed: {e}") from e
        if pid == 0:
            os.close(read)
            self._become(config, variant, seed, threads, write)
            raise _BecameChild
        os.close(write)
        return _collect(pid, read, self.limit)

    def _become(
        self, config: pytest.Config, variant: str | None, seed: int, threads: int, pipe: int
    ) -> None:
        """This process is now the run of *variant* under *seed*, from before the notebook's
        first cell."""
        silence()
        injection = FaultInjection(FAULTS[variant], self.notebook) if variant else None
        run = SeededRun(seed, threads, injection, self.pin)
        self._child = _Child(run, pipe)
        run.start(config)  # its fault's patches for good: the child ends with its run


class _Server:
    """The parent's runtest loop: it serves the forks, and runs no test itself."""

    def __init__(self, plan: ForkedFaults[Any]) -> None:
        self.plan = plan

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        if session.testsfailed or session.config.option.collectonly:
            return None  # pytest's own loop says why nothing runs
        self.plan.serve(session.config)
        if self.plan.in_child:
            return None  # pytest's loop runs the child's tests
        return True  # the parent runs none: its children made every run, or, where forking
        # is not safe, pytest runs of their own will (`one_after_another`)


class _BecameChild(Exception):
    """Unwinds a new child from the trial's schedule back to its runtest loop."""


class _ForkFailed(Exception):
    pass


class _Child:
    """A forked run's end of the pipe: heartbeats while tests run, then its results."""

    def __init__(self, run: SeededRun, pipe: int) -> None:
        self.run = run
        self.pipe = pipe

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(self.pipe, data) :]

    def finish(self, outcomes: Outcomes) -> None:
        try:
            injected = self.run.finish(outcomes)
            results = {"outcomes": as_dict(outcomes), "injected": as_dict(injected)}
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
