"""A notebook in its files: a jupytext pair's get the same `# TEST` lines, or neither does.

A jupytext pair (`nb.ipynb` and its `nb.py` or `nb.md`) is one notebook in
two files: both get the same lines, so that the pair stays in sync,
whichever of them was named; a pair whose files hold different cells is
refused (jupytext would have to choose which one wins). `--write` writes
each file atomically, into a file that still holds the bytes read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ntdd.errors import MarkRefused
from ntdd.marking.proposal import Proposal, propose
from ntdd.notebook.files import write_atomic
from ntdd.notebook.text import TEXT_SUFFIXES, has_jupytext_header


def each_notebook(paths: Iterable[Path]) -> Iterator[tuple[Path, list[Path]]]:
    """Each notebook among *paths* once, as the path that named it first and its files:
    a pair named by both its files is one notebook."""
    done_with: set[Path] = set()
    for path in paths:
        files = pair_of(path)
        if done_with.intersection(files):
            continue  # the other file of a pair already named
        done_with.update(files)
        yield path, files


def pair_of(path: Path) -> list[Path]:
    """*path*'s files as one notebook: a jupytext pair's `.ipynb` first, then its text
    notebooks (those with jupytext's header); *path* alone for a notebook unpaired."""
    ipynb = path.with_suffix(".ipynb")
    if path.suffix != ".ipynb" and not ipynb.is_file():
        return [path]
    texts = [p for p in map(ipynb.with_suffix, TEXT_SUFFIXES) if has_jupytext_header(p)]
    return [ipynb, *texts] if texts else [path]


def mark(
    files: list[Path], write: bool, proposing: Callable[[Path], Proposal] = propose
) -> list[Proposal]:
    """What marking the notebook in *files* would do, the same in each; with *write*, done.
    *proposing*: what one file gets (`# TEST` lines, or `@full_run` marks)."""
    proposals = [proposing(file) for file in files]
    _ensure_the_same(proposals)
    for proposal in proposals:
        if proposal.after is not None and write:
            write_atomic(proposal.path, proposal.after, was=proposal.before)
    return proposals


def _ensure_the_same(proposals: list[Proposal]) -> None:
    """The files of a pair hold the same cells, and get the same lines; else neither is marked."""
    first = proposals[0]
    for other in proposals[1:]:
        if other.read != first.read:
            raise MarkRefused(
                f"{first.path} and {other.path}, a jupytext pair, hold different cells "
                "(one was edited since they were last synced); sync them first "
                f"(`jupytext --sync {first.path}`, or open it in Jupyter); not marked"
            )
