"""What a generated test module runs: the notebook, cell by cell, as a kernel would.

A generated module *is* the notebook's namespace. Each test sees that
namespace as Jupyter's *Run All* leaves it at the test's cell: every code
cell above it has run, in order, and none below. The runtime keeps, for each
device, a cursor at the last cell run:

- a test at or below the cursor advances it, running the cells in between
  (setup cells, and earlier test cells, whose tests run quietly);
- a test above the cursor, or one run twice, replays the notebook from the
  start: it never sees the wrong state.

In pytest's order the cursor only advances, so setup runs once per notebook
and device. Tests that use `device` run in the namespace of their device;
the others run in the namespace of the first available device. Each
namespace starts from the process state the session started with, and the
process is put back when the notebook's last test has run.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import contextlib
import dataclasses
import functools
import inspect
import sys
import threading
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import StaleModuleWarning
from ntdd.format.locate import ModuleLayout, TestRegion
from ntdd.format.stale import stale_reason
from ntdd.notebook.cell_code import DEVICE
from ntdd.notebook.positions import FileLines, line_in_file
from ntdd.runtime import containment, pinning, root_logger, steps
from ntdd.runtime import loop as event_loop
from ntdd.runtime.cell_log import cell_log_of, notebook_traceback, recorded
from ntdd.runtime.containment import ctrl_c_pressed
from ntdd.runtime.isolation import (
    BASELINE,
    Generators,
    NotebookFilters,
    ProcessState,
    change_cwd,
    current_cwd,
    forget,
    modules_mark,
    modules_since,
    own_modules,
    reseeds_per_test,
    set_filters,
)
from ntdd.runtime.notes import NtddWarning
from ntdd.runtime.root_logger import RootLogger
from ntdd.runtime.settings import counts_of, injection_of, settings_of
from ntdd.runtime.shell import ShellFactory, display
from ntdd.runtime.steps import ParametersStep, SetupStep, Step, TestStep

END = sys.maxsize  # the position of a test found in no cell: after every cell
KERNEL_DOC = "Automatically created module for IPython interactive environment"  # a kernel's


class SetupError(Exception):
    """A setup cell raised: the tests below it error, with its traceback."""

    def __init__(self, message: str, index: int = 0, cell_id: str | None = None) -> None:
        super().__init__(message)  # the message alone, as `str(error)` and a pickle read it
        self.index = index  # the cell that raised, for reports that name it
        self.cell_id = cell_id


@dataclass
class DeviceRun:
    """One device's run of the notebook, as one kernel would hold it."""

    device: str
    cursor: float = -1  # position of the last cell run; -1 before the first
    ran: set[str] = field(default_factory=set)  # tests run at the cursor's cell
    failed: tuple[int, BaseException] | None = None  # a setup cell that raised
    names: dict[str, Any] | None = None  # its namespace, while another run's is live
    process: ProcessState | None = None  # its process state, while another run's is live
    own_modules: dict[str, types.ModuleType] = field(default_factory=dict)
    loop: Any = None  # its asyncio event loop, once a cell awaits
    generators: Generators | None = None  # the random generators as its last cell left them
    cells_run: int = 0  # a kernel's execution count
    cwd: str = ""  # its working directory: the notebook's folder, or where a cell went
    filters: NotebookFilters = field(default_factory=NotebookFilters)  # what its cells set
    root_logger: RootLogger = field(default_factory=RootLogger)  # its handlers and level
    last_error: BaseException | None = None  # what a kernel has as `sys.last_value`

    def event_loop(self) -> Any:
        if self.loop is None:
            self.loop = event_loop.new_loop()
        return self.loop


class NotebookRuntime:
    """Runs one notebook's cells in the namespace of its generated module."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        self.namespace = namespace
        self.uses_device = uses_device
        module_file = namespace.get("__file__") or "."
        self.notebook = (Path(module_file).parent / notebook).resolve()
        self.display_path = _relative_to_cwd(self.notebook)  # now: cells change the cwd
        self.filename: str = namespace.get("__ntdd_filename__") or module_file
        # Collected from a notebook (not exported): the file reports point at, and its lines.
        self.source_file = Path(namespace.get("__ntdd_source_file__") or self.notebook)
        self.file_lines: FileLines = namespace.get("__ntdd_file_lines__") or ()
        self._in_file: dict[tuple[str, int], int | None] = {}  # asked per line, under coverage
        if "__ntdd_filename__" not in namespace and module_file != ".":
            _warn_if_stale(Path(module_file), self.notebook, namespace.get("__name__", ""))
        self._base = dict(namespace)  # the module before any cell: a fresh kernel
        self._setup: list[SetupStep] = []
        self._parameters: ParametersStep | None = None
        self._pins: dict[int, frozenset[str]] = {}  # setup cells whose assignments are pinned
        self._unassigned = ""  # why the run's parameters cannot be right, or ""
        self._layout: ModuleLayout | None = None
        self._steps: list[Step] = []
        self._positions: list[float] = []  # the steps' positions, for bisection
        self._pristine: dict[str, Any] = {}  # the module once imported
        self._runs: dict[str, DeviceRun] = {}
        self._active: DeviceRun | None = None
        self._outside: ProcessState | None = None  # the process before the notebook ran
        self._threads: frozenset[threading.Thread] = frozenset()  # those before it ran
        self._modules_mark: tuple[int, str] = (0, "")  # sys.modules when the run went live
        self._compiled: dict[int, types.CodeType] = {}
        self._cell_codes: set[types.CodeType] = set()  # tests whose body is a cell's top level
        self._failures: list[types.TracebackType] = []  # this notebook's, until release
        self._config: pytest.Config | None = None
        self._keeps_generators = False  # a plugin reseeds them between the notebook's cells
        self._running = ""  # the setup cell running now, for messages
        self._testing = ""  # the test cell whose test runs now, for messages
        self._nodeid = ""  # the notebook's, for warnings its setup cells raise
        self._pytest_filters: tuple[Any, ...] = ()  # the warning filters pytest set for a test
        self._future = 0  # the future flags of the cells run so far, as IPython carries them
        self.cell_files: dict[str, tuple[int, str | None]] = {}  # test cells run as code

    def setup(
        self,
        index: int,
        cell_id: str | None,
        code: str,
        assigns_device: bool = False,
        expects_exception: bool = False,
    ) -> None:
        """Register a setup cell; it runs when the first test below it needs it."""
        self._setup.append(SetupStep(index, cell_id, code, assigns_device, expects_exception))

    def parameters(self, index: int, values: dict[str, Any], after: bool = True) -> None:
        """Register test-only parameters, assigned after cell *index* (or before it)."""
        self._parameters = ParametersStep(index, after, values)

    def parameters_note(self, config: pytest.Config) -> str:
        """Which parameters go in where, for `-v`; "" when none do."""
        step = self._parameters_step(config)
        if step is None or not step.values:
            return ""
        where = f"after cell {step.index}" if step.after else f"before cell {step.index}"
        values = ", ".join(f"{name}={value!r}" for name, value in step.values.items())
        pinned = [
            f"pinned against cell {index}'s {', '.join(sorted(names))}"
            for index, names in sorted(self._pins_of(step).items())
        ]
        return f"{self.display_path}: test parameters {values} ({'; '.join([where, *pinned])})"

    @property
    def layout(self) -> ModuleLayout:
        """The module's test cells by line, read once."""
        if self._layout is None:
            self._layout = ModuleLayout.of(self.filename, self.namespace)
        return self._layout

    def fixtures(self) -> tuple[Callable[..., Any], ...]:
        """What the module binds for pytest: `pytest_generate_tests`, the `device`
        fixture, and the fixtures that run the cells (`ntdd.runtime.fixtures`)."""
        from ntdd.runtime.fixtures import module_fixtures

        return module_fixtures(self)

    # -- devices ---------------------------------------------------------

    def parametrize_devices(self, metafunc: pytest.Metafunc) -> None:
        """Tests that use `device` run once per device of `--ntdd-devices`."""
        if DEVICE in metafunc.fixturenames:
            devices = settings_of(metafunc.config).devices
            metafunc.parametrize(DEVICE, devices, indirect=True, scope="module")

    def device(self, request: pytest.FixtureRequest) -> Any:
        """The value a `device` test gets: a `torch.device`, or the name without torch."""
        name = str(request.param)
        reason = device_unavailable(name)
        if reason:
            pytest.skip(f"{name}: {reason}")
        return device_value(name)

    def needs(self, name: str) -> pytest.MarkDecorator:
        """`@cuda` in a marker: skip the test, with the reason, where there is no CUDA."""
        reason = device_unavailable(name)
        return pytest.mark.skipif(bool(reason), reason=f"needs {name}: {reason}")

    def broken(self, index: int, cell_id: str | None, problem: str) -> None:
        """The body of a test cell that cannot run: fail, naming the cell and why."""
        ident = f" (id {cell_id})" if cell_id else ""
        pytest.fail(f"{self.display_path}: cell {index}{ident}: {problem}", pytrace=False)

    # -- one test ----------------------------------------------------------

    def test(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """Around each test: the notebook run up to the test's cell, for its device.

        A generator for the module's autouse fixture (`yield from`), so that
        no context-manager frames stand between a failure and its cell.
        """
        __tracebackhide__ = True
        self._config = request.config
        device = self._device_of(request.node, request.config)
        self._pytest_filters = tuple(warnings.filters)  # what pytest set for this test
        run = self._activate(device, request.config)
        if self._unassigned:
            pytest.fail(f"{self.display_path}: {self._unassigned}", pytrace=False)
        self._nodeid = request.node.nodeid.partition("::")[0]
        run.filters.apply(self._pytest_filters)  # what the cells above set lasts
        try:
            with self._as_main():
                with self.in_its_folder(), self.notebook_code(run):
                    self.resume_generators()
                    try:
                        self._reach(run, self._position_of(request.node), request.node)
                        injection = injection_of(request.config)
                        if injection is not None:
                            injection.apply(self.namespace, device)
                    finally:
                        self.keep_generators()
                self._testing = self._test_cell_name(request.node)
                try:
                    yield
                    run.last_error = getattr(sys, "last_value", None) or run.last_error
                    self._trigger("post_run_cell")
                finally:
                    self._testing = ""
        finally:
            run.filters = NotebookFilters.between(self._pytest_filters, tuple(warnings.filters))

    def calling(self, item: pytest.Item) -> contextlib.AbstractContextManager[None]:
        """Around a test's call: its code is the notebook's, as its cell is in a kernel."""
        run = self._active
        if run is None:
            return contextlib.nullcontext()
        return self.notebook_code(run, keep_pytests="caplog" in getattr(item, "fixturenames", ()))

    def notebook_code(
        self, run: DeviceRun, keep_pytests: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """While the notebook's code runs: its root logger, its event loop running.

        Only for a notebook whose code names them: the others cannot tell,
        and pay nothing (a loop made and closed is 0.3 ms a notebook).
        """
        uses_loop = "asyncio" in self._mentions
        if not (uses_loop or "logging" in self._mentions):
            return contextlib.nullcontext()
        return NotebookCode(run, keep_pytests, uses_loop)

    @functools.cached_property
    def _mentions(self) -> frozenset[str]:
        """Which of asyncio and logging the module's code, its setup cells' included, names."""
        text = "".join(self.layout.lines)
        return frozenset(word for word in ("asyncio", "logging") if word in text)

    @contextlib.contextmanager
    def in_its_folder(self) -> Iterator[None]:
        """The notebook's folder as the cwd while its cells run, and the session's around them.

        A cell's own `os.chdir` holds for the cells below it, as in a kernel;
        pytest, its reports and other plugins' hooks and fixtures run in the
        session's working directory, so that the paths they compute are right.
        """
        run = self._active
        if run is None:
            yield
            return
        outside = current_cwd()
        change_cwd(run.cwd)
        try:
            yield
        finally:
            run.cwd = current_cwd()
            change_cwd(outside)

    def restore_last_error(self) -> None:
        """Just before a test's function runs (pytest has cleared `sys.last_value`):
        the last error a cell raised, as a kernel keeps it in `sys.last_value`."""
        run = self._active
        if run is not None and run.last_error is not None:
            steps.note_last_error(run.last_error)

    def run_cell(self, index: int, cell_id: str | None, code: str) -> None:
        """The body of a test cell that runs as notebook code, not as a function."""
        __tracebackhide__ = True
        from ntdd.runtime.rewrite import compile_rewritten

        filename = self.cell_filename(index, cell_id, "cell")
        self.cell_files[filename] = (index, cell_id)
        steps.remember_lines(code, filename)
        flags = steps.TOP_LEVEL_AWAIT | self._future
        compiled = compile_rewritten(
            code,
            filename,
            self._config,
            flags,
            a_cell=True,
            transform=lambda tree: steps.show_last_value(tree.body, code),  # as a kernel shows it
        )
        self._future |= compiled.co_flags & steps.FUTURE_FLAGS  # for the cells below
        steps.execute(compiled, self.namespace, self._loop)

    def run_coroutine(self, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
        """Run an `async def` test on the notebook's event loop, as a kernel awaits."""
        __tracebackhide__ = True
        event_loop.run_until_complete(self._loop(), function(**arguments))

    def resume_generators(self) -> None:
        """Before the notebook's code runs: the random generators as its last cell left them.

        Between two of its cells, a plugin may have reseeded them (pytest-randomly
        does before each test phase); the notebook's draws go on as in *Run All*.
        """
        run = self._active
        if run is not None and run.generators is not None:
            run.generators.apply()

    def keep_generators(self) -> None:
        """After the notebook's code ran: note where its random generators stand."""
        if self._keeps_generators and self._active is not None:
            self._active.generators = Generators.capture()

    def hold_failure(self, tb: types.TracebackType | None) -> None:
        """A test of this notebook failed (or xfailed): its frames are freed at `release`."""
        if tb is not None:
            self._failures.append(tb)

    def release(self) -> None:
        """The notebook's last test ran: free its state, put the process back.

        A failure's traceback holds the frames of the test and of pytest's call
        in a reference cycle, and with them the tensors the test made; only the
        cyclic collector would free those, and it may not run for many
        notebooks. Clearing the frames' locals frees them now, at no cost; the
        reports, which pytest has already written, keep the locals they show.
        """
        for failure in self._failures:
            _clear_frames(failure)
        self._failures.clear()
        self._leave_threads()
        if self._active is not None:
            self._put_aside(self._active, keep=False)
        for run in self._runs.values():
            forget(run.own_modules)
            event_loop.close(run.loop)
        if self._outside is not None:
            self._outside.apply()
        self.namespace.clear()
        self.namespace.update(self._pristine or self._base)
        self._runs.clear()
        self._active = self._outside = self._config = None

    def _leave_threads(self) -> None:
        """Threads the cells started and left running: a kernel would be shut down now.

        Each is reported and abandoned: pytest would otherwise wait for it at
        exit, after its last line ("1 passed"), for ever.
        """
        if self._outside is None:
            return  # no cell ran (every test skipped before its setup): no thread is the cells'
        for thread in containment.stray_threads(self._threads):
            warnings.warn(
                NtddWarning(
                    f"{self.display_path}: thread {thread.name!r} (started by its cells) is still "
                    "running after the notebook's last test; a kernel would be shut down here, "
                    "so the run does not wait for it at exit"
                ),
                stacklevel=1,
            )
            containment.abandon(thread)

    # -- the cursor ------------------------------------------------------

    def _reach(self, run: DeviceRun, position: int, item: pytest.Item) -> None:
        """Bring *run* to the state a kernel has when it reaches *position*."""
        __tracebackhide__ = True
        if run.failed is not None and run.failed[0] < position:
            raise self._failed_setup(run)
        if position < run.cursor or (position == run.cursor and item.name in run.ran):
            self._restart(run, item)
        # Bisection, not a scan: a scan of every step per test is quadratic in tests.
        first = bisect.bisect_right(self._positions, run.cursor)
        last = bisect.bisect_right(self._positions, position)
        for step in self._steps[first:last]:
            run.cursor, run.ran = step.position, set()
            if isinstance(step, ParametersStep):
                step.assign(self.namespace)
                continue
            run.cells_run += 1
            self._trigger("pre_run_cell", step.code if isinstance(step, SetupStep) else "")
            if isinstance(step, SetupStep):
                try:
                    self._run_setup(run, step)
                finally:  # a cell that raised made objects too: the report names them
                    self._injected_after_cell(run, item.config)
            else:
                self._run_test_cell(run, step, quietly=step.position < position)
            if step.position < position:
                self._trigger("post_run_cell")
        run.ran.add(item.name)

    def _injected_after_cell(self, run: DeviceRun, config: pytest.Config) -> None:
        """A setup cell ran: an injected fault acts on what it made, as a bug in it would."""
        injection = injection_of(config)
        if injection is not None:
            injection.cell_ran(self.namespace, run.device)

    def _trigger(self, event: str, raw_cell: str = "") -> None:
        """Call the notebook's callbacks on `get_ipython().events`, as a kernel does
        around each cell; nothing to do (not even IPython to import) for most notebooks."""
        factory = self.namespace.get("get_ipython")
        shell = getattr(factory, "shell", None)
        events = shell.__dict__.get("events") if shell is not None else None
        if events is None or not any(events.callbacks.values()):
            return
        from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult

        info = ExecutionInfo(raw_cell, False, False, True, None)  # a cell, as events see it
        if event == "pre_run_cell":
            events.trigger("pre_execute")
            events.trigger("pre_run_cell", info)
        else:
            events.trigger("post_execute")
            events.trigger("post_run_cell", ExecutionResult(info))

    def _restart(self, run: DeviceRun, item: pytest.Item) -> None:
        """Back to a fresh kernel for *run*: the notebook replays from its start."""
        counts = counts_of(item.config)
        counts.replays += 1
        counts.replayed_tests.append(item.nodeid)
        forget(run.own_modules)
        run.own_modules.clear()
        loop, run.loop = run.loop, None
        event_loop.restart(loop, run.event_loop)
        self._fresh(run, item.config)
        change_cwd(run.cwd)  # cells are running: a fresh kernel starts in the notebook's folder

    def _run_setup(self, run: DeviceRun, step: SetupStep) -> None:
        __tracebackhide__ = True
        self._running = self.cell_filename(step.index, step.id)
        pinned = self._pins.get(step.index, frozenset())
        device = run.device if step.assigns_device else None
        names = pinning.PinnedNames(self.namespace, device, pinned) if device or pinned else None
        try:
            with self._recorded(run, step), self._warnings_of_the_cell():
                code = self._automagic(step) or self._compile(step)
                steps.execute(code, self.namespace, run.event_loop, names)
        except BaseException as e:
            if step.expects_exception and steps.is_cell_error(e):
                run.last_error = e
                steps.note_last_error(e)
                print(f"{self._running}: raised {type(e).__name__} as marked", file=sys.stderr)
                return
            if isinstance(e, KeyboardInterrupt) and ctrl_c_pressed():
                raise
            run.failed = (step.index, e)
            message = f": {e}" if str(e) else ""  # a bare `assert` has none
            text = f"{self._running} raised {type(e).__name__}{message}"
            raise SetupError(text, step.index, step.id) from e
        finally:
            self._running = ""

    def _recorded(self, run: DeviceRun, step: SetupStep) -> contextlib.AbstractContextManager[None]:
        """The cell's output and time, for the run's report, when there is one."""
        log = cell_log_of(self._config)
        if log is None:
            return contextlib.nullcontext()

        def describe(error: BaseException) -> str:
            return notebook_traceback(error, self.place_of)

        return recorded(log, step.index, step.id, run.device, describe)

    def _run_test_cell(self, run: DeviceRun, step: TestStep, quietly: bool) -> None:
        """A test cell reached: a cell of `def`s defines its names; one passed by runs."""
        for name in step.names:
            if name in self._pristine:
                self.namespace[name] = self._pristine[name]
        if quietly and not step.skipped:
            error = steps.run_quietly(step, lambda: device_value(run.device), run.event_loop)
            run.last_error = error or run.last_error

    def _failed_setup(self, run: DeviceRun) -> SetupError:
        assert run.failed is not None
        index, error = run.failed
        step = next(s for s in self._setup if s.index == index)
        return SetupError(
            f"setup failed for device {run.device!r}: {self.cell_filename(step.index, step.id)} "
            f"raised {type(error).__name__}; its traceback is shown for the first test that "
            "needed it",
            step.index,
            step.id,
        )

    def _compile(self, step: SetupStep) -> types.CodeType:
        code = self._compiled.get(step.index)
        if code is None:
            filename = self.cell_filename(step.index, step.id)
            code = steps.compile_cell(step.code, filename, self._future)
            self._compiled[step.index] = code
        self._future |= code.co_flags & steps.FUTURE_FLAGS  # for the cells below
        return code

    def _automagic(self, step: SetupStep) -> types.CodeType | None:
        """A one-line cell that names a magic without its `%` (`cd data`, `pwd`) runs
        the magic, as IPython's automagic does, unless a notebook name shadows it."""
        line = step.code.strip()
        head = steps.automagic_head(line)
        if head is None or head in self.namespace:
            return None
        call = self.namespace["get_ipython"]().automagic(line)
        if call is None:
            return None
        return steps.compile_cell(call, self.cell_filename(step.index, step.id))

    def _loop(self) -> Any:
        run = self._active
        if run is None:
            raise RuntimeError("no notebook run is active")
        return run.event_loop()

    # -- namespaces and process state ----------------------------------------

    def _activate(self, device: str, config: pytest.Config) -> DeviceRun:
        """Make *device*'s run the live one: its names in the module, its process state."""
        run = self._runs.setdefault(device, DeviceRun(device))
        if self._active is run:
            return run
        if self._outside is None:
            self._start(config)
        if self._active is not None:
            self._put_aside(self._active)
        if run.names is None:
            self._fresh(run, config)
        else:
            self.namespace.clear()
            self.namespace.update(run.names)
            assert run.process is not None
            run.process.apply()
            sys.modules.update(run.own_modules)
            run.names = run.process = None
        self._modules_mark = modules_mark()
        self._active = run
        return run

    def _start(self, config: pytest.Config) -> None:
        """The notebook's first test: note the process as it is, and the module as imported."""
        self._outside = ProcessState.capture()
        self._threads = frozenset(threading.enumerate())
        self._keeps_generators = reseeds_per_test(config)
        if BASELINE not in config.stash:
            config.stash[BASELINE] = ProcessState.baseline()
        if not self._pristine:
            self._pristine = dict(self.namespace)
            test_steps = steps.test_steps(self.layout, self._pristine, self.filename)
            cells: list[Step] = [*self._setup, *test_steps]
            parameters = self._parameters_step(config, cells)
            if parameters is not None:
                cells.append(parameters)
                self._pins = self._pins_of(parameters)
                self._unassigned = pinning.unassigned(parameters.values, self._setup_code())
            self._steps = sorted(cells, key=lambda s: s.position)
            self._show_values(test_steps)
            self._cell_codes = {
                f.__code__ for step in test_steps if not step.code for f in step.functions
            }
            self._positions = [s.position for s in self._steps]

    def _show_values(self, test_steps: list[TestStep]) -> None:
        """Bare test cells show their last expression, as a kernel's cells do."""
        regions = {t.index: t for t in self.layout.tests if t.kind == "statements"}
        for step in test_steps:
            region = regions.get(step.index)
            if region is None:
                continue
            for function in step.functions:
                steps.show_values_of(function, region, self.layout.lines)

    def _parameters_step(
        self, config: pytest.Config, cells: list[Step] | None = None
    ) -> ParametersStep | None:
        """The module's parameters with the run's on top (`--ntdd-param`, configuration).

        A module with no place for them (no cell tagged `parameters`) gets the
        run's before its first cell, as papermill injects them.
        """
        given = settings_of(config).parameters.for_notebook(self.notebook)
        overrides = {name: ast.literal_eval(text) for name, text in given}
        step = self._parameters
        if step is None:
            indices = [s.index for s in cells] if cells else [s.index for s in self._setup]
            indices += [t.index for t in self.layout.tests] if cells is None else []
            first = min(indices, default=None)
            if not overrides or first is None:
                return None
            return ParametersStep(first, False, overrides)
        return ParametersStep(step.index, step.after, {**step.values, **overrides})

    def _pins_of(self, step: ParametersStep) -> dict[int, frozenset[str]]:
        """The setup cells below *step* that assign one of its names: each keeps the value."""
        below = [(index, code) for index, code in self._setup_code() if index > step.position]
        return pinning.pins(below, step.values)

    def _setup_code(self) -> list[tuple[int, str]]:
        return [(s.index, s.code) for s in self._setup]

    def _fresh(self, run: DeviceRun, config: pytest.Config) -> None:
        """*run* as a new kernel: no cell run, the process as the session started."""
        ns = self.namespace
        ns.clear()
        ns.update(self._base)
        ns["__ntdd__"] = self
        ns["__name__"] = "__main__"  # as in a kernel, which also has these two
        ns["__doc__"] = KERNEL_DOC
        ns["__builtins__"] = builtins
        ns["get_ipython"] = ShellFactory(
            ns,
            self._where,
            lambda: run.cells_run,
            lambda: bool(self._running),
            self._cell_codes.__contains__,
        )
        ns["display"] = display
        if self.uses_device:
            ns[DEVICE] = device_value(run.device)
        config.stash[BASELINE].for_notebook(self.notebook.parent).apply()
        self._modules_mark = modules_mark()
        run.cursor, run.ran, run.cells_run, run.last_error = -1, set(), 0, None
        run.generators = None  # the baseline's, as a new kernel starts
        run.cwd = str(self.notebook.parent)
        run.filters, run.root_logger = NotebookFilters(), RootLogger()
        self._future = 0
        set_filters(self._pytest_filters)  # a fresh kernel's: none set by a cell

    def _put_aside(self, run: DeviceRun, keep: bool = True) -> None:
        """Keep *run*'s names and process state aside (unless it is done with);
        the modules the notebook imported from its folder leave `sys.modules`."""
        new = modules_since(self._modules_mark)
        if new:
            run.own_modules.update(own_modules(self.notebook.parent, new))
        if keep:
            run.names = dict(self.namespace)
            run.process = ProcessState.capture()
        forget(run.own_modules)
        self._active = None

    @contextlib.contextmanager
    def _warnings_of_the_cell(self) -> Iterator[None]:
        """What a setup cell warns is reported as the notebook's, at the cell's line,
        not as a warning of the test that happened to reach the cell."""
        config = self._config
        if config is None or not self._nodeid:
            yield
            return
        caught: list[warnings.WarningMessage] = []
        kept: tuple[Any, ...] = ()
        try:
            with warnings.catch_warnings(record=True) as caught:
                try:
                    yield
                finally:
                    kept = tuple(warnings.filters)  # what the cell set lasts
        finally:
            set_filters(kept)
            for message in caught:
                config.hook.pytest_warning_recorded.call_historic(
                    kwargs={
                        "warning_message": message,
                        "nodeid": self._nodeid,
                        "when": "runtest",
                        "location": None,
                    }
                )

    @contextlib.contextmanager
    def _as_main(self) -> Iterator[None]:
        """`__main__` is the notebook while its cells run, as in a kernel (pickle needs it)."""
        module = sys.modules.get(self._base.get("__name__", ""))
        if module is None or module.__dict__ is not self.namespace:
            yield
            return
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = module
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main

    # -- where tests sit ---------------------------------------------------

    def _device_of(self, item: pytest.Item, config: pytest.Config) -> str:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and DEVICE in callspec.params:
            return str(callspec.params[DEVICE])
        devices = settings_of(config).devices
        for name in devices:
            if not device_unavailable(name):
                return name
        reasons = "; ".join(f"{d}: {device_unavailable(d)}" for d in devices)
        pytest.skip(f"none of the devices is available ({reasons})")

    def _position_of(self, item: pytest.Item) -> int:
        """The index of the cell a test's function was written in."""
        test = self._test_region(item)
        return test.index if test is not None else END

    def _test_cell_name(self, item: pytest.Item) -> str:
        """How messages name the cell of *item*'s test: `nb.ipynb (test cell 4, id 1a2b)`."""
        test = self._test_region(item)
        return self.cell_filename(test.index, test.region.id, "test cell") if test else ""

    def _test_region(self, item: pytest.Item) -> TestRegion | None:
        function = getattr(item, "function", None)
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        if code is None or code.co_filename != self.filename:
            return None
        return self.layout.test_at(code.co_firstlineno)

    def runs_code_of(self, filename: str) -> bool:
        """Whether code compiled under *filename* is this notebook's: its module or a cell."""
        return filename == self.filename or filename.startswith(f"{self.display_path} (")

    def place_of(self, filename: str, line: int) -> str | None:
        """A frame's place as the notebook's cell and line; None for code not the notebook's."""
        if filename == self.filename:
            where = self.layout.locate(line, self.display_path)
            return dataclasses.replace(where, text="").describe() if where else filename
        if self.runs_code_of(filename):
            return f"{filename}, line {line}"  # a cell run as code: its own lines
        return None

    def line_in_file(self, filename: str, lineno: int) -> int | None:
        """The line of the notebook's file that line *lineno* of *filename* came from,
        when *filename* is the notebook's code (its module, or a cell compiled alone)."""
        key = (filename, lineno)
        if key not in self._in_file:
            self._in_file[key] = self._line_in_file(filename, lineno)
        return self._in_file[key]

    def _line_in_file(self, filename: str, lineno: int) -> int | None:
        if not self.file_lines:
            return None
        if filename == self.filename:
            where = self.layout.locate(lineno, "")
            return self.cell_line_in_file(where.index, where.line) if where is not None else None
        index = self.cell_of(filename)
        return self.cell_line_in_file(index, lineno) if index is not None else None

    def cell_line_in_file(self, index: int, line: int | None) -> int | None:
        """The file line of line *line* of cell *index* (None: its first line)."""
        return line_in_file(self.file_lines, index, line)

    def cell_of(self, filename: str) -> int | None:
        """The cell compiled under *filename*: a setup cell, or a test cell run as code."""
        if filename in self.cell_files:
            return self.cell_files[filename][0]
        if not filename.startswith(f"{self.display_path} ("):
            return None
        return next(
            (s.index for s in self._setup if self.cell_filename(s.index, s.id) == filename), None
        )

    def cell_filename(self, index: int, cell_id: str | None, kind: str = "setup cell") -> str:
        """How tracebacks name a cell run as code: `nb.ipynb (setup cell 3, id 1a2b)`.

        No angle brackets: pytest hides frames of files named `<...>`, and these
        frames are the ones a reader needs to see.
        """
        ident = f", id {cell_id}" if cell_id else ""
        return f"{self.display_path} ({kind} {index}{ident})"

    def _where(self) -> str:
        return self._running or self._testing or self.display_path

    def __repr__(self) -> str:
        return f"<NotebookRuntime {self.display_path}>"


class NotebookCode:
    """While a notebook run's code runs: its root logger, and its event loop running;
    after, the tasks its cells started go on for a moment, as between a kernel's cells.

    A class, not a generator: it is entered twice for every test.
    """

    def __init__(self, run: DeviceRun, keep_pytests: bool, uses_loop: bool) -> None:
        self._run = run
        self._keep_pytests = keep_pytests
        self._loop = event_loop.Running(run.event_loop) if uses_loop else None
        self._outside = RootLogger()

    def __enter__(self) -> None:
        self._outside = root_logger.swap_in(self._run.root_logger, self._keep_pytests)
        if self._loop is not None:
            self._loop.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        try:
            if self._loop is not None:
                self._loop.__exit__()
                event_loop.idle(self._run.loop)
        finally:
            self._run.root_logger = root_logger.swap_out(self._outside, self._keep_pytests)


def device_value(name: str) -> Any:
    try:
        import torch
    except ImportError:
        return name
    return torch.device(name)


def device_unavailable(name: str) -> str:
    """Why device *name* cannot be used here, or "" when it can."""
    if name == "cpu":
        return ""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    kind, _, number = name.partition(":")
    if kind == "cuda":
        if not torch.cuda.is_available():
            return "torch.cuda.is_available() is False"
        if number and int(number) >= torch.cuda.device_count():
            return f"there are {torch.cuda.device_count()} CUDA devices"
        return ""
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        available = mps is not None and mps.is_available()
        return "" if available else "torch.backends.mps.is_available() is False"
    return f"ntdd does not run tests on {name!r}"


def _warn_if_stale(module: Path, notebook: Path, name: str) -> None:
    """An exported module run by plain pytest says when its notebook has moved on.

    (`pytest --ntdd` compiles the module from the notebook itself: never stale.)
    """
    __tracebackhide__ = True  # a strict run's error is the module's, not ntdd's
    reason = stale_reason(module, notebook)
    if reason is not None:
        message = (
            f"{_relative_to_cwd(module)}: stale: {reason}; its tests run the cells as they "
            "were then (run `ntdd export` again)"
        )
        warnings.warn_explicit(message, StaleModuleWarning, str(module), 1, module=name)


def _relative_to_cwd(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def _clear_frames(tb: types.TracebackType | None) -> None:
    """Drop the locals of a finished failure's frames, so that what they held is freed now.

    Before Python 3.13 a frame keeps a snapshot of its locals once they were
    read (pytest's report reads them), and `frame.clear()` leaves it: reading
    `f_locals` again syncs the snapshot with the now empty frame.
    """
    while tb is not None:
        with contextlib.suppress(RuntimeError):  # a frame still running keeps its locals
            tb.tb_frame.clear()
            tb.tb_frame.f_locals  # noqa: B018 - the read is the point
        tb = tb.tb_next
