"""What a rendered test region calls on its module's runtime, whichever runtime it is.

A generated module's `__ntdd__` is a `NotebookRuntime`; in Jupyter,
`%load_ext ntdd` runs the same rendered regions against the kernel's
`KernelRuntime`. The calls both answer alike are written once, here.
"""

from __future__ import annotations

import pytest

from ntdd.runtime.devices import device_unavailable


class RegionCalls:
    """`needs` and `broken`, for a runtime that knows how to name its notebook."""

    display_path: str

    def needs(self, name: str) -> pytest.MarkDecorator:
        """`@cuda` in a marker: skip the test, with the reason, where there is no CUDA."""
        reason = device_unavailable(name)
        return pytest.mark.skipif(bool(reason), reason=f"needs {name}: {reason}")

    def broken(self, index: int, cell_id: str | None, problem: str) -> None:
        """The body of a test cell that cannot run: fail, naming the cell and why."""
        ident = f" (id {cell_id})" if cell_id else ""
        pytest.fail(f"{self.display_path}: cell {index}{ident}: {problem}", pytrace=False)
