"""A test cell's region: its marks and its function, written and read back side by side.

A cell of `def test_*` functions is kept as written, its marks applied after
it; a cell of bare statements becomes one function (marks as decorators, a
`global` line for what it assigns); a cell that cannot be a function runs as
notebook code. `read_region` turns a (possibly edited) region back into the
cell's source and marks, for `ntdd sync`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ntdd.cells import cell_code
from ntdd.errors import NtddError
from ntdd.notebook import markers
from ntdd.values import Mark

# Lines ntdd adds inside test regions, each saying why.
GLOBAL_NOTE = "# ntdd: the cell's assignments land in the notebook's namespace, as in a kernel"
MARKS_COMMENT = "# ntdd: marks of cell"
CELL_CODE_NOTE = "# ntdd: the cell runs as notebook code"
EMPTY_BODY = "pass  # ntdd: the cell has no statements"
USES_DEVICE = 'pytest.mark.usefixtures("device")'
NEEDS_CUDA = '__ntdd__.needs("cuda")'
_DEF = re.compile(r"(?:async\s+)?def\s+(?P<name>\w+)\s*\(")


def mark_expression(mark: Mark) -> str:
    """A mark as the module applies it: `pytest.mark.xfail(reason='why')`."""
    if mark.name == "cuda" and not mark.args and not mark.kwargs:
        return NEEDS_CUDA
    arguments = [*mark.args, *(f"{key}={value}" for key, value in mark.kwargs)]
    return f"pytest.mark.{mark.name}" + (f"({', '.join(arguments)})" if arguments else "")


def mark_of_expression(expression: str) -> Mark | None:
    """The mark a decorator or a mark line applies; None for what ntdd derives itself."""
    if expression == USES_DEVICE:
        return None  # derived from the code, not a mark of the cell
    if expression == NEEDS_CUDA:
        return Mark("cuda")
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError as e:
        raise NtddError(f"cannot read the mark {expression!r}") from e
    call = node if isinstance(node, ast.Call) else None
    name = ast.unparse(call.func if call is not None else node)
    if not name.startswith("pytest.mark."):
        raise NtddError(f"{expression!r} is not a pytest mark; marks are all a cell can carry")
    word = name.removeprefix("pytest.mark.")
    if call is None:
        return Mark(word)
    try:
        return markers.mark_from_call(word, call)
    except markers.MarkerError as e:
        raise NtddError(f"the mark {expression!r}: {e}") from e


# -- test regions: written -------------------------------------------------------


def wrapped_body(code: str, assigned: tuple[str, ...], global_after: int, empty: bool) -> str:
    """A bare test cell as a function's body: its names declared global, then indented.

    The declaration goes first, or after the cell's docstring, which must stay
    the function's first statement. A cell of comments only gets a `pass`.
    """
    prefix = cell_code.indent_prefix(code)
    if assigned:
        lines = code.split("\n")
        lines.insert(global_after, f"global {', '.join(assigned)}  {GLOBAL_NOTE}")
        code = "\n".join(lines)
    body = cell_code.indent(code, prefix)
    return body + f"\n{prefix}{EMPTY_BODY}" if empty else body


def cell_code_note(code: str, reason: str) -> str:
    """The first line of a test that runs its cell as notebook code, saying why."""
    return f"{cell_code.indent_prefix(code)}{CELL_CODE_NOTE}: {reason} cannot be in a function"


def marks_tail(names: tuple[str, ...], marks: list[str], device_users: list[str]) -> list[str]:
    """The lines after a cell of functions that apply its marks to each of them."""
    return [f"{m}({n})" for n in names for m in marks] + [
        f"{USES_DEVICE}({n})" for n in device_users
    ]


# -- test regions: read back -------------------------------------------------------


@dataclass(frozen=True)
class CellEdit:
    """What a test region says its cell should now be."""

    source: str
    marks: tuple[Mark, ...]
    kind: str  # "functions", "statements" or "cell": how the region carries the cell


def read_region(text: str) -> CellEdit:
    """The cell source, marks and kind that a (possibly edited) test region stands for."""
    lines = text.split("\n")
    if lines and lines[0].lstrip().startswith("#"):
        return _functions_region(lines)
    return _wrapped_region(lines)


def _functions_region(lines: list[str]) -> CellEdit:
    cut = next((i for i, line in enumerate(lines) if line.startswith(MARKS_COMMENT)), len(lines))
    marks = tuple(m for line in lines[cut + 1 :] if (m := _mark_of_line(line)) is not None)
    return CellEdit("\n".join(lines[:cut]).rstrip(), _unique(marks), "functions")


def _wrapped_region(lines: list[str]) -> CellEdit:
    at = next((i for i, line in enumerate(lines) if _DEF.match(line)), None)
    if at is None:
        raise NtddError("no `def test_...():` line in the region")
    outside = [line for line in lines[:at] if line.strip() and not line.lstrip().startswith("@")]
    if outside:
        raise NtddError(f"{outside[0].strip()!r} above the test function is not a decorator")
    marks = tuple(m for line in lines[:at] if (m := _mark_of_decorator(line)) is not None)
    body_lines, extra = _split_body(lines[at + 1 :])
    if extra.strip():
        raise NtddError(
            "code was added after the wrapped cell's function; a bare test cell becomes one "
            "function, so add the code to the cell in the notebook"
        )
    if any(line.strip().startswith(CELL_CODE_NOTE) for line in body_lines):
        return CellEdit(_cell_code(body_lines), marks, "cell")
    body_lines = [line for line in body_lines if not line.rstrip().endswith(GLOBAL_NOTE)]
    prefix = "\t" if body_lines and body_lines[0].startswith("\t") else "    "
    body = cell_code.dedent("\n".join(body_lines), prefix)
    body = "\n".join(line for line in body.split("\n") if line.strip() != EMPTY_BODY)
    return CellEdit(body.rstrip(), marks, "statements")


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
    return code.rstrip()


def _split_body(lines: list[str]) -> tuple[list[str], str]:
    """The function body, and any code after it at column 0."""
    inside = cell_code.continuation_lines("\n".join(lines))
    for n, line in enumerate(lines, 1):
        if line.strip() and not line[0].isspace() and n not in inside:
            return lines[: n - 1], "\n".join(lines[n - 1 :])
    return lines, ""


def _mark_of_decorator(line: str) -> Mark | None:
    text = line.strip()
    return mark_of_expression(text[1:]) if text.startswith("@") else None


def _mark_of_line(line: str) -> Mark | None:
    """`pytest.mark.slow(test_a)` -> Mark("slow"): the tail of a cell of functions."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    call = text[: text.rindex("(")] if text.endswith(")") else text
    return mark_of_expression(call)


def _unique(marks: tuple[Mark, ...]) -> tuple[Mark, ...]:
    return tuple(dict.fromkeys(marks))
