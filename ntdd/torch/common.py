"""What every assertion shares: torch imported when a helper runs, the checks of
its arguments, and the failure message that names the offenders.

PyTorch is imported by `import_torch()`, never at import time, so that
`import ntdd.torch` works where torch is not installed; a missing torch is
one ImportError that says how to install it.
"""

from __future__ import annotations

import types
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeGuard

if TYPE_CHECKING:
    import torch
    from torch import nn


_MAX_LINES = 10  # offenders listed in one message; the rest are counted
DEFAULT_NAME = "tensor"


def import_torch() -> types.ModuleType:
    """The torch module, or an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError("ntdd.torch needs PyTorch: pip install 'ntdd[torch]'") from exc
    return torch


def is_tensor(obj: object) -> TypeGuard[torch.Tensor]:
    return isinstance(obj, import_torch().Tensor)


def is_module(obj: object) -> TypeGuard[nn.Module]:
    return isinstance(obj, import_torch().nn.Module)


def check_module(model: object, argument: str = "model") -> nn.Module:
    __tracebackhide__ = True  # a failure shows the caller's line
    if not is_module(model):
        raise TypeError(f"{argument} must be an nn.Module, got {type(model).__name__}")
    return model


def check_tensor(t: object, argument: str) -> torch.Tensor:
    __tracebackhide__ = True  # a failure shows the caller's line
    if not is_tensor(t):
        raise TypeError(f"{argument} must be a torch.Tensor, got {type(t).__name__}")
    return t


def fail(header: str, lines: Sequence[str] = ()) -> NoReturn:
    """Raise AssertionError: *header*, then the first offenders, one a line."""
    __tracebackhide__ = True  # a failure shows the caller's line
    shown = [f"  {line}" for line in lines[:_MAX_LINES]]
    if len(lines) > _MAX_LINES:
        shown.append(f"  ... and {len(lines) - _MAX_LINES} more")
    raise AssertionError("\n".join([header, *shown]))


def tensor_label(name: str) -> str:
    return "tensor" if name == DEFAULT_NAME else f"tensor {name!r}"


def model_label(model: nn.Module, name: str = DEFAULT_NAME) -> str:
    kind = type(model).__name__
    return f"model ({kind})" if name == DEFAULT_NAME else f"model {name!r} ({kind})"


def plural(count: int, word: str, words: str = "") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def named_state(model: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
    """(qualified name, tensor, "parameter" or "buffer") for all of *model*'s state."""
    for name, param in model.named_parameters():
        yield name, param, "parameter"
    for name, buffer in model.named_buffers():
        yield name, buffer, "buffer"
