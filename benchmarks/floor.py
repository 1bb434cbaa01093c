"""The floor: a notebook's code cells run as plain Python, all notebooks in one process.

What no notebook test runner can beat: each notebook's cells, IPython syntax
transformed, exec'd in order in a fresh namespace: the same cells ntdd runs
(cells marked `# NTDD: skip`, `# NBVAL_SKIP` or tagged `ntdd-skip` are left
out, as ntdd leaves them out). A cell that raises is counted and skipped, as
`--allow-errors` would. Usage: floor.py NB.ipynb...
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


class _Shell:
    """Just enough `get_ipython()` for transformed magics: run cell bodies, drop the rest."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self.ns = ns

    def run_cell_magic(self, name: str, line: str, cell: str) -> None:
        if name in ("time", "timeit", "capture"):
            exec(cell, self.ns)

    def run_line_magic(self, name: str, line: str) -> None:
        return None

    def system(self, cmd: str) -> None:
        os.system(cmd)

    def getoutput(self, cmd: str) -> list[str]:
        return os.popen(cmd).read().splitlines()


def run(path: Path) -> int:
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    ns: dict[str, Any] = {"__name__": "__main__"}
    shell = _Shell(ns)
    ns["get_ipython"] = lambda: shell
    failures = 0
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for cell in cells:
            if cell.get("cell_type") != "code":
                continue
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            if _skipped(source, cell.get("metadata", {}).get("tags", [])):
                continue
            try:
                exec(compile(transform(source), str(path), "exec"), ns)
            except BaseException:  # the floor counts failures and goes on
                failures += 1
    finally:
        os.chdir(cwd)
    return failures


def _skipped(source: str, tags: list[str]) -> bool:
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")
    return (
        first.upper().startswith("# NTDD: SKIP")
        or "# NBVAL_SKIP" in source.splitlines()
        or "ntdd-skip" in tags
    )


if __name__ == "__main__":
    failed = sum(run(Path(p)) for p in sys.argv[1:])
    print(f"{len(sys.argv) - 1} notebooks, {failed} cells raised")
