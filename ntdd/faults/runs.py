"""A notebook's tests run in this process through `pytest --ntdd`, quietly, with a fault.

A fault reaches the notebook's runtime through the run's `config.stash`
(`ntdd.runtime.settings.INJECTION`): the runtime calls `cell_ran` after each
setup cell and `apply` once each test has reached its cell, with that view of
the namespace; a fault that acts where torch makes objects patches torch for
the whole run (`FaultInjection.hooked`). Runs write
nothing: no terminal, no pytest cache, and the process's own stdout and
stderr go to the null device while a run lasts (a cell's `!echo` would
otherwise land in `ntdd faults --json`). Each run starts from a clean state:
the runtime forgets the modules a notebook imported from its folder.

Each run starts from its seed and runs at its thread count (`SeededRun`);
`one_after_another` is the reference way: every run a pytest run of its own.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from pathlib import Path

import pytest

from ntdd.defaults import LoadsPlugin
from ntdd.errors import KernelDied, NtddTimeout, SetupError
from ntdd.faults import creation
from ntdd.faults.catalogue import FAULTS, Fault
from ntdd.faults.children import import_torch_for, same_threads
from ntdd.faults.finding import Namespace, NotApplicable, Seen, handmade_models, torch_of
from ntdd.faults.results import NO_TORCH, TIMED_OUT, Injected, Outcomes
from ntdd.faults.rule import KillRule
from ntdd.faults.seeds import SeedWatch, seeded
from ntdd.faults.trials import Trial, run_trials
from ntdd.faults.uses import DataUses, handed_names
from ntdd.notebook.files import path_argument
from ntdd.runtime.isolation import BASELINE
from ntdd.runtime.settings import INJECTION

# Quiet, and the same in every run and every child of a forked run: no
# terminal, no cache, no plugin that reorders tests, and output captured at
# the Python level only (a child must not share pytest's capture files), and no
# faulthandler timer: its thread does not survive a fork, and a child that
# cancels it waits for that thread for ever (a project's `faulthandler_timeout`).
# ntdd's own plugin is loaded even where plugins are not autoloaded (LoadsPlugin).
QUIET = (
    "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
    "-p", "no:faulthandler", "-o", "addopts=", "-W", "ignore", "--capture=sys",
)  # fmt: skip


class Recorder:
    """A pytest plugin that notes each test's outcome, and which ones a setup cell errored."""

    def __init__(self) -> None:
        self.outcomes = Outcomes()
        self._timed_out: set[str] = set()

    def pytest_configure(self, config: pytest.Config) -> None:
        """Python's own tracebacks: nobody reads these, and pytest's parse the source of
        every frame (torch's modules are long: a second per failing test)."""
        config.option.tbstyle = "native"  # --tb, which is the terminal plugin's

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = test_name(report.nodeid)
        tests = self.outcomes.tests
        if report.failed and name in self._timed_out:
            tests[name] = TIMED_OUT  # timing decides no verdict
        elif report.failed:
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
        if call.excinfo is not None and _caused_by(call.excinfo.value, NtddTimeout):
            self._timed_out.add(test_name(item.nodeid))
        error = call.excinfo.value if call.excinfo is not None else None
        if isinstance(error, SetupError):
            self.outcomes.setup_errors[test_name(item.nodeid)] = _setup_cell(error)
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


def _caused_by(error: BaseException | None, kind: type[BaseException]) -> bool:
    """*error*, or an error it was raised from (a setup cell's, through SetupError), is *kind*."""
    while error is not None:
        if isinstance(error, kind) or (
            isinstance(error, SetupError) and error.raised and issubclass(error.raised, kind)
        ):
            return True
        error = error.__cause__ or error.__context__
    return False


def test_name(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1]


def _setup_cell(error: SetupError) -> str:
    """`setup cell 3 raised ZeroDivisionError`: the cell and the class it raised."""
    raised = error.raised.__name__ if error.raised is not None else "an error"
    return f"setup cell {error.index} raised {raised}"


def run_session(
    notebook: Path, args: Sequence[str], *plugins: object, recorder: Recorder | None = None
) -> Outcomes:
    """Run a notebook's tests in this process, quietly; return their outcomes."""
    recorder = recorder or Recorder()
    pid = os.getpid()
    with _quiet():
        code = pytest.main(
            [*QUIET, "--ntdd", *args, path_argument(notebook)],
            plugins=[LoadsPlugin(), recorder, *plugins],
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
    """Injects one fault where it acts (see `ntdd.faults.catalogue`), and notes what it changed.

    `hooked` patches torch for the run (its creation patches, and a data
    fault's watch on the data's uses); the runtime calls `cell_ran` after each
    setup cell and `apply` as each test reaches its cell, and `testing` says
    when a test's own code runs. The fault's own bugs never reach the tests:
    an exception from it (other than NotApplicable) is noted as the run's
    error, and the fault stops.
    """

    def __init__(self, fault: Fault, notebook: Path | None = None) -> None:
        self.fault = fault
        self.notebook = notebook  # its cells say which names it hands to calls
        self._injected = Injected()
        self._seen = Seen()  # what the fault changed already, on every device
        self._made = creation.Made(self._seen)
        self._data: DataUses | None = None
        self._hooked = False
        self._undo: list[creation.Undo] = []  # the patches' undoing
        self._uses_torch = False  # some namespace it saw uses torch

    @contextlib.contextmanager
    def hooked(self) -> Iterator[None]:
        """The run with the fault: torch patched where the fault acts, and put back after."""
        self.hook()
        with creation.patched(self._undo):  # the patches `hook` makes later too
            yield

    def hook(self) -> None:
        """Patch torch for this fault, once torch is imported (before the first cell, or
        after the cell that imported it where nothing imported it before)."""
        torch = sys.modules.get("torch")
        if self._hooked or not hasattr(torch, "optim"):
            return
        self._hooked = True
        try:
            if self.fault.creation is not None:
                self._undo += self.fault.creation(torch, self._made)
            if self.fault.data is not None:
                handed = handed_names(_test_cells(self.notebook))
                self._data = DataUses(torch, self._made, self.fault.data, handed)
                self._undo += self._data.patches()
        except Exception as e:
            self._injected.error = f"the fault itself raised {type(e).__name__}: {e}"

    @contextlib.contextmanager
    def testing(self) -> Iterator[None]:
        """A test's own code runs: what it makes, calls or uses is the test's."""
        self._made.testing = True
        try:
            yield
        finally:
            self._made.testing = False

    @property
    def injected(self) -> Injected:
        """What the fault did in the run, the objects no name held included."""
        done = Injected(list(self._injected.applied), self._injected.not_applicable)
        done.error = self._injected.error
        if self._data is not None:
            done.note(self._data.applied)
            done.error = done.error or self._data.error
        unnamed = self._made.unnamed()
        if unnamed:
            done.note(unnamed)
        if not done.applied and not done.error:
            done.not_applicable = self._nothing_made()
        return done

    def cell_ran(self, namespace: Namespace, device: str) -> None:
        self.hook()  # where a cell imported torch only now (through a module of its own)
        if self._data is not None:
            self._data.cell_ran(namespace)
        self._remember_trainable(namespace)
        self._inject(namespace)
        self._name(namespace)

    def apply(self, namespace: Namespace, device: str) -> None:
        if self._data is not None and not self._injected.error:
            try:
                self._data.test_reached(namespace)
            except Exception as e:
                self._injected.error = f"the fault itself raised {type(e).__name__}: {e}"
        self._name(namespace)

    def _remember_trainable(self, namespace: Namespace) -> None:
        if not self._hooked or self.fault.name not in ("lr0", "stale_grad"):
            return
        with contextlib.suppress(NotApplicable):
            for _, tensors in handmade_models(namespace, Seen()):
                self._made.remember_trainable(tensors)

    def _inject(self, namespace: Namespace) -> bool:
        """Apply the fault to *namespace*'s hand-written models; whether it changed something."""
        if self._injected.error or self.fault.inject is None:
            return False
        try:
            changes = self.fault.inject(namespace, self._seen)
        except NotApplicable:
            return False
        except Exception as e:
            self._injected.error = f"the fault itself raised {type(e).__name__}: {e}"
            return False
        self._injected.note(changes)
        return bool(changes)

    def _name(self, namespace: Namespace) -> None:
        """What the creation hooks changed, under the names the notebook gave it."""
        torch = sys.modules.get("torch")
        if not self._uses_torch:
            with contextlib.suppress(NotApplicable):
                self._uses_torch = torch_of(namespace) is not None
        if self._hooked and torch is not None:
            named = self._made.named(namespace, torch.nn.Module)
            if named:
                self._injected.note(named)

    def _nothing_made(self) -> str:
        if not self._hooked or not self._uses_torch:
            return NO_TORCH
        if self.fault.data is not None:
            return self.fault.data.missing
        if self.fault.missing:
            return self.fault.missing
        wanted = self.fault.applies_to.removeprefix("an ").removeprefix("a ")
        return f"no {wanted} was made"


def _test_cells(notebook: Path | None) -> list[str]:
    """The notebook's test cells as Python, for what they hand to calls; none if unreadable."""
    from ntdd.cells.cell_code import CellSyntaxError, to_python
    from ntdd.errors import NtddError
    from ntdd.notebook.markers import is_test_cell
    from ntdd.notebook.read import read_notebook

    if notebook is None:
        return []
    try:
        cells = read_notebook(notebook).cells
    except NtddError:
        return []
    found = []
    for cell in cells:
        if is_test_cell(cell):
            with contextlib.suppress(CellSyntaxError):
                found.append(to_python(cell.source).code)
    return found


class SeededRun:
    """One run of `ntdd faults`: from its seed, at its thread count, with its fault if any.

    It is the runtime's injection (`config.stash`): it hands the setup cells and
    the tests to its fault, and after each of them lets its `SeedWatch` look at
    the generators. `start` makes the run's starting state, before the
    notebook's first cell; `finish` notes in the outcomes whether the seed
    reached the notebook.
    """

    def __init__(
        self,
        seed: int,
        threads: int,
        injection: FaultInjection | None,
        pin: Callable[[int], None],
    ) -> None:
        self.seed = seed
        self.threads = threads
        self.injection = injection
        self.watch = SeedWatch(seed)
        self._pin = pin
        self._watching: contextlib.ExitStack | None = None

    def start(self, config: pytest.Config) -> None:
        config.stash[BASELINE] = seeded(config.stash[BASELINE], self.seed)
        self._pin(self.threads)
        self._watching = contextlib.ExitStack()
        self._watching.enter_context(self.watch.watching())
        if self.injection is not None:
            self.injection.hook()

    def cell_ran(self, namespace: Namespace, device: str) -> None:
        if self.injection is not None:
            self.injection.cell_ran(namespace, device)
        self.watch.check()

    def apply(self, namespace: Namespace, device: str) -> None:
        if self.injection is not None:
            self.injection.apply(namespace, device)
        self.watch.check()

    @contextlib.contextmanager
    def testing(self) -> Iterator[None]:
        """A test's own code runs; what it draws counts too."""
        try:
            if self.injection is None:
                yield
            else:
                with self.injection.testing():
                    yield
        finally:
            self.watch.check()

    def finish(self, outcomes: Outcomes) -> Injected:
        """Note the seed's reach in *outcomes*; what the fault did."""
        if self._watching is not None:
            self._watching.close()
        outcomes.own_seeds = list(self.watch.own)
        outcomes.unseeded = dict(self.watch.drawn)
        return self.injection.injected if self.injection is not None else Injected()


class SeededPlugin:
    """Makes a pytest run the `SeededRun` it holds, from before its first test."""

    def __init__(self, run: SeededRun) -> None:
        self.run = run

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[INJECTION] = self.run

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        self.run.start(session.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self.run.testing():
            return (yield)


def one_after_another(
    notebook: Path,
    names: Sequence[str],
    args: Sequence[str],
    rule: KillRule,
    seed: int = 0,
    threads: int = 1,
) -> Trial:
    """The reference way: every run a pytest run of its own, one after another."""
    import_torch_for(notebook)
    with same_threads(threads) as pin:

        def run(variant: str | None, seed: int, threads: int) -> tuple[Outcomes, Injected]:
            injection = FaultInjection(FAULTS[variant], notebook) if variant else None
            return run_seeded(notebook, args, SeededRun(seed, threads, injection, pin))

        return run_trials(names, run, rule, seed, threads)


def run_seeded(notebook: Path, args: Sequence[str], run: SeededRun) -> tuple[Outcomes, Injected]:
    """One pytest run of *notebook* as *run* says: its seed, its threads, its fault if any
    (the oracle runs notebooks with a bug written in this way, with none)."""
    injection = run.injection
    outcomes = Outcomes()
    try:
        with injection.hooked() if injection is not None else contextlib.nullcontext():
            outcomes = run_session(notebook, args, SeededPlugin(run))
    finally:
        injected = run.finish(outcomes)  # the seeding calls put back, whatever happened
    return outcomes, injected
