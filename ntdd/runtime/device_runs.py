"""Each device's run of the notebook, held as one kernel each: its names and its process state.

One run is live at a time: its names fill the module, and the process has
its state (working directory, environment, sys.path, modules imported from
the notebook's folder, warning filters, random generators, root logger,
event loop). Another device's run is put aside whole. Each run starts as a
new kernel does, from the process state the session started with; the
notebook's last test puts the process back, and frees what its failures held.

The third layer of `NotebookRuntime`, on `CellPlaces`.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from ntdd.runtime import containment, processes, root_logger, steps
from ntdd.runtime import loop as event_loop
from ntdd.runtime.cell_places import CellPlaces
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
    reseeds_per_test,
    set_filters,
)
from ntdd.runtime.notes import note_at
from ntdd.runtime.process_wide import Builtins, Matplotlib, as_a_kernel_has_them, patched_classes
from ntdd.runtime.root_logger import RootLogger
from ntdd.runtime.shell import ShellFactory, display
from ntdd.values import DEVICE

KERNEL_DOC = "Automatically created module for IPython interactive environment"  # a kernel's


@dataclass
class DeviceRun:
    """One device's run of the notebook, as one kernel would hold it."""

    device: str
    cursor: float = -1  # position of the last cell run; -1 before the first
    ran: set[str] = field(default_factory=set)  # tests run at the cursor's cell
    failed: tuple[int, BaseException, str] | None = (
        None  # a setup cell that raised, and under which test
    )
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
    future: int = 0  # the future flags of its cells run so far, as IPython carries them

    def event_loop(self) -> Any:
        if self.loop is None:
            self.loop = event_loop.new_loop()
        return self.loop


class DeviceRuns(CellPlaces):
    """Holds each device's run of the notebook, and makes one the live one."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        super().__init__(namespace, notebook, uses_device)
        self._runs: dict[str, DeviceRun] = {}
        self._active: DeviceRun | None = None
        self._outside: ProcessState | None = None  # the process before the notebook ran
        self._builtins: Builtins | None = None  # `builtins` before the notebook ran
        self._matplotlib: Matplotlib | None = None  # matplotlib's settings before it ran
        self._threads: frozenset[threading.Thread] = frozenset()  # those before it ran
        self._processes: set[int] = set()  # children its cells started, ended at release
        self._modules_mark: tuple[int, str] = (0, "")  # sys.modules when the run went live
        self._failures: list[types.TracebackType] = []  # this notebook's, until release
        self._config: pytest.Config | None = None
        self._keeps_generators = False  # a plugin reseeds them between the notebook's cells
        self._running = ""  # the setup cell running now, for messages
        self._testing = ""  # the test cell whose test runs now, for messages
        self._pytest_filters: tuple[Any, ...] = ()  # the warning filters pytest set for a test

    def notebook_code(
        self, run: DeviceRun, keep_pytests: bool = False
    ) -> contextlib.AbstractContextManager[None]:
        """While the notebook's code runs: its event loop running, as a kernel's cells run
        inside one, whatever the code (library code calls `asyncio.get_running_loop()`
        where the notebook never names asyncio; a loop is 0.05 ms); its root logger, for
        a notebook whose code names logging (the others cannot tell)."""
        return NotebookCode(run, keep_pytests, "logging" in self._mentions)

    @functools.cached_property
    def _mentions(self) -> frozenset[str]:
        """Which of the modules the runtime keeps apart the module's code (its setup cells'
        included) names: logging."""
        text = "".join(self.layout.lines)
        return frozenset(word for word in ("logging",) if word in text)

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
            with processes.started_by(self._processes):
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
        processes.end(self._processes, self._say_ended)
        if self._active is not None:
            self._put_aside(self._active, keep=False)
        for run in self._runs.values():
            forget(run.own_modules)
            event_loop.close(run.loop)
        if self._outside is not None:
            self._outside.apply()
        if self._builtins is not None:
            self._builtins.apply()
        if self._matplotlib is not None:
            self._matplotlib.apply()
        if not patched_classes(self.namespace):  # else a class's method still reads them
            self.namespace.clear()
            self.namespace.update(self._pristine or self._base)
        self._runs.clear()
        self._active = self._outside = self._config = None
        self._builtins = self._matplotlib = None

    def _leave_threads(self) -> None:
        """Threads the cells started and left running: a kernel would be shut down now.

        Each is reported and abandoned: pytest would otherwise wait for it at
        exit, after its last line ("1 passed"), for ever.
        """
        if self._outside is None:
            return  # no cell ran (every test skipped before its setup): no thread is the cells'
        for thread in containment.stray_threads(self._threads):
            note_at(
                f"{self.display_path}: thread {thread.name!r} (started by its cells) is still "
                "running after the notebook's last test; a kernel would be shut down here, "
                "so the run does not wait for it at exit",
                self.display_path,
                self._line_running_in(thread),
            )
            containment.abandon(thread)

    def _say_ended(self, pid: int, command: str) -> None:
        note_at(
            f"{self.display_path}: process {pid} ({command}), started by its cells, was still "
            "running after the notebook's last test; ended, as a kernel's shutdown ends "
            "its processes",
            self.display_path,
            1,
        )

    def _line_running_in(self, thread: threading.Thread) -> int:
        """The notebook's line where *thread* is now, its innermost frame of the notebook's
        code; 1 (the notebook) when it runs none (`Thread(target=event.wait)`)."""
        frame = sys._current_frames().get(thread.ident or 0)
        while frame is not None:
            line = self.line_in_file(frame.f_code.co_filename, frame.f_lineno)
            if line is not None:
                return line
            frame = frame.f_back
        return 1

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
            as_a_kernel_has_them(self.namespace)
        self._modules_mark = modules_mark()
        self._active = run
        return run

    def _start(self, config: pytest.Config) -> None:
        """The notebook's first test: note the process as it is, and the module as imported."""
        self._outside = ProcessState.capture()
        self._builtins, self._matplotlib = Builtins.capture(), Matplotlib.capture()
        self._threads = frozenset(threading.enumerate())
        self._keeps_generators = reseeds_per_test(config)
        if BASELINE not in config.stash:
            config.stash[BASELINE] = ProcessState.baseline()
        if not self._pristine:
            self._plan_steps(config)

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
            self._dropped,
        )
        ns["display"] = display
        if self._builtins is not None:
            self._builtins.apply()  # a fresh kernel's: none a cell added
        as_a_kernel_has_them(ns)
        if self.uses_device:
            ns[DEVICE] = device_value(run.device)
        config.stash[BASELINE].for_notebook(self.notebook.parent).apply()
        self._modules_mark = modules_mark()
        run.cursor, run.ran, run.cells_run, run.last_error = -1, set(), 0, None
        run.generators = None  # the baseline's, as a new kernel starts
        run.cwd = str(self.notebook.parent)
        run.filters, run.root_logger = NotebookFilters(), RootLogger()
        run.future = 0
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

    def _where(self) -> str:
        return self._running or self._testing or self.display_path

    def _dropped(self, spelled: str, message: str) -> None:
        """A magic not run under test, said once, at the notebook's line that asked for it.

        Collected from the notebook, its reading said so already (`ntdd: warning: …`
        after collection): no second word of it in the warnings summary.
        """
        if any(repr(spelled) in said for said in self.announced):
            return
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None and not self.runs_code_of(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None:
            note_at(message, self.display_path, 1)
            return
        filename, lineno = frame.f_code.co_filename, frame.f_lineno
        line = self.line_in_file(filename, lineno)
        if line is not None:  # a line of the notebook's file
            note_at(message, self.display_path, line)
            return
        where = self.layout.locate(lineno, "") if filename == self.filename else None
        if where is not None:  # an exported module's line: its cell's, as a cell's name says
            filename = self.cell_filename(where.index, where.id, "test cell")
            lineno = where.line or 1
        note_at(message, filename, lineno)


class NotebookCode:
    """While a notebook run's code runs: its event loop running, and its root logger
    where it uses logging; after, the tasks its cells started go on for a moment, as
    between a kernel's cells.

    A class, not a generator: it is entered twice for every test.
    """

    def __init__(self, run: DeviceRun, keep_pytests: bool, uses_logging: bool) -> None:
        self._run = run
        self._keep_pytests = keep_pytests
        self._loop = event_loop.Running(run.event_loop)
        self._logging = uses_logging
        self._outside = RootLogger()

    def __enter__(self) -> None:
        if self._logging:
            self._outside = root_logger.swap_in(self._run.root_logger, self._keep_pytests)
        self._loop.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        try:
            self._loop.__exit__()
            event_loop.idle(self._run.loop)
        finally:
            if self._logging:
                self._run.root_logger = root_logger.swap_out(self._outside, self._keep_pytests)


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
