"""Faults that act where a notebook makes its objects: optimizers and parameters.

A bug written into a notebook sits where the object is made: `SGD(..., lr=0.0)`,
a parameter created frozen, weights initialised ×1e4, an optimizer whose
`zero_grad()` does nothing. Faulting the objects once a test reaches its cell
is too late: the model was built and trained by then. So these faults patch
torch for the whole run with the fault (a forked child, or one run of the
reference way), before the notebook's first cell, and note what they made;
the patches are undone when the run ends.

- `lr0`: each optimizer is made with learning rate 0 (its defaults and every
  group), so a scheduler made on it starts from 0 too; a hand-written step
  (`W -= lr * W.grad` under `no_grad`) changes nothing.
- `stale_grad`: `Optimizer.zero_grad` does nothing, nor a hand-written
  step's `W.grad.zero_()`.
- `detached`: `nn.Parameter` makes its parameters without `requires_grad`.
- `scale`: a model's parameters are multiplied by 1e4 when it is first used
  (its first forward, or an optimizer made on them), after it initialised them.
- `unregistered`: a model's first parameter becomes a plain attribute when
  it is first used (its first forward, or the first look at its parameters).

torch is the one the notebook imports; nothing here imports it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ntdd.faults.finding import Namespace, Seen, counted

SCALE, SCALE_TEXT = 1e4, "1e4"  # explodes activations, and stays finite in float32

Undo = Callable[[], None]


class Made:
    """What one run's creation hooks changed, and how to name it for the report.

    An optimizer is named by the top-level name that holds it (`opt lr 0.5 → 0`),
    parameters by the model that holds them (`model: 4 parameters ×1e4`); what no
    name ever held (an optimizer made inside a function) is counted at the end.
    """

    def __init__(self, seen: Seen, param_text: str = "") -> None:
        self.seen = seen  # shared with the namespace faults: each object changed once
        self.param_text = param_text
        self._objects: dict[int, tuple[weakref.ref[Any], str]] = {}  # id -> (ref, what)
        self._unnamed: dict[int, tuple[str, str]] = {}  # id -> (kind, what), until named
        self._named = Seen()
        self._params = 0  # parameters changed
        self._params_named = 0  # of those, counted under a model's name
        self._texts: list[str] = []  # what changed in no one object (a hand-written update)

    def note(self, obj: Any, what: str) -> None:
        self.seen.add(obj)
        key = id(obj)
        self._objects[key] = (weakref.ref(obj, lambda _ref: self._objects.pop(key, None)), what)
        self._unnamed[key] = (type(obj).__name__, what)

    def note_text(self, text: str) -> None:
        if text not in self._texts:
            self._texts.append(text)

    def note_param(self, param: Any) -> None:
        self.seen.add(param)
        self._params += 1

    def named(self, ns: Namespace, module_type: Any) -> list[str]:
        """What changed in the objects *ns* names, not named before."""
        found = []
        for name, value in list(ns.items()):
            if name.startswith("_") or value in self._named:
                continue
            entry = self._objects.get(id(value))
            if entry is not None and entry[0]() is value:
                self._named.add(value)
                self._unnamed.pop(id(value), None)
                found.append(f"{name}{entry[1]}")
            elif self._params and isinstance(value, module_type):
                mine = [p for p in value.parameters() if p in self.seen and p not in self._named]
                if mine:
                    self._named.add(value)
                    for p in mine:
                        self._named.add(p)
                    self._params_named += len(mine)
                    found.append(f"{name}: {counted(len(mine), 'parameter')}{self.param_text}")
        return found

    def unnamed(self) -> list[str]:
        """What changed in objects no top-level name held (those gone by now too)."""
        found = [f"{kind}{what} (not bound to a name)" for kind, what in self._unnamed.values()]
        found += self._texts
        rest = self._params - self._params_named
        if rest:
            found.append(f"{counted(rest, 'parameter')} of other models{self.param_text}")
        return list(dict.fromkeys(found))


@contextlib.contextmanager
def patched(undo: list[Undo]) -> Iterator[None]:
    """Undo the patches when the run with the fault ends (those added to *undo* meanwhile
    too), and forget them."""
    try:
        yield
    finally:
        for step in reversed(undo):
            step()
        undo.clear()


def _patch(owner: Any, name: str, value: Any) -> Undo:
    had = name in vars(owner)
    before = vars(owner).get(name)
    setattr(owner, name, value)

    def undo() -> None:
        if had:
            setattr(owner, name, before)
        else:
            delattr(owner, name)

    return undo


def _after_optimizer_init(torch: Any, then: Callable[[Any], None]) -> Undo:
    """`then(optimizer)` once an optimizer's own `__init__` has made its groups."""
    optimizer_type = torch.optim.Optimizer
    original = optimizer_type.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        then(self)

    return _patch(optimizer_type, "__init__", init)


def lr0(torch: Any, made: Made) -> list[Undo]:
    """Every optimizer made with learning rate 0: its defaults and each of its groups."""

    def zero(optimizer: Any) -> None:
        if optimizer in made.seen:
            return
        before = []
        for group in optimizer.param_groups:
            before.append(_number(group.get("lr", 0.0)))
            _zero(group, "lr")
        if "lr" in getattr(optimizer, "defaults", {}):
            _zero(optimizer.defaults, "lr")
        lrs = ", ".join(f"{lr:g}" for lr in dict.fromkeys(before))
        made.note(optimizer, f" lr {lrs} → 0")

    def no_step(self: Any) -> bool:
        if _manual_update(torch, self):
            made.note_text("hand-written updates (W -= lr * W.grad) → no-ops, as with lr 0")
            return True
        return False

    return [_after_optimizer_init(torch, zero), *_updates(torch, no_step)]


def _manual_update(torch: Any, tensor: Any) -> bool:
    """An in-place change of a trainable leaf under `no_grad`: a hand-written update step."""
    return bool(tensor.is_leaf and tensor.requires_grad and not torch.is_grad_enabled())


def _updates(torch: Any, skip: Callable[[Any], bool]) -> list[Undo]:
    """Patch `W -= ...`, `W += ...` and `W.sub_(...)`: skipped where *skip(W)* says so.

    Optimizers update with `add_`, `addcdiv_` and friends, never these: only a
    hand-written update step goes through them.
    """
    tensor = torch.Tensor
    undo = []
    for name in ("__isub__", "__iadd__", "sub_"):
        original = getattr(tensor, name)

        def update(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            return self if skip(self) else _original(self, *args, **kwargs)

        undo.append(_patch(tensor, name, update))
    return undo


def stale_grad(torch: Any, made: Made) -> list[Undo]:
    """`Optimizer.zero_grad()` does nothing: gradients add up across steps."""

    def keep_grads(self: Any, set_to_none: bool = True) -> None:
        """The bug of a missing `optimizer.zero_grad()`."""

    def note(optimizer: Any) -> None:
        if optimizer not in made.seen:
            made.note(optimizer, ".zero_grad() → a no-op")

    updated = Seen()  # the trainable tensors a hand-written step updated

    def remember(self: Any) -> bool:
        if _manual_update(torch, self):
            updated.add(self)
        return False

    original_zero = torch.Tensor.zero_

    def zero_(self: Any) -> Any:
        if any(self is p.grad for p in updated.members()):
            made.note_text("hand-written W.grad.zero_() → a no-op")
            return self
        return original_zero(self)

    return [
        _patch(torch.optim.Optimizer, "zero_grad", keep_grads),
        _after_optimizer_init(torch, note),
        *_updates(torch, remember),
        _patch(torch.Tensor, "zero_", zero_),
    ]


def detached(torch: Any, made: Made) -> list[Undo]:
    """`nn.Parameter` makes parameters that do not require grad: the graph is cut."""
    made.param_text = " → requires_grad=False"
    parameter = torch.nn.Parameter
    original = vars(parameter)["__new__"]
    make = original.__func__ if isinstance(original, staticmethod) else original

    def new(cls: Any, data: Any = None, requires_grad: bool = True) -> Any:
        param = make(cls, data, False)
        if requires_grad:
            made.note_param(param)
        return param

    return [_patch(parameter, "__new__", staticmethod(new))]


def scale(torch: Any, made: Made) -> list[Undo]:
    """A model's parameters ×1e4 when first used: its first forward, or an optimizer on them."""
    made.param_text = f" ×{SCALE_TEXT}"
    modules = Seen()
    is_lazy = torch.nn.parameter.is_lazy

    def scaled(params: Iterable[Any]) -> bool:
        """Scale the new ones; whether all were there (a lazy one is made at its forward)."""
        ready = True
        with torch.no_grad():
            for p in params:
                if is_lazy(p):
                    ready = False
                elif p.requires_grad and p.is_leaf and p not in made.seen:
                    p.mul_(SCALE)
                    made.note_param(p)
        return ready

    def before_forward(module: Any, args: Any) -> None:
        if module not in modules and scaled(module.parameters()):
            modules.add(module)

    def on_optimizer(optimizer: Any) -> None:
        scaled(p for group in optimizer.param_groups for p in group["params"])

    handle = torch.nn.modules.module.register_module_forward_pre_hook(before_forward)
    return [handle.remove, _after_optimizer_init(torch, on_optimizer)]


def unregistered(torch: Any, made: Made) -> list[Undo]:
    """A model's first parameter made a plain attribute before anything uses the model:
    before an optimizer gets its parameters, or its first forward."""
    from ntdd.faults.training import first_parameter_is_lazy, unplug

    module_type = torch.nn.Module
    original = module_type.named_parameters

    def unplugged(module: Any) -> None:
        if module in made.seen or any(m in made.seen for m in module.modules()):
            return
        if first_parameter_is_lazy(module):
            return  # made at its first forward: unplugged at its next use
        for m in module.modules():
            made.seen.add(m)
        where = unplug(module)
        if where:
            made.note(module, f"{where} → a plain attribute")

    def named_parameters(self: Any, *args: Any, **kwargs: Any) -> Any:
        unplugged(self)
        return original(self, *args, **kwargs)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: unplugged(module)
    )
    return [handle.remove, _patch(module_type, "named_parameters", named_parameters)]


def _zero(group: dict[str, Any], key: str) -> None:
    value = group[key]
    if hasattr(value, "fill_"):  # a tensor learning rate (capturable, fused): keep it one
        value.fill_(0.0)
    else:
        group[key] = 0.0


def _number(value: Any) -> float:
    return float(value.item() if hasattr(value, "item") else value)
