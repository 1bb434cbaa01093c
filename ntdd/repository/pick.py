"""`ntdd list`: the notebooks to test, as the workflow `ntdd init` writes picks them.

One rule finds notebooks everywhere: `find_notebooks`, which `ntdd export`,
`pytest --ntdd` and `ntdd init`'s count use. The workflow hands over git's
own lists (`git ls-files -z`, `git diff -z --name-only`: names verbatim,
NUL-ended, whatever bytes they hold) and gets back the notebooks among them.

On a pull request, a change to what every notebook depends on tests every
notebook: a dependency file or the repository's code the notebooks run (the
workflow's pattern), or any other file inside the notebooks' folder or
beside or below a notebook. Otherwise the notebooks the change touches are
tested; a paired text notebook's change tests its `.ipynb`, a generated
module's change (a hand edit that `ntdd export --check` refuses, as the
pre-commit hook does) tests the notebook its header names, wherever the
module is, and a change to a file elsewhere tests the notebooks whose code
names it (`named_files.named_paths`: `"../data/train.csv"`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ntdd.notebook.files import notebooks_among
from ntdd.notebook.read import dangling_link
from ntdd.repository.named_files import files_named, names


@dataclass(frozen=True)
class Picked:
    """The notebooks to test, and why those, in words."""

    notebooks: tuple[Path, ...]
    why: str


def pick(
    tracked: Sequence[str],
    folders: Sequence[str],
    changed: Sequence[str] | None = None,
    depends_on: re.Pattern[str] | None = None,
    sources: Mapping[str, Path] | None = None,
    named: Callable[[Path], Sequence[str]] = files_named,
) -> Picked:
    """The notebooks among *tracked* to test; all of them unless *changed* narrows it.

    *sources* maps a changed generated module to the notebook its header names;
    *named* says which files a notebook's code names, read only where a file
    outside the notebooks changed."""
    present = {Path(name) for name in tracked}  # what a checkout has: pairs, deletions
    every = tuple(notebooks_among(tracked, folders, present))
    if changed is None:
        return Picked(every, "every notebook")
    modules = {name: nb for name, nb in (sources or {}).items() if nb in every}
    because = next(
        (
            name
            for name in changed
            if (depends_on is not None and depends_on.search(name))
            or (
                name not in modules
                and not _notebook_file(name, folders, present)
                and _near(name, every, folders)
            )
        ),
        None,
    )
    if because is not None:
        return Picked(every, f"{because} changed, so every notebook")
    touched = set(notebooks_among(changed, folders, present)) | set(modules.values())
    others = [n for n in changed if n not in modules and not _notebook_file(n, folders, present)]
    reading = {nb for nb in every if others and _names_any(others, named(nb))}
    why = "the notebooks this pull request changes"
    why += ", and those naming a file it changes" if reading - touched else ""
    return Picked(tuple(n for n in every if n in touched | reading), why)


def module_sources(changed: Sequence[str]) -> dict[str, Path]:
    """The notebook each changed generated module names in its header, as the
    pre-commit hook pairs a staged module with its notebook."""
    from ntdd.format.paths import source_of

    found = {name: source_of(Path(name)) for name in changed if name.endswith(".py")}
    return {name: notebook for name, notebook in found.items() if notebook is not None}


def _names_any(changed: Sequence[str], named: Sequence[str]) -> bool:
    return any(names(name, named) for name in changed)


def untestable(notebook: Path, args_file: bool) -> str | None:
    """Why *notebook*, picked, cannot be handed to pytest, in words; None when it can.

    A committed link to a notebook that was deleted or moved is named, not
    passed on: pytest stops at a path that is not there ("file or directory
    not found") and tests nothing. With *args_file* (`pytest @FILE`: one name
    a line, read as text), a name that a line break splits cannot be written
    there, nor, before Python 3.12 (which reads the file as the file system's
    names), one that is not UTF-8."""
    lost = dangling_link(notebook)
    if lost is not None:
        return lost
    name = str(notebook)
    if not args_file:
        return None
    if len(f"-{name}-".splitlines()) > 1:
        return f"{name!r}: a line break in its name, which pytest's arguments file cannot hold"
    if sys.version_info < (3, 12) and not _utf8(name):
        return f"{name!r}: not UTF-8, which pytest's arguments file cannot hold before Python 3.12"
    return None


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _notebook_file(name: str, folders: Sequence[str], present: set[Path]) -> bool:
    """A notebook's own file: any `.ipynb` (deleted ones too), or a text notebook found."""
    return name.endswith(".ipynb") or any(True for _ in notebooks_among([name], folders, present))


def _near(name: str, notebooks: tuple[Path, ...], folders: Sequence[str]) -> bool:
    """A file, not hidden, inside the notebooks' folder, or beside or below a notebook."""
    path = PurePosixPath(name)
    if any(part.startswith(".") for part in path.parts):
        return False
    tops = [PurePosixPath(f) for f in folders if PurePosixPath(f) != PurePosixPath(".")]
    if any(path.is_relative_to(top) for top in tops):
        return True
    return any(path.is_relative_to(PurePosixPath(n.parent.as_posix())) for n in notebooks)
