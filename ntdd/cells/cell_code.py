"""Cell source as Python: IPython syntax transformed, indented exactly, compiled as a kernel does.

Cells are carried into the module exactly. Indenting a cell into a function
body must not change a single string literal, so lines that continue a
multi-line token (a triple-quoted string) are left as they are.

Which names a cell binds is `cell_names`' question; whether it keeps its
meaning as a test function's body, `wrapping`'s.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from ntdd.cells.magics import ESCAPES, MagicCall


@dataclass(frozen=True)
class Python:
    """A cell's source as runnable Python."""

    code: str  # the source, IPython syntax transformed where there was any
    tree: ast.Module
    magics: tuple[MagicCall, ...] = ()  # the magics and shell escapes used


class CellSyntaxError(SyntaxError):
    """A cell that is neither Python nor IPython syntax."""


def to_python(source: str) -> Python:
    """Parse a cell, transforming IPython magics with IPython's own machinery.

    Plain Python is returned untouched and IPython is not even imported.
    """
    source = normalize_newlines(source)
    try:
        with quiet_syntax_warnings():
            return Python(source, ast.parse(source))
    except UnicodeEncodeError as e:  # a lone surrogate, from a "\ud800" in the JSON
        bad = e.object[e.start : e.end] if isinstance(e.object, str) else "?"
        raise CellSyntaxError(f"the cell holds {bad!r}, which Python source cannot") from None
    except SyntaxError as plain_error:
        code = _transform_ipython(source) if "\x00" not in source else source
        if code == source:
            raise CellSyntaxError(*plain_error.args) from None
        try:
            with quiet_syntax_warnings():
                tree = ast.parse(code)
        except SyntaxError:
            raise CellSyntaxError(*plain_error.args) from None
        return Python(code, tree, tuple(_magic_calls(tree)))


@contextlib.contextmanager
def quiet_syntax_warnings() -> Iterator[None]:
    r"""Parse and compile without SyntaxWarnings (`x is 1`, `"\d"`).

    ntdd only asks whether code is valid; under `-W error` such a warning
    would otherwise read as a syntax error in the user's cell.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        yield


def source_lines(text: str) -> list[str]:
    """Lines as Python numbers them: only newlines end a line, not \\x85 or \\u2028."""
    return [line + "\n" for line in normalize_newlines(text).split("\n")]


def normalize_newlines(source: str) -> str:
    """CRLF and CR become LF, as Python's tokenizer reads them anyway."""
    return source.replace("\r\n", "\n").replace("\r", "\n")


def _transform_ipython(source: str) -> str:
    """IPython's transformation of *source*, or *source* itself where it has none."""
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # IPython warns about odd line ends
            code: str = TransformerManager().transform_cell(source)
    except Exception:  # whatever IPython cannot read is not IPython syntax
        return source
    return code[:-1] if code.endswith("\n") and not source.endswith("\n") else code


def _magic_calls(tree: ast.Module) -> Iterator[MagicCall]:
    """The magics in IPython-transformed code: `%env A=1` is `env`, `!ls` is `system`."""
    for node in ast.walk(tree):
        call = _magic_call(node)
        if call is not None:
            yield call


def _magic_call(node: ast.AST) -> MagicCall | None:
    """The magic *node* calls (`get_ipython().run_line_magic("env", …)` -> `env`), or None."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    owner = node.func.value
    if not (
        isinstance(owner, ast.Call)
        and isinstance(owner.func, ast.Name)
        and owner.func.id == "get_ipython"
    ):
        return None
    method = node.func.attr
    texts = [
        a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else ""
        for a in node.args
    ]
    if method in ("run_line_magic", "run_cell_magic") and node.args and texts[0]:
        prefix = "%" if method == "run_line_magic" else "%%"
        return MagicCall(texts[0], texts[1] if len(texts) > 1 else "", prefix)
    if method in ESCAPES:
        return MagicCall(method, texts[0] if texts else "", "!")
    return None


def magics_only(tree: ast.Module) -> tuple[MagicCall, ...] | None:
    """The magics a cell is made of when it is nothing else (`%pip install x`); else None."""
    calls = [_magic_call(node.value) for node in tree.body if isinstance(node, ast.Expr)]
    found = [call for call in calls if call is not None]
    return tuple(found) if len(found) == len(tree.body) else None


def indent(code: str, prefix: str) -> str:
    """Indent every line of *code* by *prefix*, except lines inside strings."""
    inside = continuation_lines(code)
    lines = code.split("\n")
    return "\n".join(
        line if i in inside or not line else prefix + line for i, line in enumerate(lines, 1)
    )


def dedent(body: str, prefix: str) -> str:
    """Undo `indent`: strip *prefix* from lines that are not inside strings."""
    inside = continuation_lines(body)
    lines = body.split("\n")
    return "\n".join(
        line[len(prefix) :] if i not in inside and line.startswith(prefix) else line
        for i, line in enumerate(lines, 1)
    )


def indent_prefix(code: str) -> str:
    """Four spaces, or a tab where the cell indents with tabs.

    A tab prefix shifts every indentation level by exactly one tab stop, so a
    cell that mixes tabs and spaces keeps its meaning.
    """
    for line in code.split("\n"):
        if "\t" in line[: len(line) - len(line.lstrip())]:
            return "\t"
    return "    "


def continuation_lines(code: str) -> set[int]:
    """Line numbers (1-based) that continue a token begun on an earlier line."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.end[0] > tok.start[0] and tok.type not in (tokenize.NEWLINE, tokenize.NL):
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return inside


def as_cell(tree: ast.Module) -> bool:
    """Compile a cell as a kernel does; whether it awaits at its top level.

    Raises the SyntaxError a kernel raises: the parser accepts some code that
    the compiler refuses at the top of a cell (`return`, `yield`, `nonlocal`).
    Top-level `await` is allowed, as IPython's autoawait allows it.
    """
    future_first(tree)
    with quiet_syntax_warnings():
        compiled = compile(
            tree, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
    return bool(compiled.co_flags & inspect.CO_COROUTINE)


def future_first(tree: ast.Module) -> bool:
    """Move a cell's `from __future__` imports to its start; whether one was elsewhere.

    IPython compiles each of a cell's statements on its own, carrying the
    future flags from one to the next, so a kernel takes `x = 1` followed by
    `from __future__ import annotations` in one cell, which Python refuses
    in one module. (The statements above the import then compile with its
    flags too: only annotations they evaluate could tell.)
    """
    body = tree.body
    future = [n for n in body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
    docstring = int(bool(body) and isinstance(body[0], ast.Expr) and _is_text(body[0].value))
    if not future or body[docstring : docstring + len(future)] == future:
        return False
    tree.body = [*body[:docstring], *future, *(n for n in body[docstring:] if n not in future)]
    return True


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def compiles(code: str | ast.Module) -> SyntaxError | None:
    """The SyntaxError compiling *code* (or its tree, parsed already) as a module raises;
    None when it compiles."""
    try:
        with quiet_syntax_warnings():
            compile(code, "<cell>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return e
    return None
