"""How a notebook test runs: in its cells' folder and event loop, in time, its damage kept in.

Each phase of a notebook test runs within its time budget (ntdd's timeout,
the cell's `@timeout`, or pytest-timeout's, held by one deadline; and what is
left of its notebook's, `budget`) and with
the process damage its cells may do contained; an `async def` test awaits
on the notebook's loop. The session starts by noting the process every
notebook starts from, and ends with one pass of the garbage collector.
"""

from __future__ import annotations

import contextlib
import gc
import inspect
import math
import sys
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from ntdd.plugin.beside import nbval as beside_nbval
from ntdd.plugin.items import notebook_module, runtime_of
from ntdd.plugin.running.budget import NotebookBudgets
from ntdd.plugin.running.overrun import overrun_of
from ntdd.runtime import containment, wakeup
from ntdd.runtime.isolation import BASELINE, ProcessState
from ntdd.runtime.settings import Settings, counts_of
from ntdd.runtime.timeout import Deadline

_deadline_key = pytest.StashKey[Deadline]()
_other_timeout_key = pytest.StashKey[float]()  # pytest-timeout's seconds for a test


class RunHooks:
    """Runs a notebook's tests as its cells would run in a kernel, within their time."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.budgets: NotebookBudgets | None = None  # `--ntdd-notebook-timeout`'s
        if settings.notebook_timeout:
            said = settings.said("notebook_timeout")
            self.budgets = NotebookBudgets(config, settings.notebook_timeout, said)

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

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, object, object]:
        """A notebook test's function runs as its cell would in a kernel: inside every
        implementation of the hook (a wrapper), the runtime's `phase` around it (its
        folder, root logger, event loop, random generators, streams); an `async def`
        test is awaited inside it too (`AwaitsOnTheLoop`, which is no wrapper)."""
        runtime = runtime_of(pyfuncitem)
        if runtime is None:
            return (yield)
        with runtime.phase(pyfuncitem):
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
        with self._contained(item, setup=True):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        own_code = getattr(item, "call_runs_no_cell", False)  # an output check's comparison
        with self._contained(item, own_code), beside_nbval.verdict_of_ntdd(item):
            return (yield)

    @contextlib.contextmanager
    def _contained(
        self, item: pytest.Item, own_code: bool = False, setup: bool = False
    ) -> Iterator[None]:
        """A notebook test's phase, within its time budget, its damage kept in (*own_code*:
        the phase runs ntdd's code alone, `Deadline.running`)."""
        __tracebackhide__ = True
        if notebook_module(item) is None:
            yield
            return
        runtime = runtime_of(item)
        spends = self.budgets.of(runtime) if self.budgets and runtime is not None else None
        if spends is not None and spends.message and setup:
            yield  # the notebook's time is up: its setup runs no cell (`budget` fails it)
            return
        deadline = item.stash.get(_deadline_key, None)
        seconds = self._timeout(item)
        if deadline is None and (seconds or spends) and runtime is not None:
            overrun = overrun_of(runtime, item)
            deadline = Deadline(seconds or math.inf, item.nodeid, overrun)
            item.stash[_deadline_key] = deadline
        runs_code_of = runtime.runs_code_of if runtime is not None else _nobody
        budget = spends.budget if spends is not None else None
        with (
            self.budgets.phase(item, spends) if self.budgets and spends else _nothing(),
            containment.contained(item.nodeid, runs_code_of),
            deadline.running(own_code, budget) if deadline else _nothing(),
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


class AwaitsOnTheLoop:
    """An `async def` test of a notebook is awaited on the notebook's event loop.

    An implementation, not a wrapper: it runs inside every wrapper of
    `pytest_pyfunc_call`, `RunHooks`' phase included, whatever the
    registration order; tryfirst, before any other plugin's implementation.
    """

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        runtime = runtime_of(pyfuncitem)
        function = pyfuncitem.obj
        if runtime is None or not inspect.iscoroutinefunction(function):
            return None
        info = pyfuncitem._fixtureinfo  # the arguments pytest itself would pass
        arguments = {name: pyfuncitem.funcargs[name] for name in info.argnames}
        runtime.run_coroutine(function, arguments)
        return True


_nothing = contextlib.nullcontext


def _nobody(filename: str) -> bool:
    return False
