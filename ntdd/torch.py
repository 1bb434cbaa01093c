"""Assertions for the common PyTorch faults, for notebook test cells.

`from ntdd.torch import assert_shape, assert_mode, ...` in a `# TEST` cell. Each
helper raises `AssertionError` with a message that names the offending module,
parameter or tensor, and says what was expected and what was found.

PyTorch is imported when a helper runs, not when this module is imported, so
`import ntdd.torch` works where torch is not installed.

May import: nothing of ntdd; it is a leaf that test cells import.
"""

from __future__ import annotations

import contextlib
import functools
import math
import types
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeAlias, TypeGuard, TypeVar

if TYPE_CHECKING:
    from types import EllipsisType

    import torch
    from torch import nn
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LRScheduler

    _Dim: TypeAlias = int | str | None  # one entry of an expected shape, other than ...

__all__ = [
    "GradFlowReport",
    "GradFlowRow",
    "assert_close",
    "assert_dtype",
    "assert_finite",
    "assert_grad_flow",
    "assert_mode",
    "assert_same_device",
    "assert_shape",
    "assert_state_complete",
    "assert_step_order",
    "check_step_order",
    "mode_dependent",
]

T = TypeVar("T")
_MAX_LINES = 10  # offenders listed in one message; the rest are counted
_DEFAULT_NAME = "tensor"


def _torch() -> types.ModuleType:
    """The torch module, or an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError("ntdd.torch needs PyTorch: pip install 'ntdd[torch]'") from exc
    return torch


def _is_tensor(obj: object) -> TypeGuard[torch.Tensor]:
    return isinstance(obj, _torch().Tensor)


def _is_module(obj: object) -> TypeGuard[nn.Module]:
    return isinstance(obj, _torch().nn.Module)


def _check_module(model: object, argument: str = "model") -> nn.Module:
    if not _is_module(model):
        raise TypeError(f"{argument} must be an nn.Module, got {type(model).__name__}")
    return model


def _check_tensor(t: object, argument: str) -> torch.Tensor:
    if not _is_tensor(t):
        raise TypeError(f"{argument} must be a torch.Tensor, got {type(t).__name__}")
    return t


def _fail(header: str, lines: Sequence[str] = ()) -> NoReturn:
    """Raise AssertionError: *header*, then the first offenders, one a line."""
    shown = [f"  {line}" for line in lines[:_MAX_LINES]]
    if len(lines) > _MAX_LINES:
        shown.append(f"  ... and {len(lines) - _MAX_LINES} more")
    raise AssertionError("\n".join([header, *shown]))


def _tensor_label(name: str) -> str:
    return "tensor" if name == _DEFAULT_NAME else f"tensor {name!r}"


def _model_label(model: nn.Module, name: str = _DEFAULT_NAME) -> str:
    kind = type(model).__name__
    return f"model ({kind})" if name == _DEFAULT_NAME else f"model {name!r} ({kind})"


def _plural(count: int, word: str, words: str = "") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def _named_state(model: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
    """(qualified name, tensor, "parameter" or "buffer") for all of *model*'s state."""
    for name, param in model.named_parameters():
        yield name, param, "parameter"
    for name, buffer in model.named_buffers():
        yield name, buffer, "buffer"


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


def _shape_text(items: Sequence[object]) -> str:
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
    name: str = _DEFAULT_NAME,
    dims: dict[str, int] | None = None,
) -> None:
    """Check *t*'s shape, so a wrong shape fails here and not, broadcast, far downstream.

    Entries of *expected*: an int (that size), None (any size), a str (a named
    dim: one name, one size, within this call and, through *dims*, across calls;
    names new to *dims* are added once the check passes), and at most one `...`
    (any number of dims).
    """
    actual = tuple(int(n) for n in _check_tensor(t, "t").shape)
    head, tail = _split(expected)
    bound, label = dict(dims or {}), _tensor_label(name)
    fixed = len(head) + len(tail or ())
    if len(actual) < fixed if tail is not None else len(actual) != fixed:
        want = _shape_text([_spec_text(s, bound) for s in expected])
        rank = f"{'at least ' if tail is not None else ''}{_plural(fixed, 'dim')}"
        got = f"{_shape_text(actual)} ({_plural(len(actual), 'dim')})"
        _fail(f"{label}: expected shape {want} ({rank}), got {got}")
    if problems := _mismatches(actual, head, tail or [], bound):
        want = _shape_text([_spec_text(s, bound) for s in expected])
        _fail(f"{label}: expected shape {want}, got {_shape_text(actual)}: " + "; ".join(problems))
    if dims is not None:
        dims.update(bound)


# --- dtypes, devices, values -------------------------------------------------------------


def _as_dtype(dtype: torch.dtype | str) -> torch.dtype:
    if isinstance(dtype, _torch().dtype):
        given: torch.dtype = dtype
        return given
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a torch.dtype or its name, got {type(dtype).__name__}")
    found = getattr(_torch(), dtype.removeprefix("torch."), None)
    if not isinstance(found, _torch().dtype):
        raise ValueError(f"{dtype!r} is not a torch dtype (such as 'float32')")
    result: torch.dtype = found
    return result


def assert_dtype(
    obj: torch.Tensor | nn.Module, dtype: torch.dtype | str, *, name: str = _DEFAULT_NAME
) -> None:
    """Check the dtype of a tensor, or of every floating-point parameter and buffer of a module.

    float64 data meeting float32 weights fails deep inside a matmul, and a model
    half converted by `.double()` or `.half()` runs, in a precision you did not pick.
    """
    want = _as_dtype(dtype)
    if _is_tensor(obj):
        if obj.dtype != want:
            _fail(f"{_tensor_label(name)} has dtype {obj.dtype}; expected {want}")
        return
    if not _is_module(obj):
        raise TypeError(f"obj must be a torch.Tensor or an nn.Module, got {type(obj).__name__}")
    model = obj
    wrong = [
        f"{kind} {qualname} is {t.dtype}"
        for qualname, t, kind in _named_state(model)
        if t.is_floating_point() and t.dtype != want
    ]
    if wrong:
        _fail(f"{_model_label(model, name)} has floating-point tensors that are not {want}:", wrong)


def assert_same_device(
    model: nn.Module | None, *tensors: torch.Tensor, names: Sequence[str] | None = None
) -> None:
    """Check that *model*'s parameters and buffers and all *tensors* are on one device.

    PyTorch's "Expected all tensors to be on the same device" comes from deep in a
    forward pass; this names what is where. *names* label *tensors* in the message.
    """
    _torch()
    if names is not None and len(names) != len(tensors):
        raise ValueError(f"{len(names)} names for {_plural(len(tensors), 'tensor')}")
    state = _named_state(_check_module(model)) if model is not None else iter(())
    found = [(f"{kind} {qualname}", t.device) for qualname, t, kind in state]
    owner = _model_label(model) if found and model is not None else ""
    labels = [f"tensor {n!r}" for n in names] if names is not None else None
    for i, t in enumerate(tensors):
        _check_tensor(t, f"tensors[{i}]")
        found.append((labels[i] if labels else f"tensors[{i}]", t.device))
    if not found:
        return
    first, device = found[0]
    where = f"{owner} is on {device} (by its {first})" if owner else f"{first} is on {device}"
    wrong = [f"{label} is on {at}" for label, at in found if at != device]
    if wrong:
        _fail(f"{where}, but:", wrong)


def _flatten(obj: object, label: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(label, tensor) for a tensor, a module's state and grads, or nested lists and dicts."""
    if _is_tensor(obj):
        yield label, obj
    elif _is_module(obj):
        prefix = f"{label}." if label else ""
        for qualname, t, _ in _named_state(obj):
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
            f"{label or 'obj'} must be a torch.Tensor or an nn.Module (or a list or dict of "
            f"them), got {type(obj).__name__}"
        )


def _non_finite(t: torch.Tensor) -> str:
    """How many NaN and Inf entries *t* holds ("" for none; meta tensors hold no values)."""
    if t.is_meta or not (t.is_floating_point() or t.is_complex()):
        return ""
    nan, inf = int(t.detach().isnan().sum()), int(t.detach().isinf().sum())
    among = _plural(t.numel(), "entry", "entries")
    return f"{nan} NaN and {inf} Inf among {among}" if nan or inf else ""


def assert_finite(
    obj: torch.Tensor | nn.Module | Sequence[Any] | Mapping[Any, Any], *, name: str = _DEFAULT_NAME
) -> None:
    """Check for NaN and Inf, because one NaN spreads to every value computed from it.

    *obj* is a tensor, a module (its parameters, buffers, and the grads that are
    set), or a list, tuple or dict of these.
    """
    if _is_tensor(obj):
        if found := _non_finite(obj):
            _fail(f"{_tensor_label(name)} has {found}")
        return
    if not (_is_module(obj) or isinstance(obj, (Mapping, list, tuple))):
        raise TypeError(
            "obj must be a torch.Tensor or an nn.Module (or a list or dict of them), "
            f"got {type(obj).__name__}"
        )
    what = _model_label(obj, name) if _is_module(obj) else repr(name)
    pairs = _flatten(obj, "" if _is_module(obj) else name)
    wrong = [f"{label} has {found}" for label, t in pairs if (found := _non_finite(t))]
    if wrong:
        _fail(f"non-finite values in {what}:", wrong)


def assert_close(actual: Any, expected: Any, **kwargs: Any) -> None:
    """`torch.testing.assert_close` (same arguments), with torch imported when called."""
    _torch().testing.assert_close(actual, expected, **kwargs)


# --- gradients ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GradFlowRow:
    """One trainable parameter's gradient: None where it has no grad."""

    name: str
    grad_norm: float | None
    param_norm: float
    ratio: float | None  # grad_norm / param_norm: the relative size of one update step
    zero_rate: float | None  # the share of gradient entries that are exactly zero
    dead_rows: float | None = None  # the share of rows (output units) whose grad is all zero


@dataclass(frozen=True)
class GradFlowReport:
    """The gradients of a model's trainable parameters, one row each; `str()` is a table."""

    rows: tuple[GradFlowRow, ...]

    def __getitem__(self, name: str) -> GradFlowRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def __str__(self) -> str:
        table = [["parameter", "grad norm", "param norm", "grad/param", "zero grads", "dead rows"]]
        for r in self.rows:
            norms = [_number_or_none(x, ".3g") for x in (r.grad_norm, r.param_norm, r.ratio)]
            table.append(
                [
                    r.name,
                    *norms,
                    _number_or_none(r.zero_rate, ".1%"),
                    _number_or_none(r.dead_rows, ".0%"),
                ]
            )
        widths = [max(map(len, column)) for column in zip(*table, strict=True)]
        lines = []
        for row in table:  # the name left-aligned, the numbers right-aligned
            cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
            lines.append("  ".join([row[0].ljust(widths[0]), *cells[1:]]))
        return "\n".join(lines)


def _number_or_none(x: float | None, spec: str) -> str:
    return "none" if x is None else format(x, spec)


def _grad_row(name: str, param: torch.Tensor) -> GradFlowRow:
    pnorm = float(param.detach().norm())
    if param.grad is None:
        return GradFlowRow(name, None, pnorm, None, None)
    grad = param.grad.detach()
    gnorm = float(grad.norm())
    ratio = gnorm / pnorm if pnorm else math.inf if gnorm else math.nan
    zero_rate = float((grad == 0).sum()) / grad.numel() if grad.numel() else 0.0
    dead_rows = 0.0
    if grad.numel():  # a row: one output unit's weights (one entry of a bias)
        by_row = grad.reshape(grad.shape[0], -1) if grad.ndim else grad.reshape(1, 1)
        dead_rows = float((by_row == 0).all(dim=1).sum()) / by_row.shape[0]
    return GradFlowRow(name, gnorm, pnorm, ratio, zero_rate, dead_rows)


def _backward(model: nn.Module, loss: torch.Tensor) -> None:
    """`loss.backward()` into freshly cleared grads, failing on a cut graph or a non-scalar."""
    if loss.grad_fn is None:
        _fail(
            "the loss has no grad_fn: the graph is cut (a .detach(), torch.no_grad(), "
            "or parameters with requires_grad=False)"
        )
    if loss.numel() != 1:
        _fail(f"the loss has shape {_shape_text(tuple(loss.shape))}: reduce it to one number")
    model.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]


def assert_grad_flow(
    model: nn.Module,
    loss: torch.Tensor | None = None,
    *,
    max_dead_rows: float = 0.5,
    max_zero_rate: float | None = None,
) -> GradFlowReport:
    """Check that every trainable parameter gets a gradient, and not a dead one.

    With *loss*, its grads are recomputed (`zero_grad()`, then `loss.backward()`);
    without, the grads already there are read. A parameter without a grad is cut
    off from the loss. One whose grad is all zeros, or more than *max_dead_rows*
    of whose rows are (a row is an output unit's weights: all zero when the unit
    passed no gradient for any example, a ReLU off on the whole batch), sits
    behind a dead path. A healthy ReLU net has a few such units on a small batch,
    so single rows and single zeros pass; *max_zero_rate* also bounds the share
    of exactly zero entries. Returns the report for further checks.
    """
    _check_module(model)
    if loss is not None:
        _check_tensor(loss, "loss")
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not params:
        total = len(list(model.parameters()))
        _fail(f"{_model_label(model)}: none of its {total} parameters has requires_grad=True")
    if loss is not None:
        _backward(model, loss)
    with _torch().no_grad():
        report = GradFlowReport(tuple(_grad_row(n, p) for n, p in params))
    missing = [r.name for r in report.rows if r.zero_rate is None]
    problems = [f"no grad: {', '.join(missing)}"] if missing else []
    problems += _dead_grads(report, max_dead_rows, max_zero_rate)
    if problems:
        header = f"gradients do not reach every parameter of {_model_label(model)}:"
        raise AssertionError("\n".join([header, *(f"  {p}" for p in problems), str(report)]))
    return report


def _dead_grads(
    report: GradFlowReport, max_dead_rows: float, max_zero_rate: float | None
) -> list[str]:
    """The parameters whose grads are dead: all zero, too many zero rows, too many zeros."""
    rows = [r for r in report.rows if r.zero_rate is not None]
    problems = []
    whole = [r.name for r in rows if r.zero_rate == 1.0]
    if whole:
        problems.append(f"all-zero grads: {', '.join(whole)}")
    dead_rows = [
        f"{r.name} ({r.dead_rows:.0%} of its rows)"
        for r in rows
        if r.zero_rate != 1.0 and r.dead_rows is not None and r.dead_rows > max_dead_rows
    ]
    if dead_rows:
        problems.append(
            f"more than {max_dead_rows:.0%} of the rows get all-zero grads (output units that "
            f"passed no gradient for any example: dead ReLUs, a zeroed path): "
            + ", ".join(dead_rows)
        )
    if max_zero_rate is not None:
        many = [
            f"{r.name} ({r.zero_rate:.0%} zero)"
            for r in rows
            if r.zero_rate is not None and r.zero_rate != 1.0 and r.zero_rate > max_zero_rate
        ]
        if many:
            problems.append(f"more than {max_zero_rate:.0%} zero grads: {', '.join(many)}")
    return problems


# --- module state and mode ---------------------------------------------------------------


def _lost_state(value: object, registered: Collection[int]) -> str:
    """Why *value*, a plain attribute, holds state `state_dict()` misses ("" if none)."""
    if _is_tensor(value):  # one with a grad_fn is computed from parameters, not state
        if id(value) in registered or value.grad_fn is not None:
            return ""
        return "a tensor; use register_buffer() or nn.Parameter"
    if not isinstance(value, (list, tuple, dict)):
        return ""
    items = list(value.values()) if isinstance(value, dict) else list(value)
    modules = sum(1 for v in items if _is_module(v) and id(v) not in registered)
    tensors = sum(1 for v in items if _is_tensor(v) and id(v) not in registered)
    if not (modules or tensors):
        return ""
    kind = "Dict" if isinstance(value, dict) else "List"
    fix = f"nn.Module{kind}" if modules else f"nn.Parameter{kind} or buffers"
    held = " and ".join(_plural(n, w) for n, w in [(modules, "module"), (tensors, "tensor")] if n)
    return f"a plain {type(value).__name__} of {held}; use {fix}"


def assert_state_complete(model: nn.Module, *, ignore: Collection[str] = ()) -> None:
    """Check that no submodule keeps tensors or modules where `state_dict()` cannot see them.

    A tensor in a plain attribute is neither saved, loaded, nor moved by `.to()`;
    layers in a plain list are not in `parameters()`, so not trained. *ignore*
    lists qualified attribute names (`encoder.cache`) meant to be transient.
    """
    _check_module(model)
    registered = {id(x) for x in (*model.parameters(), *model.buffers(), *model.modules())}
    internal = set(vars(_torch().nn.Module()))  # what nn.Module itself keeps in __dict__
    wrong = []
    for prefix, module in model.named_modules():
        for attr, value in vars(module).items():
            qualname = f"{prefix}.{attr}" if prefix else attr
            if attr in internal or qualname in ignore:
                continue
            if problem := _lost_state(value, registered):
                wrong.append(f"{qualname}: {problem}")
    if wrong:
        _fail(f"{_model_label(model)} keeps state that state_dict() and .to() miss:", wrong)


def assert_mode(model: nn.Module, train: bool = False) -> None:
    """Check that the submodules whose mode matters are in training mode if *train*, else eval.

    Dropout and normalisation layers compute differently in each mode; one left
    in the wrong mode (a custom `.train()`, a copied layer) changes results
    silently. A `Linear` or `ReLU` computes the same either way, so its flag
    is not checked (`mode_dependent` says which modules are).
    """
    _check_module(model)
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
            f"{len(wrong)} of {len(dependent)} mode-dependent modules of {_model_label(model)} "
            f"are not in {want} mode"
        )
        _fail(f"{header} (call model.{call}()):", wrong)


def mode_dependent(module: nn.Module) -> bool:
    """Whether *module* itself computes differently in training and eval mode.

    True for dropout and normalisation layers with running statistics,
    recurrent and attention layers (their dropout), modules that override
    `train()`, and modules whose `forward` reads `self.training`.
    """
    nn = _torch().nn
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


# --- optimizer and scheduler -------------------------------------------------------------


@contextlib.contextmanager
def _run_before_step(obj: Any, before: Callable[[], None]) -> Iterator[None]:
    """Call *before* ahead of every `obj.step(...)` while the block runs."""
    saved = vars(obj).get("step")  # an instance's own step: the scheduler's tracker
    original: Callable[..., Any] = obj.step

    @functools.wraps(original)  # keeps the marks PyTorch puts on its own step wrapper
    def step(self: object, *args: Any, **kwargs: Any) -> Any:
        before()
        return original(*args, **kwargs)

    obj.step = types.MethodType(step, obj)
    try:
        yield
    finally:
        if saved is None:
            vars(obj).pop("step", None)
        else:
            obj.step = saved


def check_step_order(
    optimizer: Optimizer, *schedulers: LRScheduler
) -> contextlib.AbstractContextManager[None]:
    """Fail if a scheduler steps before *optimizer* has stepped within the block.

    `scheduler.step()` before `optimizer.step()` skips the first learning rate of
    the schedule, and PyTorch only warns, once. `step` of these instances is
    wrapped while the block runs and restored afterwards, also on error. The
    arguments are checked when it is called, not when the block starts.
    """
    if not isinstance(optimizer, _torch().optim.Optimizer):
        raise TypeError(
            f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}"
        )
    for i, scheduler in enumerate(schedulers):
        if not callable(getattr(scheduler, "step", None)):
            kind = type(scheduler).__name__
            raise TypeError(f"schedulers[{i}] must be a learning-rate scheduler, got {kind}")
        if getattr(scheduler, "optimizer", optimizer) is not optimizer:
            raise ValueError(f"{type(scheduler).__name__} schedules another optimizer")
    return _step_order(optimizer, schedulers)


@contextlib.contextmanager
def _step_order(optimizer: Optimizer, schedulers: Sequence[LRScheduler]) -> Iterator[None]:
    stepped = False

    def optimizer_stepped() -> None:
        nonlocal stepped
        stepped = True

    def scheduler_steps(scheduler: LRScheduler) -> None:
        if not stepped:
            _fail(
                f"{type(scheduler).__name__}.step() was called before "
                f"optimizer.step() ({type(optimizer).__name__}): call optimizer.step() first"
            )

    with contextlib.ExitStack() as stack:
        stack.enter_context(_run_before_step(optimizer, optimizer_stepped))
        for scheduler in schedulers:
            hook = functools.partial(scheduler_steps, scheduler)
            stack.enter_context(_run_before_step(scheduler, hook))
        yield


def assert_step_order(
    optimizer: Optimizer, scheduler: LRScheduler, train_step: Callable[[], T]
) -> T:
    """Run *train_step()* under `check_step_order(optimizer, scheduler)`; return its result."""
    checked = check_step_order(optimizer, scheduler)
    if not callable(train_step):
        raise TypeError(f"train_step must be a function, got {type(train_step).__name__}")
    with checked:
        return train_step()
