"""`get_ipython()` and `display()` for a notebook run outside a kernel.

IPython's input transformer turns `%timeit -n 1 f()` into
`get_ipython().run_line_magic('timeit', '-n 1 f()')`; the shell here answers
those calls with IPython's own magic implementations (`ExecutionMagics`,
`OSMagics`, `ScriptMagics`, shell aliases), run against the notebook's
namespace; `%run` runs its script as IPython does, and what the script
raises fails the cell. Magics that only shape a display or an editing
session do nothing; installs (`%pip`, `!pip install`) are dropped with a
visible `NtddWarning`. A magic ntdd cannot run fails the test whose code
uses it, and is dropped with a warning from a setup cell. Display calls work
as in a kernel, and their output is discarded, as a kernel's is for whoever
reads only stdout.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import keyword
import subprocess
import sys
import types
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ntdd.notebook import magics
from ntdd.notebook.magics import MagicCall
from ntdd.runtime.scripts import RunsScripts

# Values whose every display format is their repr, which can neither fail nor
# act: not worth importing IPython's formatters for.
_PLAIN = frozenset({int, float, complex, bool, str, bytes, range, type(None)})
_NO_VAR_EXPAND = "_ipython_magic_no_var_expand"  # IPython's MAGIC_NO_VAR_EXPAND_ATTR


class NtddWarning(UserWarning):
    """Something in a notebook that ntdd could not do as a kernel would."""


class UsageError(Exception):
    """A magic IPython itself does not know: a kernel stops the cell there, and so does ntdd."""


class CannotRunUnderTest(Exception):
    """A magic in a test's code that ntdd cannot run: the code did not run, the test fails."""


class NotebookShell(RunsScripts):
    """The `get_ipython()` of a notebook under test: magics run in its namespace."""

    def __init__(
        self,
        namespace: dict[str, Any],
        where: Callable[[], str],
        execution_count: Callable[[], int] = lambda: 1,
        in_setup: Callable[[], bool] = lambda: False,
        cell_level: Callable[[types.CodeType], bool] = lambda code: False,
    ) -> None:
        self.user_ns = namespace
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

    @functools.cached_property
    def display_formatter(self) -> Any:
        from IPython.core.formatters import DisplayFormatter

        return DisplayFormatter()

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

    def display_like_a_kernel(self, obj: Any) -> None:
        """Compute *obj*'s display formats as a kernel does: its `__repr__` and
        `_repr_*_` methods run, and what they raise is the cell's error."""
        formatter = self.display_formatter
        if _unwrapped(formatter.ipython_display_formatter, obj):
            return
        _unwrapped(formatter.mimebundle_formatter, obj)
        for format_type in formatter.formatters.values():
            if format_type.enabled:
                _unwrapped(format_type, obj)

    def displayhook(self, value: Any) -> None:
        """A cell's last expression, shown as a kernel shows it (None is not)."""
        if value is not None and type(value) not in _PLAIN:
            self.display_like_a_kernel(value)

    def register_magic_function(
        self, func: Callable[..., Any], magic_kind: str = "line", magic_name: str | None = None
    ) -> None:
        """A notebook's own magic (`@register_line_magic`): it runs as it would in a kernel."""
        name = magic_name or func.__name__
        for kind in ("line", "cell") if magic_kind == "line_cell" else (magic_kind,):
            self.user_magics[kind][name] = func

    def register_magics(self, *objs: Any) -> None:
        """A notebook's `@magics_class`, or an instance of one."""
        for obj in objs:
            instance = obj(shell=self) if isinstance(obj, type) else obj
            for kind in ("line", "cell"):
                self.user_magics[kind].update(instance.magics[kind])

    def find_magic(self, name: str, magic_kind: str = "line") -> Callable[..., Any] | None:
        """The magic *name* would run, for automagic and `register_line_magic`'s callers."""
        found = self.user_magics[magic_kind].get(name) or self._magics[magic_kind].get(name)
        if found is None and magic_kind == "line":
            found = self._aliases.get(name)
        return found

    def automagic(self, line: str) -> str | None:
        """A one-line cell that calls a magic without `%` (`cd data`), as IPython's
        automagic reads it; None when the line is Python (or names no magic)."""
        from IPython.core.splitinput import LineInfo

        info = LineInfo(line)
        if not info.ifun or info.the_rest[:1] in ("=", ",") or info.pre_char:
            return None
        head = info.ifun.split(".", 1)[0]
        if head in self.user_ns or hasattr(builtins, head) or keyword.iskeyword(head):
            return None  # IPython's `is_shadowed`: Python wins
        if self.find_magic(info.ifun) is None and not magics.known_line_magic(info.ifun):
            return None
        name, _, rest = f"{info.ifun} {info.the_rest}".partition(" ")
        return f"{info.pre_whitespace}get_ipython().run_line_magic({name!r}, {rest!r})"

    @functools.cached_property
    def compile(self) -> Any:
        from IPython.core.compilerop import CachingCompiler

        return CachingCompiler()

    # -- magics ------------------------------------------------------------

    def run_line_magic(self, magic_name: str, line: str, _stack_depth: int = 1) -> Any:
        __tracebackhide__ = True
        magic = self._find("line", magic_name, line)
        if magic is None:
            return None
        kwargs = {}
        if getattr(magic, "needs_local_scope", False):
            kwargs["local_ns"] = self._local_scope(sys._getframe(_stack_depth))
        return magic(self._line_for(magic, magic_name, line), **kwargs)

    def run_cell_magic(self, magic_name: str, line: str, cell: str) -> Any:
        __tracebackhide__ = True
        magic = self._find("cell", magic_name, line)
        if magic is None:
            return None
        kwargs = {}
        if getattr(magic, "needs_local_scope", False):
            kwargs["local_ns"] = self._local_scope(sys._getframe(1))
        return magic(self._line_for(magic, magic_name, line), cell, **kwargs)

    def _local_scope(self, caller: types.FrameType) -> Any:
        """The scope a magic runs in, as IPython passes it: the caller's locals in a
        function body, the notebook's namespace (None) at a cell's top level."""
        code = caller.f_code
        if not code.co_flags & inspect.CO_NEWLOCALS or self._cell_level(code):
            return None
        return caller.f_locals

    def magic(self, arg_s: str) -> Any:
        """The old spelling `get_ipython().magic("env A=1")`."""
        __tracebackhide__ = True
        name, _, line = arg_s.lstrip("%").partition(" ")
        return self.run_line_magic(name, line, _stack_depth=2)

    def _find(self, kind: str, name: str, line: str) -> Callable[..., Any] | None:
        """The magic to run, or None for one that does not run (with a note where due)."""
        __tracebackhide__ = True
        own = self.user_magics[kind].get(name)
        if own is not None:
            return own
        spelled = MagicCall(name, line, "%" if kind == "line" else "%%").spelled
        if name.startswith("%"):
            raise UsageError(
                f"{self._where()}: Line magic function `%{name}` not found "
                "(a cell magic runs only on the first line of its cell)"
            )
        if magics.does_nothing(name):
            return None
        if magics.is_install(name, line):
            self._drop(spelled, magics.INSTALLS)
            return None
        reason = magics.cannot_run(name, line)
        found = self._magics[kind].get(magics.name_of(name)) if reason is None else None
        if found is None and reason is None and kind == "line":
            found = self._aliases.get(name)
        if found is None:
            self._cannot_run(spelled, reason or magics.UNKNOWN)
        return found

    def _line_for(self, magic: Callable[..., Any], name: str, line: str) -> str:
        """The line as IPython passes it: `$name` expanded unless the magic says not,
        with the options a magic always gets under test (`%prun -q`)."""
        if not getattr(magic, _NO_VAR_EXPAND, False):
            line = self.var_expand(line)
        extra = magics.UNDER_TEST.get(name)
        return f"{extra} {line}" if extra else line

    def _cannot_run(self, spelled: str, reason: str) -> None:
        """A test's code that cannot run fails the test; in a setup cell it is dropped."""
        __tracebackhide__ = True
        if self._in_setup():
            self._drop(spelled, reason, stacklevel=5)
            return
        raise CannotRunUnderTest(f"{self._where()}: {spelled!r} cannot run under test: {reason}")

    def _drop(self, spelled: str, reason: str, stacklevel: int = 4) -> None:
        """Warn that the magic *spelled* is not run; *stacklevel* finds the cell's line."""
        note(f"{self._where()}: {spelled!r} dropped: {reason}", stacklevel)

    @functools.cached_property
    def _magics(self) -> dict[str, dict[str, Callable[..., Any]]]:
        """IPython's own magics, by kind and name, bound to this shell."""
        from IPython.core.magics.execution import ExecutionMagics
        from IPython.core.magics.osm import OSMagics
        from IPython.core.magics.script import ScriptMagics

        found: dict[str, dict[str, Callable[..., Any]]] = {"line": {}, "cell": {}}
        for magics_class in (ExecutionMagics, OSMagics, ScriptMagics):
            instance = magics_class(shell=self)
            for kind in ("line", "cell"):
                for name, function in instance.magics[kind].items():
                    found[kind].setdefault(name, function)
        return found

    @functools.cached_property
    def _aliases(self) -> dict[str, Callable[..., Any]]:
        """IPython's shell aliases (`%ls`, `%mkdir`), which run through `system`."""
        from IPython.core.alias import Alias

        return {name: Alias(self, name, cmd) for name, cmd in magics.shell_aliases().items()}

    @property
    def magics_manager(self) -> Any:
        """Where IPython's `Alias` looks for a magic of the same name, and where
        notebooks register their own (`get_ipython().magics_manager.register`)."""
        return types.SimpleNamespace(
            magics=self._magics,
            register=self.register_magics,
            register_function=self.register_magic_function,
        )

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

    def run_cell(self, raw_cell: str, *args: Any, **kwargs: Any) -> Any:
        """Run a cell's code in the namespace (`%%capture` runs its body this way).

        What it raises propagates: the result IPython's callers look at has
        succeeded when it is returned.
        """
        from IPython.core.interactiveshell import ExecutionResult

        code = compile(self.transform_cell(raw_cell), self._where(), "exec", dont_inherit=True)
        exec(code, self.user_ns)
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

    def __repr__(self) -> str:
        return f"<ntdd NotebookShell for {self._where()}>"


def note(message: str, stacklevel: int) -> None:
    """Warn with an `NtddWarning`, which is ntdd's note and never the cell's error:
    where a filter (`filterwarnings = error`) would raise it, it is shown instead."""
    try:
        warnings.warn(message, NtddWarning, stacklevel=stacklevel + 1)
    except NtddWarning:
        with warnings.catch_warnings():
            warnings.simplefilter("always", NtddWarning)
            warnings.warn(message, NtddWarning, stacklevel=stacklevel + 1)


def _unwrapped(formatter: Any, obj: Any) -> Any:
    """Call an IPython formatter without the wrapper that prints its errors away."""
    call = type(formatter).__call__
    try:
        return getattr(call, "__wrapped__", call)(formatter, obj)
    except NotImplementedError:  # IPython's way of saying "no such format"
        return None


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
        self,
        namespace: dict[str, Any],
        where: Callable[[], str],
        count: Callable[[], int],
        in_setup: Callable[[], bool],
        cell_level: Callable[[types.CodeType], bool],
    ) -> None:
        self._args = (namespace, where, count, in_setup, cell_level)
        self.shell: NotebookShell | None = None

    def __call__(self) -> NotebookShell:
        if self.shell is None:
            self.shell = NotebookShell(*self._args)
        return self.shell


def display(*objs: Any, **kwargs: Any) -> Any:
    """The kernel's built-in `display`: objects are formatted as a kernel formats
    them (so their `_repr_html_` runs), the output goes nowhere, handles work.

    With `display_id`, a kernel returns a handle whose `.update()` and
    `.display()` change the output later; here they do nothing, as the
    output itself does nothing.
    """
    factory = sys._getframe(1).f_globals.get("get_ipython")
    for obj in objs:
        if kwargs.get("raw"):
            _check_raw(obj)
        elif isinstance(factory, ShellFactory):
            factory().display_like_a_kernel(obj)
    display_id = kwargs.get("display_id")
    if not display_id:
        return None
    return QuietDisplayHandle(display_id if isinstance(display_id, str) else uuid.uuid4().hex)


def _check_raw(data: Any) -> None:
    """`display(data, raw=True)` publishes *data* as it is: a kernel refuses a non-dict."""
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict, got: {data!r}")  # IPython's own words


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
