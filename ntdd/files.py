"""Finding notebooks and writing files safely."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from ntdd.errors import NotebookReadError

SKIP_DIRS = frozenset({".ipynb_checkpoints", "__pycache__", "node_modules", ".git"})


def find_notebooks(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The notebooks named by *paths*: files as given, folders searched recursively.

    Checkpoints, hidden folders and symlinked folders are not entered, so a
    symlink loop cannot trap the search. A path that does not exist, or a
    file that is not `.ipynb`, raises `NotebookReadError`.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from _walk(path)
        elif path.suffix == ".ipynb" and (path.exists() or path.is_symlink()):
            yield path
        elif not path.exists():
            raise NotebookReadError(f"{path}: no such file or directory")
        else:
            raise NotebookReadError(f"{path}: not a notebook (expected a .ipynb file)")


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".ipynb"):
                yield Path(root) / name


def write_atomic(path: Path, text: str) -> None:
    """Write *text* to *path* so that readers see the old file or the new, never half.

    The new content goes to a temporary file in the same folder, is flushed to
    disk, and replaces the old file in one rename. An existing file keeps its
    permissions.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_mode()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def source_path(notebook: Path, module_dir: Path) -> str:
    """How a module in *module_dir* names its notebook: a relative POSIX path."""
    return Path(os.path.relpath(os.path.abspath(notebook), os.path.abspath(module_dir))).as_posix()
