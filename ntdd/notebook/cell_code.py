"""Cell source as Python: IPython syntax, indentation and name analysis.

Cells are carried into the module exactly. Indenting a cell into a function
body must not change a single string literal, so lines that continue a
multi-line token (a triple-quoted string) are left as they are.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import io
import tokenize
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from ntdd.notebook.magics import ESCAPES, MagicCall

DEVICE = "device"


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
    with quiet_syntax_warnings():
        compiled = compile(
            tree, "<cell>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
    return bool(compiled.co_flags & inspect.CO_COROUTINE)


def compiles(code: str) -> SyntaxError | None:
    """The SyntaxError compiling *code* as a module raises; None when it compiles."""
    try:
        with quiet_syntax_warnings():
            compile(code, "<cell>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return e
    return None


def module_only(tree: ast.Module) -> str | None:
    """Why a cell means something else inside a function than at the top level; None if not.

    Such a cell cannot become a test function's body: a star import and a
    `from __future__` import are refused there, an annotated name cannot be
    declared global, and `locals()`, `vars()`, `dir()` and one-argument
    `exec`/`eval` see the function's names, not the notebook's.
    """
    for node in _module_level_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return f"line {node.lineno}: a `from __future__` import"
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return f"line {node.lineno}: `from {node.module} import *`"
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return f"line {node.lineno}: the annotated name {node.target.id!r}"
        if isinstance(node, ast.Call) and _reads_the_scope(node):
            assert isinstance(node.func, ast.Name)
            return f"line {node.lineno}: `{node.func.id}()` reads the cell's own scope"
    for assert_ in catching_asserts(tree):
        return f"line {assert_.lineno}: an assert whose AssertionError the cell catches"
    return None


_CATCH_ASSERTION = {"AssertionError", "Exception", "BaseException"}
_RAISES = {"raises", "assertRaises", "assertRaisesRegex"}


def catching_asserts(tree: ast.AST) -> Iterator[ast.Assert]:
    """The asserts whose `AssertionError` the code around them catches (`try`/`except`,
    `with pytest.raises(...)`): code that may read the error's message."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(map(_catches, node.handlers)):
            body: list[ast.stmt] = node.body
        elif isinstance(node, ast.With | ast.AsyncWith) and any(
            _is_raises(item.context_expr) for item in node.items
        ):
            body = node.body
        else:
            continue
        for statement in body:
            yield from (n for n in ast.walk(statement) if isinstance(n, ast.Assert))


def _catches(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(kind is None or _last_name(kind) in _CATCH_ASSERTION for kind in kinds)


def _is_raises(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and _last_name(expr.func) in _RAISES


def _last_name(expr: ast.expr | None) -> str:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _reads_the_scope(call: ast.Call) -> bool:
    if not isinstance(call.func, ast.Name):
        return False
    name, given = call.func.id, len(call.args) + len(call.keywords)
    return (name in ("locals", "vars", "dir") and given == 0) or (
        name in ("exec", "eval") and given == 1
    )


def docstring_end(tree: ast.Module) -> int:
    """The last line of a cell's leading string (a wrapped cell's docstring), or 0."""
    first = tree.body[0] if tree.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return first.end_lineno or first.lineno
    return 0


def module_level_problem(tree: ast.Module) -> str | None:
    """Why a cell of definitions cannot sit in the middle of a module; None if it can."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            return (
                f"line {node.lineno}: a `from __future__` import must start a module; "
                "put it in a setup cell"
            )
    return None


def test_functions(tree: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Top-level `def test*` functions, as pytest collects them."""
    return [
        node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    ]


def has_test_classes(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.ClassDef) and n.name.startswith("Test") for n in tree.body)


def uses_name(node: ast.AST, name: str) -> bool:
    """Whether *node* reads *name* or takes it as an argument."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == name:
            return True
        if isinstance(sub, ast.arg) and sub.arg == name:
            return True
    return False


def takes_argument(node: ast.AST, name: str) -> bool:
    """Whether a function (or a method of a class) takes *name* as a parameter."""
    functions = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
    if isinstance(node, ast.ClassDef):
        functions = [n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return any(
        a.arg == name
        for f in functions
        for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)
    )


def assigns_name(tree: ast.Module, name: str) -> bool:
    """Whether top-level code of *tree* binds *name* (assignment, import, for, with)."""
    return name in bound_names(tree)


def bound_names(tree: ast.Module) -> list[str]:
    """Names the top level of *tree* binds in the module, in order of first binding.

    Assignment targets, `for`/`with`/`except ... as` names, imports, `def` and
    `class` names, `match` captures, and `:=` targets, including those inside
    comprehensions, which bind in the enclosing scope.
    """
    names: dict[str, None] = {}
    for stmt in tree.body:
        for node in _module_level_nodes(stmt, class_bodies=False, comprehensions=True):
            for name in _binds(node):
                names.setdefault(name, None)
    return list(names)


def _binds(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def import_time_free_names(tree: ast.Module) -> list[tuple[str, int]]:
    """Names read while a cell of definitions is imported, before any setup runs.

    Decorators, default values and top-level statements run at import; function
    bodies do not. Returns (name, line) for names the cell does not bind first.
    """
    bound = set(dir(builtins)) | {"pytest", "__name__", "__file__", "__doc__"}
    free: list[tuple[str, int]] = []
    for stmt in tree.body:
        for node in _module_level_nodes(stmt):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id not in bound
            ):
                free.append((node.id, node.lineno))
        bound.update(bound_names(ast.Module(body=[stmt], type_ignores=[])))
    return free


def asserts_at_import(tree: ast.Module) -> bool:
    """Whether an `assert` of *tree* runs as the module is imported: outside every function."""
    statements: list[ast.AST] = list(tree.body)
    while statements:  # asserts are statements: only blocks of statements can hold one
        node = statements.pop()
        if isinstance(node, ast.Assert):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for block in ("body", "orelse", "finalbody", "handlers", "cases"):
                statements.extend(getattr(node, block, ()))
    return False


def import_time_reads(tree: ast.Module) -> set[str]:
    """Every name the code of *tree* may read as it is imported: all but `def` bodies.

    Wider than what runs at module level (`_module_level_nodes`): a
    comprehension or a lambda may run at once, so their insides count too.
    """
    read: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            read.add(node.id)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            pending += [*node.decorator_list, node.args]
            pending += [node.returns] if node.returns is not None else []
        else:
            pending.extend(ast.iter_child_nodes(node))
    return read


def _module_level_nodes(
    node: ast.AST, class_bodies: bool = True, comprehensions: bool = False
) -> Iterator[ast.AST]:
    """Walk the parts of *node* that run at module level: not function bodies.

    Class bodies run at definition time too; *class_bodies* says whether to
    enter them (their names bind in the class, not the module). A
    comprehension's own names are its own; *comprehensions* says whether to
    walk it for the `:=` targets that bind outside it.
    """
    yield node
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        children: list[ast.AST] = [*node.decorator_list, *node.args.defaults]
        children += [d for d in node.args.kw_defaults if d is not None]
        if node.returns is not None:
            children.append(node.returns)
        for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            if a.annotation is not None:
                children.append(a.annotation)
    elif isinstance(node, ast.Lambda):
        children = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    elif isinstance(node, ast.ClassDef):
        children = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
        if class_bodies:
            children += node.body
    elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        children = [node.generators[0].iter]
        if comprehensions:
            yield from (n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            children += [n.value for n in ast.walk(node) if isinstance(n, ast.NamedExpr)]
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _module_level_nodes(child, class_bodies, comprehensions)
