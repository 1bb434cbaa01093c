"""The kernel's test regions: where their lines are, and the `__ntdd__` they call.

A generated module calls its `NotebookRuntime` (`__ntdd__.needs("cuda")`,
`__ntdd__.broken(...)`, `__ntdd__.run_cell(...)`), and ntdd's pytest plugin
reads a notebook module's runtime to point failures at cells and to await
`async def` tests. In a kernel, the test regions of every `# TEST` cell run
so far make up one virtual module, region after region in the order they
ran; `KernelRuntime` answers both for it, against the kernel's namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import linecache
import threading
from collections.abc import Callable, Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest

from ntdd.format.locate import ModuleLayout
from ntdd.runtime.cell_map import CellMap
from ntdd.runtime.containment import streams_kept_open
from ntdd.runtime.devices import device_value
from ntdd.runtime.region_calls import RegionCalls
from ntdd.runtime.rewrite import compile_always_rewritten
from ntdd.runtime.steps import TOP_LEVEL_AWAIT, remember_lines, show_last_value
from ntdd.values import DEVICE


class KernelRuntime(RegionCalls):
    """One kernel's test regions, and the calls they make into ntdd."""

    ends_the_process = False  # the process is the user's kernel: never ended
    points_at_cells = False  # pytest's reports as they are: the cells are the live kernel's

    def __init__(self, namespace: dict[str, Any], notebook: str) -> None:
        self.namespace = namespace
        self.display_path = notebook
        filename = f"{notebook} (ntdd, in the kernel)"  # no <...>: pytest would hide it
        self.cells = CellMap(namespace, Path(notebook), filename, display_path=notebook)
        self.cells.layout = ModuleLayout([])
        self._lines: list[str] = []

    @property
    def filename(self) -> str:
        return self.cells.filename

    @property
    def layout(self) -> ModuleLayout:
        return self.cells.layout

    # -- the virtual module ------------------------------------------------

    def append(self, marker: str, region: str) -> int:
        """Add a test region after the others; the module line its first line is on."""
        start = len(self._lines) + 2
        self._lines += [f"{marker}\n", *(f"{line}\n" for line in region.split("\n")), "\n"]
        text = "".join(self._lines)
        linecache.cache[self.filename] = (len(text), None, self._lines, self.filename)
        self.cells.layout = ModuleLayout(self._lines)
        return start

    def execute(self, code: str, first_line: int, scope: MutableMapping[str, Any]) -> None:
        """Run a region's code, its lines numbered as in the virtual module."""
        __tracebackhide__ = True
        compiled = compile_always_rewritten(
            "\n" * (first_line - 1) + code, self.filename, TOP_LEVEL_AWAIT
        )
        run_awaiting(eval(compiled, self.namespace, scope))

    # -- what rendered regions call ------------------------------------------

    def run_cell(self, index: int, cell_id: str | None, code: str) -> None:
        """The body of a test cell that runs as notebook code: in the kernel's namespace."""
        __tracebackhide__ = True
        filename = self.cells.cell_filename(index, cell_id, "test cell")
        self.cells.cell_files[filename] = (index, cell_id)
        remember_lines(code, filename)
        compiled = compile_always_rewritten(
            code,
            filename,
            TOP_LEVEL_AWAIT,
            transform=lambda tree: show_last_value(tree.body, code),  # as the kernel shows it
        )
        run_awaiting(eval(compiled, self.namespace))

    def run_coroutine(self, function: Callable[..., Any], arguments: dict[str, Any]) -> None:
        """Await an `async def` test (ntdd's pytest plugin calls this)."""
        __tracebackhide__ = True
        run_awaiting(function(**arguments))

    def phase(self, item: pytest.Item) -> contextlib.AbstractContextManager[None]:
        """Around a test's function: the streams kept open; the rest is the kernel's own
        (its folder, its logger, its event loop, which runs the cell itself)."""
        return streams_kept_open(item.nodeid)

    def runs_code_of(self, filename: str) -> bool:
        """Whether *filename* is the kernel's test regions' or a test cell's run as code."""
        return filename == self.filename or filename in self.cells.cell_files

    def hold_failure(self, tb: Any) -> None:
        """Nothing to free later: the kernel lives on, and its frames are the user's to
        look at (`%debug`)."""

    @contextlib.contextmanager
    def magics_at_top_level(self) -> Iterator[None]:
        """While tests run, their `get_ipython()` runs magics as the cell's top level would.

        A test cell's lines run inside its test function, and IPython would
        give `%time x = f()` that function's locals: `x` would be lost. As
        under `pytest --ntdd`, and as the cell runs without the extension,
        such magics get the notebook's namespace instead.
        """
        original = self.namespace.get("get_ipython")
        if not callable(original):
            yield
            return
        shell = TopLevelShell(original())
        self.namespace["get_ipython"] = lambda: shell
        try:
            yield
        finally:
            self.namespace["get_ipython"] = original

    def device(self) -> Any:
        """The notebook's own `device`, as the `device` fixture gives it; cpu without one."""
        return self.namespace[DEVICE] if DEVICE in self.namespace else device_value("cpu")

    def __repr__(self) -> str:
        return f"<ntdd KernelRuntime for {self.display_path}>"


class TopLevelShell:
    """The kernel's shell, but line magics that take the caller's locals get none.

    With no locals, IPython's magics (`%time`, `%timeit`) run in the
    notebook's namespace. Everything else is the kernel's shell itself.
    """

    def __init__(self, shell: Any) -> None:
        self._shell = shell

    def __getattr__(self, name: str) -> Any:
        return getattr(self._shell, name)

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        shell = self._shell
        magic = shell.find_line_magic(magic_name)
        if magic is None or not getattr(magic, "needs_local_scope", False):
            return shell.run_line_magic(magic_name, line, _stack_depth + 1)
        with shell.builtin_trap:
            return magic(shell.var_expand(line, _stack_depth), local_ns=None)

    def __repr__(self) -> str:
        return repr(self._shell)


def run_awaiting(result: Any) -> None:
    """Await *result* when it is a coroutine, on an event loop of its own.

    The kernel's own loop is running in this thread (the cell is one of its
    callbacks) and cannot be entered again, so the coroutine runs to its end
    on a new loop in a thread of its own while this one waits.
    """
    __tracebackhide__ = True
    if not inspect.iscoroutine(result):
        return
    raised: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(result)
        except BaseException as e:  # handed to the waiting thread, raised there
            raised.append(e)

    thread = threading.Thread(target=target, name="ntdd-await", daemon=True)
    thread.start()
    thread.join()
    if raised:
        raise raised[0]


class CellScope(MutableMapping[str, Any]):
    """The module-level names of a test region run in the kernel.

    Reads see the region's own names, then the kernel's, then `pytest` (which
    the marks ntdd writes use, and a kernel may not have imported). A cell of
    `def test_*` functions defines its names in the kernel, as the kernel would;
    the one function wrapping a cell of bare statements is kept apart, since a
    kernel running that cell would define no such name. Names pytest's assertion
    rewriter binds (`@py_builtins`, `@pytest_ar`) go to the kernel's namespace,
    where the test's functions look them up.
    """

    def __init__(self, namespace: dict[str, Any], keep_apart: bool) -> None:
        self._ns = namespace
        self._own: dict[str, Any] = {}
        self._keep_apart = keep_apart

    def __getitem__(self, key: str) -> Any:
        for names in (self._own, self._ns):
            if key in names:
                return names[key]
        if key == "pytest":
            return pytest
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._target(key)[key] = value

    def __delitem__(self, key: str) -> None:
        del self._target(key)[key]

    def _target(self, key: str) -> dict[str, Any]:
        return self._own if self._keep_apart and not key.startswith("@") else self._ns

    def __iter__(self) -> Iterator[str]:
        return iter({**self._ns, **self._own})

    def __len__(self) -> int:
        return len({**self._ns, **self._own})
