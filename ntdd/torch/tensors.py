"""Assertions on what a tensor holds: its shape, dtype, device and values."""

from __future__ import annotations

import math
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ntdd.torch.common import (
    DEFAULT_NAME,
    check_module,
    check_tensor,
    fail,
    import_torch,
    is_module,
    is_tensor,
    model_label,
    named_state,
    plural,
    tensor_label,
    written_name,
)

if TYPE_CHECKING:
    from types import EllipsisType

    import torch
    from torch import nn

    _Dim: TypeAlias = int | str | None  # one entry of an expected shape, other than ...


# --- shapes ------------------------------------------------------------------------------


def _split(expected: Sequence[_Dim | EllipsisType]) -> tuple[list[_Dim], list[_Dim] | None]:
    """*expected* as the dims before its `...` and those after it (None: no `...`)."""
    head: list[_Dim] = []
    tail: list[_Dim] | None = None
    for spec in expected:
        if isinstance(spec, types.EllipsisType):
            if tail is not None:
                raise ValueError("a shape may hold at most one ...")
            tail = []
        elif spec is None or (isinstance(spec, (int, str)) and not isinstance(spec, bool)):
            (head if tail is None else tail).append(spec)
        else:
            raise TypeError(f"shape entries are int, str, None or ...; got {spec!r}")
    return head, tail


def shape_text(items: Sequence[object]) -> str:
    return "(" + ", ".join(map(str, items)) + ("," if len(items) == 1 else "") + ")"


def _spec_text(spec: object, bound: Mapping[str, int]) -> str:
    if isinstance(spec, str) and spec in bound:
        return f"{spec}={bound[spec]}"
    return "any" if spec is None else "..." if spec is ... else str(spec)


def _mismatches(
    actual: tuple[int, ...], head: list[_Dim], tail: list[_Dim], bound: dict[str, int]
) -> list[str]:
    """How *actual* differs from *head* ... *tail*; names seen first are bound in *bound*."""
    origin = dict.fromkeys(bound, "an earlier call")
    problems = []
    for i, spec in [*enumerate(head), *enumerate(tail, len(actual) - len(tail))]:
        if isinstance(spec, int) and actual[i] != spec:
            problems.append(f"dim {i} is {actual[i]}, expected {spec}")
        elif isinstance(spec, str) and spec not in bound:
            bound[spec], origin[spec] = actual[i], f"dim {i}"
        elif isinstance(spec, str) and bound[spec] != actual[i]:
            found = f"dim {i} is {actual[i]}"
            problems.append(f"{found}, expected {spec}={bound[spec]} (from {origin[spec]})")
    return problems


def assert_shape(
    t: torch.Tensor,
    expected: Sequence[int | str | EllipsisType | None],
    *,
    name: str | None = None,
    dims: dict[str, int] | None = None,
) -> None:
    """Check *t*'s shape, so a wrong shape fails here and not, broadcast, far downstream.

    Entries of *expected*: an int (that size), None (any size), a str (a named
    dim: one name, one size, within this call and, through *dims*, across calls;
    names new to *dims* are added once the check passes), and at most one `...`
    (any number of dims).
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    actual = tuple(int(n) for n in check_tensor(t, "t").shape)
    head, tail = _split(expected)
    bound, label = dict(dims or {}), tensor_label(name or written_name())
    fixed = len(head) + len(tail or ())
    if len(actual) < fixed if tail is not None else len(actual) != fixed:
        want = shape_text([_spec_text(s, bound) for s in expected])
        rank = f"{'at least ' if tail is not None else ''}{plural(fixed, 'dim')}"
        got = f"{shape_text(actual)} ({plural(len(actual), 'dim')})"
        fail(f"{label}: expected shape {want} ({rank}), got {got}")
    if problems := _mismatches(actual, head, tail or [], bound):
        want = shape_text([_spec_text(s, bound) for s in expected])
        fail(f"{label}: expected shape {want}, got {shape_text(actual)}: " + "; ".join(problems))
    if dims is not None:
        dims.update(bound)


# --- dtypes, devices, values -------------------------------------------------------------


def _as_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, import_torch().dtype):
        given: torch.dtype = dtype
        return given
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a torch.dtype or its name, got {type(dtype).__name__}")
    found = getattr(import_torch(), dtype.removeprefix("torch."), None)
    if not isinstance(found, import_torch().dtype):
        raise ValueError(f"{dtype!r} is not a torch dtype (such as 'float32')")
    result: torch.dtype = found
    return result


def assert_dtype(
    obj: torch.Tensor | nn.Module, dtype: torch.dtype | str, *, name: str | None = None
) -> None:
    """Check the dtype of a tensor, or of every floating-point parameter and buffer of a module.

    float64 data meeting float32 weights fails deep inside a matmul, and a model
    half converted by `.double()` or `.half()` runs, in a precision you did not pick.
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    want = _as_dtype(dtype)
    name = name or written_name()
    if is_tensor(obj):
        if obj.dtype != want:
            fail(f"{tensor_label(name)} has dtype {obj.dtype}; expected {want}")
        return
    if not is_module(obj):
        raise TypeError(f"obj must be a torch.Tensor or an nn.Module, got {type(obj).__name__}")
    model = obj
    wrong = [
        f"{kind} {qualname} is {t.dtype}"
        for qualname, t, kind in named_state(model)
        if t.is_floating_point() and t.dtype != want
    ]
    if wrong:
        fail(f"{model_label(model, name)} has floating-point tensors that are not {want}:", wrong)


def assert_same_device(
    model: nn.Module | None, *tensors: torch.Tensor, names: Sequence[str] | None = None
) -> None:
    """Check that *model*'s parameters and buffers and all *tensors* are on one device.

    PyTorch's "Expected all tensors to be on the same device" comes from deep in a
    forward pass; this names what is where. *names* label *tensors* in the message.
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    import_torch()
    if names is not None and len(names) != len(tensors):
        raise ValueError(f"{len(names)} names for {plural(len(tensors), 'tensor')}")
    state = named_state(check_module(model)) if model is not None else iter(())
    found = [(f"{kind} {qualname}", t.device) for qualname, t, kind in state]
    owner = model_label(model) if found and model is not None else ""
    labels = [f"tensor {n!r}" for n in names] if names is not None else None
    for i, t in enumerate(tensors):
        check_tensor(t, f"tensors[{i}]")
        found.append((labels[i] if labels else f"tensors[{i}]", t.device))
    if not found:
        return
    first, device = found[0]
    where = f"{owner} is on {device} (by its {first})" if owner else f"{first} is on {device}"
    wrong = [f"{label} is on {at}" for label, at in found if at != device]
    if wrong:
        fail(f"{where}, but:", wrong)


def _flatten(obj: object, label: str) -> Iterator[tuple[str, torch.Tensor | float]]:
    """(label, tensor or number) for a tensor, a module's state and grads, a Python
    number (a loss's `.item()`), or nested lists and dicts of these."""
    if is_tensor(obj) or _is_number(obj):
        yield label, obj  # type: ignore[misc]
    elif is_module(obj):
        prefix = f"{label}." if label else ""
        for qualname, t, _ in named_state(obj):
            yield prefix + qualname, t
            if t.grad is not None:
                yield f"{prefix}{qualname}.grad", t.grad
    elif isinstance(obj, Mapping):
        for key, value in obj.items():
            yield from _flatten(value, f"{label}[{key!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from _flatten(value, f"{label}[{i}]")
    else:
        raise TypeError(
            f"{label or 'obj'} must be a torch.Tensor, an nn.Module or a number (or a list "
            f"or dict of them), got {type(obj).__name__}"
        )


def _is_number(obj: object) -> bool:
    return isinstance(obj, (int, float)) and not isinstance(obj, bool)


def _non_finite(t: torch.Tensor | float) -> str:
    """How *t* is not finite: "is nan" for a number, how many NaN and Inf entries for a
    tensor; "" when it is finite (meta tensors hold no values)."""
    if not is_tensor(t):
        return "" if math.isfinite(t) else f"is {t}"
    if t.is_meta or not (t.is_floating_point() or t.is_complex()):
        return ""
    nan, inf = int(t.detach().isnan().sum()), int(t.detach().isinf().sum())
    among = plural(t.numel(), "entry", "entries")
    return f"has {nan} NaN and {inf} Inf among {among}" if nan or inf else ""


def assert_finite(
    obj: torch.Tensor | nn.Module | float | Sequence[Any] | Mapping[Any, Any],
    *,
    name: str | None = None,
) -> None:
    """Check for NaN and Inf, because one NaN spreads to every value computed from it.

    *obj* is a tensor, a module (its parameters, buffers, and the grads that are
    set), a number (`loss.item()`), or a list, tuple or dict of these (the losses
    of a training loop). Messages call it *name*, else what the call passed
    (`assert_finite(losses)`: "losses").
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    name = name or written_name()
    if is_tensor(obj):
        if found := _non_finite(obj):
            fail(f"{tensor_label(name)} {found}")
        return
    if _is_number(obj):
        if found := _non_finite(obj):  # type: ignore[arg-type]
            fail(f"{'value' if name == DEFAULT_NAME else name} {found}")
        return
    if not (is_module(obj) or isinstance(obj, (Mapping, list, tuple))):
        raise TypeError(
            "obj must be a torch.Tensor, an nn.Module or a number (or a list or dict of "
            f"them), got {type(obj).__name__}"
        )
    what = model_label(obj, name) if is_module(obj) else repr(name)
    pairs = _flatten(obj, "" if is_module(obj) else name)
    wrong = [f"{label} {found}" for label, t in pairs if (found := _non_finite(t))]
    if wrong:
        fail(f"non-finite values in {what}:", wrong)


def assert_close(actual: Any, expected: Any, **kwargs: Any) -> None:
    """`torch.testing.assert_close` (same arguments), with torch imported when called."""
    __tracebackhide__ = True  # a failure shows the caller's line
    import_torch().testing.assert_close(actual, expected, **kwargs)
