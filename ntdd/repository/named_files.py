"""The files a notebook's code names: a change to one tests the notebooks that name it.

A change there breaks a notebook as surely as an edit of its cells, so the
workflow `ntdd init` writes counts it, in its `paths:` and in its pick
(`ntdd list --changed`). A notebook's code names a file by a path relative
to its own folder, where a kernel opens it, or to the top folder (a notebook
that `os.chdir`s there first): `"../data/train.csv"`, `Path("../data") /
"train.csv"`, a folder (`"../data"`), or the folder before a pattern or a
placeholder (`f"../data/{split}.csv"`, `"../data/*.csv"`). A change to that
file, or to any file in that folder, tests the notebook; `named_paths` reads
them on every pick, so a file added there later counts too. A path naming
the notebook's own folder or one above it (`os.chdir("..")`) names no file.
The repository's code the notebooks run is `local_code`'s.

Paths are POSIX, relative to the repository's top folder, which is the
working directory.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from ntdd.cells.cell_code import to_python
from ntdd.errors import NtddError
from ntdd.values import Cell

_PATH_CALLS = frozenset({"Path", "PurePath", "PosixPath", "PurePosixPath", "join"})
_PATTERN = ("{", "*", "?", "[")  # where a named path stops being one path


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
