"""Notebook -> Plan: which cells are setup, which are tests, and their names.

All decisions about a notebook's meaning are made here, once, so that the
exported module and `pytest --ntdd` cannot disagree.
"""

from __future__ import annotations

import ast
import contextlib

from ntdd.cells import cell_code, cell_names, magics, wrapping
from ntdd.format import names
from ntdd.format.module import wrapped_body
from ntdd.format.stale import content_hash
from ntdd.notebook import markers
from ntdd.parameters import TAG as PARAMETERS_TAG
from ntdd.pipeline.end import end_test
from ntdd.values import (
    DEVICE,
    Cell,
    Mark,
    Notebook,
    ParametersCell,
    Plan,
    SetupCell,
    SkippedCell,
    TestCell,
    TestKind,
)

# Names the module itself defines at import; a test may not shadow them.
RESERVED = frozenset({"pytest", "NotebookRuntime"})
MODULE_NAMES = RESERVED | {"__ntdd__"}  # defined before any cell's code, at import


def make_plan(
    notebook: Notebook, parameters: tuple[tuple[str, str], ...] = (), run_untested: bool = False
) -> Plan:
    """Split *notebook* into setup and test cells and name every test.

    *parameters* are test-only overrides, injected after the cell tagged
    `parameters`, or before the first code cell. *run_untested*: a notebook
    without test cells is one test that runs it to its end (`end`).
    """
    setup: list[SetupCell] = []
    skipped: list[SkippedCell] = []
    test_cells: list[Cell] = []
    warnings: list[str] = []
    setup_names: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        if markers.is_test_cell(cell):
            test_cells.append(cell)
            continue
        if (miss := markers.near_miss(cell)) is not None:
            warnings.append(f"{notebook.path}: {cell.label}: {miss}")
        if (reason := markers.skip_reason(cell)) is not None:
            skipped.append(SkippedCell(cell, reason))
        else:
            setup.append(_setup_cell(cell, warnings, notebook, setup_names))
    registry = names.NameRegistry(RESERVED)
    future = _first_future_import(notebook)
    seen = _Seen(setup_names)
    tests = [_test_cell(c, registry, seen, warnings, notebook, future) for c in test_cells]
    return Plan(
        notebook=notebook,
        setup=tuple(setup),
        tests=tuple(tests),
        skipped=tuple(skipped),
        content_hash=content_hash(notebook.cells),
        warnings=tuple(warnings),
        parameters=_parameters_cell(notebook, parameters),
        end=end_test(notebook, setup, tests, registry, run_untested),
    )


def _first_future_import(notebook: Notebook) -> Cell | None:
    """The first code cell with a `from __future__` import: a kernel compiles the cells
    after it with its flags (`annotations`), as IPython carries a cell's future flags."""
    for cell in notebook.cells:
        if cell.cell_type != "code" or "__future__" not in cell.source:
            continue
        try:
            tree = cell_code.to_python(cell.source).tree
        except SyntaxError:
            continue
        if any(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in tree.body):
            return cell
    return None


class _Seen:
    """Names the cells bind, as the test cells are planned in notebook order."""

    def __init__(self, setup: set[str]) -> None:
        self.setup = setup  # every setup cell's
        self.by_tests: set[str] = set()  # the test cells' above, once they run
        self.at_import: set[str] = set()  # the `def test_*` cells' above, at import


def _parameters_cell(
    notebook: Notebook, values: tuple[tuple[str, str], ...]
) -> ParametersCell | None:
    code = [c for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
    tagged = next((c for c in code if PARAMETERS_TAG in c.tags), None)
    if tagged is not None:
        return ParametersCell(tagged.index, True, values)
    if values and code:
        return ParametersCell(code[0].index, False, values)
    return None


def _setup_cell(
    cell: Cell, warnings: list[str], notebook: Notebook, setup_names: set[str]
) -> SetupCell:
    """A setup cell, parsed once: what it binds goes into *setup_names*."""
    where = f"{notebook.path}: {cell.label}"
    try:
        python = cell_code.to_python(cell.source)
    except SyntaxError as e:
        warnings.append(f"{where}: setup cell has a syntax error at line {e.lineno}: {e.msg}")
        return SetupCell(cell, cell_code.normalize_newlines(cell.source))
    warnings.extend(f"{where}: {note}" for note in magics.notes(python.magics, in_test=False))
    bound = cell_names.bound_names(python.tree)
    setup_names.update(bound)
    only = cell_code.magics_only(python.tree)
    return SetupCell(
        cell,
        cell_code.normalize_newlines(cell.source),  # magics stay readable; the runtime transforms
        assigns_device=DEVICE in bound,
        expects_exception=markers.expects_exception(cell),
        eval_false=markers.not_evaluated(cell.source),
        inert=only is not None and magics.run_nothing(only),
    )


def _test_cell(
    cell: Cell,
    registry: names.NameRegistry,
    seen: _Seen,
    warnings: list[str],
    notebook: Notebook,
    future: Cell | None,
) -> TestCell:
    test = _planned_test_cell(cell, registry, seen, warnings, notebook, future)
    seen.by_tests.update(test.assigned)
    return test


def _planned_test_cell(
    cell: Cell,
    registry: names.NameRegistry,
    seen: _Seen,
    warnings: list[str],
    notebook: Notebook,
    future: Cell | None,
) -> TestCell:
    where = f"{notebook.path}: {cell.label}"
    try:
        marker = markers.parse_test_marker(cell)
    except markers.MarkerError as e:
        return _broken(cell, registry, "", f"bad marker: {e}", warnings, where)
    try:
        python = cell_code.to_python(cell.source)
    except SyntaxError as e:
        return _broken(cell, registry, marker.title, _describe(e), warnings, where)
    warnings.extend(f"{where}: {note}" for note in magics.notes(python.magics, in_test=True))
    try:
        is_async = cell_code.as_cell(python.tree)
    except SyntaxError as error:
        return _broken(cell, registry, marker.title, _describe(error), warnings, where)
    if wrapping.test_functions(python.tree) or wrapping.has_test_classes(python.tree):
        return _functions_cell(cell, python, marker, registry, seen, warnings, where)
    if (problem := _parametrize_problem(marker.marks)) is not None:
        return _broken(cell, registry, marker.title, problem, warnings, where)
    reason = wrapping.module_only(python.tree)
    if reason is None and future is not None and future.index < cell.index:
        reason = f"below the `from __future__` import of {future.label}"
    assigned = () if reason else tuple(cell_names.bound_names(python.tree))
    global_after = wrapping.docstring_end(python.tree)
    empty = not python.tree.body
    if not reason and (
        problem := _as_function(python.code, assigned, global_after, is_async, empty)
    ):
        return _broken(cell, registry, marker.title, problem, warnings, where)
    name = _claim(registry, _wanted_name(cell, marker.title), warnings, where)
    uses = frozenset({name}) if cell_names.uses_name(python.tree, DEVICE) else frozenset()
    return TestCell(
        cell,
        TestKind.CELL if reason else TestKind.STATEMENTS,
        python.code,
        (name,),
        marker.marks,
        marker.title,
        uses,
        problem=reason or "",
        assigned=assigned,
        global_after=global_after,
        is_async=is_async,
        empty=empty,
    )


def _parametrize_problem(marks: tuple[Mark, ...]) -> str | None:
    """Why `@parametrize` cannot mark a cell of statements: its function takes no
    arguments, and pytest would refuse the whole module. (One of the fixtures that
    `@usefixtures` names parametrizes that fixture, which it may.)"""
    fixtures = {name for m in marks if m.name == "usefixtures" for name in _literal_names(m.args)}
    for mark in marks:
        names = set(_literal_names(mark.args[:1]))
        if mark.name == "parametrize" and not (names and names <= fixtures):
            return (
                "@parametrize gives a test function arguments, and a cell of statements "
                "takes none: write the cell as a `def test_…(…)` that takes them"
            )
    return None


def _literal_names(args: tuple[str, ...]) -> list[str]:
    """The names that marks' literal arguments give (`'a, b'`, `('a', 'b')`)."""
    names: list[str] = []
    for text in args:
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(text)
            items = value.split(",") if isinstance(value, str) else value
            if isinstance(items, (list, tuple)):
                names += [item.strip() for item in items if isinstance(item, str)]
    return names


def _as_function(
    code: str, assigned: tuple[str, ...], global_after: int, is_async: bool, empty: bool
) -> str | None:
    """Why the wrapping function the module will hold does not compile; None if it does."""
    body = wrapped_body(code, assigned, global_after, empty)
    header = "async def _ntdd_cell():" if is_async else "def _ntdd_cell():"
    error = cell_code.compiles(f"{header}\n{body}\n")
    if error is None:
        return None
    line = f" at line {error.lineno - 2}" if error.lineno and error.lineno > 2 else ""
    return f"cannot run as a test function{line}: {error.msg}"


def _describe(error: SyntaxError) -> str:
    """A SyntaxError as Jupyter shows it, with its line in the cell."""
    line = f" (line {error.lineno})" if error.lineno else ""
    return f"SyntaxError: {error.msg}{line}"


def _functions_cell(
    cell: Cell,
    python: cell_code.Python,
    marker: markers.TestMarker,
    registry: names.NameRegistry,
    seen: _Seen,
    warnings: list[str],
    where: str,
) -> TestCell:
    problem = wrapping.module_level_problem(python.tree)
    if problem is None and (error := cell_code.compiles(python.tree)) is not None:
        at = f"line {error.lineno}: " if error.lineno else ""
        problem = f"{at}{error.msg}, at the top level of a cell of `def test_*` functions"
    if problem:
        return _broken(cell, registry, marker.title, problem, warnings, where)
    problem = _import_time_problem(python.tree, seen)
    if problem:
        return _broken(cell, registry, marker.title, problem, warnings, where)
    tests = [
        node
        for node in python.tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name.startswith("Test" if isinstance(node, ast.ClassDef) else "test")
    ]
    problem = next((p for node in tests if (p := wrapping.generator_problem(node))), None)
    if problem:
        return _broken(cell, registry, marker.title, problem, warnings, where)
    own_marks = all(node.decorator_list for node in tests)
    emitted: list[str] = []
    renames: list[tuple[str, str]] = []
    uses: set[str] = set()
    args: set[str] = set()
    for node in tests:
        name = _claim(registry, node.name, warnings, where)
        emitted.append(name)
        if name != node.name:
            renames.append((node.name, name))
        if cell_names.uses_name(node, DEVICE):
            uses.add(name)
        if wrapping.takes_argument(node, DEVICE):
            args.add(name)
    code = _rename_defs(python.code, python.tree, dict(renames)) if renames else python.code
    _note_definitions(python.tree if code == python.code else code, seen)
    tree = python.tree if code == python.code else cell_code.to_python(code).tree
    return TestCell(
        cell,
        TestKind.FUNCTIONS,
        code,
        tuple(emitted),
        marker.marks,
        marker.title,
        frozenset(uses),
        frozenset(args),
        tuple(renames),
        own_marks=own_marks,
        binds=frozenset(cell_names.bound_names(tree)),
        reads_at_import=frozenset(cell_names.import_time_reads(tree)),
    )


def _note_definitions(code: ast.Module | str, seen: _Seen) -> None:
    """What a cell of `def test_*` binds, at import: its tree, or its code once renamed."""
    with contextlib.suppress(SyntaxError):
        bound = cell_names.bound_names(code if isinstance(code, ast.Module) else ast.parse(code))
        seen.at_import.update(bound)
        seen.by_tests.update(bound)


def _import_time_problem(tree: ast.Module, seen: _Seen) -> str | None:
    """Why a cell of `def test_*` cannot be imported: its top level reads a name no
    cell above binds at import (setup cells and bare test cells bind theirs later)."""
    for name, line in cell_names.import_time_free_names(tree):
        if name in seen.at_import or name in MODULE_NAMES:
            continue
        if name in seen.setup:
            return (
                f"line {line} uses {name!r} from a setup cell while the module is imported, "
                "before setup runs; use it inside a test function instead"
            )
        if name in seen.by_tests:
            return (
                f"line {line} uses {name!r} from a test cell while the module is imported, "
                "before that cell runs; use it inside a test function instead"
            )
    return None


def _broken(
    cell: Cell,
    registry: names.NameRegistry,
    title: str,
    problem: str,
    warnings: list[str],
    where: str,
) -> TestCell:
    warnings.append(f"{where}: {problem}")
    name = _claim(registry, _wanted_name(cell, title), warnings, where)
    return TestCell(
        cell,
        TestKind.BROKEN,
        cell_code.normalize_newlines(cell.source),
        (name,),
        (),
        title,
        problem=problem,
    )


def _wanted_name(cell: Cell, title: str) -> str:
    return names.identifier_from_title(title) or names.positional_name(cell.index)


def _claim(registry: names.NameRegistry, wanted: str, warnings: list[str], where: str) -> str:
    name = registry.claim(wanted)
    if name != wanted:
        warnings.append(f"{where}: test name {wanted!r} is taken; this test is {name!r}")
    return name


def _rename_defs(code: str, tree: ast.Module, renames: dict[str, str]) -> str:
    """Rename top-level `def`/`class` names in place, touching nothing else."""
    lines = code.split("\n")
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        new = renames.get(node.name)
        if new is None:
            continue
        row = node.lineno - 1  # the `def`/`class` line, after any decorators
        line = lines[row]
        keyword = "class " if isinstance(node, ast.ClassDef) else "def "
        at = line.index(keyword) + len(keyword)
        name_at = line.index(node.name, at)
        lines[row] = line[:name_at] + new + line[name_at + len(node.name) :]
    return "\n".join(lines)
