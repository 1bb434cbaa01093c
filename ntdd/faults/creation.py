"""Faults that act where a notebook makes its objects: models, optimizers, modes.

A bug written into a notebook sits where the object is made: `SGD(..., lr=0.0)`,
a model whose weights start ×1e4, a parameter left frozen, a training loop
without `optimizer.zero_grad()` or `model.eval()`. Faulting the objects once a
test reaches its cell is too late: the model was built and trained by then.
So these faults patch torch for the whole run with the fault (a forked
child, or one run of the reference way), before the notebook's first cell,
and note what they made; the patches are undone when the run ends.

What a test's own code makes or calls is the test's (`Made.testing`): a
clone a round-trip test builds, an optimizer a test makes, its `model.eval()`.
No bug written into the notebook's setup cells touches those, so no fault does.

- `lr0`: each optimizer is made with learning rate 0 (its defaults and every
  group), so a scheduler made on it starts from 0 too; a hand-written step
  (`W -= lr * W.grad` under `no_grad`, `W.data -= lr * W.grad`) changes nothing.
- `stale_grad`: `zero_grad()` of the notebook's optimizers does nothing, nor
  does a hand-written `W.grad = None` or `W.grad.zero_()` in its setup cells.
- `detached`, `scale`: a model's parameters (and the tensors that require
  grad it holds as plain attributes, as hand-written models do) are made
  frozen, or ×1e4, at the end of its construction, where the bug sits; a
  lazy module's once its first forward made them (`models`).
- `unregistered`: a model's first parameter becomes a plain tensor attribute
  before anything uses the model (its first forward, the first look at its
  parameters), or right after the first forward of a lazy one made it: an
  optimizer made on its parameters misses it, and one that got the lazy
  parameter from `parameters()` already updates a tensor the model no longer
  reads, as with the plain tensor of the bug written in. An optimizer made
  earlier on the attribute itself (`SGD([model.net.weight], ...)`) trains the
  plain tensor instead, as the attribute would have handed it over with the
  bug written in where the model is made.
- `mode`: the notebook's `model.eval()` calls (and `train(False)`) are left
  out, for models whose mode matters: the notebook's own `model.train()`
  calls still act, as they would with the bug.

torch is the one the notebook imports; nothing here imports it.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from ntdd.faults import models
from ntdd.faults.finding import Namespace, Seen, counted
from ntdd.faults.training import SCALE, SCALE_TEXT, first_parameter_is_lazy, unplug

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
        self.testing = False  # a test's own code runs: what it makes or calls is its own
        self._objects: dict[int, tuple[weakref.ref[Any], str]] = {}  # id -> (ref, what)
        self._unnamed: dict[int, tuple[str, str]] = {}  # id -> (kind, what), until named
        self._named = Seen()
        self._noted = Seen()  # the parameters changed
        self._params = 0  # how many
        self._params_named = 0  # of those, counted under a model's name
        self._texts: list[str] = []  # what changed in no one object (a hand-written update)
        self._trainable: dict[int, weakref.ref[Any]] = {}  # data_ptr -> a trainable tensor

    def remember_trainable(self, tensors: list[Any]) -> None:
        """Tensors the notebook trains, so that an update through `W.data` is known as one."""
        for t in tensors:
            with contextlib.suppress(Exception):
                self._trainable[t.data_ptr()] = weakref.ref(t)

    def holds_data_of(self, tensor: Any) -> bool:
        """*tensor* is `W.data` of a tensor the notebook trains."""
        try:
            ref = self._trainable.get(tensor.data_ptr())
        except Exception:
            return False
        param = ref() if ref is not None else None
        return param is not None and param.requires_grad and param.shape == tensor.shape

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
        if param not in self._noted:
            self._noted.add(param)
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
                mine = [t for t in models.trainable(value, frozen_too=True) if t in self._noted]
                mine = [t for t in mine if t not in self._named]
                if mine:
                    self._named.add(value)
                    for t in mine:
                        self._named.add(t)
                    self._params_named += len(mine)
                    found.append(f"{name}: {counted(len(mine), 'parameter')}{self.param_text}")
        return found

    def unnamed(self) -> list[str]:
        """What changed in objects no top-level name held (those gone by now too)."""
        found = [f"{kind}{what} (not bound to a name)" for kind, what in self._unnamed.values()]
        found += self._texts
        rest = max(0, self._params - self._params_named)
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


def patch(owner: Any, name: str, value: Any) -> Undo:
    """Set *owner.name* to *value*; the undo puts back what was there."""
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

    return patch(optimizer_type, "__init__", init)


def lr0(torch: Any, made: Made) -> list[Undo]:
    """Every optimizer the notebook makes has learning rate 0: its defaults and each group."""

    def zero(optimizer: Any) -> None:
        if optimizer in made.seen or made.testing:
            return
        before = []
        for group in optimizer.param_groups:
            before.append(_number(group.get("lr", 0.0)))
            _zero(group, "lr")
        if "lr" in getattr(optimizer, "defaults", {}):
            _zero(optimizer.defaults, "lr")
        lrs = ", ".join(f"{lr:g}" for lr in dict.fromkeys(before))
        made.note(optimizer, f" lr {lrs} → 0")
        made.remember_trainable([p for g in optimizer.param_groups for p in g["params"]])

    def no_step(self: Any) -> bool:
        if _manual_update(torch, self, made):
            made.note_text("hand-written updates (W -= lr * W.grad) → no-ops, as with lr 0")
            return True
        return False

    return [_after_optimizer_init(torch, zero), *_updates(torch, no_step)]


def _manual_update(torch: Any, tensor: Any, made: Made) -> bool:
    """An in-place change of a trainable leaf under `no_grad`, or of its `.data`:
    a hand-written update step."""
    if tensor.requires_grad:
        return bool(tensor.is_leaf and not torch.is_grad_enabled())
    return made.holds_data_of(tensor)


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

        undo.append(patch(tensor, name, update))
    return undo


def stale_grad(torch: Any, made: Made) -> list[Undo]:
    """`zero_grad()` of the notebook's optimizers does nothing: gradients add up across steps;
    so do a hand-written `W.grad = None` and `W.grad.zero_()`."""
    original_zero_grad = torch.optim.Optimizer.zero_grad

    def keep_grads(self: Any, set_to_none: bool = True) -> None:
        """The bug of a missing `optimizer.zero_grad()`: for the notebook's optimizers, who
        ever calls it (a test's own optimizer zeroes its gradients)."""
        if self not in made.seen:
            original_zero_grad(self, set_to_none)

    def note(optimizer: Any) -> None:
        if optimizer not in made.seen and not made.testing:
            made.note(optimizer, ".zero_grad() → a no-op")

    updated = Seen()  # the trainable tensors a hand-written step updated

    def remember(self: Any) -> bool:
        if _manual_update(torch, self, made):
            updated.add(self)
        return False

    original_zero = torch.Tensor.zero_

    def zero_(self: Any) -> Any:
        if not made.testing and any(self is p.grad for p in updated.members()):
            made.note_text("hand-written W.grad.zero_() → a no-op")
            return self
        return original_zero(self)

    grad = vars(torch._C.TensorBase)["grad"]

    def set_grad(self: Any, value: Any) -> None:
        if value is None and not made.testing and self.is_leaf and self.requires_grad:
            made.note_text("W.grad = None → a no-op")
            return
        grad.__set__(self, value)

    return [
        patch(torch.optim.Optimizer, "zero_grad", keep_grads),
        _after_optimizer_init(torch, note),
        *_updates(torch, remember),
        patch(torch.Tensor, "zero_", zero_),
        patch(torch.Tensor, "grad", property(grad.__get__, set_grad, grad.__delete__)),
    ]


def detached(torch: Any, made: Made) -> list[Undo]:
    """A model's parameters made without `requires_grad`: the graph is cut."""
    made.param_text = " → requires_grad=False"

    def freeze(tensors: list[Any]) -> None:
        for t in tensors:
            t.requires_grad_(False)
            made.note_param(t)

    return models.when_made(torch, made, freeze)


def scale(torch: Any, made: Made) -> list[Undo]:
    """A model's parameters ×1e4 where it is made: activations and gradients explode."""
    made.param_text = f" ×{SCALE_TEXT}"

    def scaled(tensors: list[Any]) -> None:
        with torch.no_grad():
            for t in tensors:
                t.mul_(SCALE)
                made.note_param(t)

    return models.when_made(torch, made, scaled)


def unregistered(torch: Any, made: Made) -> list[Undo]:
    """A model's first parameter made a plain attribute before anything uses the model:
    before an optimizer gets its parameters, or its first forward."""
    module_type = torch.nn.Module
    original = module_type.named_parameters
    notebooks = Seen()  # the models the notebook made (not a test)
    waiting = Seen()  # lazy ones: unplugged once their first forward made the parameter
    active: list[Any] = []  # the modules whose forward runs: a part waits for its whole
    optimizers = Seen()  # the notebook's optimizers
    handed = Seen()  # the parameters `named_parameters()` (and `parameters()`) handed out

    def made_one(module: Any, tensors: list[Any]) -> None:
        notebooks.add(module)

    def unplugged(module: Any) -> None:
        if module in made.seen or not any(m in notebooks for m in module.modules()):
            return
        if any(m in made.seen for m in module.modules()):
            return
        if first_parameter_is_lazy(module):
            waiting.add(module)
            return
        for m in module.modules():
            made.seen.add(m)
        done = unplug(module)
        if done is not None:
            where, param, plain = done
            made.note(module, f"{where} → a plain attribute")
            if param not in handed:
                _hand_over(optimizers.members(), param, plain)

    def named_parameters(self: Any, *args: Any, **kwargs: Any) -> Any:
        unplugged(self)
        return _handing(original(self, *args, **kwargs), handed)

    def optimizer_made(optimizer: Any) -> None:
        if not made.testing:
            optimizers.add(optimizer)

    def before_forward(module: Any, args: Any) -> None:
        if not any(a in waiting for a in active):
            unplugged(module)
        active.append(module)

    def after_forward(module: Any, args: Any, output: Any) -> None:
        if active and active[-1] is module:
            active.pop()
        ready = module in waiting and not first_parameter_is_lazy(module)
        if ready and not any(a in waiting for a in active):
            unplugged(module)

    hooks = torch.nn.modules.module
    before = hooks.register_module_forward_pre_hook(before_forward)
    after = hooks.register_module_forward_hook(after_forward, always_call=True)
    return [
        *models.when_made(torch, made, lambda _tensors: None, made_one),
        before.remove,
        after.remove,
        patch(module_type, "named_parameters", named_parameters),
        _after_optimizer_init(torch, optimizer_made),
    ]


def _handing(named: Iterator[tuple[str, Any]], handed: Seen) -> Iterator[tuple[str, Any]]:
    """*named* parameters, each noted as handed out as it goes."""
    for name, param in named:
        handed.add(param)
        yield name, param


def _hand_over(optimizers: list[Any], param: Any, plain: Any) -> None:
    """The optimizers that got *param* through its attribute get *plain* in its place: with
    the bug written in where the model is made, the attribute was the plain tensor."""
    for optimizer in optimizers:
        for group in optimizer.param_groups:
            group["params"] = [plain if p is param else p for p in group["params"]]
        if param in optimizer.state:
            optimizer.state[plain] = optimizer.state.pop(param)


def mode(torch: Any, made: Made) -> list[Undo]:
    """The notebook's `eval()` calls left out, on models whose mode matters."""
    from ntdd.torch import mode_dependent

    module_type = torch.nn.Module
    original = module_type.train
    matters: dict[type, bool] = {}

    def dependent(module: Any) -> bool:
        for m in module.modules():
            kind = type(m)
            if kind not in matters:
                matters[kind] = mode_dependent(m)
            if matters[kind]:
                return True
        return False

    def train(self: Any, mode: bool = True) -> Any:
        if mode is False and not made.testing and dependent(self):
            if self not in made.seen:
                made.note(self, ".eval() → left out")
            return self
        return original(self, mode)

    return [patch(module_type, "train", train)]


def _zero(group: dict[str, Any], key: str) -> None:
    value = group[key]
    if hasattr(value, "fill_"):  # a tensor learning rate (capturable, fused): keep it one
        value.fill_(0.0)
    else:
        group[key] = 0.0


def _number(value: Any) -> float:
    return float(value.item() if hasattr(value, "item") else value)
