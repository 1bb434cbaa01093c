"""Faults in the data a notebook feeds its models: shapes, dtypes, devices, values, labels.

Each takes the namespace and what it changed already, changes the tensors
that are new, and returns what it did, one string per tensor
(`X (32, 2) → (2, 32)`). A tensor is replaced, not changed in place: the name
the notebook bound (or the dict, list, tuple or dataset that holds it) now
holds the faulty tensor, as if the notebook had made it. The runtime applies
a data fault once, after the first setup cell that made data it can change
(`ntdd.faults.catalogue.DATA`): where the notebook's data is made.
"""

from __future__ import annotations

from typing import Any

from ntdd.faults.finding import (
    Namespace,
    NotApplicable,
    Place,
    Seen,
    model_device,
    shape_text,
    tensors,
    torch_of,
)


def _apply(ns: Namespace, seen: Seen, found: list[Place], change: Any, missing: str) -> list[str]:
    """Replace each found tensor by `change(tensor)`, which returns (new tensor, what changed)."""
    if not found:
        raise NotApplicable(missing)
    names: dict[str, list[str]] = {}  # what changed -> the places it happened at
    done: dict[int, tuple[Any, str]] = {}  # one tensor in two places: changed once
    for place in found:
        if id(place.value) not in done:
            done[id(place.value)] = change(place.value)
            seen.add(done[id(place.value)][0])
        new, what = done[id(place.value)]
        place.put(new)
        names.setdefault(what, []).append(place.label)
    return [_joined(group, what) for what, group in names.items()]


def _joined(names: list[str], what: str) -> str:
    """`x, target float32 → float64`; an index goes with each name: `x[0, 0] → nan`."""
    if what.startswith("["):
        index, _, rest = what.partition("] ")
        return ", ".join(f"{name}{index}]" for name in names) + " " + rest
    return f"{', '.join(names)} {what}"


def shape(ns: Namespace, seen: Seen) -> list[str]:
    """Swap the first and last dims (or drop the first, when they are equal)."""

    def change(t: Any) -> tuple[Any, str]:
        new = t.transpose(0, -1) if t.shape[0] != t.shape[-1] else t[0]
        return new, f"{shape_text(t.shape)} → {shape_text(new.shape)}"

    found = tensors(ns, seen, lambda t: t.ndim >= 2)
    return _apply(ns, seen, found, change, "no input tensor with two or more dims")


def dtype(ns: Namespace, seen: Seen) -> list[str]:
    """float32 (and half) inputs become float64, float64 ones float32; the model stays."""
    torch = torch_of(ns)

    def change(t: Any) -> tuple[Any, str]:
        to = torch.float32 if t.dtype == torch.float64 else torch.float64
        return t.to(to), f"{_dtype_name(t.dtype)} → {_dtype_name(to)}"

    found = tensors(ns, seen, lambda t: t.is_floating_point())
    return _apply(ns, seen, found, change, "no floating-point input tensor")


def device(ns: Namespace, seen: Seen) -> list[str]:
    """Inputs go where the model is not: between cuda and cpu with CUDA, else to `meta`."""
    torch = torch_of(ns)
    there = other_device(model_device(ns), torch.cuda.is_available())

    def change(t: Any) -> tuple[Any, str]:
        return t.to(there), f"{t.device.type} → {there.type}"

    found = tensors(ns, seen, lambda t: t.device != there)
    return _apply(ns, seen, found, change, "no input tensor")


def other_device(here: Any, cuda_available: bool) -> Any:
    """Where inputs go wrong: the other of cuda and cpu with CUDA, `meta` without.

    `meta` tensors have shapes and no values, so a model meets them as it meets
    misplaced inputs, with an error, and no GPU is needed.
    """
    if cuda_available:
        return type(here)("cpu" if here.type == "cuda" else "cuda")
    return type(here)("meta" if here.type != "meta" else "cpu")


def nan(ns: Namespace, seen: Seen) -> list[str]:
    """The first element of each floating-point input becomes NaN."""
    torch = torch_of(ns)

    def change(t: Any) -> tuple[Any, str]:
        new = t.detach().clone()
        first = (0,) * new.ndim
        with torch.no_grad():
            new[first] = float("nan")
        if t.requires_grad:
            new.requires_grad_(True)
        return new, f"[{', '.join('0' * new.ndim)}] → nan"

    found = tensors(ns, seen, lambda t: t.is_floating_point() and t.numel() and not t.is_meta)
    return _apply(ns, seen, found, change, "no floating-point input tensor")


def labels(ns: Namespace, seen: Seen) -> list[str]:
    """Class indices shifted by one place: each example gets its neighbour's label.

    A shift, not a random permutation, so that the notebook's random
    generators are left as they were (and the fault is the same every run).
    """
    torch = torch_of(ns)

    def change(t: Any) -> tuple[Any, str]:
        return torch.roll(t, 1), f"{shape_text(t.shape)} permuted (shifted by one)"

    found = tensors(ns, seen, lambda t: _class_indices(torch, t))
    return _apply(
        ns, seen, found, change, "no 1-D integer tensor of class indices (two classes or more)"
    )


def broadcast(ns: Namespace, seen: Seen) -> list[str]:
    """1-D targets become a column: `(N,)` → `(N, 1)`, which losses broadcast to `(N, N)`."""

    def change(t: Any) -> tuple[Any, str]:
        new = t.unsqueeze(-1)
        return new, f"{shape_text(t.shape)} → {shape_text(new.shape)}"

    found = tensors(ns, seen, lambda t: t.ndim == 1 and t.shape[0] > 1)
    return _apply(ns, seen, found, change, "no 1-D tensor (targets)")


def _class_indices(torch: Any, t: Any) -> bool:
    """A 1-D integer tensor holding two or more distinct values."""
    if t.ndim != 1 or t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        return False
    return not t.is_meta and t.numel() > 1 and bool((t != t[0]).any())


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")
