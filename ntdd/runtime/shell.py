"""`get_ipython()` and `display()` for a notebook run outside a kernel.

IPython's input transformer turns `%timeit -n 1 f()` into
`get_ipython().run_line_magic('timeit', '-n 1 f()')`; the shell here answers
those calls (`shell_magics` runs the magic, `scripts` the script `%run`
runs) and what else notebook code and magics ask of a shell: events,
display formats, what IPython's own formatters read (`shell_parts`), shell
escapes (`!cmd`; an install, `!pip install`, is dropped with a visible
`NtddWarning`, as `%pip` is). Display calls work as
in a kernel: their mime bundle goes to the cell's outputs where a report
records them (`cell_outputs`), and nowhere otherwise, as a kernel's output
does for whoever reads only stdout.
"""

from __future__ import annotations

import ast
import builtins
import functools
import linecache
import subprocess
import sys
import types
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ntdd.cells import magics
from ntdd.cells.cell_code import normalize_newlines
from ntdd.runtime import cell_outputs, inline_figures, unread_figures
from ntdd.runtime.repr_only import PLAIN, shown_by_repr
from ntdd.runtime.scripts import RunsScripts
from ntdd.runtime.shell_magics import RunsMagics, not_under_ntdd
from ntdd.runtime.shell_parts import IPythonParts
from ntdd.runtime.steps import show_last_value


class NotebookShell(RunsScripts, RunsMagics, IPythonParts):
    """The `get_ipython()` of a notebook under test: magics run in its namespace."""

    def __init__(
        self,
        namespace: dict[str, Any],
        where: Callable[[], str],
        execution_count: Callable[[], int] = lambda: 1,
        in_setup: Callable[[], bool] = lambda: False,
        cell_level: Callable[[types.CodeType], bool] = lambda code: False,
        dropped: Callable[[str, str], None] | None = None,
    ) -> None:
        self.user_ns = namespace
        self._dropped = dropped  # says a magic was not run, where the notebook asked for it
        self._cell_level = cell_level  # a test function whose body is a cell's top level
        self._where = where  # names the notebook cell being run, for notes
        self._execution_count = execution_count
        self._in_setup = in_setup  # whether a setup cell runs, not a test
        self.scripts: dict[str, types.ModuleType] = {}  # what `%run` ran, kept alive
        self.parent_header: dict[str, Any] = {}
        self.kernel = QuietKernel()
        self.ast_transformers: list[Any] = []
        self.db: dict[str, Any] = {}  # %bookmark, %cd's history: kept for this run only
        self.dir_stack: list[str] = []
        self.home_dir = str(Path.home())
        self.colors = "neutral"  # a kernel's default: sympy's `init_printing` reads it
        self.configurables: list[Any] = []
        self.user_magics: dict[str, dict[str, Callable[..., Any]]] = {"line": {}, "cell": {}}
        namespace.setdefault("_dh", [])  # %cd's history, as a kernel keeps it

    # -- what notebook code reads ----------------------------------------

    @property
    def user_global_ns(self) -> dict[str, Any]:
        return self.user_ns

    @property
    def execution_count(self) -> int:
        return self._execution_count()

    @property
    def display_formatter(self) -> Any:
        """IPython's formatters, with the inline backend's for figures as it is set now
        (`inline_figures`): a figure shown mid-cell (`plt.show()`) is an image."""
        formatter = self._formatter
        inline_figures.set_up(self)
        unread_figures.wrap_printers(formatter.formatters)
        return formatter

    @functools.cached_property
    def _formatter(self) -> Any:
        return _shell_formatter(self)

    @functools.cached_property
    def display_pub(self) -> DisplayPublisher:
        """Where IPython's own `display` publishes (`ipython_display`): the cell's outputs."""
        return DisplayPublisher()

    @functools.cached_property
    def events(self) -> Any:
        from IPython.core.events import EventManager, available_events

        return EventManager(self, available_events)  # type: ignore[arg-type]

    def showtraceback(self, *args: Any, **kwargs: Any) -> None:
        """What IPython calls for a callback's or a formatter's error: a kernel shows it
        as the cell's error, so here it fails the cell."""
        error = sys.exc_info()[1]
        if error is not None:
            raise error

    def display_like_a_kernel(self, obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """*obj*'s mime bundle and metadata as a kernel computes them
        (`DisplayFormatter.format`): its `__repr__` and `_repr_*_` methods run,
        and what they raise is the cell's error."""
        formatter = self.display_formatter
        if cell_outputs.current() is None:  # nothing records the bundle: figures are checked
            with unread_figures.unread():
                return _bundle(formatter, obj)
        return _bundle(formatter, obj)

    def displayhook(self, value: Any) -> None:
        """A cell's last expression, shown as a kernel shows it (None is not); its
        `Out[n]` in the cell's outputs, where they are recorded."""
        if value is None:
            return
        outputs = cell_outputs.current()
        if type(value) in PLAIN:
            if outputs is not None:
                outputs.result({"text/plain": repr(value)}, {}, self.execution_count)
            return
        if outputs is None and shown_by_repr(value):
            repr(value)  # the code a kernel's formatting runs, and what it raises
            return
        data, metadata = self.display_like_a_kernel(value)
        if outputs is not None:
            outputs.result(data, metadata, self.execution_count)

    @functools.cached_property
    def compile(self) -> Any:
        from IPython.core.compilerop import CachingCompiler

        return CachingCompiler()

    # -- what magics call back ---------------------------------------------

    def transform_cell(self, raw_cell: str) -> str:
        from IPython.core.inputtransformer2 import TransformerManager

        return str(TransformerManager().transform_cell(raw_cell))

    def transform_ast(self, node: Any) -> Any:
        return node

    def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
        """Run a cell's code in the namespace (`%%capture` runs its body this way).

        What it raises propagates: the result IPython's callers look at has
        succeeded when it is returned. A cell magic's body keeps its lines'
        numbers in the running cell, so that a traceback names the line that raised,
        and shows its last expression.
        """
        from IPython.core.interactiveshell import ExecutionResult

        where = self._where()
        source = "\n" * _lines_above(raw_cell, where) + self.transform_cell(raw_cell)
        tree = ast.parse(source, where)
        # Its last expression is shown, `;` or not: IPython's display hook reads the `;`
        # off the running cell, where a cell magic's body is a string in its call.
        show_last_value(tree.body, "")
        exec(compile(tree, where, "exec", dont_inherit=True), self.user_ns)
        return ExecutionResult(None)

    def ev(self, expr: str) -> Any:
        return eval(expr, self.user_ns)

    def ex(self, cmd: str) -> None:
        exec(cmd, self.user_ns)

    def push(self, variables: dict[str, Any], interactive: bool = True) -> None:
        self.user_ns.update(variables)

    def set_next_input(self, text: str, replace: bool = False) -> None:
        """A front-end feature: nothing to do under test."""

    # -- shell escapes -------------------------------------------------------

    def system(self, cmd: str) -> int:
        """`!cmd`: run in a shell; its output goes to this process's stdout.

        An install (`!pip install x`) is not run, as `%pip` is not."""
        command = self.var_expand(cmd)
        if magics.installs(command):
            self._drop(f"!{cmd}", magics.INSTALLS, stacklevel=3)
            return 0
        done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        self.user_ns["_exit_code"] = done.returncode
        return done.returncode

    system_piped = system

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> Any:
        """`x = !cmd`: the command's output lines, as IPython's SList."""
        from IPython.utils.text import SList

        command = self.var_expand(cmd)
        if magics.installs(command):
            self._drop(f"!{cmd}", magics.INSTALLS, stacklevel=3)
            return SList() if split else ""
        done = subprocess.run(command, shell=True, capture_output=True, text=True, check=False)
        lines = (done.stdout + done.stderr).splitlines()
        return SList(lines) if split else "\n".join(lines)

    def __getattr__(self, name: str) -> Any:
        """What a kernel's shell has and this one does not: said so, by name."""
        if name.startswith("_"):
            raise AttributeError(name)
        from IPython.core.interactiveshell import InteractiveShell

        raise not_under_ntdd("get_ipython()", name, InteractiveShell)

    def __repr__(self) -> str:
        return f"<ntdd NotebookShell for {self._where()}>"


def _lines_above(body: str, filename: str) -> int:
    """How many lines of the cell compiled as *filename* come before *body*, its end:
    a cell magic's body (`%%capture`) starts below the magic's line. 0 for code that
    is not the running cell's."""
    cell = "".join(linecache.getlines(filename)).rstrip("\n")
    tail = normalize_newlines(body).rstrip("\n")
    if not tail.strip() or not cell.endswith(tail):
        return 0
    return cell.count("\n", 0, len(cell) - len(tail))


def _bundle(formatter: Any, obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """*obj*'s mime bundle and metadata from IPython's *formatter*, as `DisplayFormatter.format`
    makes them, what a formatter raises propagating."""
    if _unwrapped(formatter.ipython_display_formatter, obj):
        return {}, {}  # it displayed itself
    data, metadata = _split(_unwrapped(formatter.mimebundle_formatter, obj))
    data, metadata = dict(data or {}), dict(metadata or {})
    for mime, format_type in formatter.formatters.items():
        if mime in data or not format_type.enabled:
            continue
        value, meta = _split(_unwrapped(format_type, obj))
        if value is not None:
            data[mime] = value
        if meta is not None:
            metadata[mime] = meta
    return data, metadata


def _shell_formatter(shell: NotebookShell) -> Any:
    """IPython's `DisplayFormatter`, whose figures are checked, not drawn, when IPython's own
    `display` (a mid-cell `plt.show()` calls it) formats for a publisher that keeps nothing:
    no cell's outputs recorded, and no `capture_output` holding the shell's `display_pub`."""
    from IPython.core import display_functions
    from IPython.core.formatters import DisplayFormatter

    displays = display_functions.display.__code__

    class ShellFormatter(DisplayFormatter):
        def format(self, obj: Any, include: Any = None, exclude: Any = None) -> Any:
            unread = (
                sys._getframe(1).f_code is displays
                and cell_outputs.current() is None
                and type(shell.display_pub) is DisplayPublisher
            )
            formats = super().format
            if not unread:
                return formats(obj, include=include, exclude=exclude)  # type: ignore[no-untyped-call]
            with unread_figures.unread():
                return formats(obj, include=include, exclude=exclude)  # type: ignore[no-untyped-call]

    return ShellFormatter()


def _split(value: Any) -> tuple[Any, Any]:
    """A formatter's answer as IPython reads it: data, or a (data, metadata) pair."""
    if isinstance(value, tuple) and len(value) == 2:
        return value
    return value, None


def _unwrapped(formatter: Any, obj: Any) -> Any:
    """Call an IPython formatter without the wrapper that prints its errors away."""
    call = type(formatter).__call__
    try:
        return getattr(call, "__wrapped__", call)(formatter, obj)
    except NotImplementedError:  # IPython's way of saying "no such format"
        return None


class DisplayPublisher:
    """`get_ipython().display_pub`, as IPython's `display` and `clear_output` call it: the
    mime bundle goes to the cell's outputs where they are recorded, and nowhere otherwise,
    as a kernel's display goes to no stream."""

    def publish(
        self,
        data: Any,
        metadata: dict[str, Any] | None = None,
        source: Any = None,
        *,
        transient: dict[str, Any] | None = None,
        update: bool = False,
        **kwargs: Any,
    ) -> None:
        _check_raw(data)  # a kernel's publisher refuses what is not a mime bundle
        outputs = cell_outputs.current()
        if outputs is not None:
            display_id = (transient or {}).get("display_id")
            outputs.display(data, dict(metadata or {}), display_id, update)

    def clear_output(self, wait: bool = False) -> None:
        outputs = cell_outputs.current()
        if outputs is not None:
            outputs.clear(wait)


class QuietKernel:
    """`get_ipython().kernel` for code that sends display messages itself: they go to the
    cell's outputs where those are recorded, as a kernel's front-end shows them."""

    def __init__(self) -> None:
        self.session = QuietSession()
        self.iopub_socket = None
        self.shell_streams: list[Any] = []


class QuietSession:
    def send(
        self, stream: Any, msg_or_type: Any, content: Any = None, *args: Any, **kwargs: Any
    ) -> None:
        """A message to the front-end: a display message (`display_data`,
        `update_display_data`, `execute_result`) is recorded as the notebook would show it;
        anything else has nobody to go to."""
        outputs = cell_outputs.current()
        if outputs is None or not isinstance(content, dict):
            return
        data, metadata = content.get("data") or {}, content.get("metadata") or {}
        display_id = (content.get("transient") or {}).get("display_id")
        if msg_or_type in ("display_data", "update_display_data"):
            update = msg_or_type == "update_display_data"
            outputs.display(data, metadata, display_id, update)
        elif msg_or_type == "execute_result":
            outputs.result(data, metadata, content.get("execution_count"), display_id)


class ShellFactory:
    """The `get_ipython` a notebook's namespace holds: one shell, made when first asked for."""

    def __init__(
        self,
        namespace: dict[str, Any],
        where: Callable[[], str],
        count: Callable[[], int],
        in_setup: Callable[[], bool],
        cell_level: Callable[[types.CodeType], bool],
        dropped: Callable[[str, str], None] | None = None,
    ) -> None:
        self._args = (namespace, where, count, in_setup, cell_level, dropped)
        self.shell: NotebookShell | None = None

    def __call__(self) -> NotebookShell:
        if self.shell is None:
            self.shell = NotebookShell(*self._args)
        return self.shell


def display(*objs: Any, **kwargs: Any) -> Any:
    """The kernel's built-in `display`: objects are formatted as a kernel formats
    them (so their `_repr_html_` runs) and go to the cell's outputs where they are
    recorded; handles work.

    With `display_id`, a kernel returns a handle whose `.update()` and
    `.display()` change the output later; so do they here, in the outputs of
    the cell being recorded.
    """
    factory = sys._getframe(1).f_globals.get("get_ipython")
    if not isinstance(factory, ShellFactory):  # library code: the notebook's, as in a kernel
        factory = getattr(builtins, "get_ipython", None)
    display_id = kwargs.get("display_id")
    if display_id is True:
        display_id = uuid.uuid4().hex
    outputs = cell_outputs.current()
    data: dict[str, Any]
    metadata: dict[str, Any]
    for obj in objs:
        if kwargs.get("raw"):
            _check_raw(obj)
            data, metadata = obj, {}
        elif isinstance(factory, ShellFactory):
            data, metadata = factory().display_like_a_kernel(obj)
        else:
            continue
        if outputs is not None:
            metadata = {**metadata, **(kwargs.get("metadata") or {})}
            outputs.display(data, metadata, display_id or None, bool(kwargs.get("update")))
    if not display_id or kwargs.get("update"):
        return None
    return DisplayHandle(display_id)


def update_display(obj: Any, *, display_id: str, **kwargs: Any) -> None:
    """IPython's `update_display`: the outputs shown with *display_id* now show *obj*."""
    display(obj, display_id=display_id, update=True, **kwargs)


def _check_raw(data: Any) -> None:
    """`display(data, raw=True)` publishes *data* as it is: a kernel refuses a non-dict."""
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got: {data!r}")  # IPython's own words


class DisplayHandle:
    """A display handle, as IPython's: `.display()` shows again, `.update()` replaces."""

    def __init__(self, display_id: str) -> None:
        self.display_id = display_id

    def display(self, obj: Any, **kwargs: Any) -> None:
        """Show *obj* in a new output with this handle's id."""
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj: Any, **kwargs: Any) -> None:
        """Replace the outputs with this handle's id by *obj*."""
        update_display(obj, display_id=self.display_id, **kwargs)

    def __repr__(self) -> str:
        return f"<DisplayHandle display_id={self.display_id}>"
