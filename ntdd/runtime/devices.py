"""Which devices a test can run on here, and the value a `device` test gets.

A `device` test gets a `torch.device`, or the device's name where torch is
not installed; a device this machine lacks skips the tests that need it,
with the reason. torch is imported only when a device is asked about.
"""

from __future__ import annotations

from typing import Any


def device_value(name: str) -> Any:
    try:
        import torch
    except ImportError:
        return name
    return torch.device(name)


def device_unavailable(name: str) -> str:
    """Why device *name* cannot be used here, or "" when it can."""
    if name == "cpu":
        return ""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    kind, _, number = name.partition(":")
    if kind == "cuda":
        if not torch.cuda.is_available():
            return "torch.cuda.is_available() is False"
        if number and int(number) >= torch.cuda.device_count():
            return f"there are {torch.cuda.device_count()} CUDA devices"
        return ""
    if kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        available = mps is not None and mps.is_available()
        return "" if available else "torch.backends.mps.is_available() is False"
    return f"ntdd does not run tests on {name!r}"
