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

`NotebookRuntime` is what a generated module holds and the fixtures it
binds call. It is built in layers, each a module that uses only those
below it: `notebook_cells` (the cells the module registers, the run's
steps), `cell_places` (which cell and file line a line of code is),
`device_runs` (each device's names and process state), `cursor` (the cells
run up to a test's), and here the pytest side: devices, and the fixture
around each test.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from ntdd.format.stale import older_format
from ntdd.notebook.markers import EVAL_FALSE
from ntdd.runtime.cursor import NotebookCursor
from ntdd.runtime.devices import device_unavailable, device_value
from ntdd.runtime.fixtures import device_under_test
from ntdd.runtime.isolation import NotebookFilters
from ntdd.runtime.notebook_cells import _relative_to_cwd
from ntdd.runtime.process_wide import close_figures
from ntdd.runtime.region_calls import RegionCalls
from ntdd.runtime.settings import injection_of, settings_of
from ntdd.values import DEVICE

__all__ = ["NotebookRuntime"]  # what generated modules import


class NotebookRuntime(NotebookCursor, RegionCalls):
    """Runs one notebook's cells in the namespace of its generated module."""

    def fixtures(self) -> NoReturn:
        """What a module of ntdd's format 7 or before called for its fixtures (they are
        imported now, `ntdd.runtime.fixtures`): it says, as `ntdd export --check` does,
        that it is stale, and to export it again."""
        __tracebackhide__ = True
        from ntdd._version import __version__

        module = Path(self.namespace.get("__file__") or self.filename)
        pytest.fail(older_format(Path(_relative_to_cwd(module)), __version__), pytrace=False)

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
        self._config = request.config
        device = self._device_of(request.node, request.config)
        self._pytest_filters = tuple(warnings.filters)  # what pytest set for this test
        run = self._activate(device, request.config)
        if self._position_of(request.node) in self._left_out:
            pytest.skip(f"{EVAL_FALSE}: this run leaves such cells out (skip_eval_false)")
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
                    close_figures()  # the test's cell is done: as a kernel's inline backend
                    run.last_error = getattr(sys, "last_value", None) or run.last_error
                    if self._events() is not None:  # the notebook's code, as its cells run
                        with self._as_main(), self.in_its_folder(), self.notebook_code(run):
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
