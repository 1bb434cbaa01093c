"""pytest-xdist scheduling that keeps each notebook's tests on one worker.

A notebook's setup is shared by its tests; spread over workers it would run
once per worker, and nbval's cells would run without their state. Notebook
files (and modules ntdd generated) are scheduled as one unit; every other
test is scheduled alone, as `--dist load` does.
"""

from __future__ import annotations

import functools
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

from ntdd.regions import is_generated


class NotebookScheduling(LoadScopeScheduling):  # type: ignore[misc]
    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        if path.endswith(".ipynb") or (path.endswith(".py") and _generated(path)):
            return path
        return nodeid


@functools.lru_cache(maxsize=4096)
def _generated(path: str) -> bool:
    try:
        with Path(path).open(encoding="utf-8") as f:
            return is_generated(f.read(200))
    except (OSError, UnicodeDecodeError):
        return False
