"""What the faults look for in a notebook's namespace: its data, models and optimizers.

Only top-level names count (those a cell binds, not starting with `_`): a
notebook's inputs are the tensors it binds, its models the `nn.Module`s, its
optimizers the `torch.optim.Optimizer`s. torch is the one the notebook
imported; a notebook that never imported it has nothing a fault could change.
"""

from __future__ import annotations

import sys
import types
import weakref
from collections.abc import Iterator
from typing import Any

from ntdd.faults.results import NO_TORCH

Namespace = dict[str, Any]


class NotApplicable(Exception):
    """The notebook has nothing this fault could change; the message says what is missing."""


class Seen:
    """The objects a fault already changed (or made), by identity, kept alive by nobody.

    A fault changes each object once: a test at a later cell changes only what
    is new there. A `weakref.WeakSet` compares members with `==`, which a
    tensor answers elementwise (and raises on); this compares identities.
    """

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[Any]] = {}

    def add(self, obj: Any) -> None:
        key = id(obj)
        self._refs[key] = weakref.ref(obj, lambda _ref: self._refs.pop(key, None))

    def __contains__(self, obj: object) -> bool:
        ref = self._refs.get(id(obj))
        return ref is not None and ref() is obj

    def __len__(self) -> int:
        return sum(1 for ref in self._refs.values() if ref() is not None)

    def members(self) -> list[Any]:
        return [obj for ref in list(self._refs.values()) if (obj := ref()) is not None]


def torch_of(ns: Namespace) -> Any:
    """The torch the notebook uses, or NotApplicable.

    Another notebook of the run may have imported torch; this one uses it when
    one of its names is torch, part of it, or one of its objects.
    """
    torch = sys.modules.get("torch")
    if (
        torch is None
        or not hasattr(torch, "nn")
        or not any(_of_torch(torch, v) for v in ns.values())
    ):
        raise NotApplicable(NO_TORCH)
    return torch


def _of_torch(torch: Any, value: Any) -> bool:
    """*value* is torch, a part of it, or one of its objects (a model of your own class too)."""
    if isinstance(value, types.ModuleType):
        return str(getattr(value, "__name__", "")).partition(".")[0] == "torch"
    kinds = (torch.Tensor, torch.nn.Module, torch.optim.Optimizer)
    module = str(getattr(type(value), "__module__", "") or "")
    return module.partition(".")[0] == "torch" or isinstance(value, kinds)


def _public(ns: Namespace) -> Iterator[tuple[str, Any]]:
    for name, value in list(ns.items()):
        if not name.startswith("_"):
            yield name, value


def handmade_models(ns: Namespace, seen: Seen) -> list[tuple[str, list[Any]]]:
    """Hand-written models: top-level tensors that require grad, and lists, tuples and dicts
    of tensors some of which do.

    `W = torch.randn(27, 27, requires_grad=True)` and `parameters = [W1, b1,
    W2, b2]`, as in many lectures, are a model's parameters; the leaves among
    them that require grad and that the fault has not changed yet are handed
    out (a list's before the names of its items), and marked seen.
    """
    torch = torch_of(ns)
    found = []
    public = list(_public(ns))
    lists = [(n, v) for n, v in public if isinstance(v, (list, tuple, dict))]
    for name, value in [*lists, *((n, v) for n, v in public if isinstance(v, torch.Tensor))]:
        items = list(value.values()) if isinstance(value, dict) else value
        if isinstance(value, torch.Tensor):
            items = [value] if value.numel() > 1 else []  # not a lone scalar of a demo
        if not items or not all(isinstance(t, torch.Tensor) for t in items):
            continue
        params = [t for t in items if t.requires_grad and t.is_leaf and t not in seen]
        for t in params:
            seen.add(t)
        if params:
            found.append((name, params))
    return found


def shape_text(shape: Any) -> str:
    """`(32, 2)`, `(256,)`: a shape as Python writes a tuple."""
    dims = tuple(int(n) for n in shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def counted(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
