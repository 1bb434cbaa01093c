"""Faults in a notebook's models and optimizers: graphs, modes, state, scale, training steps.

Each changes the models (or optimizers) that are new in the namespace, in
place, as a bug in the notebook would have left them, and returns what it
did, one string per object (`model.0.weight ×1e4`, `opt lr 0.1 → 0`).
"""

from __future__ import annotations

import types
from typing import Any

from ntdd.faults.finding import (
    Namespace,
    NotApplicable,
    Seen,
    counted,
    models,
    optimizers,
    schedulers_of,
    torch_of,
)

SCALE, SCALE_TEXT = 1e4, "1e4"  # explodes activations, and stays finite in float32


def detached(ns: Namespace, seen: Seen) -> list[str]:
    """`requires_grad_(False)` on every parameter: the graph is cut."""
    changed = []
    for name, model in models(ns, seen):
        params = [p for p in model.parameters() if p.requires_grad]
        for p in params:
            p.requires_grad_(False)
        if params:
            changed.append(f"{name}: {counted(len(params), 'parameter')} → requires_grad=False")
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return changed


def mode(ns: Namespace, seen: Seen) -> list[str]:
    """Models whose mode matters flip between train and eval."""
    from ntdd.torch import mode_dependent

    changed = []
    for name, model in models(ns, seen):
        if any(mode_dependent(m) for m in model.modules()):
            before = _mode_name(model.training)
            model.train(not model.training)
            changed.append(f"{name} {before} → {_mode_name(model.training)}")
    if not changed:
        raise NotApplicable("no model with Dropout, normalisation or other mode-dependent layers")
    return changed


def unregistered(ns: Namespace, seen: Seen) -> list[str]:
    """A model's first parameter becomes a plain tensor attribute, which `state_dict()` drops."""
    changed = []
    for name, model in models(ns, seen):
        owner_name, owner = next(
            ((n, m) for n, m in model.named_modules() if m._parameters), ("", None)
        )
        if owner is None:
            continue
        param_name, param = next(iter(owner._parameters.items()))
        del owner._parameters[param_name]
        plain = param.detach().clone().requires_grad_(param.requires_grad)
        object.__setattr__(owner, param_name, plain)  # in __dict__, where state_dict() is blind
        qualified = ".".join(part for part in (name, owner_name, param_name) if part)
        changed.append(f"{qualified} → a plain attribute")
    if not changed:
        raise NotApplicable("no model with parameters")
    return changed


def scale(ns: Namespace, seen: Seen) -> list[str]:
    """Every trainable parameter multiplied by 1e4: activations and gradients explode."""
    torch = torch_of(ns)
    changed = []
    for name, model in models(ns, seen):
        params = [p for p in model.parameters() if p.requires_grad and p not in seen]
        with torch.no_grad():
            for p in params:
                p.mul_(SCALE)
                seen.add(p)  # shared with another model: scaled once
        if params:
            changed.append(f"{name}: {counted(len(params), 'parameter')} ×{SCALE_TEXT}")
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return changed


def lr0(ns: Namespace, seen: Seen) -> list[str]:
    """Every optimizer's learning rate set to 0, its schedulers' too: steps change nothing."""
    changed = []
    for name, optimizer in optimizers(ns, seen):
        before = []
        for group in optimizer.param_groups:
            before.append(_number(group.get("lr", 0.0)))
            _zero(group, "lr")
            if "initial_lr" in group:
                _zero(group, "initial_lr")
        for scheduler in schedulers_of(ns, optimizer):
            scheduler.base_lrs = [0.0 for _ in getattr(scheduler, "base_lrs", ())]
        lrs = ", ".join(f"{lr:g}" for lr in dict.fromkeys(before))
        changed.append(f"{name} lr {lrs} → 0")
    if not changed:
        raise NotApplicable("no optimizer")
    return changed


def stale_grad(ns: Namespace, seen: Seen) -> list[str]:
    """`optimizer.zero_grad()` does nothing: gradients add up across steps."""
    changed = []
    for name, optimizer in optimizers(ns, seen):
        optimizer.zero_grad = types.MethodType(_keep_grads, optimizer)
        changed.append(f"{name}.zero_grad() → a no-op")
    if not changed:
        raise NotApplicable("no optimizer")
    return changed


def _keep_grads(self: Any, set_to_none: bool = True) -> None:
    """`zero_grad` that forgets to zero: the bug of a missing `optimizer.zero_grad()`."""


def _zero(group: dict[str, Any], key: str) -> None:
    value = group[key]
    if hasattr(value, "fill_"):  # a tensor learning rate (capturable, fused): keep it one
        value.fill_(0.0)
    else:
        group[key] = 0.0


def _number(value: Any) -> float:
    return float(value.item() if hasattr(value, "item") else value)


def _mode_name(training: bool) -> str:
    return "train" if training else "eval"
