"""pytest-xdist scheduling that keeps each notebook's tests on one worker.

A notebook's setup is shared by its tests; spread over workers it would run
once per worker, and nbval's cells would run without their state. Notebook
files (jupytext's text notebooks too, and modules ntdd generated) are
scheduled as one unit; every other
test is scheduled alone, as `--dist load` does, or with its `xdist_group`
under `--dist loadgroup`. `--dist worksteal` would move single tests of a
notebook to an idle worker: it is scheduled as `load` is.

This subclasses xdist's LoadScopeScheduling and uses its internals
(`_split_scope`, the work queues): xdist has no public API for either.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from xdist.scheduler import LoadScopeScheduling

from ntdd.format.module import is_generated
from ntdd.notebook.text import has_jupytext_header

SCHEDULED = frozenset({"load", "loadgroup", "worksteal"})  # the `--dist` modes ntdd schedules


def make_scheduler(config: Any, log: Any) -> Any:
    """ntdd's scheduler for `--dist`, or None where xdist's own keeps files together."""
    dist = config.getvalue("dist")
    if dist not in SCHEDULED:
        return None  # each, loadscope, loadfile, no: a notebook is never split
    return NotebookScheduling(config, log, groups=dist == "loadgroup")


class NotebookScheduling(LoadScopeScheduling):  # type: ignore[misc]
    def __init__(self, config: Any, log: Any = None, groups: bool = False) -> None:
        super().__init__(config, log)
        self.groups = groups  # `--dist loadgroup`: other tests go with their xdist_group

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.endswith(".ipynb") or (path.endswith((".py", ".md")) and _one_unit(path)):
            return path
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


@functools.lru_cache(maxsize=4096)
def _one_unit(path: str) -> bool:
    """A module ntdd generated, or a jupytext text notebook: its tests share one setup."""
    try:
        with Path(path).open(encoding="utf-8") as f:
            if is_generated(f.read(200)):
                return True
    except (OSError, UnicodeDecodeError):
        return False
    return has_jupytext_header(Path(path))
