"""`Runtime`: what a generated module's `__ntdd__` answers, whichever runtime it is.

A module ntdd generated holds a `NotebookRuntime`; in Jupyter, `%load_ext
ntdd` runs the same rendered test regions against the kernel's
`KernelRuntime`. The pytest plugin reads either through this protocol and
never asks which it has: what differs is said by two attributes, not by a
type check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import pytest

from ntdd.runtime.cell_map import CellMap


class Runtime(Protocol):
    """The runtime of a notebook's module, as the rendered regions and the plugin call it."""

    cells: CellMap  # its cells, and where each line of its code sits
    display_path: str  # how messages name its notebook
    ends_the_process: bool  # an overrun may end the process (not a user's kernel)
    points_at_cells: bool  # reports are rewritten to the notebook's cells and file

    def phase(self, item: pytest.Item) -> contextlib.AbstractContextManager[None]:
        """Around a test's function: its code run as its cell would run in a kernel."""
        ...

    def runs_code_of(self, filename: str) -> bool:
        """Whether code compiled under *filename* is the notebook's."""
        ...

    def run_coroutine(self, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
        """Await an `async def` test, as the notebook's kernel would."""
        ...

    def run_cell(self, index: int, cell_id: str | None, code: str) -> None:
        """The body of a test cell that runs as notebook code."""
        ...

    def needs(self, name: str) -> pytest.MarkDecorator: ...

    def broken(self, index: int, cell_id: str | None, problem: str) -> None: ...

    def hold_failure(self, tb: Any) -> None:
        """A failure's report is written: the runtime may free its frames later."""
        ...
