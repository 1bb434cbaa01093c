"""Where the data faults act: on the notebook's data, where its setup code first uses it.

The notebook's data is what its models, losses and datasets read, not every
tensor it binds (a demo tensor, the last batch a loop left). So a data fault
watches the uses, for the whole run: a model's forward (its inputs; a loss
module's targets), `torch.nn.functional`'s losses (their targets) and
`one_hot` (its input), a `TensorDataset` or a `DataLoader` made (the tensors
they hold). At the first use of a tensor the notebook holds (a name, a dict,
list or tuple, an object's attribute, a dataset's tensors, or a view of one
of them), the fault changes it, and with it the data made beside it (held by
the same object or dataset, or bound by the same cell): every place that
holds them gets the faulty tensor, and the use in hand gets it too, as if
the notebook had made it so. Tensors made from them later carry the fault.

A test may use the data before any setup cell does (`model(x)` in a test,
right after the cell that made `x`). So the data is also what the notebook's
test cells hand to a call by name (`model(x)`, `F.one_hot(xs)`,
`trainer.fit(model, data)`; not to a builtin such as `print`): such a
tensor, or the tensors an object handed so holds, counts as used once the
test reaches its cell (before the test runs, not by its code).

What a test's own code uses is the test's. The examples a `Dataset` of the
notebook's own computes in `__getitem__` are changed there (`examples`).
"""

from __future__ import annotations

import ast
import builtins
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ntdd.faults.creation import Made, Undo, patch
from ntdd.faults.data import HELD, INPUT, TARGET, Change
from ntdd.faults.examples import Examples
from ntdd.faults.finding import Namespace, Seen

SETUP_CELL = "(setup cell "  # in the file name of a setup cell's code (see ntdd.runtime)
LOSSES = (
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
)  # fmt: skip


@dataclass(frozen=True)
class Place:
    """Where a data tensor is held: `X`, `data['x']`, `train_ds.features`, `ds.tensors[0]`."""

    label: str
    value: Any
    put: Callable[[Any], None]
    holder: str  # what holds it beside other data: an object, a dataset, or the cell that bound it
    cell: int  # the setup cell that bound the top-level name it is under (counted as they run)


class DataUses:
    """One data fault in one run: the uses it watches, and what it changed."""

    def __init__(
        self, torch: Any, made: Made, change: Change, handed: frozenset[str] = frozenset()
    ) -> None:
        self.torch = torch
        self.handed = handed  # the names the notebook's cells hand to a call
        self.made = made
        self.change = change
        self.changes: dict[str, list[str]] = {}  # what changed -> where
        self._judged = Seen()  # data tensors looked at: changed, or not wanted
        self._new: dict[int, Any] = {}  # id of a changed tensor -> its faulty one
        self._kept: list[Any] = []  # the changed tensors, alive while their ids are keys
        self._bound: dict[str, int] = {}  # top-level name -> the cell that bound it
        self._first: Any = None  # the first tensor changed, as it was
        self._roles: dict[str, str] = {}  # where a model's input was held: still an input there
        self._snapshot: dict[str, _Held] = {}  # top-level name -> its value, weakly
        self._cells = 0
        self._depth = 0  # forwards in progress: only the outermost one's inputs count
        self._error = ""  # the fault's own bug, if it raised: the run is not judged
        self._examples = Examples(torch, change, self._faulty, made.seen.add, self._noted)

    @property
    def error(self) -> str:
        return self._error or self._examples.error

    @error.setter
    def error(self, value: str) -> None:
        self._error = value

    def _noted(self, what: str, where: str) -> None:
        places = self.changes.setdefault(what, [])
        if where not in places:
            places.append(where)

    # -- the run's cells --------------------------------------------------------------

    def cell_ran(self, ns: Namespace) -> None:
        """A setup cell ran: the names it bound are data made together."""
        self._cells += 1
        for name, value in list(ns.items()):
            held = self._snapshot.get(name)
            if held is None or not held.holds(value):
                self._bound[name] = self._cells
        self._snapshot = {name: _Held.of(value) for name, value in list(ns.items())}

    def test_reached(self, ns: Namespace) -> None:
        """A test reached its cell: what the test cells hand to calls by name is used."""
        handed = [n for n in self.handed if n in ns and not n.startswith("_")]
        if not handed or self.made.testing:
            return
        places = self._places(ns)
        for place in places:
            if _root(place.label) in handed:
                self._use(places, place.value, self._roles.get(place.label, HELD))

    @property
    def applied(self) -> list[str]:
        return [_joined(where, what) for what, where in self.changes.items()]

    # -- the uses ---------------------------------------------------------------------

    def patches(self) -> list[Undo]:
        torch = self.torch
        hooks = torch.nn.modules.module
        loss_type = torch.nn.modules.loss._Loss

        def before_forward(module: Any, args: Any) -> Any:
            self._depth += 1
            if self._depth > 1 or not args:
                return None
            if isinstance(module, loss_type):
                roles = [None, *([TARGET] * (len(args) - 1))]
            else:
                roles = [INPUT] * len(args)
            new = self.used(list(zip(args, roles, strict=True)))
            return tuple(new.get(id(a), a) for a in args) if new else None

        def after_forward(module: Any, args: Any, output: Any) -> None:
            self._depth -= 1

        pre = hooks.register_module_forward_pre_hook(before_forward)
        post = hooks.register_module_forward_hook(after_forward, always_call=True)
        undo: list[Undo] = [pre.remove, post.remove]
        functional = torch.nn.functional
        for name in LOSSES:
            if hasattr(functional, name):
                undo.append(patch(functional, name, self._loss(getattr(functional, name))))
        undo.append(patch(functional, "one_hot", self._one_hot(functional.one_hot)))
        data = torch.utils.data
        undo.append(patch(data.TensorDataset, "__init__", self._tensor_dataset(data)))
        undo.append(patch(data.DataLoader, "__init__", self._loader(data)))
        undo.append(patch(data.DataLoader, "__iter__", self._batches(data.DataLoader.__iter__)))
        undo += self._examples.patches()
        return undo

    def _batches(self, original: Any) -> Any:
        """A loader's batches are made from its dataset: a fault in it is in them already."""
        seen, torch = self.made.seen, self.torch

        def batches(loader: Any) -> Any:
            for batch in original(loader):
                for item in batch if isinstance(batch, (list, tuple)) else (batch,):
                    if isinstance(item, torch.Tensor):
                        seen.add(item)
                yield batch

        return batches

    def _loss(self, original: Any) -> Any:
        def loss(input: Any, target: Any = None, *args: Any, **kwargs: Any) -> Any:
            if "target" in kwargs:
                kwargs["target"] = self.used([(kwargs["target"], TARGET)]).get(
                    id(kwargs["target"]), kwargs["target"]
                )
            elif target is not None:
                target = self.used([(target, TARGET)]).get(id(target), target)
            if target is None:
                return original(input, *args, **kwargs)
            return original(input, target, *args, **kwargs)

        return loss

    def _one_hot(self, original: Any) -> Any:
        def one_hot(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            tensor = self.used([(tensor, INPUT)]).get(id(tensor), tensor)
            return original(tensor, *args, **kwargs)

        return one_hot

    def _tensor_dataset(self, data: Any) -> Any:
        original = data.TensorDataset.__init__

        def init(dataset: Any, *tensors: Any) -> None:
            roles = [INPUT] * (len(tensors) - 1) + [TARGET] if len(tensors) > 1 else [HELD]
            new = self.used(list(zip(tensors, roles, strict=False)))
            original(dataset, *(new.get(id(t), t) for t in tensors))

        return init

    def _loader(self, data: Any) -> Any:
        original = data.DataLoader.__init__

        def init(loader: Any, dataset: Any, *args: Any, **kwargs: Any) -> None:
            found = list(self._places_in("dataset", dataset, f"object {id(dataset)}", 1))
            self.used([(p.value, HELD) for p in found], extra=found)
            original(loader, dataset, *args, **kwargs)

        return init

    # -- what a use does --------------------------------------------------------------

    def used(
        self,
        uses: list[tuple[Any, str | None]],
        extra: list[Place] = (),  # type: ignore[assignment]
    ) -> dict[int, Any]:
        """The notebook's setup code uses these tensors: change the data among them, where it
        is held; the faulty tensors, by the id of the ones they replace. The fault's own
        bug never reaches the notebook: it is noted, and the fault stops."""
        if self.error:
            return {}
        try:
            return self._used(uses, extra)
        except Exception as e:
            self.error = f"the fault itself raised {type(e).__name__}: {e}"
            return {}

    def _used(self, uses: list[tuple[Any, str | None]], extra: list[Place]) -> dict[int, Any]:
        torch = self.torch
        wanted = [(t, r) for t, r in uses if r is not None and isinstance(t, torch.Tensor)]
        if self.made.testing or not wanted:
            return {}
        ns = _setup_namespace()
        if ns is None:
            return {}
        places = [*self._places(ns), *extra]
        new: dict[int, Any] = {}
        for t, role in wanted:
            if self._faulty(t):
                continue
            if id(t) in self._new:
                new[id(t)] = self._new[id(t)]
                continue
            found = self._use(places, t, role)
            if found is not None:
                new[id(t)] = found
        return new

    def _use(self, places: list[Place], t: Any, role: str) -> Any:
        """Change *t* (or the tensor it is a view of) where it is held, and the data beside it;
        the faulty *t*, or None."""
        base = t._base
        mine = [p for p in places if p.value is t]
        theirs = [p for p in places if base is not None and p.value is base]
        if theirs and not self._through_view(t, base, role):
            theirs = []
        if not mine and not theirs:
            return None  # not the notebook's data: a batch, a value made on the way
        if mine:
            self._judge(places, t, role, mine)
        if theirs:
            self._judge(places, base, role, theirs)
        rows = (base if theirs else t).shape[:1]  # data made together has as many examples
        for holder in {p.holder for p in (*mine, *theirs)}:
            for p in places:
                beside = p.holder == holder and p.value is not t and p.value is not base
                if beside and p.value.shape[:1] == rows:
                    role = self._roles.get(p.label, HELD)
                    self._judge(places, p.value, role, [q for q in places if q.value is p.value])
        if id(t) in self._new:
            return self._new[id(t)]
        if base is not None and id(base) in self._new:
            return self._view(t, self._new[id(base)])
        return None

    def _through_view(self, view: Any, base: Any, role: str) -> bool:
        """Whether a use of *view* reaches the data it views: where it has its base's dims,
        is all of it (`y.view(-1, 1)`), or is itself data the fault wants. A column of
        targets cut from a 1-D series (`x[tau:].reshape(-1, 1)`, its inputs cut from the
        same series) makes no 1-D target of the series: the bug of 1-D targets is not there."""
        if view.ndim == base.ndim or view.numel() == base.numel():
            return True
        return bool(self.change.wanted(self.torch, view, role))

    def _judge(self, places: list[Place], t: Any, role: str, held: list[Place]) -> None:
        if t in self._judged or self._faulty(t) or t.requires_grad or t.ndim == 0:
            return
        self._judged.add(t)
        if role == INPUT:
            self._roles.update(dict.fromkeys((p.label for p in held), INPUT))
        if not self.change.wanted(self.torch, t, role):
            return
        if self._first is not None and self.change.already(self.torch, t, self._first):
            return  # made from the faulty data: it has the fault
        # as the notebook made its data: outside the `inference_mode()` of a first look at
        # it, whose inference tensors its training could not save for backward
        with self.torch.inference_mode(False):
            new, what = self.change.change(self.torch, t)
        if self._first is None:
            self._first = t
        self.made.seen.add(new)
        self._new[id(t)] = new
        self._kept.append(t)
        for place in held:
            place.put(new)
            self.changes.setdefault(what, []).append(place.label)

    def _faulty(self, t: Any) -> bool:
        """*t* is faulty already: made by the fault, or a view of what it made."""
        return t in self.made.seen or (t._base is not None and t._base in self.made.seen)

    def _view(self, view: Any, new_base: Any) -> Any:
        """*view* taken from the faulty base, where the fault keeps its layout."""
        base = view._base
        if self.change.keeps_layout and new_base.shape == base.shape and base.is_contiguous():
            try:
                return new_base.as_strided(view.size(), view.stride(), view.storage_offset())
            except RuntimeError:
                pass
        new, _ = self.change.change(self.torch, view)
        return new

    # -- where the notebook holds its data --------------------------------------------

    def _places(self, ns: Namespace) -> list[Place]:
        found: list[Place] = []
        now = self._cells + 1  # the cell that runs
        for name, value in list(ns.items()):
            if name.startswith("_") or not name.isidentifier():  # pytest's `@py_assert1`
                continue
            cell = self._bound.get(name, now)
            held = self._snapshot.get(name)
            if held is not None and not held.holds(value):
                cell = now
            found += self._places_in(name, value, f"cell {cell}", 0, _setter(ns, name), cell)
        return found

    def _places_in(
        self,
        label: str,
        value: Any,
        holder: str,
        depth: int,
        put: Callable[[Any], None] = lambda new: None,
        cell: int = 0,
    ) -> Iterator[Place]:
        torch = self.torch
        if isinstance(value, torch.Tensor):
            if not value.requires_grad:
                yield Place(label, value, put, holder, cell)
            return
        if depth >= 3 or not _may_hold_data(torch, value):
            return
        here = f"object {id(value)}"
        if isinstance(value, dict):
            for key, item in list(value.items())[:1000]:
                yield from self._places_in(
                    f"{label}[{key!r}]", item, here, depth + 1, _setter(value, key)
                )
        elif isinstance(value, (list, tuple)):
            items = list(value)[:1000]
            for i, item in enumerate(items):
                setter = (
                    _setter(value, i) if isinstance(value, list) else _tuple_setter(items, i, put)
                )
                yield from self._places_in(f"{label}[{i}]", item, here, depth + 1, setter, cell)
        elif isinstance(getattr(value, "tensors", None), tuple):  # a TensorDataset
            for i, item in enumerate(value.tensors):
                setter = _attribute_tuple_setter(value, "tensors", i)
                label_i = f"{label}.tensors[{i}]"
                yield from self._places_in(label_i, item, here, depth + 1, setter, cell)
        elif hasattr(value, "__dict__"):
            for key, item in list(vars(value).items()):
                if not key.startswith("_") or key == "_data":
                    setter = _attribute_setter(value, key)
                    yield from self._places_in(
                        f"{label}.{key}", item, here, depth + 1, setter, cell
                    )


def handed_names(sources: list[str]) -> frozenset[str]:
    """The names these cells hand to a call as an argument (`f(X)`, `f(data=data)`), other
    than to a builtin."""
    found: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and hasattr(builtins, node.func.id):
                continue
            values = [*node.args, *(k.value for k in node.keywords)]
            found.update(v.id for v in values if isinstance(v, ast.Name))
    return frozenset(found)


def _may_hold_data(torch: Any, value: Any) -> bool:
    """Containers and objects of the notebook's own, datasets and loaders: not modules,
    classes, functions, models or optimizers."""
    if isinstance(value, (str, bytes, int, float, complex, bool, type, types.ModuleType)):
        return False
    if callable(value) or isinstance(value, (torch.nn.Module, torch.optim.Optimizer)):
        return False  # functions, classes, models, get_ipython (whose shell holds the namespace)
    module = str(getattr(type(value), "__module__", "") or "").partition(".")[0]
    if module in ("IPython", "ipykernel", "ntdd", "_pytest", "pytest"):
        return False
    return module != "torch" or type(value).__module__.startswith("torch.utils.data")


def _setup_namespace() -> Namespace | None:
    """The namespace of the setup cell that runs now (its frame's globals), or None."""
    frame = sys._getframe(2)
    while frame is not None:
        if SETUP_CELL in frame.f_code.co_filename:
            return frame.f_globals
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _root(label: str) -> str:
    """The top-level name of a place: `data` of `data.X`, `batch` of `batch['x']`."""
    return label.partition(".")[0].partition("[")[0]


def _setter(container: Any, key: Any) -> Callable[[Any], None]:
    def put(new: Any) -> None:
        container[key] = new

    return put


def _attribute_setter(holder: Any, name: str) -> Callable[[Any], None]:
    def put(new: Any) -> None:
        setattr(holder, name, new)

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


def _joined(names: list[str], what: str) -> str:
    """`x, target float32 → float64`; an index goes with each name: `x[0, 0] → nan`."""
    names = list(dict.fromkeys(names))
    if what.startswith("["):
        index, _, rest = what.partition("] ")
        return ", ".join(f"{name}{index}]" for name in names) + " " + rest
    return f"{', '.join(names)} {what}"


class _Held:
    """A name's value as a cell left it: its id, and a weak reference where the value
    takes one, so that a new object given a freed one's address is not taken for it."""

    __slots__ = ("ident", "ref")

    def __init__(self, ident: int, ref: Any) -> None:
        self.ident, self.ref = ident, ref

    @classmethod
    def of(cls, value: Any) -> _Held:
        try:
            return cls(id(value), weakref.ref(value))
        except TypeError:  # an int, a tuple: no weak reference, its id alone
            return cls(id(value), None)

    def holds(self, value: Any) -> bool:
        """Whether *value* is the object held, not one made since at the same address."""
        return self.ident == id(value) and (self.ref is None or self.ref() is value)
