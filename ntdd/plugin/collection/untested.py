"""Notebooks passed over for having no `# TEST` cell, said in one line as the run ends.

A folder of notebooks without tests is where nearly everyone starts, and
pytest alone says only "collected 0 items": nothing tells that the notebooks
were found, that none of their cells ran, or how to begin. One line does,
whatever the verbosity (`-v` adds the notebooks' paths); with
`--ntdd-run-untested` such notebooks are tests, and nothing is said.

Under xdist the workers collect and the controller reports: each worker puts
the notebooks it passed over in its `workeroutput`, and the controller says
the line once for all of them.
"""

from __future__ import annotations

from typing import Any

import pytest

from ntdd.defaults import WRITING_TESTS

# What a worker tells the xdist controller, in its `workeroutput`.
_PASSED_OVER = "ntdd_untested"


class UntestedNotebooks:
    """Counts the notebooks collected without a test, and says so at the end."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.paths: set[str] = set()  # node ids: paths relative to the rootdir

    def passed_over(self, nodeid: str) -> None:
        self.paths.add(nodeid)

    def pytest_sessionfinish(self) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[_PASSED_OVER] = sorted(self.paths)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the xdist controller: every worker collected them all; keep each once."""
        output = getattr(node, "workeroutput", None) or {}
        self.paths.update(str(path) for path in output.get(_PASSED_OVER, ()))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.paths or hasattr(self.config, "workerinput"):
            return
        terminalreporter.write_line(line(len(self.paths)))
        if self.config.get_verbosity() > 0:
            for path in sorted(self.paths):
                terminalreporter.write_line(f"ntdd: {path}: no # TEST cell; not run")


def line(count: int) -> str:
    """The one line: how many notebooks were passed over, and how to start."""
    some = "1 notebook has" if count == 1 else f"{count} notebooks have"
    were = "was" if count == 1 else "were"
    return (
        f"ntdd: {some} no # TEST cell and {were} not run: mark a test cell `# TEST` "
        f"({WRITING_TESTS}) or run each as one test with --ntdd-run-untested"
    )
