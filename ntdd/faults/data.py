"""Faults in the data a notebook feeds its models: shapes, dtypes, devices, values, labels.

Each is a `Change`: which data tensors it wants (by what they hold and the
role they play: a model's input, a loss's target, or data held beside them),
and what it makes of one (a new tensor, and what changed: `(32, 2) → (2, 32)`).
Where they act, on the data where the notebook first uses it, is `uses`; on the
examples a notebook's own dataset computes, `examples`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ntdd.faults.finding import shape_text

INPUT, TARGET, HELD = "input", "target", "held"  # a data tensor's role, as far as it is known
PERMUTATION_SEED = 0  # the labels' permutation: torch.randperm(n, generator seeded so)


@dataclass(frozen=True)
class Change:
    """One data fault: the tensors it wants, what it makes of each, and what it needs."""

    wanted: Callable[[Any, Any, str], bool]  # (torch, tensor, role)
    change: Callable[[Any, Any], tuple[Any, str]]  # (torch, tensor) -> (new, what changed)
    missing: str  # why it does not apply, when no data it wants was used
    keeps_layout: bool = True  # a view of the changed tensor can be taken from the new one
    # (torch, tensor, the first tensor changed, as it was) -> it has the fault already: it was
    # made from the faulty data (a normalised copy), and changing it again would undo it
    already: Callable[[Any, Any, Any], bool] = lambda torch, t, first: False
    # it moves the labels between examples: in a dataset that computes its examples, item i
    # takes item perm[i]'s label (`examples`)
    shuffles: bool = False


def _swap(torch: Any, t: Any) -> tuple[Any, str]:
    new = t.transpose(0, -1) if t.shape[0] != t.shape[-1] else t[0]
    return new, f"{shape_text(t.shape)} → {shape_text(new.shape)}"


def _cast(torch: Any, t: Any) -> tuple[Any, str]:
    to = torch.float32 if t.dtype == torch.float64 else torch.float64
    return t.to(to), f"{_dtype_name(t.dtype)} → {_dtype_name(to)}"


def _move(torch: Any, t: Any) -> tuple[Any, str]:
    there = other_device(t.device, torch.cuda.is_available())
    return t.to(there), f"{t.device.type} → {there.type}"


def other_device(here: Any, cuda_available: bool) -> Any:
    """Where inputs go wrong: the other of cuda and cpu with CUDA, `meta` without.

    `meta` tensors have shapes and no values, so a model meets them as it meets
    misplaced inputs, with an error, and no GPU is needed.
    """
    if cuda_available:
        return type(here)("cpu" if here.type == "cuda" else "cuda")
    return type(here)("meta" if here.type != "meta" else "cpu")


def _nan(torch: Any, t: Any) -> tuple[Any, str]:
    new = t.detach().clone()
    with torch.no_grad():
        new[(0,) * new.ndim] = float("nan")
    return new, f"[{', '.join('0' * new.ndim)}] → nan"


def _permute(torch: Any, t: Any) -> tuple[Any, str]:
    """A seeded permutation of the examples: it moves most labels, whatever their order,
    and leaves the notebook's own random generators as they were."""
    generator = torch.Generator().manual_seed(PERMUTATION_SEED)
    new = t[torch.randperm(len(t), generator=generator).to(t.device)]
    moved = int((new != t).sum())
    return new, f"{shape_text(t.shape)} shuffled ({moved} of {len(t)} labels changed)"


def _column(torch: Any, t: Any) -> tuple[Any, str]:
    new = t.unsqueeze(-1)
    return new, f"{shape_text(t.shape)} → {shape_text(new.shape)}"


def _class_indices(torch: Any, t: Any, role: str) -> bool:
    """A 1-D integer tensor holding two or more distinct values, not a model's input."""
    if role == INPUT or t.ndim != 1 or t.is_floating_point() or t.is_complex():
        return False
    if t.dtype == torch.bool or t.is_meta or t.numel() < 2:
        return False
    return bool((t != t[0]).any())


CHANGES: dict[str, Change] = {
    "shape": Change(
        lambda torch, t, role: t.ndim >= 2 and role != TARGET,
        _swap,
        "no input tensor with two or more dims reached a model, a loss or a dataset",
        keeps_layout=False,
        already=lambda torch, t, first: t.shape[0] != first.shape[0] == t.shape[-1],
    ),
    "dtype": Change(
        lambda torch, t, role: t.is_floating_point(),
        _cast,
        "no floating-point input tensor reached a model, a loss or a dataset",
        already=lambda torch, t, first: t.dtype == _cast(torch, first[:0])[0].dtype != first.dtype,
    ),
    "device": Change(
        lambda torch, t, role: True,
        _move,
        "no input tensor reached a model, a loss or a dataset",
        already=lambda torch, t, first: t.device.type == _move(torch, first[:0])[0].device.type,
    ),
    "nan": Change(
        lambda torch, t, role: t.is_floating_point() and t.numel() > 0 and not t.is_meta,
        _nan,
        "no floating-point input tensor reached a model, a loss or a dataset",
    ),
    "labels": Change(
        _class_indices,
        _permute,
        "no 1-D integer tensor of class indices (two classes or more) reached a loss or a dataset",
        keeps_layout=False,
        shuffles=True,
    ),
    "broadcast": Change(
        lambda torch, t, role: t.ndim == 1 and t.shape[0] > 1 and role != INPUT,
        _column,
        "no 1-D target tensor reached a loss or a dataset",
        keeps_layout=False,
    ),
}


def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")
