"""The repository's code the notebooks run: a change to it tests every notebook.

The package the workflow installs (`pip install -e .`): `src/`, else the
folders pyproject.toml names (`[tool.setuptools]`,
`[tool.hatch.build.targets.wheel]`) and the top-level packages and modules
beside it; and the modules the notebooks import from the repository outside
their folder (`sys.path.append("..")`), followed through their own imports.
What one import reaches, ntdd cannot follow for one notebook, so a change to
any of it tests them all. `code_sources` finds them when `ntdd init` runs;
the workflow names them in `--depends-on` (`ntdd list --changed`) and in its
`paths:`. The files the notebooks name are `named_files`'.

Paths are POSIX, relative to the repository's top folder, which is the
working directory; a folder ends with `/`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ntdd.repository.notebook_imports import imported

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Beside pyproject.toml, but never installed: setuptools' flat layout leaves these out.
_NOT_INSTALLED = frozenset(
    {"tests", "test", "docs", "doc", "examples", "example", "benchmarks", "scripts", "tools"}
)
_NOT_MODULES = frozenset({"setup.py", "conftest.py", "noxfile.py"})
_MOST_FILES = 2000  # of a package read for its imports: a vendored tree is not followed


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
