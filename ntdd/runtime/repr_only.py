"""Values a kernel shows by their `repr` alone, so that IPython need not load to show them.

A kernel formats a cell's last expression with IPython's `DisplayFormatter`:
its pretty printer for `text/plain`, and every `_repr_*_` method the value
has. The code that runs (and what it raises) is what a verdict depends on;
the text matters only where outputs are recorded. Importing IPython for it
costs about 50 ms a run, a notebook's only use of IPython on most runs.

For a value of a class that defines its own `__repr__` (a tensor, its
`torch.Size`, an array) and has no `_repr_*_` or `_ipython_*_` method, the
pretty printer calls that `__repr__` once and nothing else runs; for exact
tuples, lists and dicts of such values (a dict's keys plain) it calls each
item's, in `repr`'s order, and a class (of `type`'s own) runs no code. So
`repr(value)` runs the same code a kernel would, raising what it would. While
IPython is not loaded, no printer can have been registered for a type
(`for_type`, `%config`, an extension), so the rule needs no IPython to hold.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any

# Classes whose `repr` runs no notebook code and that IPython prints by `repr`.
PLAIN = frozenset({int, float, complex, bool, str, bytes, range, type(None)})

_MAX_ITEMS = 1000  # IPython's `max_seq_length`: past it, it prints fewer items than `repr`
_MAX_DEPTH = 8
_CONTAINERS = (tuple, list, dict, OrderedDict)


def shown_by_repr(value: Any) -> bool:
    """Whether a kernel's formatting of *value* runs exactly the code `repr(value)` runs."""
    if "IPython" in sys.modules:  # printers may have been registered: ask IPython
        return False
    return formats_as_repr(value)


def formats_as_repr(value: Any) -> bool:
    """Whether IPython's default formatters, none registered, run what `repr(value)` runs."""
    return type(value) in PLAIN or (_no_rich_formats(value) and _pretty_is_repr(value, 0))


def _pretty_is_repr(value: Any, depth: int) -> bool:
    kind = type(value)
    if kind in PLAIN:
        return True
    if isinstance(value, type):  # a class: its name, read without running its code
        return _plain_metaclass(kind)
    if kind in _CONTAINERS and (depth >= _MAX_DEPTH or len(value) > _MAX_ITEMS):
        return False
    if kind in (tuple, list):
        return all(_pretty_is_repr(item, depth + 1) for item in value)
    if kind in (dict, OrderedDict):  # the printer looks each key up: no key's code may run
        return all(
            type(key) in PLAIN and _pretty_is_repr(item, depth + 1) for key, item in value.items()
        )
    return _own_repr(kind)


def _own_repr(kind: type) -> bool:
    """The pretty printer, walking *kind*'s MRO, first meets a `__repr__` of a class
    outside the standard library (which it prints by `repr`), not a printer of its own."""
    for cls in kind.__mro__[:-1]:  # `object`'s repr: the printer shows `<… at 0x…>` its own way
        attributes = vars(cls)
        if "_repr_pretty_" in attributes or "__class__" in attributes:
            return False
        if "__repr__" in attributes:
            return cls.__module__.partition(".")[0] not in _STANDARD
    return False


def _plain_metaclass(kind: type) -> bool:
    """A metaclass that leaves to `type` how a class is shown and its names read."""
    for cls in kind.__mro__:
        if cls is type:
            return True
        attributes = vars(cls)
        if any(not isinstance(attributes.get(name, ""), str) for name in _CLASS_NAMES):
            return False  # a method or a descriptor; a class body's `__module__` is a str
    return False


_CLASS_NAMES = (
    "__repr__",
    "__getattribute__",
    "__getattr__",
    "__module__",
    "__qualname__",
    "__name__",
    "__class__",
    "_repr_pretty_",
)


def _no_rich_formats(value: Any) -> bool:
    """No `_repr_html_`, `_repr_mimebundle_`, `_ipython_display_`, … for IPython's other
    formatters to find on *value*, and no `__getattr__` that could answer for one."""
    own: dict[Any, Any] = {}  # the instance's own attributes
    for cls in reversed(type(value).__mro__[:-1]):  # `object` has nothing to find
        attributes = vars(cls)
        if any(_a_format(name) or name == "__getattr__" for name in attributes):
            return False
        if "__getattribute__" in attributes and cls.__module__ != "builtins":
            return False
        if "__dict__" in attributes:
            descriptor = attributes["__dict__"]
            if type(descriptor) is not _INSTANCE_DICT:
                return False  # a `__dict__` of its own making
            own = descriptor.__get__(value) or {}
    return not any(isinstance(name, str) and _a_format(name) for name in own)


def _a_format(name: str) -> bool:
    return name.startswith(("_repr_", "_ipython_"))


class _Probe:
    pass


_INSTANCE_DICT = type(vars(_Probe)["__dict__"])  # the descriptor every class's instances share
_STANDARD = frozenset(sys.stdlib_module_names) | {"builtins"}
