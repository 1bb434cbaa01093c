"""Where a notebook's module lives, and which notebook a module belongs to.

Export, `--check`, sync, nbconvert and the pre-commit hooks all find modules
here, so they never disagree about where a module is. A module is named
`test_<notebook>.py` (pytest collects nothing else), beside its notebook, or
in an output folder that mirrors the notebook tree below the folder given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import ForeignFileError, NotebookReadError
from ntdd.format.module import Header, parse_header
from ntdd.format.names import identifier_from_title
from ntdd.notebook.files import SKIP_DIRS, find_notebooks
from ntdd.notebook.text import TEXT_SUFFIXES

_HEAD = 2048  # bytes of a file that hold a module's header


@dataclass(frozen=True)
class Pair:
    """A notebook, and the folder it was found under (the root of the mirrored tree)."""

    notebook: Path
    base: Path


def module_name(notebook: Path) -> str:
    """`01-intro.ipynb` -> `test_01_intro.py`; `testbook.ipynb` -> `test_testbook.py`.

    The stem is made an identifier, so pytest can import the module, and it
    always starts with `test_`, so pytest collects it. It cannot name a folder.
    A text notebook's suffix is kept in the name (`nb.py` -> `test_nb_py.py`,
    `nb.md` -> `test_nb_md.py`): its module can then be neither the notebook
    itself (`test_nb.py`) nor the module of the `nb.ipynb` it may be paired with.
    """
    text = notebook.suffix in TEXT_SUFFIXES
    stem = identifier_from_title(
        f"{notebook.stem}_{notebook.suffix[1:]}" if text else notebook.stem
    )
    if not stem.startswith("test_"):
        stem = f"test_{stem}" if stem else "test_notebook"
    return f"{stem}.py"


def module_path(notebook: Path, out_dir: Path | None = None, base: Path | None = None) -> Path:
    """Where export writes *notebook*'s module: beside it, or below *out_dir*.

    Below *out_dir*, the notebook's folder relative to *base* (the folder it
    was found in) is kept, so `week1/lab.ipynb` and `week2/lab.ipynb` do not
    collide.
    """
    if out_dir is None:
        return notebook.parent / module_name(notebook)
    below = Path()
    if base is not None:
        try:
            below = notebook.parent.resolve().relative_to(base.resolve())
        except ValueError:
            below = Path()
    return out_dir / below / module_name(notebook)


def notebooks_under(paths: Iterable[str | Path]) -> Iterator[Pair]:
    """The notebooks named by *paths*, each with the folder its module path mirrors from."""
    for raw in paths:
        path = Path(raw)
        for notebook in find_notebooks([path]):
            yield Pair(notebook, path if path.is_dir() else notebook.parent)


def find_module(notebook: Path, out_dir: Path | None = None, base: Path | None = None) -> Path:
    """The module of *notebook*: where export writes it, else wherever one was written.

    A module exported elsewhere (`-o` on another day) is found by the source
    its header names, so that sync edits it rather than writing a second one.
    """
    target = module_path(notebook, out_dir, base)
    if target.exists() or target.is_symlink():
        return target
    try:
        key = notebook.resolve()
    except (OSError, RuntimeError):  # a symlink loop: reading the notebook will say so
        return target
    found = _generated_modules(_search_root(out_dir, notebook)).get(key)
    return found if found is not None else target


def project_root(path: Path) -> Path:
    """The folder of the project *path* is in: the nearest holding pyproject.toml or .git,
    else the current directory when *path* is below it, else *path*'s folder."""
    start = path.resolve()
    folder = start if start.is_dir() else start.parent
    marked = _marked_root(folder)
    if marked is not None:
        return marked
    here = Path.cwd().resolve()
    return here if _below(start, here) else folder


def _marked_root(folder: Path) -> Path | None:
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / ".git").exists():
            return candidate
    return None


def _below(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def notebook_of(module: Path, text: str) -> Path:
    """The notebook a generated *module* names, refused unless it is inside the project.

    A module's header is text anyone can edit: an absolute path, or one that
    climbs out of the project, must not make sync write a notebook elsewhere.
    """
    header = parse_header(text)
    if header is None:
        raise ForeignFileError(f"{module}: not a module written by ntdd (no ntdd header)")
    return checked_source(module, header)


def checked_source(module: Path, header: Header) -> Path:
    source = header.notebook
    if Path(source).is_absolute() or Path(source).drive:
        raise ForeignFileError(
            f"{module}: its header names {source!r}, an absolute path; ntdd writes relative ones"
        )
    notebook = Path(os.path.normpath(module.parent / source))
    resolved = notebook.resolve()
    inside = (project_root(module), module.parent.resolve())
    if not any(_below(resolved, root) for root in inside):
        link = _link_out(notebook, inside)
        if link is not None:
            raise ForeignFileError(
                f"{module}: its notebook {link} is a symbolic link to {link.resolve()}, "
                "outside the project; not following it"
            )
        raise ForeignFileError(
            f"{module}: its header names {source!r}, outside the project; not following it"
            + _how_to_widen(module)
        )
    if notebook.suffix not in (".ipynb", *TEXT_SUFFIXES):
        raise NotebookReadError(f"{module}: its header names {source!r}, which is not a notebook")
    return notebook


def _link_out(notebook: Path, inside: tuple[Path, ...]) -> Path | None:
    """The symbolic link (*notebook*, or a folder above it in the project) through which
    *notebook* leads out of the project; None where its path itself climbs out."""
    absolute = Path(os.path.abspath(notebook))
    for candidate in (absolute, *absolute.parents):
        if not any(_below(candidate, root) for root in inside):
            return None
        if candidate.is_symlink():
            return _shown(candidate)
    return None


def _shown(path: Path) -> Path:
    """*path* relative to the current directory when below it, as messages name files."""
    here = Path.cwd()
    return Path(os.path.relpath(path, here)) if _below(path, here) else path


def _how_to_widen(module: Path) -> str:
    """Where no pyproject.toml or .git marks the project, how to make the notebook part of it."""
    if _marked_root(module.resolve().parent) is not None:
        return ""
    return (
        " (no folder above the module holds a pyproject.toml or .git, so the project is the "
        "current directory: run ntdd from a folder that holds both the notebook and the "
        "module, or add a pyproject.toml to the folder that does)"
    )


def _search_root(out_dir: Path | None, notebook: Path) -> Path:
    """Where a module may have been written: the output folder, else the whole project."""
    return out_dir.resolve() if out_dir is not None else project_root(notebook)


def _generated_modules(root: Path) -> dict[Path, Path]:
    """{notebook: module} for every module ntdd wrote below *root*.

    Only asked for when a module is not where export would write it.
    """
    found: dict[Path, Path] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        dirs[:] = [d for d in dirs if d not in ("site-packages", "build", "dist")]
        for name in sorted(files):
            if not (name.startswith("test_") and name.endswith(".py")):
                continue
            module = Path(folder) / name
            notebook = source_of(module)
            if notebook is not None:
                found.setdefault(notebook.resolve(), module)
    return found


def source_of(module: Path) -> Path | None:
    """The notebook a generated *module*'s header names (relative where *module* is);
    None for any other file, and for a header that points outside the project."""
    header = _header_of(module)
    if header is None:
        return None
    try:
        return checked_source(module, header)
    except (ForeignFileError, NotebookReadError):
        return None


def _header_of(module: Path) -> Header | None:
    try:
        with module.open(encoding="utf-8", errors="replace") as f:
            return parse_header(f.read(_HEAD))
    except OSError:
        return None
