"""A module's state and mode: what `state_dict()` misses, and what train/eval changes."""

from __future__ import annotations

import types
from collections.abc import Collection
from typing import TYPE_CHECKING

from ntdd.torch.common import (
    check_module,
    fail,
    import_torch,
    is_module,
    is_tensor,
    model_label,
    plural,
)

if TYPE_CHECKING:
    from torch import nn


def _lost_state(value: object, registered: Collection[int]) -> str:
    """Why *value*, a plain attribute, holds state `state_dict()` misses ("" if none)."""
    if is_tensor(value):  # one with a grad_fn is computed from parameters, not state
        if id(value) in registered or value.grad_fn is not None:
            return ""
        return "a tensor; use register_buffer() or nn.Parameter"
    if not isinstance(value, (list, tuple, dict)):
        return ""
    items = list(value.values()) if isinstance(value, dict) else list(value)
    modules = sum(1 for v in items if is_module(v) and id(v) not in registered)
    tensors = sum(1 for v in items if is_tensor(v) and id(v) not in registered)
    if not (modules or tensors):
        return ""
    kind = "Dict" if isinstance(value, dict) else "List"
    fix = f"nn.Module{kind}" if modules else f"nn.Parameter{kind} or buffers"
    held = " and ".join(plural(n, w) for n, w in [(modules, "module"), (tensors, "tensor")] if n)
    return f"a plain {type(value).__name__} of {held}; use {fix}"


def assert_state_complete(model: nn.Module, *, ignore: Collection[str] = ()) -> None:
    """Check that no submodule keeps tensors or modules where `state_dict()` cannot see them.

    A tensor in a plain attribute is neither saved, loaded, nor moved by `.to()`;
    layers in a plain list are not in `parameters()`, so not trained. *ignore*
    lists qualified attribute names (`encoder.cache`) meant to be transient.
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    check_module(model)
    registered = {id(x) for x in (*model.parameters(), *model.buffers(), *model.modules())}
    internal = set(vars(import_torch().nn.Module()))  # what nn.Module itself keeps in __dict__
    wrong = []
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            qualname = f"{prefix}.{attr}" if prefix else attr
            if attr in internal or qualname in ignore:
                continue
            if problem := _lost_state(value, registered):
                wrong.append(f"{qualname}: {problem}")
    if wrong:
        fail(f"{model_label(model)} keeps state that state_dict() and .to() miss:", wrong)


def assert_mode(model: nn.Module, train: bool = False) -> None:
    """Check that the submodules whose mode matters are in training mode if *train*, else eval.

    Dropout and normalisation layers compute differently in each mode; one left
    in the wrong mode (a custom `.train()`, a copied layer) changes results
    silently. A `Linear` or `ReLU` computes the same either way, so its flag
    is not checked (`mode_dependent` says which modules are).
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    check_module(model)
    want, call = ("training", "train") if train else ("eval", "eval")
    dependent = [(name, m) for name, m in model.named_modules() if mode_dependent(m)]
    wrong = [
        f"{name or 'the model'} ({type(m).__name__}) is in "
        f"{'training' if m.training else 'eval'} mode; expected {want}"
        for name, m in dependent
        if m.training != train
    ]
    if wrong:
        header = (
            f"{len(wrong)} of {len(dependent)} mode-dependent modules of {model_label(model)} "
            f"are not in {want} mode"
        )
        fail(f"{header} (call model.{call}()):", wrong)


def mode_dependent(module: nn.Module) -> bool:
    """Whether *module* itself computes differently in training and eval mode.

    True for dropout and normalisation layers with running statistics,
    recurrent and attention layers (their dropout), modules that override
    `train()`, and modules whose `forward` reads `self.training`.
    """
    nn = import_torch().nn
    if isinstance(module, nn.modules.batchnorm._NormBase):
        return bool(module.track_running_stats)
    kinds = (nn.modules.dropout._DropoutNd, nn.RNNBase, nn.MultiheadAttention)
    if isinstance(module, kinds):
        return True
    cls = type(module)
    if cls.train is not nn.Module.train:
        return True
    forward = getattr(cls, "forward", None)
    code = getattr(forward, "__code__", None)
    return code is not None and _reads_training(code)


def _reads_training(code: types.CodeType) -> bool:
    """Whether *code*, or a function nested in it, reads an attribute named `training`."""
    if "training" in code.co_names:
        return True
    return any(isinstance(c, types.CodeType) and _reads_training(c) for c in code.co_consts)
