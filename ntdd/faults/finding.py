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
from collections.abc import Callable, Iterator
from typing import Any

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
        raise NotApplicable("the notebook does not use torch")
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


def tensors(ns: Namespace, seen: Seen, wanted: Callable[[Any], bool]) -> list[tuple[str, Any]]:
    """The data tensors *wanted* picks that the fault has not changed yet.

    Data, not state: parameters and 0-dim tensors (a loss, a count) are left out.
    """
    torch = torch_of(ns)
    return [
        (name, value)
        for name, value in _public(ns)
        if isinstance(value, torch.Tensor)
        and not isinstance(value, torch.nn.Parameter)
        and value.ndim > 0
        and value not in seen
        and wanted(value)
    ]


def replace_each(
    ns: Namespace, seen: Seen, found: list[tuple[str, Any]], change: Callable[[str, Any], Any]
) -> None:
    """Bind each found name to its changed tensor, and remember the new one as changed."""
    for name, value in found:
        ns[name] = change(name, value)
        seen.add(ns[name])


def models(ns: Namespace, seen: Seen) -> list[tuple[str, Any]]:
    """The models not handed to this fault before; handing one out marks it seen."""
    torch = torch_of(ns)
    found = [
        (name, value)
        for name, value in _public(ns)
        if isinstance(value, torch.nn.Module) and value not in seen
    ]
    for _, model in found:
        seen.add(model)
    return found


def optimizers(ns: Namespace, seen: Seen) -> list[tuple[str, Any]]:
    """The optimizers not handed to this fault before; handing one out marks it seen."""
    torch = torch_of(ns)
    found = [
        (name, value)
        for name, value in _public(ns)
        if isinstance(value, torch.optim.Optimizer) and value not in seen
    ]
    for _, optimizer in found:
        seen.add(optimizer)
    return found


def schedulers_of(ns: Namespace, optimizer: Any) -> list[Any]:
    """The learning-rate schedulers in *ns* that drive *optimizer*."""
    torch_of(ns)
    return [
        value
        for _, value in _public(ns)
        if hasattr(value, "base_lrs") and getattr(value, "optimizer", None) is optimizer
    ]


def model_device(ns: Namespace) -> Any:
    """The device of the first model's first parameter: where the notebook computes."""
    torch = torch_of(ns)
    for _, value in _public(ns):
        if isinstance(value, torch.nn.Module):
            for param in value.parameters():
                return param.device
    return torch.device("cpu")


def shape_text(shape: Any) -> str:
    """`(32, 2)`, `(256,)`: a shape as Python writes a tuple."""
    dims = tuple(int(n) for n in shape)
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


def counted(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")
