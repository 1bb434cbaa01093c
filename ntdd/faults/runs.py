"""A notebook's tests run in this process through `pytest --ntdd`, quietly, with a fault.

A fault reaches the notebook's runtime through the run's `config.stash`
(`ntdd.runtime.settings.INJECTION`): the runtime calls `apply` once each test has
reached its cell, with that test's view of the namespace. Runs write
nothing: no terminal, no pytest cache, and the process's own stdout and
stderr go to the null device while a run lasts (a cell's `!echo` would
otherwise land in `ntdd faults --json`). Each run starts from a clean state:
the runtime forgets the modules a notebook imported from its folder.

`one_run_per_fault` is the reference way: a clean run, then one run per fault.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path

import pytest

from ntdd.defaults import LoadsPlugin
from ntdd.faults.catalogue import FAULTS, Fault
from ntdd.faults.finding import Namespace, NotApplicable, Seen
from ntdd.faults.results import FaultResult, Injected, Outcomes, judge
from ntdd.runtime.containment import KernelDied
from ntdd.runtime.notebook_runtime import SetupError
from ntdd.runtime.settings import INJECTION, Injection

# Quiet, and the same in every run and every child of a forked run: no
# terminal, no cache, no plugin that reorders tests, and output captured at
# the Python level only (a child must not share pytest's capture files).
# ntdd's own plugin is loaded even where plugins are not autoloaded (LoadsPlugin).
QUIET = (
    "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
    "-o", "addopts=", "-W", "ignore", "--capture=sys",
)  # fmt: skip
_SETUP_CELL = re.compile(r"\((setup cell \d+)(?:, id [^)]*)?\) raised (\w+)")


class Recorder:
    """A pytest plugin that notes each test's outcome, and which ones a setup cell errored."""

    def __init__(self) -> None:
        self.outcomes = Outcomes()

    def pytest_configure(self, config: pytest.Config) -> None:
        """Python's own tracebacks: nobody reads these, and pytest's parse the source of
        every frame (torch's modules are long: a second per failing test)."""
        config.option.tbstyle = "native"  # --tb, which is the terminal plugin's

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = test_name(report.nodeid)
        tests = self.outcomes.tests
        if report.failed:
            tests[name] = "error" if report.when != "call" else "failed"
        elif report.skipped and name not in tests:
            tests[name] = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        elif report.passed and report.when == "call":
            tests[name] = "xpassed" if hasattr(report, "wasxfail") else "passed"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.excinfo is not None and call.excinfo.errisinstance(SetupError):
            self.outcomes.setup_errors[test_name(item.nodeid)] = _setup_cell(call.excinfo.value)
        died = _kernel_death(call.excinfo.value) if call.excinfo is not None else None
        if died is not None and not self.outcomes.died:
            self.outcomes.died = f"{died.call} in {test_name(item.nodeid)}"
        return report


def _kernel_death(error: BaseException | None) -> KernelDied | None:
    """The `os._exit` behind a test's failure (a setup cell's, through SetupError), if any."""
    while error is not None:
        if isinstance(error, KernelDied):
            return error
        error = error.__cause__
    return None


def test_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def _setup_cell(error: BaseException) -> str:
    """`setup cell 3 raised ZeroDivisionError`, from the runtime's message."""
    found = _SETUP_CELL.search(str(error))
    if found is None:
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    return f"{found[1]} raised {found[2]}"


def run_session(
    notebook: Path, args: Sequence[str], *plugins: object, recorder: Recorder | None = None
) -> Outcomes:
    """Run a notebook's tests in this process, quietly; return their outcomes."""
    recorder = recorder or Recorder()
    pid = os.getpid()
    with _quiet():
        code = pytest.main(
            [*QUIET, "--ntdd", *args, str(notebook)], plugins=[LoadsPlugin(), recorder, *plugins]
        )
    if os.getpid() != pid:  # a forked child got here: it must never go on as its parent
        os._exit(70)
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        raise RuntimeError(f"pytest could not run {notebook} (exit {int(code)})")
    return recorder.outcomes


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """sys.stdout and sys.stderr to memory, and file descriptors 1 and 2 to the null device."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


class FaultInjection:
    """Injects one fault as each test reaches its cell, and notes what it changed.

    The fault's own bugs never reach the tests: an exception from it (other
    than NotApplicable) is noted as the run's error, and the fault stops.
    """

    def __init__(self, fault: Fault) -> None:
        self.fault = fault
        self.injected = Injected()
        self._seen: dict[str, Seen] = {}  # per device: what the fault changed already

    def apply(self, namespace: Namespace, device: str) -> None:
        if self.injected.error:
            return
        seen = self._seen.setdefault(device, Seen())
        try:
            changes = self.fault.inject(namespace, seen)
        except NotApplicable as e:
            if not self.injected.applied:
                self.injected.not_applicable = str(e)
            return
        except Exception as e:
            self.injected.error = f"the fault itself raised {type(e).__name__}: {e}"
            return
        self.injected.note(changes)


class FaultPlugin:
    """Hands an injection to the notebooks' runtimes of one pytest run, through its stash."""

    def __init__(self, injection: Injection) -> None:
        self.injection = injection

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[INJECTION] = self.injection


def run_with(notebook: Path, args: Sequence[str], fault: Fault) -> tuple[Outcomes, Injected]:
    """One run of a notebook's tests with *fault* injected."""
    injection = FaultInjection(fault)
    outcomes = run_session(notebook, args, FaultPlugin(injection))
    return outcomes, injection.injected


def one_run_per_fault(
    notebook: Path, names: Sequence[str], args: Sequence[str], baseline: Outcomes | None = None
) -> tuple[Outcomes, list[FaultResult]]:
    """The reference way: a clean run (unless given), then a run per fault, one after another."""
    if baseline is None:
        baseline = run_session(notebook, args)
    results = []
    for name in names:
        outcomes, injected = run_with(notebook, args, FAULTS[name])
        results.append(judge(name, baseline, outcomes, injected))
    return baseline, results
