"""One device's run of a notebook, held as a kernel holds it: its names, its process state.

A `Kernel` owns what a Jupyter kernel would: the notebook's names, its
process state while another kernel is live (working directory, environment,
sys.path, modules imported from the notebook's folder), its warning filters,
random generators, root logger and event loop, its execution count and its
cursor, the position of the last cell run. The behaviour that changes them
is its own: `fresh` (a new kernel), `activate` and `put_aside` (live, or kept
aside whole while another device's kernel is), `restart`, and `advance_to`,
which runs the cells between the cursor and a test's cell in order (setup
cells, the run's parameters, test cells passed by, whose tests run quietly).

All of a notebook's kernels run in one module's globals (`CellMap.namespace`),
one at a time; `RunContext` is what they share while a test runs them.
"""

from __future__ import annotations

import bisect
import builtins
import contextlib
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ntdd.errors import SetupError
from ntdd.runtime import cell_runs, pinning, processes, steps
from ntdd.runtime import loop as event_loop
from ntdd.runtime.cell_log import cell_log_of
from ntdd.runtime.cell_map import CellMap
from ntdd.runtime.containment import ctrl_c_pressed
from ntdd.runtime.devices import device_value
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
    set_filters,
)
from ntdd.runtime.library_state import LibraryState
from ntdd.runtime.notebook_code import NotebookCode
from ntdd.runtime.process_wide import Builtins, as_a_kernel_has_them, close_figures
from ntdd.runtime.root_logger import RootLogger
from ntdd.runtime.settings import counts_of, injection_of
from ntdd.runtime.shell import ShellFactory, display
from ntdd.runtime.steps import ParametersStep, SetupStep, TestStep
from ntdd.values import DEVICE

KERNEL_DOC = "Automatically created module for IPython interactive environment"  # a kernel's


@dataclass
class RunContext:
    """What a notebook's kernels share while a test runs their cells: pytest's side of the
    test, which cell or test runs (for messages), what a fresh kernel starts with."""

    config: pytest.Config | None = None
    pytest_filters: tuple[Any, ...] = ()  # the warning filters pytest set for the test
    nodeid: str = ""  # the notebook's, for warnings its setup cells raise
    first_needing: str = ""  # the test that is running the cells up to its own
    running: str = ""  # the setup cell running now
    testing: str = ""  # the test cell whose test runs now
    builtins: Builtins | None = None  # `builtins` before the notebook ran
    library: LibraryState | None = None  # library modules and classes before it ran
    keeps_generators: bool = False  # a plugin reseeds them between the notebook's cells
    processes: set[int] = field(default_factory=set)  # children the cells started

    def where(self, display_path: str) -> str:
        return self.running or self.testing or display_path


class Kernel:
    """One device's run of the notebook, as one kernel would hold it."""

    def __init__(self, cells: CellMap, device: str, context: RunContext) -> None:
        self.cells = cells
        self.device = device
        self.context = context
        self.cursor: float = -1  # position of the last cell run; -1 before the first
        self.ran: set[str] = set()  # tests run at the cursor's cell
        self.failed: tuple[int, BaseException, str] | None = None  # a setup cell that raised
        self.names: dict[str, Any] | None = None  # its namespace, while aside
        self.process: ProcessState | None = None  # its process state, while aside
        self.own_modules: dict[str, types.ModuleType] = {}
        self.loop: Any = None  # its asyncio event loop, once a cell awaits
        self.generators: Generators | None = None  # as its last cell left them
        self.cells_run = 0  # a kernel's execution count
        self.cwd = ""  # its working directory: the notebook's folder, or where a cell went
        self.filters = NotebookFilters()  # what its cells set
        self.root_logger = RootLogger()  # its handlers and level
        self.last_error: BaseException | None = None  # a kernel's `sys.last_value`
        self.future = 0  # the future flags of its cells run so far, as IPython carries them
        self.modules_mark: tuple[int, str] = (0, "")  # sys.modules when it went live
        self.shell: ShellFactory | None = None  # its `get_ipython`, made by `fresh`

    @property
    def started(self) -> bool:
        """Whether it ran as a kernel yet (else `activate` starts it fresh)."""
        return self.names is not None

    def event_loop(self) -> Any:
        if self.loop is None:
            self.loop = event_loop.new_loop()
        return self.loop

    # -- its state: fresh, live, aside ---------------------------------------

    def fresh(self) -> None:
        """A new kernel: no cell run, the process as the session started."""
        cells, context = self.cells, self.context
        assert context.config is not None
        ns = cells.namespace
        ns.clear()
        ns.update(cells.base)
        ns["__name__"] = "__main__"  # as in a kernel, which also has these two
        ns["__doc__"] = KERNEL_DOC
        ns["__builtins__"] = builtins
        ns["get_ipython"] = self.shell = ShellFactory(
            ns,
            lambda: context.where(cells.display_path),
            lambda: self.cells_run,
            lambda: bool(context.running),
            cells.cell_codes.__contains__,
            cells.dropped,
        )
        ns["display"] = display
        if context.builtins is not None:
            context.builtins.apply()  # a fresh kernel's: none a cell added
        as_a_kernel_has_them(ns)
        if cells.uses_device:
            ns[DEVICE] = device_value(self.device)
        context.config.stash[BASELINE].for_notebook(cells.notebook.parent).apply()
        self.modules_mark = modules_mark()
        self.cursor, self.ran, self.cells_run, self.last_error = -1, set(), 0, None
        self.generators = None  # the baseline's, as a new kernel starts
        self.cwd = str(cells.notebook.parent)
        self.filters, self.root_logger = NotebookFilters(), RootLogger()
        self.future = 0
        set_filters(context.pytest_filters)  # a fresh kernel's: none set by a cell

    def activate(self) -> None:
        """Make it the live kernel: its names in the module, its process state (a new
        kernel's, the first time)."""
        if self.names is None:
            self.fresh()
        else:
            ns = self.cells.namespace
            ns.clear()
            ns.update(self.names)
            assert self.process is not None
            self.process.apply()
            sys.modules.update(self.own_modules)
            self.names = self.process = None
            as_a_kernel_has_them(ns)
        self.modules_mark = modules_mark()

    def put_aside(self, keep: bool = True) -> None:
        """Keep its names and process state aside (unless it is done with); the modules
        the notebook imported from its folder leave `sys.modules`."""
        new = modules_since(self.modules_mark)
        if new:
            self.own_modules.update(own_modules(self.cells.notebook.parent, new))
        if keep:
            self.names = dict(self.cells.namespace)
            self.process = ProcessState.capture()
        forget(self.own_modules)

    def restart(self, item: pytest.Item) -> None:
        """Back to a fresh kernel: the notebook replays from its start."""
        counts = counts_of(item.config)
        counts.replays += 1
        counts.replayed_tests.append(item.nodeid)
        forget(self.own_modules)
        self.own_modules.clear()
        loop, self.loop = self.loop, None
        event_loop.restart(loop, self.event_loop)
        self.fresh()
        change_cwd(self.cwd)  # cells are running: a fresh kernel starts in the notebook's folder

    def close(self) -> None:
        """The notebook is done: its modules forgotten, its event loop closed."""
        forget(self.own_modules)
        event_loop.close(self.loop)

    # -- while its code runs -------------------------------------------------

    @contextlib.contextmanager
    def in_its_folder(self) -> Iterator[None]:
        """Its working directory while its cells run, and the session's around them.

        A cell's own `os.chdir` holds for the cells below it, as in a kernel;
        pytest, its reports and other plugins' hooks and fixtures run in the
        session's working directory, so that the paths they compute are right.
        """
        outside = current_cwd()
        change_cwd(self.cwd)
        try:
            with processes.started_by(self.context.processes):
                yield
        finally:
            self.cwd = current_cwd()
            change_cwd(outside)

    def notebook_code(self, keep_pytests: bool = False) -> NotebookCode:
        """While its code runs: its event loop running, its root logger where the module
        names logging, or where its cells' outputs are recorded, which show what a library
        logs as a kernel does, on stderr (`NotebookCode`)."""
        own_logger = (
            "logging" in self.cells.mentions or cell_log_of(self.context.config) is not None
        )
        library = self.context.library
        after = library.note_imports if library is not None else None
        return NotebookCode(self, keep_pytests, own_logger, self._shell, after)

    def _shell(self) -> Any:
        """Its shell, as IPython's own `display` publishes through it (`ipython_display`)."""
        assert self.shell is not None
        return self.shell()

    @contextlib.contextmanager
    def generators_kept(self) -> Iterator[None]:
        """The random generators as its last cell left them, and noted where its code
        leaves them: between two of its cells a plugin may reseed them (pytest-randomly
        does before each test phase); the notebook's draws go on as in *Run All*."""
        if self.generators is not None:
            self.generators.apply()
        try:
            yield
        finally:
            if self.context.keeps_generators:
                self.generators = Generators.capture()

    def restore_last_error(self) -> None:
        """Just before a test's function runs (pytest has cleared `sys.last_value`):
        the last error a cell raised, as a kernel keeps it in `sys.last_value`."""
        if self.last_error is not None:
            steps.note_last_error(self.last_error)

    # -- running its cells ---------------------------------------------------

    def advance_to(self, position: int, item: pytest.Item) -> None:
        """Bring it to the state a kernel has when it reaches *position*."""
        __tracebackhide__ = True
        if self.failed is not None and self.failed[0] < position:
            raise self._failed_setup()
        if self.failed is None:
            self.context.first_needing = item.name  # the test a setup cell's traceback is under
        if position < self.cursor or (position == self.cursor and item.name in self.ran):
            self.restart(item)
        cells = self.cells
        # Bisection, not a scan: a scan of every step per test is quadratic in tests.
        first = bisect.bisect_right(cells.positions, self.cursor)
        last = bisect.bisect_right(cells.positions, position)
        for step in cells.steps[first:last]:
            self.cursor, self.ran = step.position, set()
            passing_by = self.cursor < position  # a cell on the way, not the test's own
            if isinstance(step, ParametersStep):
                step.assign(cells.namespace)
                continue
            self.cells_run += 1
            code = step.code if isinstance(step, SetupStep) else ""
            cell_runs.trigger(cells.namespace, "pre_run_cell", code)
            if isinstance(step, SetupStep):
                try:
                    self._run_setup(step)
                finally:  # a cell that raised made objects too: the report names them
                    self._injected_after_cell(item.config)
                    close_figures()
                    self._note_imports()
            else:
                self._run_test_cell(step, quietly=passing_by)
                self._note_imports()
            if passing_by:
                close_figures()  # as a kernel's inline backend does after each cell
                cell_runs.trigger(cells.namespace, "post_run_cell")
        self.ran.add(item.name)

    def _note_imports(self) -> None:
        """After each cell: what the modules it imported set is theirs (`library_state`)."""
        if self.context.library is not None:
            self.context.library.note_imports()

    def _run_setup(self, step: SetupStep) -> None:
        __tracebackhide__ = True
        cells, context = self.cells, self.context
        context.running = cells.cell_filename(step.index, step.id)
        try:
            with (
                cell_runs.recorded(cells, step, self.device, context.config),
                cell_runs.warnings_of_the_cell(context.config, context.nodeid, cells.runs_code_of),
            ):
                code = cell_runs.automagic(cells, step) or self._compiled(step)
                steps.execute(code, cells.namespace, self.event_loop, self._pinned(step))
        except BaseException as e:
            if step.expects_exception and steps.is_cell_error(e):
                self.last_error = e
                steps.note_last_error(e)
                print(f"{context.running}: raised {type(e).__name__} as marked", file=sys.stderr)
                return
            if isinstance(e, KeyboardInterrupt) and ctrl_c_pressed():
                raise
            self.failed = (step.index, e, context.first_needing)
            message = f": {e}" if str(e) else ""  # a bare `assert` has none
            text = f"{context.running} raised {type(e).__name__}{message}"
            raise SetupError(text, step.index, step.id, type(e)) from e
        finally:
            context.running = ""

    def _compiled(self, step: SetupStep) -> types.CodeType:
        code = cell_runs.compiled(self.cells, step, self.future, self.context.config)
        self.future |= code.co_flags & steps.FUTURE_FLAGS  # for the cells below
        return code

    def _pinned(self, step: SetupStep) -> Any:
        """The names the cell may not change: the device, the run's parameters."""
        pinned = self.cells.pins.get(step.index, frozenset())
        device = self.device if step.assigns_device else None
        if not (device or pinned):
            return None
        return pinning.PinnedNames(self.cells.namespace, device, pinned)

    def _run_test_cell(self, step: TestStep, quietly: bool) -> None:
        """A test cell reached: a cell of `def`s defines its names; one passed by runs."""
        cells = self.cells
        for name in step.names:
            if name in cells.pristine:
                cells.namespace[name] = cells.pristine[name]
        if quietly and not step.skipped:
            error = steps.run_quietly(step, lambda: device_value(self.device), self.event_loop)
            self.last_error = error or self.last_error

    def _injected_after_cell(self, config: pytest.Config) -> None:
        """A setup cell ran: an injected fault acts on what it made, as a bug in it would."""
        injection = injection_of(config)
        if injection is not None:
            injection.cell_ran(self.cells.namespace, self.device)

    def _failed_setup(self) -> SetupError:
        """The error of each test below a setup cell that raised: one line naming the cell."""
        assert self.failed is not None
        index, error, first = self.failed
        step = next(s for s in self.cells.setup_steps if s.index == index)
        on = f" on {self.device}" if self.cells.uses_device else ""
        where = f"{first}{on}"
        return SetupError(
            f"{self.cells.cell_filename(step.index, step.id)} raised {type(error).__name__}{on}; "
            f"its traceback is under {first}",
            step.index,
            step.id,
            type(error),
            where,
        )

    def __repr__(self) -> str:
        return f"<ntdd Kernel {self.cells.display_path} on {self.device}, cursor {self.cursor}>"
