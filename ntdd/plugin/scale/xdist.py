"""pytest-xdist scheduling that keeps each notebook's tests on one worker.

A notebook's setup is shared by its tests; spread over workers it would run
once per worker, and nbval's cells would run without their state. Notebook
files (jupytext's text notebooks too, and modules ntdd generated) are
scheduled as one unit; every other
test is scheduled alone, as `--dist load` does, or with its `xdist_group`
under `--dist loadgroup`. Under `--dist worksteal` an idle worker steals
whole notebooks only.

This subclasses xdist's LoadScopeScheduling and uses its internals
(`_split_scope`, the work queues) and WorkStealingScheduling's (its
`check_schedule`): xdist has no public API for either.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling, WorkStealingScheduling
from xdist.scheduler.worksteal import MIN_PENDING, NodePending

from ntdd.format.module import is_generated
from ntdd.notebook.text import has_jupytext_header

SCHEDULED = frozenset({"load", "loadgroup", "worksteal"})  # the `--dist` modes ntdd schedules


def make_scheduler(config: Any, log: Any) -> Any:
    """ntdd's scheduler for `--dist`, or None where xdist's own keeps files together."""
    dist = config.getvalue("dist")
    if dist not in SCHEDULED:
        return None  # each, loadscope, loadfile, no: a notebook is never split
    if dist == "worksteal":
        return NotebookWorkStealing(config, log)
    return NotebookScheduling(config, log, groups=dist == "loadgroup")


def unit_of(nodeid: str, root: Path) -> str:
    """What is scheduled as one: a notebook's file, or the test alone.

    A node id's path is relative to *root*, the rootdir, wherever pytest started.
    """
    path = nodeid.split("::", 1)[0]
    if path.endswith(".ipynb") or (path.endswith((".py", ".md")) and _one_unit(root / path)):
        return path
    return nodeid


class NotebookScheduling(LoadScopeScheduling):  # type: ignore[misc]
    def __init__(self, config: Any, log: Any = None, groups: bool = False) -> None:
        super().__init__(config, log)
        self.groups = groups  # `--dist loadgroup`: other tests go with their xdist_group

    def _split_scope(self, nodeid: str) -> str:
        unit = unit_of(nodeid, self.config.rootpath)
        if unit != nodeid:
            return unit
        if self.groups and nodeid.rfind("@") > nodeid.rfind("]"):
            return nodeid.rsplit("@", 1)[-1]  # as xdist's LoadGroupScheduling does
        return nodeid

    def remove_node(self, node: Any) -> str | None:
        """A worker died (`os._exit`, a segfault): its test failed; reschedule the rest.

        LoadScopeScheduling would queue the test that killed the worker again,
        and it would kill worker after worker; here it counts as done.
        """
        workload = self.assigned_work.pop(node)
        if not self._pending_of(workload):
            return None
        pending = (
            nodeid for unit in workload.values() for nodeid, done in unit.items() if not done
        )
        crashed = str(next(pending))
        for unit in workload.values():
            if crashed in unit:
                unit[crashed] = True
        self.workqueue.update(
            {scope: unit for scope, unit in workload.items() if not all(unit.values())}
        )
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed


class NotebookWorkStealing(WorkStealingScheduling):  # type: ignore[misc]
    """`--dist worksteal` that sends, and steals, a notebook's tests all together.

    A worker answers a steal with all the tests asked for or none, so tests
    asked for together are never split either.
    """

    steal_requested_from_node: Any  # xdist's: the worker a steal was asked of, if any

    def _send_tests(self, node: Any, num: int) -> None:
        super()._send_tests(node, self._whole(self.pending, num))

    def _whole(self, indices: list[int], cut: int) -> int:
        """*cut* moved forward to where no unit has tests on both sides of it."""
        while 0 < cut < len(indices) and self._unit(indices[cut]) == self._unit(indices[cut - 1]):
            cut += 1
        return cut

    def _unit(self, index: int) -> str:
        return unit_of(self.collection[index], self.config.rootpath)

    def check_schedule(self) -> None:
        """xdist's own, but what is stolen from a busy worker is whole units."""
        nodes_up = [
            NodePending(node, pending)
            for node, pending in self.node2pending.items()
            if not node.shutting_down
        ]
        idle = [node for node, pending in nodes_up if len(pending) < MIN_PENDING]
        if not idle:
            return
        if self.pending:
            for i, node in enumerate(idle):
                self._send_tests(node, len(self.pending) // (len(idle) - i))
            idle = [node for node, pending in nodes_up if len(pending) < MIN_PENDING]
            if not idle:
                return
        if self.steal_requested_from_node is not None:
            return  # one steal at a time
        busiest = max(nodes_up, key=lambda n: len(n.pending), default=None)
        stolen: list[int] = []
        if busiest is not None:
            most = max(0, len(busiest.pending) - MIN_PENDING)
            count = min(len(busiest.pending) // 2, most)
            if count:
                cut = self._whole(busiest.pending, len(busiest.pending) - count)
                stolen = busiest.pending[cut:]
        if not stolen:
            for node in idle:
                node.shutdown()
            return
        assert busiest is not None
        busiest.node.send_steal(stolen)
        self.steal_requested_from_node = busiest.node


@functools.lru_cache(maxsize=4096)
def _one_unit(path: Path) -> bool:
    """A module ntdd generated, or a jupytext text notebook: its tests share one setup."""
    try:
        with path.open(encoding="utf-8") as f:
            if is_generated(f.read(200)):
                return True
    except (OSError, UnicodeDecodeError):
        return False
    return has_jupytext_header(path)
