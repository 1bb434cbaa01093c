"""Assertions for the common PyTorch faults, for notebook test cells.

`from ntdd.torch import assert_shape, assert_mode, ...` in a `# TEST` cell. Each
helper raises `AssertionError` with a message that names the offending module,
parameter or tensor, and says what was expected and what was found.

PyTorch is imported when a helper runs, not when this package is imported, so
`import ntdd.torch` works where torch is not installed.

- `tensors`: a tensor's shape, dtype, device and values;
- `gradients`: whether gradients reach every trainable parameter;
- `module_state`: what `state_dict()` misses, and train/eval mode;
- `step_order`: the optimizer steps before the scheduler;
- `common`: the lazy import of torch and the failure message they share.

May import: nothing of ntdd outside ntdd.torch; it is a leaf that test cells import.
"""

from __future__ import annotations

from ntdd.torch.gradients import GradFlowReport, GradFlowRow, assert_grad_flow
from ntdd.torch.module_state import assert_mode, assert_state_complete, mode_dependent
from ntdd.torch.step_order import assert_step_order, check_step_order
from ntdd.torch.tensors import (
    assert_close,
    assert_dtype,
    assert_finite,
    assert_same_device,
    assert_shape,
)

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
