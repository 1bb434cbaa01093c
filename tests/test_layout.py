"""The package's folders are its architecture: each imports only what its docstring allows.

Every subpackage's docstring says "May import: …"; these tests read that
sentence and hold each module of the package to it, so the rules live in one
place and a newcomer reads them where the code is. Inside the packages too,
no module imports one that imports it back.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ntdd"
# The values and settings every stage shares: they import only each other.
SHARED = frozenset({"_version", "errors", "values", "parameters", "config", "defaults"})
# The stages below the pytest side: pure functions of a notebook's text.
BELOW_RENDER = ("cells", "notebook", "format", "pipeline", *sorted(SHARED))


def units() -> list[str]:
    """ntdd's top-level parts: subpackages and modules, by name."""
    return sorted(
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.name != "__pycache__"
    )


def modules(unit: str) -> list[Path]:
    folder = PACKAGE / unit
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{unit}.py"]


def imports(path: Path, module_level_only: bool = False) -> Iterator[str]:
    """The dotted names *path* imports, anywhere (or only at module level, outside
    `if TYPE_CHECKING:`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = _module_level(tree.body) if module_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "ntdd":  # `from ntdd import x`: x is a module or a name
                yield from (f"ntdd.{alias.name}" for alias in node.names)
            else:
                yield node.module


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.If, ast.Try)):
            yield from _module_level(node.body)
            yield from _module_level(getattr(node, "orelse", []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)
        else:
            yield node


def docstring(unit: str) -> str:
    path = PACKAGE / unit / "__init__.py" if (PACKAGE / unit).is_dir() else PACKAGE / f"{unit}.py"
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def allowed(unit: str) -> set[str]:
    """The ntdd units *unit* may import, read from its docstring's "May import:" sentence."""
    if unit in SHARED:
        return set(SHARED)
    found = re.search(r"May import:(.*?)\.(?:\s|$)", docstring(unit), re.DOTALL)
    assert found, f"ntdd.{unit}'s docstring does not say what it may import"
    sentence = found.group(1)
    names = set(re.findall(r"\bntdd\.([a-z_]+)", sentence))
    if "the shared modules" in sentence:
        names |= SHARED
    return names | {unit}


LAYERED = [u for u in units() if u not in SHARED and u not in ("__init__", "__main__")]


def test_every_part_of_the_package_is_accounted_for() -> None:
    assert set(LAYERED) == {
        "cells",
        "notebook",
        "format",
        "pipeline",
        "runtime",
        "plugin",
        "commands",
        "repository",
        "modules",
        "marking",
        "kernel",
        "faults",
        "torch",
        "outputs",
        "settings",
        "coverage",  # coverage.py's plugin, loaded by coverage.py itself
    }


@pytest.mark.parametrize("unit", LAYERED)
def test_a_package_imports_only_what_its_docstring_allows(unit: str) -> None:
    may = allowed(unit)
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in modules(unit)
        for name in imports(path)
        if name.startswith("ntdd.") and name.split(".")[1] not in may
    }
    assert not wrong, f"ntdd.{unit} may import only {sorted(may)}"


@pytest.mark.parametrize("unit", sorted(SHARED))
def test_the_shared_modules_import_only_each_other(unit: str) -> None:
    ours = {
        name.split(".")[1] for name in imports(PACKAGE / f"{unit}.py") if name.startswith("ntdd.")
    }
    assert ours <= SHARED


def test_the_package_root_imports_only_the_version_up_front() -> None:
    """Everything else it offers loads on first use: a generated module imports
    `ntdd.runtime`, and should not pay for Jinja or nbformat."""
    ours = {n for n in imports(PACKAGE / "__init__.py", module_level_only=True) if "ntdd" in n}
    assert ours == {"ntdd._version"}


@pytest.mark.parametrize("unit", BELOW_RENDER)
def test_nothing_below_render_imports_pytest(unit: str) -> None:
    found = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in modules(unit)
        for name in imports(path)
        if name.split(".")[0] in ("pytest", "_pytest")
    }
    assert not found


def test_the_pytest_side_does_not_know_the_commands() -> None:
    assert "commands" not in allowed("plugin")
    assert "plugin" not in allowed("commands")


@pytest.mark.slow
def test_torch_is_an_optional_leaf() -> None:
    """No module imports torch when it is imported; ntdd.torch imports nothing of ntdd."""
    eager = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for name in imports(path, module_level_only=True)
        if name.split(".")[0] == "torch"
    }
    assert not eager
    outside = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in modules("torch")
        for name in imports(path)
        if name.split(".")[0] == "ntdd" and name.split(".")[:2] != ["ntdd", "torch"]
    }
    assert not outside
    users = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for name in imports(path)
        if name == "ntdd.torch"
    }
    assert all(u.startswith(("faults/", "plugin/")) for u in users), users


@pytest.mark.slow
def test_no_import_runs_back_up_to_the_package_root() -> None:
    """`from ntdd import __version__` inside ntdd loops back through the root."""
    back = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" or path.parent != PACKAGE
        for name in imports(path)
        if name == "ntdd.__version__" or name == "ntdd"
    }
    assert not back


def test_tests_import_their_helpers_at_module_level() -> None:
    """A `from conftest import …` run inside a test finds whichever `conftest` a
    pytester run left in `sys.modules`, not the suite's own: helpers are
    imported once, at collection."""
    tests = Path(__file__).resolve().parent
    late = [
        f"{path.name}:{node.lineno}"
        for path in sorted(tests.glob("test_*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom | ast.Import)
        and node.col_offset > 0
        and "conftest" in {getattr(node, "module", None), *(a.name for a in node.names)}
    ]
    assert late == []


# Exceptions a user never meets: each is turned into a message naming the file and cell.
INTERNAL_EXCEPTIONS = {
    "cells/cell_code.py": {"CellSyntaxError"},  # a collection error or the CLI's one line
    "notebook/markers.py": {"MarkerError"},  # the plan's "cell N: …" message
    "faults/finding.py": {"NotApplicable"},  # a fault's "n/a" in `ntdd faults`' table
}


def _exception_classes(path: Path) -> set[str]:
    """The classes *path* defines whose bases name an exception or a warning."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            bases = {ast.unparse(b).rpartition(".")[2] for b in node.bases}
            if any(b.endswith(("Error", "Exception", "Warning", "Interrupt")) for b in bases):
                found.add(node.name)
    return found


def test_every_exception_and_warning_a_user_meets_is_in_errors_and_exported() -> None:
    """One home for what users catch and filter (`-W ignore::ntdd.NtddWarning`)."""
    import ntdd

    elsewhere = {
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in PACKAGE.rglob("*.py")
        if path.name != "errors.py"
        for name in _exception_classes(path)
        - INTERNAL_EXCEPTIONS.get(str(path.relative_to(PACKAGE).as_posix()), set())
    }
    assert not elsewhere
    defined = _exception_classes(PACKAGE / "errors.py")
    assert defined <= set(ntdd.__all__)
    assert all(getattr(ntdd, name).__module__ == "ntdd.errors" for name in defined)


def _module_name(path: Path) -> str:
    """`ntdd.repository.git` for ntdd/repository/git.py; `ntdd.faults` for its `__init__.py`."""
    parts = ("ntdd", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """Each module of ntdd, and the modules of ntdd it imports: anywhere, inside functions
    and under `TYPE_CHECKING` too (a circle that only a late import or only the type
    checker reads is one still). `from ntdd.x import y` imports the module `ntdd.x.y`
    where there is one, else a name of `ntdd.x`."""
    paths = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names if alias.name in paths}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    inner = f"{node.module}.{alias.name}"
                    found |= {inner} if inner in paths else {node.module} & paths.keys()
        graph[name] = found - {name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The import circles of *graph*: each a set of modules that import each other."""

    def reached(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for name in graph[todo.pop()] - seen:
                seen.add(name)
                todo.append(name)
        return seen

    reaches = {name: reached(name) for name in graph}
    circles: list[set[str]] = []
    for name in sorted(graph):
        if name in reaches[name] and not any(name in c for c in circles):
            circles.append({other for other in reaches[name] if name in reaches[other]})
    return circles


# Circles being undone as this is written, each by its own change: one that is gone must
# leave this list too, so that it cannot come back.
CIRCLES_BEING_UNDONE: list[set[str]] = []


def test_no_module_of_ntdd_imports_one_that_imports_it_back() -> None:
    """Each package's modules stand in layers as the packages do: a module that needs
    another's names imports it, and nothing it imports, however far down, imports it
    back. A late import inside a function that only hides a circle is one still."""
    circles = _circles(_import_graph())
    new = [sorted(c) for c in circles if c not in CIRCLES_BEING_UNDONE]
    assert not new, f"these modules of ntdd import each other in a circle: {new}"
    gone = [sorted(c) for c in CIRCLES_BEING_UNDONE if c not in circles]
    assert not gone, f"no longer a circle, so no longer to be allowed here: {gone}"


def test_only_the_entry_point_imports_the_commands() -> None:
    """The command line is the top floor: `python -m ntdd` and the `ntdd` script
    (`ntdd.commands.cli:main`) enter it; nothing of ntdd beneath imports it."""
    graph = _import_graph()
    wrong = {
        f"{name} imports {other}"
        for name, imported in graph.items()
        if not name.startswith("ntdd.commands") and name != "ntdd.__main__"
        for other in imported
        if other.startswith("ntdd.commands")
    }
    assert not wrong


# The work of the subcommands, each below the command line: what `ntdd init` and `ntdd list`
# know of a repository; export, `--check` and sync on a notebook and its module; `ntdd mark`'s
# `# TEST` lines.
BELOW_THE_COMMANDS = ("repository", "modules", "marking")


@pytest.mark.parametrize("unit", BELOW_THE_COMMANDS)
def test_the_work_of_the_commands_knows_no_command_line(unit: str) -> None:
    """These answer the subcommands, and are called by them: they parse no arguments,
    and run no pytest."""
    assert "commands" not in allowed(unit)
    assert unit in allowed("commands")
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in modules(unit)
        for name in imports(path)
        if name == "argparse" or name.split(".")[0] in ("pytest", "_pytest")
    }
    assert not wrong


def _runtime_imports() -> dict[str, set[str]]:
    """Each module of ntdd.runtime, and the modules of ntdd.runtime it imports."""
    graph = _import_graph()
    return {
        name.removeprefix("ntdd.runtime."): {
            other.removeprefix("ntdd.runtime.")
            for other in imported
            if other.startswith("ntdd.runtime.")
        }
        for name, imported in graph.items()
        if name.startswith("ntdd.runtime.")
    }


@pytest.mark.slow
def test_the_rooms_of_the_runtime() -> None:
    """What is fixed once a module is imported (`cell_map`), one device's kernel (`kernel`),
    the facade a generated module holds (`notebook_runtime`), and the protocol the pytest
    side reads any runtime through (`protocol`), which the kernel extension answers too."""
    graph = _runtime_imports()
    assert "notebook_runtime" not in graph["kernel"] | graph["cell_map"]
    assert "kernel" not in graph["cell_map"]
    assert graph["protocol"] <= {"cell_map"}


def test_the_pytest_side_reads_a_runtime_only_through_its_protocol() -> None:
    """No module of ntdd.plugin imports the runtime's classes: it asks `__ntdd__` what the
    `Runtime` protocol says, whichever runtime a module holds."""
    wrong = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in modules("plugin")
        for name in imports(path)
        if name in ("ntdd.runtime.notebook_runtime", "ntdd.runtime.kernel", "ntdd.kernel.regions")
    }
    assert not wrong


def test_the_folders_ntdd_reads_itself_from_are_the_packages_root() -> None:
    """A module that moves into a subpackage still finds all of ntdd: the failures' frames
    of ntdd's machinery, and the files the module cache's key stamps."""
    import ntdd
    from ntdd.plugin.collection import module_cache
    from ntdd.plugin.failures import tracebacks

    root = Path(ntdd.__file__).resolve().parent
    assert tracebacks._MACHINERY[0] == f"{root}/"
    assert "runtime/notebook_runtime.py:" in module_cache._salt("rewrite", False)
