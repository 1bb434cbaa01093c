"""The package's folders are its architecture: each imports only what its docstring allows.

Every subpackage's docstring says "May import: …"; these tests read that
sentence and hold each module of the package to it, so the rules live in one
place and a newcomer reads them where the code is.
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
        "kernel",
        "faults",
        "torch",
        "outputs",
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


def _runtime_imports() -> dict[str, set[str]]:
    """Each module of ntdd.runtime, and the modules of ntdd.runtime it imports (anywhere,
    under `TYPE_CHECKING` too: a circle read only by the type checker is one still)."""
    folder = PACKAGE / "runtime"
    names = {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
    graph: dict[str, set[str]] = {}
    for name in names:
        tree = ast.parse((folder / f"{name}.py").read_text(encoding="utf-8"))
        found: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "ntdd.runtime":
                found |= {alias.name for alias in node.names if alias.name in names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "ntdd.runtime."
            ):
                found.add((node.module or "").split(".")[2])
        graph[name] = found - {name}
    return graph


def test_the_runtime_s_modules_import_each_other_in_one_direction() -> None:
    """The runtime is composed parts (`CellMap`, `Kernel`, the `NotebookRuntime` facade over
    them): no module of it imports one that imports it back."""
    graph = _runtime_imports()

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for name in graph[start] - seen:
            seen.add(name)
            if name == goal or reaches(name, goal, seen):
                return True
        return False

    circles = sorted(name for name in graph if reaches(name, name, set()))
    assert not circles, f"these modules of ntdd.runtime are in an import circle: {circles}"


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
