"""`--ntdd-notebook-timeout`: one time budget for each notebook, all its tests together.

A test's timeout bounds one test; a notebook whose setup cells, test cells,
device variants and end test each stay within theirs can still take a CI
job's hour. Each notebook draws on one `Budget` in the process that runs its
tests (under pytest-xdist every test of a notebook runs on one worker:
`ntdd.plugin.scale.xdist`), and each phase of each of its tests runs within
the smaller of the test's own timeout and what is left of the budget
(`Deadline.running`): the budget stops a cell exactly as a test's timeout
does, with the same containment of threads, child processes, a bare
`except:` and the hard end.

When the budget is spent, the test running then fails, and every later test
of the notebook fails without running a cell, all with one message: the
budget, where it was given, and the notebook's slowest cells so far (from
the cells the run records: `ntdd.runtime.cell_log`). Failed, not errored or
skipped: the notebook did not pass, and a CI job must say so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from ntdd.errors import NotebookOutOfTime, NtddTimeout, SetupError
from ntdd.plugin.items import runtime_of
from ntdd.plugin.results.cell_records import cell_records
from ntdd.runtime.cell_log import CellLog
from ntdd.runtime.devices import device_unavailable
from ntdd.runtime.fixtures import device_under_test
from ntdd.runtime.protocol import Runtime
from ntdd.runtime.timeout import Budget

SLOWEST_NAMED = 3  # the slow cells a message names
SHOWN_LEAST = 0.05  # seconds: a quicker cell is no lead, and is not named
OUT_OF_TIME = pytest.StashKey[bool]()  # on a test that failed for its notebook's budget


@dataclass(frozen=True)
class _Cell:
    seconds: float
    index: int
    cell_id: str | None
    device: str


@dataclass
class NotebookTime:
    """One notebook's budget, the cells that spent it, and whether it is spent."""

    budget: Budget
    head: str  # the message's start: the notebook, the budget and where it was given
    cells: dict[tuple[int, str], _Cell] = field(default_factory=dict)  # (cell, device): total
    message: str = ""  # what every later test fails with; "" while time is left

    def add(self, index: int, cell_id: str | None, device: str, seconds: float) -> None:
        """A cell ran (again: a replay adds to its time)."""
        before = self.cells.get((index, device))
        total = seconds + (before.seconds if before is not None else 0.0)
        self.cells[(index, device)] = _Cell(total, index, cell_id, device)

    def spent_in(self, test: str) -> str:
        """The one message, now that *test* spent the budget."""
        ranked = sorted(self.cells.values(), key=lambda cell: -cell.seconds)[:SLOWEST_NAMED]
        devices = {cell.device for cell in self.cells.values()}
        named = ", ".join(_named(c, len(devices) > 1) for c in ranked if c.seconds >= SHOWN_LEAST)
        slowest = f"; slowest cells: {named}" if named else ""
        return f"{self.head} in {test}{slowest}"


def _named(cell: _Cell, device: bool) -> str:
    cell_id = f" (id {cell.cell_id})" if cell.cell_id else ""
    on = f" on {cell.device}" if device and cell.device else ""
    return f"cell {cell.index}{cell_id}{on} {cell.seconds:.2f} s"


class NotebookBudgets:
    """Each notebook's `NotebookTime` in this process, and the phases that spend it."""

    def __init__(self, config: pytest.Config, seconds: float, said: str) -> None:
        self.seconds = seconds
        self.said = said  # where the budget was given: the flag, the ini key, pyproject.toml
        self.log: CellLog = cell_records(config).log  # the run records its cells from now on
        self.notebooks: dict[str, NotebookTime] = {}

    def of(self, runtime: Runtime) -> NotebookTime:
        """*runtime*'s notebook's budget: one for all its tests, made at the first."""
        key = runtime.display_path
        found = self.notebooks.get(key)
        if found is None:
            head = f"notebook {key} ran out of its time budget of {self.seconds:g} s ({self.said})"
            found = self.notebooks[key] = NotebookTime(Budget(self.seconds, head), head)
        return found

    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """A test of a notebook whose budget is spent fails before its fixtures run a cell.

        An implementation, not a wrapper: pytest's skip marks (tryfirst) are read
        before it, and a test they skip stays skipped, as does one for a device this
        machine lacks (its fixture skips it before any cell runs); every other test
        of the notebook fails.
        """
        runtime = runtime_of(item)
        time = self.notebooks.get(runtime.display_path) if runtime is not None else None
        if time is None or not time.message:
            return
        device = device_under_test(item)
        if device is not None and device_unavailable(device):
            return
        item.stash[OUT_OF_TIME] = True
        raise NotebookOutOfTime(time.message)

    @contextlib.contextmanager
    def phase(self, item: pytest.Item, time: NotebookTime) -> Iterator[None]:
        """A phase of *item* that draws on its notebook's budget (its deadline, inside
        this, keeps the time): once the budget is spent, the phase fails with the one
        message, and so does every later test of the notebook."""
        __tracebackhide__ = True
        if time.message:  # spent as the test's setup finished
            item.stash[OUT_OF_TIME] = True
            raise NotebookOutOfTime(time.message)
        logged = len(self.log.runs)
        try:
            yield
        except BaseException as error:
            spent_now = self._spent(item, time, logged)
            if not (spent_now and isinstance(error, (Exception, NtddTimeout))):
                raise  # not the budget's doing: a cell's error, a skip, the user's Ctrl-C
            item.stash[OUT_OF_TIME] = True
            timeout = _timeout_in(error)
            if timeout is None:  # the cell caught the timeout, and raised something else
                raise NtddTimeout(time.message) from error
            timeout.args = (time.message,)  # where it stopped; the message, complete
            if timeout is error:
                raise
            # A setup cell's: the test fails with the cell's frames (not as the test below a
            # broken setup cell errors), its message the budget's.
            raise timeout from None
        else:
            self._spent(item, time, logged)  # just as time ran out: the next test fails

    def _spent(self, item: pytest.Item, time: NotebookTime, logged: int) -> bool:
        """Counts the cells the phase ran; whether the phase spent what was left of the
        budget (then the message is made, with the slowest cells so far)."""
        for run in self.log.runs[logged:]:
            time.add(run.index, run.cell_id, run.device, run.seconds)
        if time.budget.spent and not time.message:
            time.message = time.spent_in(item.name)
            return True
        return False


def _timeout_in(error: BaseException) -> NtddTimeout | None:
    """The timeout that stopped the phase: *error*, or the one a setup cell raised."""
    if isinstance(error, NtddTimeout):
        return error
    cause = error.__cause__ if isinstance(error, SetupError) else None
    return cause if isinstance(cause, NtddTimeout) else None


def out_of_time(item: pytest.Item) -> bool:
    """Whether *item* failed for its notebook's budget: its report is a failure, even where
    a setup cell, or no cell, was running (pytest would count an error)."""
    return item.stash.get(OUT_OF_TIME, False)


def one_line(error: BaseException) -> object:
    """A later test's report: the message alone, no frame (it ran none of its own)."""
    return pytest.ExceptionInfo.from_exception(error).getrepr(style="value")
