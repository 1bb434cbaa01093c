"""A test region of a generated module, read back as notebook cell source.

The inverse of `render` for the test regions that `ntdd sync` writes back:
a wrapped cell's function body is dedented; a cell of `def test_*` is taken as
written; marks written as decorators or mark lines become `@marks` on the
`# TEST` line again.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ntdd import source
from ntdd.errors import NtddError
from ntdd.model import Mark
from ntdd.regions import CELL_CODE_NOTE, GLOBAL_NOTE, MARKS_COMMENT
from ntdd.render import EMPTY_BODY, USES_DEVICE

_DEF = re.compile(r"(?:async\s+)?def\s+(?P<name>\w+)\s*\(")
_CUDA = '__ntdd__.needs("cuda")'


@dataclass(frozen=True)
class CellEdit:
    """What a region says its cell should now be."""

    source: str
    marks: tuple[Mark, ...]


def read_region(text: str) -> CellEdit:
    """The cell source and marks that a (possibly edited) test region stands for."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("#"):
        return _functions_region(lines)
    return _statements_region(lines)


def _functions_region(lines: list[str]) -> CellEdit:
    cut = next((i for i, line in enumerate(lines) if line.startswith(MARKS_COMMENT)), len(lines))
    marks = tuple(m for line in lines[cut + 1 :] if (m := _mark_of_line(line)) is not None)
    return CellEdit(_trim("\n".join(lines[:cut])), _unique(marks))


def _statements_region(lines: list[str]) -> CellEdit:
    at = next((i for i, line in enumerate(lines) if _DEF.match(line)), None)
    if at is None:
        raise NtddError("no `def test_...():` line in the region")
    marks = tuple(m for line in lines[:at] if (m := _mark_of_decorator(line)) is not None)
    body_lines, extra = _split_body(lines[at + 1 :])
    if any(line.strip().startswith(CELL_CODE_NOTE) for line in body_lines):
        return CellEdit(_cell_code(body_lines), marks)
    body_lines = [line for line in body_lines if not line.rstrip().endswith(GLOBAL_NOTE)]
    prefix = "\t" if body_lines and body_lines[0].startswith("\t") else "    "
    body = source.dedent("\n".join(body_lines), prefix)
    body = "\n".join(line for line in body.split("\n") if line.strip() != EMPTY_BODY)
    if not extra.strip():
        return CellEdit(_trim(body), marks)
    # A function was added after the wrapped cell: the cell becomes a cell of
    # functions, the wrapped statements its first function, under the same name.
    first, _, rest = body.partition("\n")
    wrapped = (
        f"{first}\n{lines[at]}\n" + source.indent(rest, prefix)
        if rest
        else f"{first}\n{lines[at]}\n{prefix}pass"
    )
    return CellEdit(_trim(f"{wrapped}\n\n{extra}"), marks)


def _cell_code(body_lines: list[str]) -> str:
    """The cell of a test that runs as notebook code: the string it passes to `run_cell`."""
    call = "\n".join(line for line in body_lines if not line.strip().startswith("#")).strip()
    try:
        node = ast.parse(call, mode="eval").body
        assert isinstance(node, ast.Call) and len(node.args) == 3
        code = ast.literal_eval(node.args[2])
    except (SyntaxError, ValueError, AssertionError) as e:
        raise NtddError("the region no longer calls `__ntdd__.run_cell(...)` with the cell") from e
    if not isinstance(code, str):
        raise NtddError("the cell passed to `__ntdd__.run_cell(...)` is not a string")
    return _trim(code)


def _split_body(lines: list[str]) -> tuple[list[str], str]:
    """The function body, and any code after it at column 0."""
    inside = source.continuation_lines("\n".join(lines))
    for n, line in enumerate(lines, 1):
        if line.strip() and not line[0].isspace() and n not in inside:
            return lines[: n - 1], "\n".join(lines[n - 1 :])
    return lines, ""


def _mark_of_decorator(line: str) -> Mark | None:
    text = line.strip()
    return _mark_of_expression(text[1:]) if text.startswith("@") else None


def _mark_of_line(line: str) -> Mark | None:
    """`pytest.mark.slow(test_a)` -> Mark("slow"): the tail of a cell of functions."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    call = text[: text.rindex("(")] if text.endswith(")") else text
    return _mark_of_expression(call)


def _mark_of_expression(expr: str) -> Mark | None:
    if expr == USES_DEVICE:
        return None  # derived from the code, not a mark of the cell
    if expr == _CUDA:
        return Mark("cuda")
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        raise NtddError(f"cannot read the mark {expr!r}") from e
    call = node if isinstance(node, ast.Call) else None
    target = call.func if call is not None else node
    name = ast.unparse(target)
    if not name.startswith("pytest.mark."):
        raise NtddError(f"{expr!r} is not a pytest mark; marks are all a cell can carry")
    try:
        args = tuple(ast.literal_eval(a) for a in (call.args if call else []))
        kwargs = tuple(
            (k.arg, ast.literal_eval(k.value)) for k in (call.keywords if call else []) if k.arg
        )
    except ValueError as e:
        raise NtddError(f"the mark {expr!r} has arguments that are not literals") from e
    return Mark(name.removeprefix("pytest.mark."), args, kwargs)


def _unique(marks: tuple[Mark, ...]) -> tuple[Mark, ...]:
    seen: list[Mark] = []
    for m in marks:
        if m not in seen:
            seen.append(m)
    return tuple(seen)


def _trim(text: str) -> str:
    """Cells are stored without trailing blank lines, as the renderer writes them."""
    return text.rstrip()
