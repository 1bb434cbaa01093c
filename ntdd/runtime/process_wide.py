"""What a notebook changes that outlives it in a shared process, put back as a kernel's end would.

A kernel's shutdown takes everything a notebook did to its process with it.
Under ntdd many notebooks share one process, so the runtime puts back, when
a notebook's last test has run, what `isolation` does not hold:

- `builtins`: a kernel puts `display` and `get_ipython` there (library code
  written for notebooks calls `display(...)` without importing it), and
  what a notebook adds to `builtins` must not reach the next notebook;
- matplotlib: a kernel's inline backend (its `MPLBACKEND`, which the
  notebook's environment has as a kernel's has it) closes every pyplot
  figure after each cell, and each notebook starts with its own kernel's
  `rcParams`, inline backend settings (`%config InlineBackend.…`) and no
  figure;
- a library class that still holds one of the notebook's functions (one
  `library_state` left: set in the cell that first imported the library):
  the function reads the notebook's names, which a kernel keeps as long as
  the kernel lives; the notebook's names are then kept for it, so that a
  later notebook calling the method sees what a notebook that patched the
  library it imports would see, not a `NameError`.

Each check costs microseconds when there is nothing to put back.
"""

from __future__ import annotations

import builtins
import copy
import sys
import types
from dataclasses import dataclass
from typing import Any

KERNEL_BUILTINS = ("display", "get_ipython")  # what IPython's shell puts in `builtins`
_MISSING = object()


@dataclass(frozen=True)
class Builtins:
    """`builtins` as a notebook found it."""

    names: dict[str, Any]

    @classmethod
    def capture(cls) -> Builtins:
        return cls(dict(builtins.__dict__))

    def apply(self) -> None:
        """Take out what was added since, and put back what was rebound."""
        current = builtins.__dict__
        if current == self.names:
            return
        for name in current.keys() - self.names.keys():
            del current[name]
        for name, value in self.names.items():
            if current.get(name, _MISSING) is not value:
                current[name] = value


def as_a_kernel_has_them(namespace: dict[str, Any]) -> None:
    """`display` and `get_ipython` in `builtins`, the notebook's own, as a kernel has them."""
    for name in KERNEL_BUILTINS:
        if name in namespace:
            setattr(builtins, name, namespace[name])


INLINE = "module://matplotlib_inline.backend_inline"  # a kernel's `MPLBACKEND`


def close_figures(inline_only: bool = True) -> None:
    """After a cell: pyplot's figures closed, as a kernel's inline backend closes them
    (only that backend does: a notebook that chose another keeps its figures open)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    if inline_only and backend() not in (INLINE, "inline"):
        return
    managers = getattr(getattr(pyplot, "_pylab_helpers", None), "Gcf", None)
    if managers is not None and not getattr(managers, "figs", True):
        return  # no figure open: nothing to close
    pyplot.close("all")


def backend() -> object:
    """matplotlib's backend as set, without resolving an automatic one (which imports)."""
    params = getattr(sys.modules.get("matplotlib"), "rcParams", None)
    return dict.get(params, "backend") if isinstance(params, dict) else None


@dataclass(frozen=True)
class Matplotlib:
    """matplotlib's `rcParams` (None: not imported then) and the inline backend's settings
    (`%config InlineBackend.figure_formats`; None: none made then) as a notebook found them."""

    rc: dict[str, Any] | None
    inline: dict[str, Any] | None = None

    @classmethod
    def capture(cls) -> Matplotlib:
        matplotlib = sys.modules.get("matplotlib")
        params = getattr(matplotlib, "rcParams", None)
        settings = _inline_settings()
        inline = None
        if settings is not None:
            inline = {n: copy.deepcopy(getattr(settings, n)) for n in _settable(settings)}
        return cls(dict(params) if params is not None else None, inline)

    def apply(self) -> None:
        """The figures closed, the `rcParams` put back (those matplotlib loaded, where the
        notebook imported it), the inline backend's settings too (its defaults, where
        the notebook made them): the next notebook starts as in a fresh kernel."""
        self._apply_inline()
        matplotlib = sys.modules.get("matplotlib")
        params = getattr(matplotlib, "rcParams", None)
        if params is None:
            return
        close_figures(inline_only=False)  # a fresh kernel has none
        wanted = self.rc if self.rc is not None else getattr(matplotlib, "rcParamsOrig", None)
        if wanted is None:
            return
        changed = {k: v for k, v in wanted.items() if k != "backend" and params.get(k) != v}
        if changed:
            dict.update(params, changed)  # as `rc_context` puts them back: no validation

    def _apply_inline(self) -> None:
        settings = _inline_settings()
        if settings is None:
            return
        traits = settings.traits(config=True)
        for name in _settable(settings):
            value = self.inline[name] if self.inline is not None else traits[name].default()
            if getattr(settings, name) != value:
                setattr(settings, name, copy.deepcopy(value))


def _inline_settings() -> Any:
    """matplotlib-inline's `InlineBackend` settings, where they were made; else None."""
    config = sys.modules.get("matplotlib_inline.config")
    backend_settings = getattr(config, "InlineBackend", None)
    if backend_settings is None or not backend_settings.initialized():
        return None
    return backend_settings.instance()


def _settable(settings: Any) -> list[str]:
    """Its settings `%config` sets, the deprecated `figure_format` first: setting it sets
    `figure_formats`, which comes after."""
    return sorted(settings.trait_names(config=True), key=lambda n: n != "figure_format")


def patched_classes(namespace: dict[str, Any]) -> bool:
    """Whether a class the notebook did not define holds one of its functions.

    The classes looked at are those its names hold, and those of the modules
    its names hold: where a notebook's `@patch` or `Cls.method = f` lands.
    Each class is looked at once, and only those made by Python code (no
    attribute can be set on a built-in or extension type): a torch notebook's
    names reach thousands of classes, and this runs after every notebook.
    """
    own = namespace.get("__name__")
    classes: dict[int, type] = {}
    for value in list(namespace.values()):
        if isinstance(value, type):
            classes[id(value)] = value
        elif isinstance(value, types.ModuleType) and value.__dict__ is not namespace:
            classes.update((id(m), m) for m in list(vars(value).values()) if isinstance(m, type))
    return any(
        _holds_a_function_of(cls, namespace, own)
        for cls in classes.values()
        if cls.__flags__ & _HEAP_TYPE
    )


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class a `class` statement made
_HOLDERS = (property, classmethod, staticmethod)


def _holds_a_function_of(cls: type, namespace: dict[str, Any], own: Any) -> bool:
    if cls.__module__ == own or cls.__module__ == "__main__":
        return False  # the notebook's own class: it goes with the notebook's names
    for attribute in list(vars(cls).values()):
        kind = type(attribute)
        if kind is types.FunctionType:
            if attribute.__globals__ is namespace:
                return True
        elif kind in _HOLDERS and any(
            getattr(f, "__globals__", None) is namespace for f in _wrapped(attribute)
        ):
            return True
    return False


def _wrapped(attribute: Any) -> tuple[Any, ...]:
    """The functions a property, classmethod or staticmethod holds."""
    if isinstance(attribute, property):
        return (attribute.fget, attribute.fset, attribute.fdel)
    inner = getattr(attribute, "__func__", None)
    return (inner,) if inner is not None else ()
