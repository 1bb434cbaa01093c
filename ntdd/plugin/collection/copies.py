"""The copies `--ntdd-write-notebooks` wrote, left out of collection, said in one line.

A copy is a run's output (`notebook.copies`), never a notebook to test; the
line says how many were left out and where they are, so that a folder of
notebooks that collects fewer than it holds is not a mystery. Under xdist
the workers collect and the controller reports: each worker puts the copies
it left out in its `workeroutput`, and the controller says the line once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ntdd.notebook.copies import copies_folders, left_out

# What a worker tells the xdist controller, in its `workeroutput`.
_COPIES = "ntdd_copies"


class LeftOutCopies:
    """The copies collection left out (path, the notebook each names), said at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.copies: dict[str, str] = {}  # {path: the notebook it is a copy of}

    def found(self, path: Path, source: str) -> None:
        self.copies.setdefault(str(path), source)

    def pytest_sessionfinish(self) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_COPIES] = sorted(self.copies.items())

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the xdist controller: every worker collected them all; keep each once."""
        output = getattr(node, "workeroutput", None) or {}
        for path, source in output.get(_COPIES, ()):
            self.copies.setdefault(str(path), str(source))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.copies or hasattr(self.config, "workerinput"):
            return
        found = [(Path(path), source) for path, source in sorted(self.copies.items())]
        folders = copies_folders(found, self.config.rootpath)
        terminalreporter.write_line(f"ntdd: {left_out(len(found), folders)}")
        if self.config.get_verbosity() > 0:
            for path, source in found:
                terminalreporter.write_line(f"ntdd: {path}: a copy of {source}; not tested")
