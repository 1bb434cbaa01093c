"""Where a notebook makes its models: the end of each one's construction, outside a test.

A bug in a model sits where the model is made (weights ×1e4 right after
`model = MLP()`, or at the end of `MLP.__init__`). So the model faults act
when the outermost construction of a module ends: every `nn.Module`
subclass's `__init__` is wrapped for the run (those defined later too, through
`__init_subclass__`), and when the outermost one returns, the module is made.
A module a test's own code builds (a clone for a round trip) is the test's,
and is left alone. A lazy module's parameters do not exist yet: they are
changed by a forward pre-hook of its own, which runs after the one that makes
them, at its first forward.

A model's trainable tensors are its parameters and the tensors that require
grad it holds as plain attributes (`self.w = torch.normal(...,
requires_grad=True)`, as hand-written models in a Module do).

torch is the one the notebook imports; nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ntdd.faults.finding import Seen

Undo = Callable[[], None]
Change = Callable[[list[Any]], None]


def when_made(
    torch: Any,
    made: Any,
    change: Change,
    made_one: Callable[[Any, list[Any]], None] | None = None,
) -> list[Undo]:
    """`change(tensors)` on the trainable tensors of each model the notebook makes, where
    its construction ends (a lazy module's at its first forward); then `made_one(model,
    tensors)`. *made* is the run's `creation.Made`: its `testing` says a test runs."""
    module_type = torch.nn.Module
    depth = [0]
    done = Seen()
    undo: list[Undo] = []

    def finished(module: Any) -> None:
        if made.testing or module in done:
            return
        for m in module.modules():
            done.add(m)
        tensors = [t for t in trainable(module) if t not in made.seen]
        change(tensors)
        for m in module.modules():
            if any(_lazy(p) for p in m._parameters.values()):
                _after_lazy_init(m, made, change)
        if made_one is not None:
            made_one(module, tensors)

    def wrap(cls: Any) -> None:
        init = vars(cls).get("__init__")
        if init is None or getattr(init, "_ntdd_wraps", None) is not None:
            return

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            depth[0] += 1
            try:
                init(self, *args, **kwargs)
            finally:
                depth[0] -= 1
            if depth[0] == 0:
                finished(self)

        __init__._ntdd_wraps = init  # type: ignore[attr-defined]
        __init__.__wrapped__ = init  # type: ignore[attr-defined]  # inspect.signature reads it
        cls.__init__ = __init__
        undo.append(lambda: setattr(cls, "__init__", init))

    def init_subclass(cls: Any, /, **kwargs: Any) -> None:
        wrap(cls)
        super(module_type, cls).__init_subclass__(**kwargs)

    for cls in _subclasses(module_type):
        wrap(cls)
    had = "__init_subclass__" in vars(module_type)
    module_type.__init_subclass__ = classmethod(init_subclass)

    def unwrap() -> None:
        if not had:
            del module_type.__init_subclass__
        for step in reversed(undo):
            step()

    return [unwrap]


def _subclasses(cls: Any) -> list[Any]:
    found, todo = [cls], [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def _after_lazy_init(module: Any, made: Any, change: Change) -> None:
    """At *module*'s first forward, once its lazy parameters are made: change them."""

    def hook(m: Any, args: Any) -> None:
        if any(_lazy(p) for p in m._parameters.values()):
            return
        handle.remove()
        change([t for t in trainable(m, recurse=False) if t not in made.seen])

    handle = module.register_forward_pre_hook(hook)  # after the one that makes them


def trainable(module: Any, recurse: bool = True, frozen_too: bool = False) -> list[Any]:
    """The tensors *module* trains: its parameters that require grad and are made, and the
    tensors that require grad it holds as plain attributes; each once. *frozen_too*: those
    that no longer require grad too (what a fault froze)."""
    found: dict[int, Any] = {}
    for m in module.modules() if recurse else (module,):
        for p in m._parameters.values():
            if p is not None and _leaf(p, frozen_too):
                found.setdefault(id(p), p)
        for value in vars(m).values():
            tensor = hasattr(value, "requires_grad") and hasattr(value, "is_leaf")
            if tensor and _leaf(value, frozen_too):
                found.setdefault(id(value), value)
    return list(found.values())


def _leaf(t: Any, frozen_too: bool) -> bool:
    return bool(t.is_leaf) and not _lazy(t) and (frozen_too or bool(t.requires_grad))


def _lazy(param: Any) -> bool:
    return type(param).__name__.startswith("Uninitialized")
