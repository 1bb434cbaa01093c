"""`get_ipython()` and `display()` for a notebook run outside a kernel.

IPython's input transformer turns `%timeit -n 1 f()` into
`get_ipython().run_line_magic('timeit', '-n 1 f()')`; the shell here answers
those calls with IPython's own magic implementations (`ExecutionMagics`,
`OSMagics`, `ScriptMagics`), run against the notebook's namespace. Magics
that only shape a display or an editing session do nothing; installs and
magics ntdd has no use for under test are dropped with a visible
`NtddWarning`. Display calls work as in a kernel, and their output is
discarded, as a kernel's is for whoever reads only stdout.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ntdd.notebook.magics import DISPLAY_ONLY, RUNNABLE


class NtddWarning(UserWarning):
    """Something in a notebook that ntdd could not do as a kernel would."""


class UsageError(Exception):
    """A magic IPython itself does not know: a kernel stops the cell there, and so does ntdd."""


class NotebookShell:
    """The `get_ipython()` of a notebook under test: magics run in its namespace."""

    def __init__(
        self,
        namespace: dict[str, Any],
        where: Callable[[], str],
        execution_count: Callable[[], int] = lambda: 1,
    ) -> None:
        self.user_ns = namespace
        self._where = where  # names the notebook cell being run, for notes
        self._execution_count = execution_count
        self.parent_header: dict[str, Any] = {}
        self.kernel = QuietKernel()
        self.ast_transformers: list[Any] = []
        self.db: dict[str, Any] = {}  # %bookmark, %cd's history: kept for this run only
        self.dir_stack: list[str] = []
        self.home_dir = str(Path.home())
        self.configurables: list[Any] = []
        namespace.setdefault("_dh", [])  # %cd's history, as a kernel keeps it

    # -- what notebook code reads ----------------------------------------

    @property
    def user_global_ns(self) -> dict[str, Any]:
        return self.user_ns

    @property
    def execution_count(self) -> int:
        return self._execution_count()

    @functools.cached_property
    def display_formatter(self) -> Any:
        from IPython.core.formatters import DisplayFormatter

        return DisplayFormatter()

    @functools.cached_property
    def events(self) -> Any:
        from IPython.core.events import EventManager, available_events

        return EventManager(self, available_events)  # type: ignore[arg-type]

    @functools.cached_property
    def compile(self) -> Any:
        from IPython.core.compilerop import CachingCompiler

        return CachingCompiler()

    # -- magics ------------------------------------------------------------

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        magic = self._find("line", magic_name, f"%{magic_name} {line}")
        if magic is None:
            return None
        kwargs = {"local_ns": None} if getattr(magic, "needs_local_scope", False) else {}
        return magic(self.var_expand(line), **kwargs)

    def run_cell_magic(self, magic_name: str, line: str, cell: str) -> Any:
        magic = self._find("cell", magic_name, f"%%{magic_name} {line}")
        if magic is None:
            return None
        kwargs = {"local_ns": None} if getattr(magic, "needs_local_scope", False) else {}
        return magic(self.var_expand(line), cell, **kwargs)

    def magic(self, arg_s: str) -> Any:
        """The old spelling `get_ipython().magic("env A=1")`."""
        name, _, line = arg_s.lstrip("%").partition(" ")
        return self.run_line_magic(name, line)

    def _find(self, kind: str, name: str, what: str) -> Callable[..., Any] | None:
        if name.startswith("%"):
            raise UsageError(
                f"{self._where()}: Line magic function `%{name}` not found "
                "(a cell magic runs only on the first line of its cell)"
            )
        if name in DISPLAY_ONLY:
            return None
        magic = self._magics.get((kind, name)) if name in RUNNABLE else None
        if magic is None:
            warnings.warn(
                f"{self._where()}: {what.strip()!r} dropped: ntdd does not run it under test",
                NtddWarning,
                stacklevel=4,
            )
        return magic

    @functools.cached_property
    def _magics(self) -> dict[tuple[str, str], Callable[..., Any]]:
        from IPython.core.magics.execution import ExecutionMagics
        from IPython.core.magics.osm import OSMagics
        from IPython.core.magics.script import ScriptMagics

        found: dict[tuple[str, str], Callable[..., Any]] = {}
        for magics_class in (ExecutionMagics, OSMagics, ScriptMagics):
            instance = magics_class(shell=self)
            for kind in ("line", "cell"):
                for name, function in instance.magics[kind].items():
                    found.setdefault((kind, name), function)
        return found

    def var_expand(self, cmd: str, depth: int = 0) -> str:
        """`$name` and `{expr}` in a magic's line, from the notebook's names (as IPython)."""
        from IPython.utils.text import DollarFormatter

        try:
            return str(DollarFormatter().vformat(cmd, args=[], kwargs=self.user_ns))
        except Exception:  # IPython leaves what it cannot format as it was
            return cmd

    # -- what magics call back ---------------------------------------------

    def transform_cell(self, raw_cell: str) -> str:
        from IPython.core.inputtransformer2 import TransformerManager

        return str(TransformerManager().transform_cell(raw_cell))

    def transform_ast(self, node: Any) -> Any:
        return node

    def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> None:
        """Run a cell's code in the namespace (`%%capture` runs its body this way)."""
        code = compile(self.transform_cell(raw_cell), self._where(), "exec", dont_inherit=True)
        exec(code, self.user_ns)

    def ev(self, expr: str) -> Any:
        return eval(expr, self.user_ns)

    def ex(self, cmd: str) -> None:
        exec(cmd, self.user_ns)

    def push(self, variables: dict[str, Any], interactive: bool = True) -> None:
        self.user_ns.update(variables)

    def set_next_input(self, text: str, replace: bool = False) -> None:
        """A front-end feature: nothing to do under test."""

    def system(self, cmd: str) -> int:
        """`!cmd`: run in a shell; its output goes to this process's stdout."""
        done = subprocess.run(
            self.var_expand(cmd), shell=True, capture_output=True, text=True, check=False
        )
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        self.user_ns["_exit_code"] = done.returncode
        return done.returncode

    system_piped = system

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> Any:
        """`x = !cmd`: the command's output lines, as IPython's SList."""
        from IPython.utils.text import SList

        done = subprocess.run(
            self.var_expand(cmd), shell=True, capture_output=True, text=True, check=False
        )
        lines = (done.stdout + done.stderr).splitlines()
        return SList(lines) if split else "\n".join(lines)

    def __repr__(self) -> str:
        return f"<ntdd NotebookShell for {self._where()}>"


class QuietKernel:
    """`get_ipython().kernel` for code that sends display messages itself: nobody listens."""

    def __init__(self) -> None:
        self.session = QuietSession()
        self.iopub_socket = None
        self.shell_streams: list[Any] = []


class QuietSession:
    def send(self, *args: Any, **kwargs: Any) -> None:
        """A message to the front-end; under test there is none."""


class ShellFactory:
    """The `get_ipython` a notebook's namespace holds: one shell, made when first asked for."""

    def __init__(
        self, namespace: dict[str, Any], where: Callable[[], str], count: Callable[[], int]
    ) -> None:
        self._args = (namespace, where, count)
        self.shell: NotebookShell | None = None

    def __call__(self) -> NotebookShell:
        if self.shell is None:
            self.shell = NotebookShell(*self._args)
        return self.shell


def display(*objs: Any, **kwargs: Any) -> Any:
    """The kernel's built-in `display`: output goes nowhere, handles work.

    With `display_id`, a kernel returns a handle whose `.update()` and
    `.display()` change the output later; here they do nothing, as the
    output itself does nothing.
    """
    display_id = kwargs.get("display_id")
    if not display_id:
        return None
    return QuietDisplayHandle(display_id if isinstance(display_id, str) else uuid.uuid4().hex)


class QuietDisplayHandle:
    """A display handle whose output goes nowhere (IPython's `DisplayHandle` prints)."""

    def __init__(self, display_id: str) -> None:
        self.display_id = display_id

    def display(self, obj: Any, **kwargs: Any) -> None:
        """Show *obj* in this handle's place: nothing to show it in."""

    def update(self, obj: Any, **kwargs: Any) -> None:
        """Replace this handle's output: nothing to replace."""

    def __repr__(self) -> str:
        return f"<DisplayHandle display_id={self.display_id}>"
