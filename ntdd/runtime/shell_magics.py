"""How the notebook's shell runs a magic: IPython's own implementation, or the notebook's.

A magic runs against the notebook's namespace with IPython's classes
(`ExecutionMagics`, `OSMagics`, `ScriptMagics`, shell aliases), or as the
notebook registered it (`@register_line_magic`); its line is `$`-expanded as
IPython expands it. A magic that only shapes a display does nothing; an
install is dropped with a note; one ntdd cannot run fails the test whose code
uses it, and is dropped with a note from a setup cell.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import keyword
import re
import sys
import types
from collections.abc import Callable
from typing import Any

from ntdd.cells import magics
from ntdd.cells.magics import MagicCall
from ntdd.errors import CannotRunUnderTest, NotUnderNtdd
from ntdd.runtime.notes import note

_NO_VAR_EXPAND = "_ipython_magic_no_var_expand"  # IPython's MAGIC_NO_VAR_EXPAND_ATTR


def _assigns(line: str) -> bool:
    """Whether IPython's `LineInfo(line)` finds a name followed by `=` or `,`
    (`x = 1`, `x == y`, `x, y = y, x`), which its automagic never takes for a
    magic: its `ifun` is the line's first run of word characters where no `.` or
    `*` follows it (its pattern takes those too), and `the_rest` what follows,
    stripped."""
    found = _WORD.match(line)
    if found is None or line[found.end() : found.end() + 1] in (".", "*"):
        return False
    return line[found.end() :].lstrip()[:1] in ("=", ",")


_WORD = re.compile(r"\w+")


class RunsMagics:
    """The part of the notebook's shell that finds and runs magics."""

    user_ns: dict[str, Any]
    user_magics: dict[str, dict[str, Callable[..., Any]]]  # the notebook's own, by kind
    configurables: list[Any]  # what `%config` sets
    _where: Callable[[], str]  # names the notebook cell being run, for notes
    _in_setup: Callable[[], bool]  # whether a setup cell runs, not a test
    _cell_level: Callable[[types.CodeType], bool]  # a test function whose body is a top level

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
        if _assigns(line):
            return None  # most one-line cells (`x = 1`): no IPython import to say so
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
            from IPython.core.error import UsageError  # a kernel's own, where it stops the cell

            raise UsageError(
                f"{self._where()}: Line magic function `%{name}` not found "
                "(a cell magic runs only on the first line of its cell)"
            )
        if kind == "line" and name == "config" and "InlineBackend" in line:
            return self._config_magic
        if magics.does_nothing(name, "%" if kind == "line" else "%%"):
            if kind == "line":
                _import_as_a_kernel_would(name, line)
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
        """Warn that the magic *spelled* is not run: where the runtime says (the
        notebook's line), else where *stacklevel* finds the cell's line."""
        message = f"{self._where()}: {spelled!r} dropped: {reason}"
        dropped = getattr(self, "_dropped", None)
        if dropped is not None:
            dropped(spelled, message)
        else:
            note(message, stacklevel)

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
    def _config_magic(self) -> Callable[..., Any]:
        """IPython's `%config`, for the inline backend's settings (`figure_formats`,
        `print_figure_kwargs`), which the figures shown after it read (`inline_figures`);
        the notebook's other `%config` lines only shape a front-end, and do nothing."""
        from IPython.core.magics.config import ConfigMagics

        from ntdd.runtime.inline_figures import inline_settings

        settings = inline_settings()
        if settings not in self.configurables:
            self.configurables.append(settings)
        # Its function, on this shell: a `ConfigMagics` made on a shell without a kernel's
        # configuration cannot be made (its `config` magic hides its own settings).
        magics: Any = types.SimpleNamespace(shell=self)
        return functools.partial(ConfigMagics.config, magics)

    @functools.cached_property
    def _aliases(self) -> dict[str, Callable[..., Any]]:
        """IPython's shell aliases (`%ls`, `%mkdir`), which run through `system`."""
        from IPython.core.alias import Alias

        return {name: Alias(self, name, cmd) for name, cmd in magics.shell_aliases().items()}

    @functools.cached_property
    def magics_manager(self) -> ShellMagicsManager:
        """Where IPython's `Alias` and completer look for magics, and where notebooks
        register their own (`get_ipython().magics_manager.register`)."""
        return ShellMagicsManager(self)

    def var_expand(self, cmd: str, depth: int = 0) -> str:
        """`$name` and `{expr}` in a magic's line, from the notebook's names (as IPython)."""
        from IPython.utils.text import DollarFormatter

        try:
            return str(DollarFormatter().vformat(cmd, args=[], kwargs=self.user_ns))
        except Exception:  # IPython leaves what it cannot format as it was
            return cmd


def not_under_ntdd(owner: str, name: str, real: type | None) -> NotUnderNtdd:
    """The error for `get_ipython().<name>`: a clear one where a kernel's shell has it,
    the plain `AttributeError` a kernel gives where it does not either."""
    if real is not None and not name.startswith("__") and hasattr(real, name):
        return NotUnderNtdd(
            f"{owner}.{name} is not available under ntdd: the notebook runs in pytest's "
            "process, not in a kernel"
        )
    return NotUnderNtdd(f"{owner!r} has no attribute {name!r}")


class ShellMagicsManager:
    """`get_ipython().magics_manager`, as IPython's `MagicsManager` answers: the magics
    by kind (IPython's own and the notebook's), and registering more."""

    auto_magic = True  # a kernel's default: `cd data` is `%cd data`

    def __init__(self, shell: RunsMagics) -> None:
        self.shell = shell

    @property
    def magics(self) -> dict[str, dict[str, Callable[..., Any]]]:
        own = self.shell.user_magics
        return {kind: {**self.shell._magics[kind], **own[kind]} for kind in ("line", "cell")}

    @property
    def user_magics(self) -> Any:
        return None

    def lsmagic(self) -> dict[str, dict[str, Callable[..., Any]]]:
        """The magics by kind, as `%lsmagic` and IPython's completer read them."""
        return self.magics

    def register(self, *objs: Any) -> None:
        self.shell.register_magics(*objs)

    def load_all_lazy_magics(self) -> None:
        """What `%config` calls first: no magic here is loaded lazily."""

    def register_function(
        self, func: Callable[..., Any], magic_kind: str = "line", magic_name: str | None = None
    ) -> None:
        self.shell.register_magic_function(func, magic_kind, magic_name)

    def __getattr__(self, name: str) -> Any:
        from IPython.core.magic import MagicsManager

        raise not_under_ntdd("get_ipython().magics_manager", name, MagicsManager)


def _import_as_a_kernel_would(name: str, line: str) -> None:
    """The imports a display-only magic makes in a kernel: one that fails there fails
    here, with the kernel's error (`%load_ext line_profiler` without line_profiler)."""
    __tracebackhide__ = True
    needed = magics.needs(name, line)
    for module in needed:
        try:
            importlib.import_module(module)
        except ImportError:
            if module != "ipympl":
                raise
            backend = line.split()[0]
            raise RuntimeError(
                f"{backend!r} is not a recognised GUI loop or backend name"
            ) from None
