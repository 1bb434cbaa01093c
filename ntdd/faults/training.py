"""Faults in a notebook's models, in its namespace: graphs, modes, state, scale.

Each changes the models that are new in the namespace, in place, as a bug in
the notebook would have left them, and returns what it did, one string per
object (`model: 4 parameters ×1e4`). Faults in how objects are made
(optimizers with lr 0, frozen parameters) are in `ntdd.faults.creation`.
"""

from __future__ import annotations

from typing import Any

from ntdd.faults.creation import SCALE, SCALE_TEXT
from ntdd.faults.finding import (
    Namespace,
    NotApplicable,
    Seen,
    counted,
    handmade_models,
    models,
    torch_of,
)


def detached(ns: Namespace, seen: Seen) -> list[str]:
    """`requires_grad_(False)` on every parameter the cell made: the graph is cut.

    `nn.Parameter`s are made frozen where they are made (`ntdd.faults.creation`);
    this reaches hand-written models (`[W1, b1]`) and models made before the fault.
    """
    changed = []
    for name, model in models(ns, seen):
        params = [p for p in model.parameters() if p.requires_grad and p not in seen]
        for p in params:
            p.requires_grad_(False)
            seen.add(p)
        if params:
            changed.append(f"{name}: {counted(len(params), 'parameter')} → requires_grad=False")
    for name, params in handmade_models(ns, seen):
        for p in params:
            p.requires_grad_(False)
        changed.append(f"{name}: {counted(len(params), 'tensor')} → requires_grad=False")
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
    """A model's first parameter becomes a plain tensor attribute, which `state_dict()` drops.

    Models are changed when first used (`ntdd.faults.creation`); this reaches
    the models a cell made that nothing used yet.
    """
    changed = []
    for name, model in models(ns, seen):
        if any(m in seen for m in model.modules() if m is not model):
            continue  # a part of it was changed already
        if first_parameter_is_lazy(model):
            continue
        for m in model.modules():
            seen.add(m)
        where = unplug(model)
        if where:
            changed.append(f"{name}{where} → a plain attribute")
    if not changed:
        raise NotApplicable("no model with parameters")
    return changed


def first_parameter_is_lazy(model: Any) -> bool:
    """A lazy module's parameter is made at its first forward: unplug it after that."""
    owners = (m for m in model.modules() if m._parameters)
    owner = next(owners, None)
    param = next(iter(owner._parameters.values()), None) if owner is not None else None
    return param is not None and lazy(param)


def lazy(param: Any) -> bool:
    return type(param).__name__.startswith("Uninitialized")


def unplug(model: Any) -> str:
    """Make *model*'s first parameter a plain attribute; where it was (`.net.0.weight`), or ""."""
    owner_name, owner = next(
        ((n, m) for n, m in model.named_modules() if m._parameters), ("", None)
    )
    if owner is None:
        return ""
    param_name, param = next(iter(owner._parameters.items()))
    if param is None or lazy(param):
        return ""
    del owner._parameters[param_name]
    plain = param.detach().clone().requires_grad_(param.requires_grad)
    object.__setattr__(owner, param_name, plain)  # in __dict__, where state_dict() is blind
    return "".join(f".{part}" for part in (owner_name, param_name) if part)


def scale(ns: Namespace, seen: Seen) -> list[str]:
    """Every trainable parameter the cell made ×1e4: activations and gradients explode.

    A model's are scaled when it is first used (`ntdd.faults.creation`); this
    reaches hand-written models (`[W1, b1]`) and models no forward used yet.
    """
    torch = torch_of(ns)
    changed = []
    lazy = torch.nn.parameter.is_lazy
    for name, model in models(ns, seen):
        params = [
            p for p in model.parameters() if p.requires_grad and p not in seen and not lazy(p)
        ]
        with torch.no_grad():
            for p in params:
                p.mul_(SCALE)
                seen.add(p)  # shared with another model: scaled once
        if params:
            changed.append(f"{name}: {counted(len(params), 'parameter')} ×{SCALE_TEXT}")
    for name, tensors in handmade_models(ns, seen):
        with torch.no_grad():
            for t in tensors:
                t.mul_(SCALE)
        changed.append(f"{name}: {counted(len(tensors), 'tensor')} ×{SCALE_TEXT}")
    if not changed:
        raise NotApplicable("no model with trainable parameters")
    return changed


def _mode_name(training: bool) -> str:
    return "train" if training else "eval"
