"""How a notebook test runs: in its cells' folder and event loop, in time, its damage kept in.

Each phase of a notebook test runs within its time budget (ntdd's timeout,
the cell's `@timeout`, or pytest-timeout's, held by one deadline) and with
the process damage its cells may do contained; an `async def` test awaits
on the notebook's loop. The session starts by noting the process every
notebook starts from, and ends with one pass of the garbage collector.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import sys
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from ntdd.plugin import beside_nbval
from ntdd.plugin.items import notebook_module, runtime_of
from ntdd.plugin.overrun import overrun_of
from ntdd.runtime import containment, timeout, wakeup
from ntdd.runtime.isolation import BASELINE, ProcessState
from ntdd.runtime.notebook_runtime import NotebookRuntime
from ntdd.runtime.settings import Settings, counts_of
from ntdd.runtime.timeout import Deadline

_deadline_key = pytest.StashKey[Deadline]()
_other_timeout_key = pytest.StashKey[float]()  # pytest-timeout's seconds for a test


class RunHooks:
    """Runs a notebook's tests as its cells would run in a kernel, within their time."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Note the process as it starts: every notebook starts from this state."""
        session.config.stash[BASELINE] = ProcessState.baseline()
        containment.watch_ctrl_c()
        wakeup.install()

    def pytest_sessionfinish(self) -> None:
        containment.unwatch_ctrl_c()
        wakeup.uninstall()

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """One pass of the garbage collector at exit, not pytest's two.

        pytest collects garbage twice as it closes (at unconfigure and at
        cleanup) to report objects whose `__del__` raised; with torch imported
        by a notebook each pass walks its whole heap (0.2 s). The pass is done
        once here, before pytest's, and pytest's are set to none in the stash
        key pytest has for that (its own pytester does the same); what the pass
        finds is still reported by pytest.
        """
        if not config.pluginmanager.has_plugin("unraisableexception"):
            return  # `-p no:unraisableexception`: pytest collects nothing, nor does ntdd
        try:
            from _pytest.unraisableexception import gc_collect_iterations_key as key
        except ImportError:  # another pytest: it collects as it always did
            return
        default = 5 if sys.implementation.name == "pypy" else 1  # pytest's own defaults
        for _ in range(config.stash.get(key, default)):
            gc.collect()
        config.stash[key] = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """An `async def` test of a notebook awaits on the notebook's event loop.

        Any test of a notebook draws from the random generators where its cells
        left them (`pytest_runtest_makereport` notes where it leaves them), and
        finds `sys.last_value` where the kernel would have it.
        """
        module = notebook_module(pyfuncitem)
        if module is not None and isinstance(module.__ntdd__, NotebookRuntime):
            module.__ntdd__.resume_generators()
            module.__ntdd__.restore_last_error()
        function = pyfuncitem.obj
        if module is None or not inspect.iscoroutinefunction(function):
            return None
        info = pyfuncitem._fixtureinfo  # the arguments pytest itself would pass
        arguments = {name: pyfuncitem.funcargs[name] for name in info.argnames}
        module.__ntdd__.run_coroutine(function, arguments)
        return True

    @pytest.hookimpl(wrapper=True, specname="pytest_pyfunc_call")
    def pytest_pyfunc_call_as_a_cell(
        self, pyfuncitem: pytest.Function
    ) -> Generator[None, object, object]:
        """A notebook test's code runs as its cell would in a kernel: with the
        notebook's root logger and its event loop running."""
        runtime = runtime_of(pyfuncitem)
        if not isinstance(runtime, NotebookRuntime):
            return (yield)
        with runtime.calling(pyfuncitem):
            return (yield)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        counts = counts_of(self.config)
        if counts.replays:
            terminalreporter.write_line(
                f"ntdd: {counts.replays} test(s) ran out of notebook order; their notebook "
                "was run again from its start for each"
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        if _deadline_key in item.stash:  # a rerun (pytest-rerunfailures): a fresh budget
            del item.stash[_deadline_key]
        with self._contained(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._contained(item), beside_nbval.verdict_of_ntdd(item):
            return (yield)

    @pytest.hookimpl(specname="pytest_runtest_setup", wrapper=True, trylast=True)
    def pytest_runtest_setup_streams(self, item: pytest.Item) -> Generator[None, None, None]:
        """Inside pytest's capture (trylast): the streams the cells write to stay open.

        (pytest takes hooks only from names that start with `pytest_`.)
        """
        with self._streams_kept_open(item):
            return (yield)

    @pytest.hookimpl(specname="pytest_runtest_call", wrapper=True, trylast=True)
    def pytest_runtest_call_streams(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._streams_kept_open(item):
            return (yield)

    def _streams_kept_open(self, item: pytest.Item) -> contextlib.AbstractContextManager[None]:
        if notebook_module(item) is None:
            return _nothing()
        return containment.streams_kept_open(item.nodeid)

    @contextlib.contextmanager
    def _contained(self, item: pytest.Item) -> Iterator[None]:
        """A notebook test's phase, within its time budget, its damage kept in."""
        __tracebackhide__ = True
        if notebook_module(item) is None:
            yield
            return
        deadline = item.stash.get(_deadline_key, None)
        seconds = self._timeout(item)
        if deadline is None and seconds:
            overrun = overrun_of(runtime_of(item), item)
            deadline = item.stash.setdefault(_deadline_key, Deadline(seconds, item.nodeid, overrun))
        notebook_code = _notebook_code(runtime_of(item))
        with (
            containment.contained(item.nodeid, notebook_code),
            deadline.running() if deadline else _nothing(),
        ):
            yield

    def _timeout(self, item: pytest.Item) -> float | None:
        """The cell's `@timeout`, else the stricter of ntdd's and pytest-timeout's own."""
        if notebook_module(item) is None:
            return None
        mark = item.get_closest_marker("timeout")
        given = mark.args[0] if mark is not None and mark.args else None
        if mark is not None and given is None:
            given = mark.kwargs.get("timeout")  # pytest-timeout's spelling
        if given is not None:
            return float(given) or None
        limits = [self.settings.timeout, item.stash.get(_other_timeout_key, None)]
        return min((s for s in limits if s), default=None)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """pytest-timeout's timer for a notebook test: ntdd's deadline keeps it, alone.

        Two timers on one test fail it with whichever fires first. pytest-timeout's
        `timeout` mark is the one ntdd reads (`@timeout` in a marker); its
        `--timeout` counts for notebook tests without one.
        """
        if notebook_module(item) is None:
            return None
        seconds = getattr(settings, "timeout", None)
        if seconds:
            item.stash[_other_timeout_key] = float(seconds)
        return True

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        return True if notebook_module(item) is not None else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """The phase is over: its deadline goes no further, and the notebook's random
        generators are noted where its test left them (for the next test's cells)."""
        timeout.phase_ended()  # a deadline its phase left armed goes no further
        runtime = runtime_of(item)
        if call.when == "call" and isinstance(runtime, NotebookRuntime):
            runtime.keep_generators()
        return (yield)


class CellsInTheirFolder:
    """A notebook test's function runs in the notebook's folder; all else in the session's.

    A wrapper of its own, outside every `pytest_pyfunc_call` (ntdd's for
    `async def` tests included): the test's body is the notebook's cell.
    """

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        runtime = runtime_of(pyfuncitem)
        if not isinstance(runtime, NotebookRuntime):
            return (yield)
        with runtime.in_its_folder():
            return (yield)


_nothing = contextlib.nullcontext


def _notebook_code(runtime: Any) -> Callable[[str], bool]:
    """Whether a frame's file name is the notebook's code: its module, or a cell run as code."""
    if isinstance(runtime, NotebookRuntime):
        return runtime.runs_code_of
    return lambda filename: filename == runtime.filename or filename in runtime.cell_files
