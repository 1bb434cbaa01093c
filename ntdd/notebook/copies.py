"""The copies `--ntdd-write-notebooks DIR` writes, told apart from notebooks.

A copy says in its `ntdd` metadata which notebook it was written from (its
path under the rootdir, `written_from`). It is the run's output, not a
notebook to test: inside the project (`executed/`, the docs' CI example) a
later `pytest --ntdd`, `ntdd init` or `ntdd list` would otherwise count it,
run it again, and write a copy of the copy one folder deeper. A file that
names itself is a notebook all the same: a copy moved back over its notebook.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

_MARK = b'"written_from"'


def written_from(data: bytes) -> str | None:
    """The notebook a copy ntdd wrote was written from (its `ntdd` metadata); None for
    any other file."""
    if _MARK not in data:  # most notebooks: not parsed again
        return None
    try:
        marker = json.loads(data.decode("utf-8-sig"))["metadata"]["ntdd"]["written_from"]
    except (ValueError, TypeError, KeyError):
        return None
    return marker if isinstance(marker, str) else None


def copy_of(path: Path, root: Path, data: bytes | None = None) -> str | None:
    """The notebook that *path* is ntdd's copy of, as the copy names it (relative to
    *root*, the rootdir it was written under); None for a notebook of its own."""
    if path.suffix != ".ipynb":
        return None  # ntdd writes no copy of a text notebook
    if data is None:
        try:
            data = path.read_bytes()
        except OSError:
            return None  # the reader says why, where it reads it
    source = written_from(data)
    if source is None or _same(path, root / source):
        return None
    return source


def copies_folders(copies: Iterable[tuple[Path, str]], root: Path) -> list[str]:
    """The folders the *copies* (path, notebook it names) were written to, as the option
    named them relative to *root*: `executed/` for `executed/nbs/a.ipynb` of `nbs/a.ipynb`."""
    found: list[str] = []
    for path, source in copies:
        try:
            below = Path(os.path.relpath(os.path.abspath(path), os.path.abspath(root))).parts
        except ValueError:  # another drive
            below = Path(path).parts
        names = Path(source).parts
        cut = len(below) - len(names)
        kept = below[:cut] if cut > 0 and below[cut:] == names else below[:-1]
        folder = Path(*kept).as_posix() + "/" if kept else "./"
        if folder not in found:
            found.append(folder)
    return found


def left_out(count: int, folders: list[str], who: str = "it") -> str:
    """What a command says of the copies it left out: one line."""
    noun = "notebook" if count == 1 else "notebooks"
    return f"left out {count} {noun} {who} wrote (copies in {', '.join(folders)})"


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
