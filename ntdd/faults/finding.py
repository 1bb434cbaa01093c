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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Place:
    """Where a data tensor travels: `X`, `data['x']`, `loader.dataset.tensors[0]`."""

    label: str
    value: Any
    put: Callable[[Any], None]  # binds the place to a new tensor


def tensors(ns: Namespace, seen: Seen, wanted: Callable[[Any], bool]) -> list[Place]:
    """The data tensors *wanted* picks that the fault has not changed yet, wherever they are.

    Data, not state: parameters, tensors that require grad (a hand-written
    model's) and 0-dim tensors (a loss, a count) are left out. Top-level names
    count, and what they hold: dicts, lists and tuples of tensors, a
    `TensorDataset`'s tensors, a loader's or a subset's dataset.
    """
    torch = torch_of(ns)

    def data(value: Any) -> bool:
        return (
            isinstance(value, torch.Tensor)
            and not isinstance(value, torch.nn.Parameter)
            and not value.requires_grad
            and value.ndim > 0
            and value not in seen
            and bool(wanted(value))
        )

    found: list[Place] = []
    for name, value in _public(ns):
        found += _places(name, value, _item_setter(ns, name), data, 0)
    return found


def _places(
    label: str, value: Any, put: Callable[[Any], None], data: Callable[[Any], bool], depth: int
) -> list[Place]:
    if data(value):
        return [Place(label, value, put)]
    if depth >= 3 or isinstance(value, (str, bytes, types.ModuleType, type)):
        return []
    found: list[Place] = []
    if isinstance(value, dict) and depth == 0:
        for key, item in list(value.items()):
            found += _places(f"{label}[{key!r}]", item, _item_setter(value, key), data, depth + 1)
    elif isinstance(value, list) and depth == 0:
        for i, item in enumerate(value):
            found += _places(f"{label}[{i}]", item, _item_setter(value, i), data, depth + 1)
    elif isinstance(value, tuple) and depth == 0:
        items = list(value)  # shared: each changed item goes into one new tuple
        for i, item in enumerate(value):
            found += _places(f"{label}[{i}]", item, _tuple_setter(items, i, put), data, depth + 1)
    elif isinstance(getattr(value, "tensors", None), tuple):  # a TensorDataset
        holder = value
        for i, item in enumerate(value.tensors):
            setter = _attribute_tuple_setter(holder, "tensors", i)
            found += _places(f"{label}.tensors[{i}]", item, setter, data, depth + 1)
    elif _is_dataset_holder(value):  # a DataLoader, a Subset
        found += _places(f"{label}.dataset", value.dataset, lambda new: None, data, depth + 1)
    return found


def _is_dataset_holder(value: Any) -> bool:
    module = str(getattr(type(value), "__module__", "") or "")
    return module.startswith("torch.utils.data") and hasattr(value, "dataset")


def _item_setter(container: Any, key: Any) -> Callable[[Any], None]:
    def put(new: Any) -> None:
        container[key] = new

    return put


def _tuple_setter(
    items: list[Any], index: int, put: Callable[[Any], None]
) -> Callable[[Any], None]:
    def put_item(new: Any) -> None:
        items[index] = new
        put(tuple(items))

    return put_item


def _attribute_tuple_setter(holder: Any, name: str, index: int) -> Callable[[Any], None]:
    def put(new: Any) -> None:
        items = list(getattr(holder, name))
        items[index] = new
        setattr(holder, name, tuple(items))

    return put


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


def handmade_models(ns: Namespace, seen: Seen) -> list[tuple[str, list[Any]]]:
    """Hand-written models: top-level lists, tuples and dicts of tensors, some requiring grad.

    `parameters = [W1, b1, W2, b2]`, as in many lectures, is a model's
    parameters; the leaves among them that require grad and that the fault has
    not changed yet are handed out, and marked seen.
    """
    torch = torch_of(ns)
    found = []
    for name, value in _public(ns):
        items = list(value.values()) if isinstance(value, dict) else value
        if not isinstance(value, (list, tuple, dict)) or not items:
            continue
        if not all(isinstance(t, torch.Tensor) for t in items):
            continue
        params = [t for t in items if t.requires_grad and t.is_leaf and t not in seen]
        for t in params:
            seen.add(t)
        if params:
            found.append((name, params))
    return found


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
