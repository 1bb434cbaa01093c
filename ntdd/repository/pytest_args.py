"""The picked notebooks as pytest's arguments (`pytest @FILE`), whatever their names.

pytest reads an argument's `::` as the start of a test's name and its `[` as a
parametrization (pytest 9: "file or directory not found: ./a",
"path cannot contain [] parametrization"), and either stops the whole run:
no notebook is tested. A notebook so named is reached through the nearest
folder above it that pytest reads as a path, with `--ignore` for each entry
of the folders between that leads to no picked notebook (`--ignore` takes a
plain path); that folder then collects the picked notebooks and nothing
else, and pytest collects a notebook also named on its own once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from ntdd.notebook.files import path_argument

# What a collected folder's pytest never collects from: a conftest is loaded, not collected.
_NEVER_COLLECTED = frozenset({"conftest.py", "__init__.py", "__pycache__"})


def pytest_arguments(notebooks: Sequence[Path]) -> list[str]:
    """The arguments that make pytest collect exactly *notebooks*, one an argument."""
    plain = [path_argument(n) for n in notebooks if _read_as_path(path_argument(n))]
    odd = [n for n in notebooks if not _read_as_path(path_argument(n))]
    if not odd:
        return plain
    kept = {Path(os.path.abspath(a)) for n in notebooks for a in (n, *_between(n))}
    anchors: list[Path] = []
    for notebook in odd:
        anchor = _anchor(notebook)
        if anchor not in anchors:
            anchors.append(anchor)
    tops = [a for a in anchors if not any(o != a and _below(a, o) for o in anchors)]
    ignored = [path for top in tops for path in _left_out(top, kept)]
    return [
        *(path_argument(top) for top in tops),
        *plain,
        *(_ignore(path) for path in ignored),
    ]


def _read_as_path(argument: str) -> bool:
    """Whether pytest reads *argument* as a path, all of it (`_pytest.main`'s
    `resolve_collection_argument`: `[` starts a parametrization, `::` a name)."""
    return "[" not in argument and "::" not in argument


def _between(notebook: Path) -> Iterator[Path]:
    """The folders above *notebook*, nearest first, as its path names them (`.` last)."""
    folder = notebook.parent
    while True:
        yield folder
        if folder == folder.parent:
            return
        folder = folder.parent


def _anchor(notebook: Path) -> Path:
    """The nearest folder above *notebook* whose path pytest reads as a path."""
    return next(f for f in _between(notebook) if _read_as_path(path_argument(f)))


def _below(path: Path, folder: Path) -> bool:
    return Path(os.path.abspath(path)).is_relative_to(os.path.abspath(folder))


def _left_out(folder: Path, kept: set[Path]) -> Iterator[Path]:
    """The entries below *folder*, walked through the kept folders only, that lead to no
    kept notebook: what the collected folder must not collect."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = folder / entry.name
        if Path(os.path.abspath(path)) in kept:
            if entry.is_dir(follow_symlinks=False):
                yield from _left_out(path, kept)
        elif entry.name not in _NEVER_COLLECTED:
            yield path


def _ignore(path: Path) -> str:
    """`--ignore=PATH`; a name that a line break splits cannot be one line of pytest's
    arguments file, and is matched by a glob that holds no line break instead."""
    argument = path_argument(path)
    if len(f"-{argument}-".splitlines()) == 1:
        return f"--ignore={argument}"
    glob = re.sub(r"[][*?]", lambda m: f"[{m[0]}]", argument)
    return "--ignore-glob=" + re.sub(r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]", "?", glob)
