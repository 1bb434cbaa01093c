"""What the notebooks depend on outside their folder: the repository's code they run,
and the files their code names.

A change there breaks a notebook as surely as an edit of its cells, so the
workflow `ntdd init` writes counts it, in its `paths:` and in its pick
(`ntdd list --changed`). Two rules, each as wide as what ntdd can see:

- **Code tests every notebook.** The package the workflow installs (`pip
  install -e .`): `src/`, else the folders pyproject.toml names
  (`[tool.setuptools]`, `[tool.hatch.build.targets.wheel]`) and the top-level
  packages and modules beside it; and the modules the notebooks import from
  the repository outside their folder (`sys.path.append("..")`), followed
  through their own imports. What one import reaches, ntdd cannot follow for
  one notebook, so a change to any of it tests them all. `code_sources` finds
  them when `ntdd init` runs; the workflow names them in `--depends-on`.
- **A file tests the notebooks that name it.** A notebook's code names a file
  by a path relative to its own folder, where a kernel opens it, or to the
  top folder (a notebook that `os.chdir`s there first):
  `"../data/train.csv"`, `Path("../data") / "train.csv"`, a folder
  (`"../data"`), or the folder before a pattern or a placeholder
  (`f"../data/{split}.csv"`, `"../data/*.csv"`). A change to that file, or to
  any file in that folder, tests the notebook; `named_paths` reads them on
  every pick, so a file added there later counts too. A path naming the
  notebook's own folder or one above it (`os.chdir("..")`) names no file.

Paths are POSIX, relative to the repository's top folder, which is the
working directory; in `code_sources`, a folder ends with `/`.
"""

from __future__ import annotations

import ast
import posixpath
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ntdd.cells.cell_code import to_python
from ntdd.errors import NtddError
from ntdd.repository.notebook_imports import imported
from ntdd.values import Cell

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

_PATH_CALLS = frozenset({"Path", "PurePath", "PosixPath", "PurePosixPath", "join"})
_PATTERN = ("{", "*", "?", "[")  # where a named path stops being one path
# Beside pyproject.toml, but never installed: setuptools' flat layout leaves these out.
_NOT_INSTALLED = frozenset(
    {"tests", "test", "docs", "doc", "examples", "example", "benchmarks", "scripts", "tools"}
)
_NOT_MODULES = frozenset({"setup.py", "conftest.py", "noxfile.py"})
_MOST_FILES = 2000  # of a package read for its imports: a vendored tree is not followed


def named_paths(notebook: str, cells: Iterable[Cell]) -> tuple[str, ...]:
    """The repository paths *notebook*'s code cells name, files or folders, each once;
    *notebook* is its path from the top folder."""
    folder = posixpath.dirname(notebook) or "."
    found: dict[str, None] = {}
    for tree in _trees(cells):
        for node in ast.walk(tree):
            text = _path_text(node)
            if text is None:
                continue
            for start in (folder, "."):
                path = _in_repository(start, folder, text)
                if path is not None:
                    found[path] = None
    return tuple(found)


def files_named(notebook: Path) -> tuple[str, ...]:
    """`named_paths` of the notebook file at *notebook*; none for one ntdd cannot read,
    which its test run reports."""
    from ntdd.notebook.read import read_notebook

    try:
        cells = read_notebook(notebook).cells
    except NtddError:
        return ()
    return named_paths(notebook.as_posix(), cells)


def names(path: str, named: Sequence[str]) -> bool:
    """Whether the changed file *path* is one of *named*, or inside a folder among them."""
    return any(path == n or path.startswith(n.rstrip("/") + "/") for n in named)


def named_folders(root: Path, named: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Where the files the notebooks name (*named*: {notebook: paths}) are, for the
    workflow's `paths:`: a named folder (`data/`), a named file's folder, so that a
    file added there later starts the workflow too, or the file itself where its
    folder holds the notebook (`README.md`). Paths not in the repository are left out."""
    found: dict[str, None] = {}
    for notebook, paths in named.items():
        home = posixpath.dirname(notebook)
        for path in paths:
            if (root / path).is_dir():
                found[f"{path}/"] = None
            elif (root / path).is_file():
                folder = posixpath.dirname(path)
                holds = not folder or home == folder or home.startswith(f"{folder}/")
                found[path if holds else f"{folder}/"] = None
    return tuple(sorted(found))


def outside(paths: Iterable[str], folder: str) -> tuple[str, ...]:
    """Those of *paths* (files, or folders ending with `/`) outside the notebooks'
    *folder*, whose own changes test the notebooks already; none for the top folder."""
    if folder == ".":
        return ()
    return tuple(p for p in paths if p.rstrip("/") != folder and not p.startswith(f"{folder}/"))


def code_sources(
    root: Path, package: str | None, imports: Iterable[tuple[str, Sequence[str]]]
) -> tuple[str, ...]:
    """The repository's code the notebooks run: the package the workflow installs, when
    *package* (its pyproject.toml or setup.py) says it installs one, and the local
    modules the notebooks import, from *imports* ((notebook, top-level names) pairs)."""
    found = dict.fromkeys(_package(root) if package else ())
    for notebook, modules in imports:
        places = _places(root, notebook)
        found.update(dict.fromkeys(_local_modules(root, places, modules)))
    return tuple(found)


def _trees(cells: Iterable[Cell]) -> Iterator[ast.Module]:
    for cell in cells:
        if cell.cell_type != "code":
            continue
        try:
            yield to_python(cell.source).tree
        except SyntaxError:
            continue  # pytest --ntdd reports the cell


def _path_text(node: ast.AST) -> str | None:
    """The path *node* spells, where constants alone spell it: `"a/b"`, `Path("a", "b")`,
    `os.path.join("a", "b")`, `Path("a") / "b"`, and an f-string's text up to its first
    placeholder."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        first = node.values[0] if node.values else None
        head = first.value if isinstance(first, ast.Constant) else None
        text = head if isinstance(head, str) else ""
        return f"{text}{{" if len(node.values) > 1 or head is None else text
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        parts = [_path_text(node.left), _path_text(node.right)]
        return posixpath.join(*parts) if None not in parts else None  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and _called(node.func) in _PATH_CALLS and node.args:
        args = [_path_text(a) for a in node.args]
        strings = [a for a in args if a is not None]
        return posixpath.join(*strings) if len(strings) == len(args) else None
    return None


def _called(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _in_repository(start: str, folder: str, text: str) -> str | None:
    """*text*, a path relative to *start* (the notebook's *folder*, or the top folder), from
    the top folder; None where it names no file there: empty, absolute, a URL, outside
    the repository, or the notebook's own folder or one above it."""
    if not text or len(text) > 1024 or any(c in text for c in "\n\0\\") or "://" in text:
        return None
    cut = min((i for i in map(text.find, _PATTERN) if i >= 0), default=-1)
    if cut >= 0:  # the folder before the pattern: "../data/" of "../data/*.csv"
        text = text[: text.rfind("/", 0, cut) + 1]
        if not text:
            return None
    if posixpath.isabs(text) or text.startswith("~"):
        return None
    path = posixpath.normpath(posixpath.join(start, text))
    if path == ".." or path.startswith("../") or path == ".":
        return None
    if folder == path or folder.startswith(path + "/"):
        return None  # where the notebook is: `os.chdir("..")`, `sys.path.append("..")`
    return path


def _package(root: Path) -> list[str]:
    """What `pip install -e .` installs of the repository: `src/`, else what
    pyproject.toml names, and the top-level packages and modules."""
    if (root / "src").is_dir():
        return ["src/"]
    named = [p for p in _configured(_pyproject(root)) if (root / p.rstrip("/")).exists()]
    tops = sorted(root.iterdir()) if root.is_dir() else []
    packages = [f"{p.name}/" for p in tops if _top_package(p)]
    modules = [p.name for p in tops if p.suffix == ".py" and p.name not in _NOT_MODULES]
    return list(dict.fromkeys([*named, *packages, *modules]))


def _top_package(path: Path) -> bool:
    name = path.name
    if name.startswith((".", "_")) or name in _NOT_INSTALLED:
        return False
    return path.is_dir() and (path / "__init__.py").is_file()


def _configured(data: dict[str, Any]) -> Iterator[str]:
    """The folders and modules `[tool.setuptools]` and hatch's wheel target name."""
    setuptools = _table(data, "tool", "setuptools")
    yield from (f"{p.split('.')[0]}/" for p in _strings(setuptools.get("packages")))
    folders = _table(setuptools, "package-dir").values()
    yield from (f"{f.strip('/')}/" for f in _strings(list(folders)) if f.strip("/"))
    yield from (f"{m}.py" for m in _strings(setuptools.get("py-modules")))
    wheel = _table(data, "tool", "hatch", "build", "targets", "wheel")
    yield from (f"{p.strip('/')}/" for p in _strings(wheel.get("packages")) if p.strip("/"))


def _table(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        found = data.get(key)
        data = found if isinstance(found, dict) else {}
    return data


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _pyproject(root: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    return data


def local_module(root: Path, notebook: str, module: str) -> Path | None:
    """The repository's own module that *notebook* imports as *module*, if it is one."""
    return _find(_places(root, notebook), module)


def _places(root: Path, notebook: str) -> list[Path]:
    """Where a notebook's import finds the repository's modules: its folder, the folders
    above it (a notebook's `sys.path.append("..")`), and `src/`."""
    folder = Path(notebook).parent
    return [root / f for f in (folder, *folder.parents, Path("src"))]


def _local_modules(root: Path, places: list[Path], modules: Iterable[str]) -> Iterator[str]:
    """The repository's modules among *modules*, and what they import of it in turn."""
    seen: set[Path] = set()
    todo = list(modules)
    while todo:
        found = _find(places, todo.pop(0))
        if found is None or found in seen:
            continue
        seen.add(found)
        yield found.relative_to(root).as_posix() + ("/" if found.is_dir() else "")
        todo += [name for source in _sources_of(found) for name in _imports_of(source)]


def _find(places: list[Path], module: str) -> Path | None:
    """`module.py`, or a package `module/` (with an `__init__.py`, or a namespace
    package's modules), in the first of *places* that has one."""
    for place in places:
        if (place / f"{module}.py").is_file():
            return place / f"{module}.py"
        package = place / module
        if package.is_dir() and any(package.glob("*.py")):
            return package
    return None


def _sources_of(found: Path) -> list[Path]:
    if found.is_file():
        return [found]
    files = (p for p in found.rglob("*.py") if not _hidden(p.relative_to(found)))
    return [p for _, p in zip(range(_MOST_FILES), files, strict=False)]


def _hidden(path: Path) -> bool:
    return any(part.startswith(".") for part in path.parts)


def _imports_of(source: Path) -> list[str]:
    try:
        return list(imported(ast.parse(source.read_bytes())))
    except (OSError, SyntaxError, ValueError):
        return []
