"""Data faults in the examples a notebook's own `Dataset` computes in `__getitem__`.

A dataset that reads a row, builds a tensor or applies a transform for each
example holds no data tensor for `uses` to change: the bug sits in its
`__getitem__`. So a data fault wraps the `__getitem__` of each `Dataset`
subclass a setup cell defines (and of a library's, for the datasets a setup
cell makes of it), and changes what it returns as the same bug written into
it would: each example's input (a tensor or a NumPy array; all but the last
of a tuple) for `shape`, `dtype`, `device` and `nan`, judged as a batch of
such examples would be; its target (the last) for `broadcast`; its label for
`labels`: the label of item i is the label of item perm[i], a seeded
permutation over the whole dataset. A DataLoader over it and direct indexing
(a test's too, as with the bug written in) see the faulty examples. The
datasets a library makes, and torch's own, are left alone.

An example made from data the fault changed already (the dataset holds a
faulty tensor, or the example is a view of one) has the fault: it is left
alone. The wrappers are undone when the run ends.
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections.abc import Callable
from typing import Any

from ntdd.faults.creation import Undo, patch
from ntdd.faults.data import INPUT, PERMUTATION_SEED, TARGET, Change
from ntdd.faults.finding import Seen

SETUP_CELL = "(setup cell "  # in the file name of a setup cell's code (see ntdd.runtime)


class Examples:
    """One data fault's wrappers of the notebook's own datasets' `__getitem__`."""

    def __init__(
        self,
        torch: Any,
        change: Change,
        faulty: Callable[[Any], bool],  # a tensor the fault made, or a view of one
        made: Callable[[Any], None],  # note a tensor the fault made
        changed: Callable[[str, str], None],  # (what changed, where)
    ) -> None:
        self.torch = torch
        self.change = change
        self._faulty = faulty
        self._made = made
        self._changed = changed
        self._wrapped: list[Undo] = []  # the classes' own __getitem__ and __init__ put back
        self._permutations: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._depth = 0  # __getitem__ calls in progress: only the outermost one's example
        self._made_here = Seen()  # datasets of a library's class a setup cell made
        self.error = ""  # the fault's own bug, if it raised: the run is not judged

    def patches(self) -> list[Undo]:
        """Wrap the notebook's dataset classes made so far, and those made from now on."""
        dataset = self.torch.utils.data.Dataset
        for cls in _subclasses(dataset):
            self.wrap(cls)
        examples = self
        had = "__init_subclass__" in vars(dataset)
        before = vars(dataset).get("__init_subclass__")

        def init_subclass(cls: Any, /, **kwargs: Any) -> None:
            super(dataset, cls).__init_subclass__(**kwargs)
            examples.wrap(cls)

        dataset.__init_subclass__ = classmethod(init_subclass)

        def undo() -> None:
            if had:
                dataset.__init_subclass__ = before
            else:
                del dataset.__init_subclass__
            for step in reversed(self._wrapped):
                step()
            self._wrapped.clear()

        return [undo]

    def wrap(self, cls: type) -> None:
        """Wrap *cls*'s own `__getitem__`: it acts where a setup cell defined the class, or
        made the dataset; torch's own datasets are left alone (`uses` reaches a
        `TensorDataset`; a `Subset` reads its dataset's examples)."""
        if cls.__module__.partition(".")[0] == "torch":
            return
        self._remember_made(cls)
        own = vars(cls).get("__getitem__")
        code = getattr(own, "__code__", None)
        if own is None or code is None:
            return
        original: Callable[[Any, Any], Any] = own
        notebooks = SETUP_CELL in code.co_filename  # the class is the notebook's
        examples = self

        def getitem(dataset: Any, index: Any) -> Any:
            if not notebooks and dataset not in examples._made_here:
                return original(dataset, index)  # a library's, made by a library
            examples._depth += 1
            try:
                item = original(dataset, index)
                if examples._depth > 1 or examples.error:
                    return item
                try:
                    return examples.faulty(cls, original, dataset, index, item)
                except Exception as e:
                    examples.error = f"the fault itself raised {type(e).__name__}: {e}"
                    return item
            finally:
                examples._depth -= 1

        getitem.__wrapped__ = original  # type: ignore[attr-defined]
        self._wrapped.append(patch(cls, "__getitem__", getitem))

    def _remember_made(self, cls: type) -> None:
        """Note the datasets of a library's class *cls* that a setup cell makes (its own
        `__init__`, or the one it inherits, runs called from the cell)."""
        own: Any = vars(cls).get("__init__")
        kind: Any = cls
        if own is None and kind.__init__ is object.__init__:  # none at all: object's, called so

            def own(dataset: Any, *args: Any, **kwargs: Any) -> None:
                super(kind, dataset).__init__(*args, **kwargs)

        code = getattr(own, "__code__", None)
        if code is None or SETUP_CELL in code.co_filename:
            return  # an inherited one (wrapped where it is defined), or the notebook's own
        original_init: Callable[..., None] = own
        made_here = self._made_here

        def init(dataset: Any, *args: Any, **kwargs: Any) -> None:
            if SETUP_CELL in sys._getframe(1).f_code.co_filename:
                with contextlib.suppress(TypeError):  # one that cannot be weakly referenced
                    made_here.add(dataset)
            original_init(dataset, *args, **kwargs)

        self._wrapped.append(patch(cls, "__init__", init))

    # -- one example ------------------------------------------------------------------

    def faulty(self, cls: type, original: Any, dataset: Any, index: Any, item: Any) -> Any:
        """*item* as `__getitem__` with the bug written in would return it."""
        torch = self.torch
        parts = list(item) if isinstance(item, (tuple, list)) else [item]
        tensors = [_as_tensor(torch, p) for p in parts]
        if all(t is None for t in tensors) or self._holds_faulty(dataset):
            return item
        if any(self._faulty(p) for p in parts if isinstance(p, torch.Tensor)):
            return item  # made from the faulty data: it has the fault
        where = f"{cls.__name__}.__getitem__"
        if self.change.shuffles:
            if len(parts) < 2 or not _label(parts[-1]) or not isinstance(index, int):
                return item
            n = len(dataset)
            other = original(dataset, self._permutation(dataset, n)[index])
            label = list(other)[-1] if isinstance(other, (tuple, list)) else None
            if not _label(label):
                return item
            parts[-1] = label
            self._changed(f"labels shuffled (item i takes item perm[i]'s, of {n})", where)
        else:
            roles = [INPUT] * (len(parts) - 1) + [TARGET] if len(parts) > 1 else [INPUT]
            for i, (t, role) in enumerate(zip(tensors, roles, strict=True)):
                if t is None or t.requires_grad:
                    continue
                batch = t.unsqueeze(0).expand(2, *t.shape)  # as a batch of two sees it
                if not self.change.wanted(torch, batch, role):
                    continue
                new, what = self.change.change(torch, t)
                self._made(new)
                parts[i] = new
                self._changed(what, f"{where} {'input' if role == INPUT else 'target'}")
        if isinstance(item, tuple):
            return type(item)(parts) if type(item) is tuple else type(item)(*parts)
        return parts if isinstance(item, list) else parts[0]

    def _permutation(self, dataset: Any, n: int) -> Any:
        try:
            perm = self._permutations.get(dataset)
        except TypeError:  # a dataset that cannot be weakly referenced: one each time
            perm = None
        if perm is None or len(perm) != n:
            generator = self.torch.Generator().manual_seed(PERMUTATION_SEED)
            perm = self.torch.randperm(n, generator=generator).tolist()
            with contextlib.suppress(TypeError):
                self._permutations[dataset] = perm
        return perm

    def _holds_faulty(self, dataset: Any) -> bool:
        """The dataset holds a tensor the fault made (the data it was made from)."""
        torch = self.torch
        for value in list(getattr(dataset, "__dict__", {}).values()):
            if isinstance(value, (list, tuple)) and value:
                value = value[0]
            if isinstance(value, torch.Tensor) and self._faulty(value):
                return True
        return False


def _as_tensor(torch: Any, value: Any) -> Any:
    """*value* as the tensor a DataLoader's collate makes of it (a NumPy array or number
    becomes one), or None: not data."""
    if isinstance(value, torch.Tensor):
        return value
    numeric = getattr(getattr(value, "dtype", None), "kind", "") in tuple("biufc")
    if type(value).__module__ == "numpy" and numeric:
        return torch.as_tensor(value)
    return None


def _label(value: Any) -> bool:
    """A class index: an integer (a tensor, a NumPy or a Python one), not a bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    dtype = getattr(value, "dtype", None)
    if dtype is None or getattr(value, "ndim", 1) != 0:
        return False
    kind = getattr(dtype, "kind", None)  # NumPy's
    if kind is not None:
        return bool(kind in "iu")
    return not (dtype.is_floating_point or dtype.is_complex or str(dtype) == "torch.bool")


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    todo: list[type] = list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub not in found:
            found.append(sub)
            todo += sub.__subclasses__()
    return found
