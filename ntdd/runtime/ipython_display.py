"""IPython's own `display`, publishing through the notebook's shell while its code runs.

`IPython.display.display` (notebook code's own import of it, or a library's:
matplotlib-inline's `show()`, which a mid-cell `plt.show()` calls) formats
and publishes through IPython's singleton shell; without one, as outside a
kernel, it prints the object's `str` instead, and `clear_output` prints a
terminal's line erase. In a kernel the singleton is the shell that
`get_ipython()` names. So while a notebook's code runs, IPython's singleton
is the notebook's shell, seen through `SeenByIPython`: an `InteractiveShell`
by type (IPython checks that), the notebook's shell in every attribute. Its
formatters format (a `_repr_html_` that raises fails the cell, as ntdd's
`display` does), and its `display_pub` publishes into the cell's outputs
where they are recorded.

The singleton is a class attribute of IPython's, process-wide, so it is set
only while the notebook's code runs and put back after: pytest, its plugins
and the next notebook see IPython as it was. Where a real shell is the
singleton (ntdd run inside a kernel), it is left alone. IPython is not
imported for it: where IPython's shell module is not imported yet, it is
set as that module is imported (`_WhenImported`, on `sys.meta_path` only
while the code runs). While matplotlib's inline backend is imported it is
out: the backend sets up the shell it finds as a kernel's, for matplotlib,
which under ntdd `inline_figures` does for the notebook's shell.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

SHELL_MODULE = "IPython.core.interactiveshell"
INLINE_MODULE = "matplotlib_inline.backend_inline"
_MISSING = object()


class Singleton:
    """IPython's singleton shell while one notebook's code runs: the notebook's shell, put
    in when entered (or when IPython's shell module is imported) and taken out on leaving."""

    def __init__(self, shell: Callable[[], Any]) -> None:
        self._shell = shell  # the notebook's shell, asked for at each use: a restart makes another
        self._before: object = _MISSING  # InteractiveShell's own `_instance` before
        self._set = False
        self._held_out = 0  # the inline backend's module is being imported
        self._finder = _WhenImported(self)

    def __enter__(self) -> None:
        sys.meta_path.insert(0, self._finder)
        if SHELL_MODULE in sys.modules:
            self.put_in()

    def __exit__(self, *exc_info: object) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self.take_out()

    def put_in(self) -> None:
        module = sys.modules.get(SHELL_MODULE)
        shell_class = getattr(module, "InteractiveShell", None)
        if shell_class is None or self._set or self._held_out or shell_class.initialized():
            return  # ours already, held out, or a real shell (ntdd run inside a kernel)
        self._before = shell_class.__dict__.get("_instance", _MISSING)
        shell_class._instance = seen_by_ipython(shell_class, self._shell)
        self._set = True

    def hold_out(self) -> None:
        self._held_out += 1
        self.take_out()

    def let_in(self) -> None:
        self._held_out -= 1
        self.put_in()

    def take_out(self) -> None:
        if not self._set:
            return
        self._set = False
        shell_class = sys.modules[SHELL_MODULE].InteractiveShell
        if self._before is not _MISSING:
            shell_class._instance = self._before
        elif "_instance" in shell_class.__dict__:
            del shell_class._instance  # SingletonConfigurable's `None` shows through again


_SEEN: dict[type, type] = {}  # IPython's InteractiveShell: the class of its stand-ins


def seen_by_ipython(shell_class: type, shell: Callable[[], Any]) -> Any:
    """The shell *shell* returns as IPython's singleton: an instance of *shell_class*,
    every attribute the shell's."""
    kind = _SEEN.get(shell_class)
    if kind is None:
        kind = _SEEN[shell_class] = types.new_class("SeenByIPython", (SeenByIPython, shell_class))
    seen: Any = object.__new__(kind)
    object.__setattr__(seen, "_ntdd_shell", shell)
    return seen


class SeenByIPython:
    """The notebook's shell, as IPython's `InteractiveShell.instance()` returns it.

    Mixed into IPython's class (never initialised: none of its state is
    made), it answers every attribute with the notebook's shell's, so that
    `IPython.get_ipython()` is `get_ipython()` in all but its type, as in a kernel.
    """

    _ntdd_shell: Callable[[], Any]

    def __getattribute__(self, name: str) -> Any:
        return getattr(_shell_of(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(_shell_of(self), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(_shell_of(self), name)

    def __repr__(self) -> str:
        return repr(_shell_of(self))


def _shell_of(seen: SeenByIPython) -> Any:
    return object.__getattribute__(seen, "_ntdd_shell")()


class _WhenImported(importlib.abc.MetaPathFinder):
    """Puts the singleton in once IPython's shell module is imported, and keeps it out while
    the inline backend's module is: on import it sets a kernel's shell up for matplotlib
    (`configure_inline_support`) where it finds one, which under ntdd `inline_figures` does."""

    def __init__(self, singleton: Singleton) -> None:
        self._singleton = singleton

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == SHELL_MODULE:
            before, after = _nothing, self._singleton.put_in
        elif fullname == INLINE_MODULE:
            before, after = self._singleton.hold_out, self._singleton.let_in
        else:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is None:
                continue
            if isinstance(spec.loader, importlib.abc.Loader):
                spec.loader = _AroundLoader(spec.loader, before, after)
            return spec
        return None


def _nothing() -> None:
    pass


class _AroundLoader(importlib.abc.Loader):
    """A module's own loader, with a call before the module runs and one after."""

    def __init__(
        self, loader: importlib.abc.Loader, before: Callable[[], None], after: Callable[[], None]
    ) -> None:
        self._loader, self._before, self._after = loader, before, after

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader  # the module's own, once it runs
        module.__loader__ = self._loader
        self._before()
        try:
            self._loader.exec_module(module)
        finally:
            self._after()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)
