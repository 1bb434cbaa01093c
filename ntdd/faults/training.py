"""Faults in a notebook's hand-written models, in its namespace, and the plain attribute.

A hand-written model is tensors that require grad, bound by the notebook's
cells (`W = torch.randn(27, 27, requires_grad=True)`, `parameters = [W1, b1,
W2, b2]`); `detached` and `scale` change the new ones after each setup cell,
the one that made them (what an `nn.Module` makes is changed where it is
made: `ntdd.faults.models`). `unplug` is how `unregistered` makes a
parameter a plain attribute.
"""

from __future__ import annotations

from typing import Any

from ntdd.faults.finding import Namespace, NotApplicable, Seen, counted, handmade_models, torch_of

SCALE, SCALE_TEXT = 1e4, "1e4"  # explodes activations, and stays finite in float32


def detached(ns: Namespace, seen: Seen) -> list[str]:
    """`requires_grad_(False)` on the hand-written models' tensors the cell made."""
    changed = []
    for name, params in handmade_models(ns, seen):
        for p in params:
            p.requires_grad_(False)
        changed.append(f"{name}: {counted(len(params), 'tensor')} → requires_grad=False")
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return changed


def scale(ns: Namespace, seen: Seen) -> list[str]:
    """The hand-written models' tensors the cell made ×1e4: activations and gradients explode."""
    torch = torch_of(ns)
    changed = []
    for name, tensors in handmade_models(ns, seen):
        with torch.no_grad():
            for t in tensors:
                t.mul_(SCALE)
        changed.append(f"{name}: {counted(len(tensors), 'tensor')} ×{SCALE_TEXT}")
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return changed


def first_parameter_is_lazy(model: Any) -> bool:
    """A lazy module's parameter is made at its first forward: unplug it after that."""
    owners = (m for m in model.modules() if m._parameters)
    owner = next(owners, None)
    param = next(iter(owner._parameters.values()), None) if owner is not None else None
    return param is not None and lazy(param)


def lazy(param: Any) -> bool:
    return type(param).__name__.startswith("Uninitialized")


def unplug(model: Any) -> tuple[str, Any, Any] | None:
    """Make *model*'s first parameter a plain attribute: where it was (`.net.0.weight`), the
    parameter, and the plain tensor now in its place; None where there was none."""
    owner_name, owner = next(
        ((n, m) for n, m in model.named_modules() if m._parameters), ("", None)
    )
    if owner is None:
        return None
    param_name, param = next(iter(owner._parameters.items()))
    if param is None or lazy(param):
        return None
    del owner._parameters[param_name]
    plain = param.detach().clone().requires_grad_(param.requires_grad)
    object.__setattr__(owner, param_name, plain)  # in __dict__, where state_dict() is blind
    return "".join(f".{part}" for part in (owner_name, param_name) if part), param, plain
