"""Which names a cell's code binds, reads and takes, at its top level.

A cell's top level binds in the notebook's namespace; what it binds says
which setup cells a test parameter is pinned against, and which names a
test cell defines. What a cell of definitions reads while it is imported
must exist before any setup cell has run.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator


def uses_name(node: ast.AST, name: str) -> bool:
    """Whether *node* reads *name* or takes it as an argument."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == name:
            return True
        if isinstance(sub, ast.arg) and sub.arg == name:
            return True
    return False


def bound_names(tree: ast.Module) -> list[str]:
    """Names the top level of *tree* binds in the module, in order of first binding.

    Assignment targets, `for`/`with`/`except ... as` names, imports, `def` and
    `class` names, `match` captures, and `:=` targets, including those inside
    comprehensions, which bind in the enclosing scope.
    """
    names: dict[str, None] = {}
    for stmt in tree.body:
        for node in module_level_nodes(stmt, class_bodies=False, comprehensions=True):
            for name in _binds(node):
                names.setdefault(name, None)
    return list(names)


def assigned_names(tree: ast.Module) -> list[str]:
    """Names the top level of *tree* assigns with `=`, in order: a notebook's parameters.

    papermill's parameters are the names a cell assigns (`epochs = 200`,
    `epochs, lr = 200, 0.1`, `lr: float = 0.1`). A name bound only as a `for`,
    comprehension, `with`, `except` or `import ... as` target, by `:=`, `+=`,
    `def` or `class`, is not one: `for epoch in range(epochs)` does not make
    `epoch` a parameter.
    """
    names: dict[str, None] = {}
    for stmt in tree.body:
        for node in module_level_nodes(stmt, class_bodies=False):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                continue
            for sub in (n for target in targets for n in ast.walk(target)):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.setdefault(sub.id, None)
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
        for node in module_level_nodes(stmt):
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

    Wider than what runs at module level (`module_level_nodes`): a
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


def module_level_nodes(
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
        yield from module_level_nodes(child, class_bodies, comprehensions)
