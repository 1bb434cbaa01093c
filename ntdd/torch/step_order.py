"""The optimizer steps before the scheduler: `check_step_order`, `assert_step_order`."""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ntdd.torch.common import fail, import_torch

if TYPE_CHECKING:
    from torch.optim import Optimizer
    from torch.optim.lr_scheduler import LRScheduler


T = TypeVar("T")


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
    if not isinstance(optimizer, import_torch().optim.Optimizer):
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
            fail(
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
    __tracebackhide__ = True  # a failure shows the caller's line
    checked = check_step_order(optimizer, scheduler)
    if not callable(train_step):
        raise TypeError(f"train_step must be a function, got {type(train_step).__name__}")
    with checked:
        return train_step()
