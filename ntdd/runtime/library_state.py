"""Library classes and modules as a notebook found them, put back when it ends.

A notebook that sets an attribute on a library's class or module
(`Path.hello = _hello`, nbdev's `@patch`, `PIL.Image.MAX_IMAGE_PIXELS =
None`) changes it for the rest of its kernel's life; a kernel is then shut
down. Under ntdd the next notebook shares the process, so the dicts of the
modules in `sys.modules`, and of the classes they hold, are copied (shallow:
one dict copy each) when the notebook starts, compared by identity when its
last test has run, and what it changed is put back:

- an attribute set to the notebook's own code (a function of its cells, or
  a property, classmethod or staticmethod of one; a class of its cells),
  whatever its name;
- a public attribute set, added or deleted, where both the old value and
  the new are plain data (None, a number, a string, a tuple of them).

What an import made during the notebook does to the classes of libraries
imported before it (fastcore's `@patch` onto `Path`) stays, as the library
stays imported: a notebook after it imports it without running it again,
as in a process that had imported it. So does what a library sets from its
own code (torch's `torch.cuda.default_generators` after `torch.cuda.init()`),
and any module bound as an attribute (`import a.b` binds `a.b`). The modules
imported during the notebook are copied after the cell that imported them,
so that what the notebook sets on them in later cells is put back too.

Cost, with torch, numpy and matplotlib imported (1,480 modules; 5,400
modules and classes, 96,000 names), on a busy 2-core machine: 65 ms to copy
when a notebook starts, 60 ms to compare and put back when it ends, 60 ms
after each cell that imported a module, 0.2 ms after one that did not.
"""

from __future__ import annotations

import functools
import operator
import sys
import types
from collections.abc import Iterable
from itertools import compress
from typing import Any

from ntdd.runtime.isolation import modules_mark, modules_since

_MISSING: Any = object()
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class a `class` statement made (settable)
_HOLDERS = (property, classmethod, staticmethod)
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
# What other parts put back (`isolation`, `process_wide`), or pytest and its plugins change
# while a test runs (`sys.stdout`, `warnings.showwarning`, `threading.excepthook`).
_LEFT_ALONE = frozenset(
    {"sys", "builtins", "__main__", "__mp_main__", "warnings", "threading", "os"}
)
_LEFT_ALONE_PACKAGES = ("ntdd", "_pytest", "pytest", "pluggy", "xdist", "execnet", "coverage")
_is_class_kind = type.__dict__["__subclasscheck__"].__get__(type)  # issubclass(kind, type)
_Copies = dict[Any, dict[str, Any]]  # module or class -> its dict as found
_IDENTITY_HASH: Any = object.__hash__
_CLASS_IDENTITY: Any = (type.__hash__, type.__eq__)


class LibraryState:
    """The modules and classes of the process as one notebook found them."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self._namespace = namespace  # the notebook's: its functions' globals
        self._copies: _Copies = {}
        self._mark = modules_mark()
        _copy_modules(sys.modules.items(), self._copies, namespace)

    def note_imports(self) -> None:
        """After a stretch of the notebook's code: what the modules it imported set on the
        others is theirs (kept), and they are copied as imported."""
        if modules_mark() == self._mark:
            return
        new = modules_since(self._mark)
        self._mark = modules_mark()
        for obj, found in self._copies.items():
            now = obj.__dict__
            if _same(found, now):
                continue
            for name in found.keys() | now.keys():
                value = now.get(name, _MISSING)
                if value is not found.get(name, _MISSING) and _owner(value) in new:
                    found[name] = value
        modules = ((name, sys.modules.get(name)) for name in new)
        _copy_modules(modules, self._copies, self._namespace)

    def apply(self) -> None:
        """Put back what the notebook set on the modules and classes it found."""
        self.note_imports()
        for obj, found in self._copies.items():
            now = obj.__dict__
            if _same(found, now):
                continue
            for name in list(found.keys() | now.keys()):
                old, new = found.get(name, _MISSING), now.get(name, _MISSING)
                if new is not old and self._notebooks_change(name, old, new):
                    _put_back(obj, name, old)

    def _notebooks_change(self, name: str, old: Any, new: Any) -> bool:
        if isinstance(new, types.ModuleType):
            return False
        if self._is_notebooks(new):
            return True
        return not name.startswith("_") and _plain(old) and _plain(new)

    def _is_notebooks(self, value: Any) -> bool:
        """Whether *value* is the notebook's own code: a function of its cells (or one
        held by a property, classmethod or staticmethod), or a class of its cells."""
        kind = type(value)
        if kind is types.FunctionType:
            return value.__globals__ is self._namespace
        if kind in _HOLDERS:
            return any(self._is_notebooks(f) for f in _wrapped(value))
        if kind is functools.partial:
            return self._is_notebooks(value.func)
        if _is_class_kind(kind):
            module = value.__dict__.get("__module__")
            return module is not None and module == self._namespace.get("__name__")
        return False


def _copy_modules(
    modules: Iterable[tuple[str, Any]], copies: _Copies, namespace: dict[str, Any]
) -> None:
    """Copy the dicts of *modules*, and of the classes (made by Python code) they hold.

    Keyed by the objects themselves, never by `id()`: `id` raises an audit event,
    which the hook ntdd watches processes with (`processes`) would see 20,000 times."""
    found = []
    main = sys.modules.get("__main__")  # the program's, under any name (`__mp_main__`)
    for name, module in list(modules):
        names = getattr(module, "__dict__", None)
        if type(names) is not dict or names is namespace or module is main:
            continue
        if _left_alone(name, names) or type(module).__hash__ is not _IDENTITY_HASH:
            continue
        if module not in copies:
            copies[module] = names.copy()
            found.append(names)
    for names in found:
        values = list(names.values())
        for cls in compress(values, map(_is_class_kind, map(type, values))):
            kind = type(cls)
            if kind is not type and (kind.__hash__, kind.__eq__) != _CLASS_IDENTITY:
                continue  # a metaclass that compares classes its own way
            if cls.__flags__ & _HEAP_TYPE and cls not in copies:
                copies[cls] = cls.__dict__.copy()


def _left_alone(name: str, names: dict[str, Any]) -> bool:
    """Modules whose changes are not the notebook's to put back: the process's own, pytest's,
    ntdd's, and the modules of notebooks (their namespaces)."""
    if name in _LEFT_ALONE or "__ntdd__" in names:
        return True
    top = name.partition(".")[0]
    return top in _LEFT_ALONE_PACKAGES or top.startswith("pytest_")


def _same(found: dict[str, Any], now: Any) -> bool:
    """Unchanged, by identity: the same names bound to the same objects."""
    return (
        len(found) == len(now)
        and all(map(operator.is_, found.values(), now.values()))
        and all(map(operator.is_, found, now))  # a copy shares its names' strings
    )


def _put_back(obj: Any, name: str, old: Any) -> None:
    """Bind *name* on *obj* to *old* again (or remove it, where it was missing)."""
    try:
        if isinstance(obj, types.ModuleType):
            if old is _MISSING:
                obj.__dict__.pop(name, None)
            else:
                obj.__dict__[name] = old
        elif old is _MISSING:
            delattr(obj, name)
        else:
            setattr(obj, name, old)
    except (AttributeError, TypeError):  # a class that refuses: left as it is
        pass


def _owner(value: Any) -> str | None:
    """The module whose code *value* is (a function, a class, or what holds a function)."""
    kind = type(value)
    if kind in _HOLDERS:
        value = next((f for f in _wrapped(value) if f is not None), None)
        kind = type(value)
    if kind is types.FunctionType or _is_class_kind(kind):
        module = getattr(value, "__module__", None)
        return module if isinstance(module, str) else None
    return None


def _plain(value: Any) -> bool:
    """Plain data (or nothing): a value the notebook may set, and no library keeps state in."""
    if value is _MISSING or type(value) in _PLAIN:
        return True
    return type(value) in (tuple, frozenset) and all(type(v) in _PLAIN for v in value)


def _wrapped(attribute: Any) -> tuple[Any, ...]:
    """The functions a property, classmethod or staticmethod holds."""
    if isinstance(attribute, property):
        return (attribute.fget, attribute.fset, attribute.fdel)
    inner = getattr(attribute, "__func__", None)
    return (inner,) if inner is not None else ()
