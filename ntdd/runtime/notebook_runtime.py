"""What a generated test module runs: the notebook, cell by cell, as a kernel would.

A generated module *is* the notebook's namespace. Each test sees that
namespace as Jupyter's *Run All* leaves it at the test's cell: every code
cell above it has run, in order, and none below. The runtime keeps, for each
device, a kernel with a cursor at the last cell run:

- a test at or below the cursor advances it, running the cells in between
  (setup cells, and earlier test cells, whose tests run quietly);
- a test above the cursor, or one run twice, replays the notebook from the
  start: it never sees the wrong state.

In pytest's order the cursor only advances, so setup runs once per notebook
and device. Tests that use `device` run in the namespace of their device;
the others run in the namespace of the first available device. Each
namespace starts from the process state the session started with, and the
process is put back when the notebook's last test has run.

`NotebookRuntime` is what a generated module holds as `__ntdd__`, a facade
over composed parts: one `CellMap` (`cells`: what is fixed once the module is
imported, the cell and line of each piece of code, the run's steps) and one
`Kernel` per device (`kernel`: its names, its process state, and the cells
run up to a test's). Here: the calls the module makes, devices, the fixture
around each test (`run_cells_up_to`), the phase around its call (`phase`),
and the process put back after the last test (`release`).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ntdd.format.stale import older_format
from ntdd.notebook.markers import EVAL_FALSE
from ntdd.runtime import cell_runs, containment, release, steps
from ntdd.runtime import loop as event_loop
from ntdd.runtime.cell_map import CellMap, relative_to_cwd
from ntdd.runtime.devices import device_unavailable, device_value
from ntdd.runtime.fixtures import device_under_test
from ntdd.runtime.isolation import BASELINE, NotebookFilters, ProcessState, reseeds_per_test
from ntdd.runtime.kernel import Kernel, RunContext
from ntdd.runtime.library_state import LibraryState
from ntdd.runtime.process_wide import Builtins, Matplotlib, close_figures
from ntdd.runtime.region_calls import RegionCalls
from ntdd.runtime.settings import injection_of, settings_of
from ntdd.values import DEVICE

__all__ = ["NotebookRuntime"]  # what generated modules import


class NotebookRuntime(RegionCalls):
    """Runs one notebook's cells in the namespace of its generated module."""

    ends_the_process = True  # an overrun may end the process (a kernel's is the user's)
    points_at_cells = True  # its reports are rewritten to the notebook's cells and file

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        self.cells = CellMap.of_module(namespace, notebook, uses_device)
        self.cells.base["__ntdd__"] = self  # a fresh kernel's namespace holds it too
        self.display_path = self.cells.display_path
        self.context = RunContext()
        self.kernels: dict[str, Kernel] = {}
        self.kernel: Kernel | None = None  # the live one
        self._outside: ProcessState | None = None  # the process before the notebook ran
        self._matplotlib: Matplotlib | None = None  # matplotlib's settings before it ran
        self._threads: frozenset[threading.Thread] = frozenset()  # those before it ran
        self._failures: list[Any] = []  # this notebook's tracebacks, until release

    # -- what the module calls ------------------------------------------------

    def setup(self, index: int, cell_id: str | None, code: str, **options: bool) -> None:
        """Register a setup cell (`CellMap.setup`)."""
        self.cells.setup(index, cell_id, code, **options)

    def parameters(self, index: int, values: dict[str, Any], after: bool = True) -> None:
        """Register test-only parameters (`CellMap.parameters`)."""
        self.cells.parameters(index, values, after)

    def fixtures(self) -> NoReturn:
        """What a module of ntdd's format 7 or before called for its fixtures (they are
        imported now, `ntdd.runtime.fixtures`): it says, as `ntdd export --check` does,
        that it is stale, and to export it again."""
        __tracebackhide__ = True
        from ntdd._version import __version__

        module = Path(self.cells.namespace.get("__file__") or self.cells.filename)
        pytest.fail(older_format(Path(relative_to_cwd(module)), __version__), pytrace=False)

    def run_cell(self, index: int, cell_id: str | None, code: str) -> None:
        """The body of a test cell that runs as notebook code, not as a function."""
        __tracebackhide__ = True
        from ntdd.runtime.rewrite import compile_rewritten

        filename = self.cells.cell_filename(index, cell_id, "cell")
        self.cells.cell_files[filename] = (index, cell_id)
        steps.remember_lines(code, filename)
        kernel = self.kernel
        future = kernel.future if kernel is not None else 0
        compiled = compile_rewritten(
            code,
            filename,
            self.context.config,
            steps.TOP_LEVEL_AWAIT | future,
            a_cell=True,
            transform=lambda tree: steps.show_last_value(tree.body, code),  # as a kernel shows it
        )
        if kernel is not None:
            kernel.future |= compiled.co_flags & steps.FUTURE_FLAGS  # for the cells below
        steps.execute(compiled, self.cells.namespace, self._loop)

    def run_body(self, index: int, name: str) -> None:
        """What a bare test cell's function runs: the cell's statements, at the notebook's
        top level, as a kernel runs a cell (`steps.at_the_top_level`)."""
        __tracebackhide__ = True
        exec(self.cells.bodies[index, name], self.cells.namespace)  # its frame's locals

    def run_coroutine(self, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
        """Run an `async def` test on the notebook's event loop, as a kernel awaits."""
        __tracebackhide__ = True
        event_loop.run_until_complete(self._loop(), function(**arguments))

    def _loop(self) -> Any:
        if self.kernel is None:
            raise RuntimeError("no notebook run is active")
        return self.kernel.event_loop()

    # -- the pytest side -------------------------------------------------------

    def parametrize_devices(self, metafunc: pytest.Metafunc) -> None:
        """Tests that use `device` run once per device of `--ntdd-devices`.

        pytest's parametrization names them (`test_x[cpu]`); the items then keep
        their device themselves (`fixtures.take_device`).
        """
        if DEVICE in metafunc.fixturenames:
            devices = settings_of(metafunc.config).devices
            metafunc.parametrize(DEVICE, devices, indirect=True)

    def device(self, request: pytest.FixtureRequest) -> Any:
        """The value a `device` test gets: a `torch.device`, or the name without torch."""
        return device_value(self._device_of(request.node, request.config))

    def run_cells_up_to(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """Around each test: the notebook run up to the test's cell, for its device.

        A generator for the module's autouse fixture (`yield from`), so that
        no context-manager frames stand between a failure and its cell.
        """
        __tracebackhide__ = True
        cells, context, item = self.cells, self.context, request.node
        context.config = request.config
        device = self._device_of(item, request.config)
        context.pytest_filters = tuple(warnings.filters)  # what pytest set for this test
        kernel = self.activate(device, request.config)
        if cells.position_of(item) in cells.left_out:
            pytest.skip(f"{EVAL_FALSE}: this run leaves such cells out (skip_eval_false)")
        if cells.unassigned:
            pytest.fail(f"{cells.display_path}: {cells.unassigned}", pytrace=False)
        context.nodeid = item.nodeid.partition("::")[0]
        kernel.filters.apply(context.pytest_filters)  # what the cells above set lasts
        try:
            with self._as_main():  # the test's call included: pickle finds the notebook's
                with (
                    containment.streams_kept_open(item.nodeid),
                    kernel.in_its_folder(),
                    kernel.notebook_code(),
                    kernel.generators_kept(),
                ):
                    kernel.advance_to(cells.position_of(item), item)
                    injection = injection_of(request.config)
                    if injection is not None:
                        injection.apply(cells.namespace, device)
                context.testing = cells.test_cell_name(item)
                try:
                    yield
                    close_figures()  # the test's cell is done: as a kernel's inline backend
                    kernel.last_error = getattr(sys, "last_value", None) or kernel.last_error
                    if cell_runs.events_of(cells.namespace) is not None:  # as its cells run
                        with self._as_main(), kernel.in_its_folder(), kernel.notebook_code():
                            cell_runs.trigger(cells.namespace, "post_run_cell")
                finally:
                    context.testing = ""
        finally:
            now = tuple(warnings.filters)
            kernel.filters = NotebookFilters.between(context.pytest_filters, now)

    @contextlib.contextmanager
    def phase(self, item: pytest.Item) -> Iterator[None]:
        """Around a test's function: its code is the notebook's, as its cell is in a kernel.

        Outermost first: the notebook's folder as the cwd, its root logger and
        its event loop running (`notebook_code`), its random generators where its
        cells left them, `sys.last_value` where a kernel has it, the streams
        kept open, and its cell's outputs recorded where the run records them.
        """
        __tracebackhide__ = True
        kernel = self.kernel
        if kernel is None:
            with containment.streams_kept_open(item.nodeid):
                yield
            return
        keep_pytests = "caplog" in getattr(item, "fixturenames", ())
        with (
            kernel.in_its_folder(),
            kernel.notebook_code(keep_pytests),
            kernel.generators_kept(),
        ):
            kernel.restore_last_error()
            with (
                containment.streams_kept_open(item.nodeid),
                cell_runs.test_recorded(self.cells, item, kernel.device),
            ):
                yield

    def runs_code_of(self, filename: str) -> bool:
        """Whether code compiled under *filename* is this notebook's (`CellMap.runs_code_of`)."""
        return self.cells.runs_code_of(filename)

    def hold_failure(self, tb: Any) -> None:
        """A test of this notebook failed (or xfailed): its frames are freed at `release`."""
        if tb is not None:
            self._failures.append(tb)

    # -- the live kernel -------------------------------------------------------

    def activate(self, device: str, config: pytest.Config) -> Kernel:
        """Make *device*'s kernel the live one: its names in the module, its process state."""
        kernel = self.kernels.get(device)
        if kernel is None:
            kernel = self.kernels[device] = Kernel(self.cells, device, self.context)
        if self.kernel is kernel:
            return kernel
        if self._outside is None:
            self._start(config)
        if self.kernel is not None:
            self.kernel.put_aside()
        self.kernel = None
        kernel.activate()
        self.kernel = kernel
        return kernel

    def _start(self, config: pytest.Config) -> None:
        """The notebook's first test: note the process as it is, and the module as imported."""
        self._outside = ProcessState.capture()
        self.context.builtins, self._matplotlib = Builtins.capture(), Matplotlib.capture()
        self.context.library = LibraryState(self.cells.namespace)
        self._threads = frozenset(threading.enumerate())
        self.context.keeps_generators = reseeds_per_test(config)
        if BASELINE not in config.stash:
            config.stash[BASELINE] = ProcessState.baseline()
        if not self.cells.planned:
            self.cells.plan(config)

    def release(self) -> None:
        """The notebook's last test ran: free its state, put the process back
        (`ntdd.runtime.release`)."""
        release.free_failures(self._failures)
        if self._outside is not None:  # else no cell ran (every test skipped before setup)
            release.leave_threads(self.cells, self._threads)
        release.end_processes(self.cells, self.context.processes)
        if self.kernel is not None:
            self.kernel.put_aside(keep=False)
        for kernel in self.kernels.values():
            kernel.close()
        for state in (self._outside, self.context.builtins, self._matplotlib, self.context.library):
            if state is not None:
                state.apply()
        release.restore_module(self.cells)
        self.kernels.clear()
        self.kernel = self._outside = self._matplotlib = None
        self.context.builtins = self.context.config = self.context.library = None

    @contextlib.contextmanager
    def _as_main(self) -> Iterator[None]:
        """`__main__` is the notebook while its cells run, as in a kernel (pickle needs it)."""
        module = sys.modules.get(self.cells.base.get("__name__", ""))
        if module is None or module.__dict__ is not self.cells.namespace:
            yield
            return
        main = sys.modules.get("__main__")
        sys.modules["__main__"] = module
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main

    def _device_of(self, item: pytest.Item, config: pytest.Config) -> str:
        """The test's device; for a test that does not use it, the first available."""
        name = device_under_test(item)
        if name is not None:
            reason = device_unavailable(name)
            if reason:
                pytest.skip(f"{name}: {reason}")
            return name
        devices = settings_of(config).devices
        for name in devices:
            if not device_unavailable(name):
                return name
        reasons = "; ".join(f"{d}: {device_unavailable(d)}" for d in devices)
        pytest.skip(f"none of the devices is available ({reasons})")

    def __repr__(self) -> str:
        return f"<NotebookRuntime {self.display_path}>"
