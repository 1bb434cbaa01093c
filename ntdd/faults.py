"""The fault set of `ntdd faults`: the field's common PyTorch mistakes, injected.

Each fault changes a notebook's namespace as a test reaches its cell, the
way a real bug would have left it, and says what it changed; a fault with
nothing to change in a notebook says why it does not apply. A fault changes
each object once: *seen* holds what it already changed (or made), so that
the next test at a later cell changes only what is new there. Nothing here
touches a file. torch is only used when the notebook itself has imported it.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Namespace = dict[str, Any]
Seen = weakref.WeakSet[Any]

# Layers that compute differently in training and evaluation mode.
MODE_LAYERS = ("Dropout", "BatchNorm", "InstanceNorm", "AlphaDropout", "FeatureAlphaDropout")


class NotApplicable(Exception):
    """The notebook has nothing this fault could change."""


@dataclass(frozen=True)
class Fault:
    name: str
    description: str
    inject: Callable[[Namespace, Seen], str]  # returns what it changed; raises NotApplicable


def _torch() -> Any:
    torch = sys.modules.get("torch")
    if torch is None:
        raise NotApplicable("the notebook does not use torch")
    return torch


def _modules(ns: Namespace, seen: Seen) -> Iterator[tuple[str, Any]]:
    """Top-level models not changed yet; each is marked changed as it is handed out."""
    torch = _torch()
    for name, value in list(ns.items()):
        if isinstance(value, torch.nn.Module) and not name.startswith("_") and value not in seen:
            seen.add(value)
            yield name, value


def _inputs(ns: Namespace, floating: bool = False) -> Iterator[tuple[str, Any]]:
    """Top-level tensors that are data, not parameters: what a model is fed."""
    torch = _torch()
    for name, value in ns.items():
        if name.startswith("_") or not isinstance(value, torch.Tensor):
            continue
        if isinstance(value, torch.nn.Parameter) or value.ndim == 0:
            continue
        if floating and not value.is_floating_point():
            continue
        yield name, value


def _each_input(
    ns: Namespace, seen: Seen, change: Callable[[Any], Any], floating: bool = False
) -> list[str]:
    names = [name for name, value in _inputs(ns, floating) if value not in seen]
    for name in names:
        ns[name] = change(ns[name])
        seen.add(ns[name])
    if not names:
        raise NotApplicable("no input tensors" if not floating else "no floating-point inputs")
    return names


def _shape(ns: Namespace, seen: Seen) -> str:
    def change(t: Any) -> Any:
        if t.ndim == 1:
            return t.unsqueeze(-1)  # (N,) -> (N, 1): the classic broadcasting bug
        return t.transpose(0, -1) if t.shape[0] != t.shape[-1] else t[0]

    return "reshaped " + ", ".join(_each_input(ns, seen, change))


def _dtype(ns: Namespace, seen: Seen) -> str:
    torch = _torch()
    cast = _each_input(ns, seen, lambda t: t.to(torch.float64), True)
    return "cast to float64: " + ", ".join(cast)


def _device(ns: Namespace, seen: Seen) -> str:
    torch = _torch()
    models = (v for v in ns.values() if isinstance(v, torch.nn.Module))
    model_device = next((p.device for m in models for p in m.parameters()), torch.device("cpu"))
    other = "meta" if model_device.type != "meta" else "cpu"
    return f"moved to {other}: " + ", ".join(_each_input(ns, seen, lambda t: t.to(other)))


def _detach(ns: Namespace, seen: Seen) -> str:
    changed = []
    for name, module in _modules(ns, seen):
        params = [p for p in module.parameters() if p.requires_grad]
        for p in params:
            p.requires_grad_(False)
        if params:
            changed.append(name)
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return "requires_grad=False on the parameters of " + ", ".join(changed)


def _mode(ns: Namespace, seen: Seen) -> str:
    changed = []
    for name, module in _modules(ns, seen):
        if any(type(m).__name__.startswith(MODE_LAYERS) for m in module.modules()):
            module.train(not module.training)
            changed.append(f"{name} -> {'train' if module.training else 'eval'}")
    if not changed:
        raise NotApplicable("no model with Dropout or normalisation layers")
    return "flipped " + ", ".join(changed)


def _unregister(ns: Namespace, seen: Seen) -> str:
    changed = []
    for name, module in _modules(ns, seen):
        owner_name, owner = next(
            ((n, m) for n, m in module.named_modules() if m._parameters), ("", None)
        )
        if owner is None:
            continue
        param_name, param = next(iter(owner._parameters.items()))
        del owner._parameters[param_name]
        plain = param.detach().clone().requires_grad_(param.requires_grad)
        object.__setattr__(owner, param_name, plain)  # in __dict__, where state_dict() is blind
        changed.append(f"{name}.{owner_name + '.' if owner_name else ''}{param_name}")
    if not changed:
        raise NotApplicable("no model with parameters")
    return "plain tensor attribute instead of a parameter: " + ", ".join(changed)


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault("shape", "transpose or drop a dimension of the input tensors", _shape),
        Fault("dtype", "cast the input tensors to float64, not the model", _dtype),
        Fault("device", "move the input tensors off the model's device", _device),
        Fault("detached", "cut the graph: requires_grad_(False) on the parameters", _detach),
        Fault("mode", "flip the model between train and eval mode", _mode),
        Fault("unregistered", "replace a parameter by a plain tensor attribute", _unregister),
    )
}
