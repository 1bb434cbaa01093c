"""Whether a generated module still tests its notebook: the header's content hash.

`# ntdd-hash:` records what the tests depend on when the module was written.
`ntdd export --check` compares it in CI; a module imported by plain pytest
compares it too, so that a module left behind by an edit of its notebook
does not run the old cells green without a word.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from ntdd.errors import NtddError
from ntdd.format.module import parse_header
from ntdd.values import Cell

_HEAD_CHARS = 4096  # a module's header is in its first lines


def content_hash(cells: Iterable[Cell]) -> str:
    """A hash of what the tests depend on: code cells' sources, ids and tags.

    Outputs and execution counts are left out, so re-running a notebook does
    not make its module stale.
    """
    relevant = [
        [c.index, c.id, c.source, sorted(c.tags)]
        for c in cells
        if c.cell_type == "code" and c.source.strip()
    ]
    blob = json.dumps(relevant, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def stale_reason(module: Path, notebook: Path) -> str | None:
    """Why the generated *module* no longer tests *notebook*, the one its header names; None
    when it does (or when *module* has no header to tell)."""
    from ntdd.notebook.read import read_notebook  # only for a module read from disk

    try:
        with module.open(encoding="utf-8") as f:
            header = parse_header(f.read(_HEAD_CHARS))
    except (OSError, UnicodeDecodeError):
        return None
    if header is None:
        return None
    if not notebook.exists():
        return f"its notebook {header.notebook} is gone"
    try:
        cells = read_notebook(notebook).cells
    except NtddError as e:
        return f"its notebook cannot be read ({e})"
    if content_hash(cells) != header.content_hash:
        return f"{header.notebook} has changed since `ntdd export` wrote it"
    return pair_moved_on(notebook, cells)


def renders_differently(made_by: str, version: str) -> str:
    """Why a module of the notebook's current cells is stale all the same: ntdd writes it
    otherwise now (another version, another format or template)."""
    if made_by != version:
        return f"stale: written by ntdd {made_by}, and ntdd {version} writes it differently"
    return "stale: the template renders it differently now"


def older_format(module: Path, version: str) -> str:
    """What a module of an older format says as it is imported: the reason `ntdd export
    --check` gives for it, and what to do. Its text is the notebook's: nothing is lost."""
    try:
        with module.open(encoding="utf-8") as f:
            header = parse_header(f.read(_HEAD_CHARS))
    except (OSError, UnicodeDecodeError):
        header = None
    reason = renders_differently(header.version if header else "?", version)
    return f"{module}: {reason}; run `ntdd export` again"


def pair_moved_on(notebook: Path, cells: tuple[Cell, ...]) -> str | None:
    """A jupytext pair whose text file, saved after the `.ipynb`, holds other cells:
    jupytext (and `pytest --ntdd`) read those, not the ones exported."""
    from ntdd.notebook.read import read_notebook
    from ntdd.notebook.text import newest_inputs

    inputs = newest_inputs(notebook)
    if inputs == notebook:
        return None
    try:
        newer = read_notebook(inputs).cells
    except NtddError as e:
        return f"{inputs.name}, paired with it and newer, cannot be read ({e})"
    if _test_content(newer) == _test_content(cells):
        return None
    return (
        f"{inputs.name}, paired with {notebook.name} and saved after it, has other cells "
        "(jupytext reads them from it; sync the pair, e.g. `jupytext --sync`)"
    )


def _test_content(cells: Iterable[Cell]) -> list[tuple[str, list[str]]]:
    """What the tests depend on that both files of a pair hold: cell ids are the `.ipynb`'s."""
    return [(c.source, sorted(c.tags)) for c in cells if c.cell_type == "code" and c.source.strip()]
