"""What `ntdd init` finds in a repository, so that its workflow passes there as it stands.

Where the notebooks are, which of them have `# TEST` cells, whether their
generated modules are committed (only then can CI run `ntdd export --check`),
and what the notebooks need installed: the files that say so
(`dependencies`), and what the notebooks import. Inside a git work tree,
"committed" means tracked by git; elsewhere, files on disk count.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import NotPythonError, NtddError
from ntdd.notebook.files import find_notebooks, notebooks_among
from ntdd.repository.dependencies import Declared, declared
from ntdd.repository.git import git_files, stored_with_lfs
from ntdd.repository.local_code import code_sources, local_module
from ntdd.repository.named_files import named_folders, named_paths, names
from ntdd.repository.notebook_imports import Imports, cell_imports, third_party


@dataclass(frozen=True)
class Survey:
    """Facts about a repository; paths are POSIX strings relative to its top folder."""

    notebooks_dir: str  # "." for the top folder
    notebooks: tuple[str, ...]
    with_tests: tuple[str, ...]  # notebooks that have `# TEST` cells
    unreadable: tuple[str, ...]  # notebooks that could not be read, with why
    committed_modules: tuple[str, ...]  # generated modules that are committed
    uncommitted_modules: tuple[str, ...]  # exported, but not committed
    missing_modules: tuple[str, ...]  # notebooks with tests but no committed module
    declared: Declared  # the files that say what to install
    git: bool
    imports: tuple[tuple[str, str], ...] = ()  # (module, first notebook): neither stdlib nor local
    installs: tuple[tuple[str, str], ...] = ()  # (requirement, notebook): `%pip install` lines
    lfs: tuple[str, ...] = ()  # the notebooks, and files beside them, stored with Git LFS
    sources: tuple[str, ...] = ()  # the repository's code they run, outside their folder
    data: tuple[str, ...] = ()  # the files and folders (`x/`) they name outside their folder
    copies: str | None = None  # the copies of notebooks ntdd wrote, left out: in words


def survey(root: Path, notebooks_dir: str | None, modules_dir: str | None) -> Survey:
    """Look at the repository whose top folder is *root* (the working directory)."""
    listed = git_files(root, "--cached", "--others", "--exclude-standard")
    tracked = git_files(root, "--cached")
    given = _given_folder(root, notebooks_dir) if notebooks_dir is not None else None
    found, copies = _without_copies(root, _notebooks(root, given or ".", listed))
    if not found:
        where = f"--notebooks {notebooks_dir}: no notebooks there" if given else "no notebooks"
        raise NtddError(
            f"{where} (.ipynb files, or jupytext .py and .md notebooks, that git tracks or "
            "would add): the workflow would test nothing" + (f"; {copies}" if copies else "")
        )
    folder = given or _common_folder(found)
    notebooks = tuple(n for n in found if _inside(n, folder))
    read = _read_notebooks(root, notebooks)
    project = declared(root, _clean(folder))
    sources = code_sources(root, project.package, read.modules)
    data = _outside(named_folders(root, read.named), _clean(folder))
    out_dir = _modules_dir(root, modules_dir)
    modules = {nb: _module(root, nb, out_dir) for nb in read.with_tests}
    generated = {nb: m for nb, m in modules.items() if _is_generated(root / m)}
    committed = {nb: m for nb, m in generated.items() if tracked is None or m in tracked}
    return Survey(
        notebooks_dir=_clean(folder),
        notebooks=notebooks,
        with_tests=read.with_tests,
        unreadable=read.unreadable,
        committed_modules=tuple(committed.values()),
        uncommitted_modules=tuple(m for nb, m in generated.items() if nb not in committed),
        missing_modules=tuple(nb for nb in read.with_tests if nb not in committed),
        declared=project,
        git=tracked is not None,
        imports=tuple(read.imports.items()),
        installs=tuple(read.installs.items()),
        lfs=stored_with_lfs(root, sorted(f for f in listed or () if _read_there(f, folder, data))),
        sources=_outside(sources, _clean(folder)),
        data=data,
        copies=copies,
    )


def _without_copies(root: Path, found: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """The notebooks less the copies `--ntdd-write-notebooks` wrote, which `ntdd list` and
    `pytest --ntdd` leave out too; and what was left out, in words."""
    from ntdd.notebook.copies import copies_folders, copy_of, left_out

    named = [(notebook, copy_of(root / notebook, root)) for notebook in found]
    copies = [(root / notebook, source) for notebook, source in named if source is not None]
    if not copies:
        return found, None
    kept = tuple(notebook for notebook, source in named if source is None)
    return kept, left_out(len(copies), copies_folders(copies, root), "ntdd")


def _given_folder(root: Path, folder: str) -> str:
    """`--notebooks FOLDER` as a path inside the repository at *root*, or why not: the
    workflow runs in a checkout of the repository, and can test nothing outside it."""
    inside = os.path.relpath(os.path.normpath(root / folder), root)
    if not (root / folder).is_dir():
        raise NtddError(f"--notebooks {folder}: no such folder")
    if inside.split(os.sep)[0] == os.pardir or not (root / inside).resolve().is_relative_to(root):
        raise NtddError(
            f"--notebooks {folder}: outside the repository ({root}), where the workflow runs"
        )
    return Path(inside).as_posix()


def _notebooks(root: Path, folder: str, listed: set[str] | None) -> tuple[str, ...]:
    """The notebooks under *folder*, as `ntdd export` finds them, that git would commit."""
    start = root / folder
    if listed is None:
        return tuple(p.relative_to(root).as_posix() for p in find_notebooks([start]))
    files = [root / p for p in sorted(listed)]  # as a checkout has them: pairs too
    found = notebooks_among(files, [start], present=files)
    return tuple(p.relative_to(root).as_posix() for p in found)


def _common_folder(notebooks: tuple[str, ...]) -> str:
    if not notebooks:
        return "."
    return os.path.commonpath([str(Path(n).parent) for n in notebooks]) or "."


def _inside(path: str, folder: str) -> bool:
    return folder in ("", ".") or path.startswith(_clean(folder) + "/")


def _outside(paths: Iterable[str], folder: str) -> tuple[str, ...]:
    """Those of *paths* (files, or folders ending with `/`) outside the notebooks'
    *folder*, whose own changes test the notebooks already; none for the top folder."""
    if folder == ".":
        return ()
    return tuple(p for p in paths if p.rstrip("/") != folder and not p.startswith(f"{folder}/"))


def _clean(folder: str) -> str:
    return Path(folder).as_posix().rstrip("/") or "."


@dataclass(frozen=True)
class _Read:
    """What the notebooks' cells say."""

    with_tests: tuple[str, ...]
    unreadable: tuple[str, ...]  # why each could not be read
    imports: dict[str, str]  # {module: the first notebook importing it}, neither stdlib nor local
    installs: dict[str, str]  # {requirement: the first notebook naming it}
    modules: tuple[tuple[str, tuple[str, ...]], ...]  # (notebook, every name it imports)
    named: dict[str, tuple[str, ...]]  # {notebook: the paths its code names}


def _read_notebooks(root: Path, notebooks: tuple[str, ...]) -> _Read:
    from ntdd.notebook.markers import is_test_cell
    from ntdd.notebook.read import read_notebook

    with_tests: list[str] = []
    unreadable: list[str] = []
    imports: dict[str, str] = {}
    installs: dict[str, str] = {}
    modules: list[tuple[str, tuple[str, ...]]] = []
    named: dict[str, tuple[str, ...]] = {}
    for notebook in notebooks:
        try:  # relative to the working directory, so that messages name it so
            cells = read_notebook(os.path.relpath(root / notebook)).cells
        except NotPythonError as e:  # pytest --ntdd passes over one without tests
            if e.has_tests:
                unreadable.append(str(e))
            continue
        except NtddError as e:
            unreadable.append(str(e))
            continue
        if any(is_test_cell(cell) for cell in cells):
            with_tests.append(notebook)
        found = cell_imports(cells)
        modules.append((notebook, found.modules))
        _add_imports(root, notebook, found, imports, installs)
        named[notebook] = named_paths(notebook, cells)
    return _Read(tuple(with_tests), tuple(unreadable), imports, installs, tuple(modules), named)


def _add_imports(
    root: Path, notebook: str, found: Imports, imports: dict[str, str], installs: dict[str, str]
) -> None:
    for module in found.modules:
        if third_party(module) and local_module(root, notebook, module) is None:
            imports.setdefault(module, notebook)
    for requirement in found.installed:
        installs.setdefault(requirement, notebook)


def _read_there(path: str, folder: str, data: tuple[str, ...]) -> bool:
    """Whether the notebooks read *path*: inside their folder, or named by them."""
    return _inside(path, folder) or names(path, data)


def _modules_dir(root: Path, modules_dir: str | None) -> Path | None:
    """Where `ntdd export --check` looks: `-o`, then `[tool.ntdd] output`, then beside."""
    from ntdd.settings.pyproject import load_config

    return root / modules_dir if modules_dir else load_config(root).output


def _module(root: Path, notebook: str, out_dir: Path | None) -> str:
    """The notebook's module, relative to *root*, found as the workflow's
    `ntdd export --check NOTEBOOK` finds it: where export writes it, else
    wherever a module's header names the notebook (`-o tests/notebooks` once)."""
    from ntdd.format.paths import find_module

    path = root / notebook
    module = find_module(path, out_dir, path.parent)
    return Path(os.path.relpath(module, root)).as_posix()


def _is_generated(path: Path) -> bool:
    from ntdd.format.module import is_generated

    try:
        with path.open(encoding="utf-8") as f:
            return is_generated(f.read(200))
    except (OSError, UnicodeDecodeError):
        return False
