"""What every assertion shares: torch imported when a helper runs, the checks of
its arguments, and the failure message that names the offenders.

PyTorch is imported by `import_torch()`, never at import time, so that
`import ntdd.torch` works where torch is not installed; a missing torch is
one ImportError that says how to install it.
"""

from __future__ import annotations

import ast
import linecache
import sys
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


def written_name(default: str = DEFAULT_NAME) -> str:
    """How the caller of the helper calling this wrote the helper's first argument, where
    it wrote a name (`losses`, `out.logits`, `batch["x"]`): messages call it that; else
    *default*, for an expression (`model(X)`) or where the source cannot be read."""
    frame = sys._getframe(2)
    call = _call_of(frame)
    if call is None or not call[0].args:
        return default
    node, text = call[0].args[0], call[1]
    if not _is_a_name(node):
        return default
    written = ast.get_source_segment(text, node) or ""
    return written if 0 < len(written) <= 60 and "\n" not in written else default


def _call_of(frame: types.FrameType) -> tuple[ast.Call, str] | None:
    """The call that *frame* is making now, parsed from its source, with that source."""
    lines = linecache.getlines(frame.f_code.co_filename, frame.f_globals)
    positions = getattr(frame.f_code, "co_positions", None)  # Python 3.11 and later
    span = list(positions())[frame.f_lasti // 2] if positions is not None else (None,) * 4
    first, last, start, end = span
    if first is None or last is None or start is None or end is None or not lines:
        return None
    text = "".join(lines[first - 1 : last])
    stop = len("".join(lines[first - 1 : last - 1])) + _byte_column(lines[last - 1], end)
    source = text[_byte_column(lines[first - 1], start) : stop]
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError:
        return None
    return (tree.body, source) if isinstance(tree.body, ast.Call) else None


def _byte_column(line: str, column: int) -> int:
    """A code position's column (UTF-8 bytes) as an index into *line*."""
    return len(line.encode("utf-8")[:column].decode("utf-8", "replace"))


def _is_a_name(node: ast.expr) -> bool:
    """A name, or a name's attribute or item by a constant: what a reader calls it."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return False
        node = node.value
    return isinstance(node, ast.Name)


def tensor_label(name: str) -> str:
    return "tensor" if name == DEFAULT_NAME else f"tensor {name!r}"


def model_label(model: nn.Module, name: str = DEFAULT_NAME) -> str:
    kind = type(model).__name__
    plain = name in (DEFAULT_NAME, "model")  # `model 'model'` says nothing more
    return f"model ({kind})" if plain else f"model {name!r} ({kind})"


def plural(count: int, word: str, words: str = "") -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def named_state(model: nn.Module) -> Iterator[tuple[str, torch.Tensor, str]]:
    """(qualified name, tensor, "parameter" or "buffer") for all of *model*'s state."""
    for name, param in model.named_parameters():
        yield name, param, "parameter"
    for name, buffer in model.named_buffers():
        yield name, buffer, "buffer"
