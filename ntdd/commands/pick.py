"""`ntdd list`: the notebooks to test, as the workflow `ntdd init` writes picks them.

One rule finds notebooks everywhere: `find_notebooks`, which `ntdd export`,
`pytest --ntdd` and `ntdd init`'s count use. The workflow hands over git's
own lists (`git ls-files -z`, `git diff -z --name-only`: names verbatim,
NUL-ended, whatever bytes they hold) and gets back the notebooks among them.

On a pull request, a change to what every notebook depends on tests every
notebook: a dependency file (the workflow's pattern), or any other file
inside the notebooks' folder or beside or below a notebook. Otherwise the
notebooks the change touches are tested; a paired text notebook's change
tests its `.ipynb`, and a generated module's change (a hand edit that
`ntdd export --check` refuses, as the pre-commit hook does) tests the
notebook its header names, wherever the module is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ntdd.notebook.files import notebooks_among


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
) -> Picked:
    """The notebooks among *tracked* to test; all of them unless *changed* narrows it.

    *sources* maps a changed generated module to the notebook its header names."""
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
    return Picked(
        tuple(n for n in every if n in touched), "the notebooks this pull request changes"
    )


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
