"""A device's run brought to a test's cell: the cells between run in order, as a kernel runs them.

Each step is a setup cell, the run's test parameters, or a test cell, whose
test runs quietly as the cursor passes it. A setup cell runs as a kernel
runs it: after the `pre_run_cell` event, a one-line magic without its `%`
as IPython's automagic reads it, its warnings reported as the notebook's.
When it raises, the tests below it error with its traceback (`SetupError`).
A test above the cursor, or one run twice, replays the notebook from a
fresh kernel.

The fourth layer of `NotebookRuntime`, on `DeviceRuns`.
"""

from __future__ import annotations

import bisect
import contextlib
import sys
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ntdd.errors import SetupError
from ntdd.runtime import loop as event_loop
from ntdd.runtime import pinning, smoke, steps
from ntdd.runtime.cell_log import cell_log_of, notebook_traceback, recorded
from ntdd.runtime.containment import ctrl_c_pressed
from ntdd.runtime.device_runs import DeviceRun, DeviceRuns
from ntdd.runtime.devices import device_value
from ntdd.runtime.isolation import change_cwd, forget, set_filters
from ntdd.runtime.process_wide import close_figures
from ntdd.runtime.settings import counts_of, injection_of
from ntdd.runtime.steps import ParametersStep, SetupStep, TestStep


class NotebookCursor(DeviceRuns):
    """Runs the notebook's cells up to each test's, keeping each device's cursor."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        super().__init__(namespace, notebook, uses_device)
        self._compiled: dict[int, types.CodeType] = {}
        self._nodeid = ""  # the notebook's, for warnings its setup cells raise
        self._first_needing = ""  # the test that is running the cells up to its own

    def run_cell(self, index: int, cell_id: str | None, code: str) -> None:
        """The body of a test cell that runs as notebook code, not as a function."""
        __tracebackhide__ = True
        from ntdd.runtime.rewrite import compile_rewritten

        filename = self.cell_filename(index, cell_id, "cell")
        self.cell_files[filename] = (index, cell_id)
        steps.remember_lines(code, filename)
        run = self._active
        future = run.future if run is not None else 0
        flags = steps.TOP_LEVEL_AWAIT | future
        compiled = compile_rewritten(
            code,
            filename,
            self._config,
            flags,
            a_cell=True,
            transform=lambda tree: steps.show_last_value(tree.body, code),  # as a kernel shows it
        )
        if run is not None:
            run.future |= compiled.co_flags & steps.FUTURE_FLAGS  # for the cells below
        steps.execute(compiled, self.namespace, self._loop)

    def run_body(self, index: int, name: str) -> None:
        """What a bare test cell's function runs: the cell's statements, at the notebook's
        top level, as a kernel runs a cell (`steps.at_the_top_level`)."""
        __tracebackhide__ = True
        exec(self._bodies[index, name], self.namespace)  # the namespace is its frame's locals

    def run_coroutine(self, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
        """Run an `async def` test on the notebook's event loop, as a kernel awaits."""
        __tracebackhide__ = True
        event_loop.run_until_complete(self._loop(), function(**arguments))

    def _reach(self, run: DeviceRun, position: int, item: pytest.Item) -> None:
        """Bring *run* to the state a kernel has when it reaches *position*."""
        __tracebackhide__ = True
        if run.failed is not None and run.failed[0] < position:
            raise self._failed_setup(run)
        if run.failed is None:
            self._first_needing = item.name  # the test a setup cell's traceback is shown under
        if position < run.cursor or (position == run.cursor and item.name in run.ran):
            self._restart(run, item)
        # Bisection, not a scan: a scan of every step per test is quadratic in tests.
        first = bisect.bisect_right(self._positions, run.cursor)
        last = bisect.bisect_right(self._positions, position)
        for step in self._steps[first:last]:
            run.cursor, run.ran = step.position, set()
            passing_by = run.cursor < position  # a cell on the way, not the test's own
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
                    close_figures()
            else:
                self._run_test_cell(run, step, quietly=passing_by)
            if passing_by:
                close_figures()  # as a kernel's inline backend does after each cell
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
        events = self._events()
        if events is None:
            return
        from IPython.core.interactiveshell import ExecutionInfo, ExecutionResult

        info = ExecutionInfo(raw_cell, False, False, True, None)  # a cell, as events see it
        if event == "pre_run_cell":
            events.trigger("pre_execute")
            events.trigger("pre_run_cell", info)
        else:
            events.trigger("post_execute")
            events.trigger("post_run_cell", ExecutionResult(info))

    def _events(self) -> Any:
        """The notebook's `get_ipython().events` where it registered a callback; else None."""
        factory = self.namespace.get("get_ipython")
        shell = getattr(factory, "shell", None)
        events = shell.__dict__.get("events") if shell is not None else None
        return events if events is not None and any(events.callbacks.values()) else None

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
                code = self._automagic(step) or self._compile(run, step)
                steps.execute(code, self.namespace, run.event_loop, names)
        except BaseException as e:
            if step.expects_exception and steps.is_cell_error(e):
                run.last_error = e
                steps.note_last_error(e)
                print(f"{self._running}: raised {type(e).__name__} as marked", file=sys.stderr)
                return
            if isinstance(e, KeyboardInterrupt) and ctrl_c_pressed():
                raise
            run.failed = (step.index, e, self._first_needing)
            message = f": {e}" if str(e) else ""  # a bare `assert` has none
            text = f"{self._running} raised {type(e).__name__}{message}"
            raise SetupError(text, step.index, step.id, type(e)) from e
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
        """The error of each test below a setup cell that raised: one line naming the cell."""
        assert run.failed is not None
        index, error, first = run.failed
        step = next(s for s in self._setup if s.index == index)
        on = f" on {run.device}" if self.uses_device else ""
        where = f"{first}{on}"
        return SetupError(
            f"{self.cell_filename(step.index, step.id)} raised {type(error).__name__}{on}; "
            f"its traceback is under {first}",
            step.index,
            step.id,
            type(error),
            where,
        )

    def _compile(self, run: DeviceRun, step: SetupStep) -> types.CodeType:
        code = self._compiled.get(step.index)
        if code is None:
            filename = self.cell_filename(step.index, step.id)
            code = smoke.compile_setup(
                self._config, self.notebook, step.code, filename, run.future
            ) or steps.compile_cell(step.code, filename, run.future)
            self._compiled[step.index] = code
        run.future |= code.co_flags & steps.FUTURE_FLAGS  # for the cells below
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
