"""A notebook's key: everything its verdicts depend on, as one SHA-256.

Two parts. The run's, computed once a session: the settings that reach a
notebook (`VERDICT_FIELDS`: every field of `Settings` is there or in
`NOT_VERDICT_FIELDS`, with why, and a test holds the two to the dataclass),
pytest's own options that change verdicts (`PYTEST_OPTIONS`), the templates
the module is rendered from, ntdd's version, Python's, the platform, the ini
file pytest read, and every installed distribution's name and version. And
the notebook's: its bytes, the conftest.py files above it, and every file of
the repository its cells import or name, as `ntdd init` and `ntdd list
--changed` find them (`ntdd.repository.local_code`, `named_files`), read by
content: a fresh checkout gives every file a new modification time, and a
cached store must still match.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from ntdd._version import __version__
from ntdd.errors import NtddError
from ntdd.format.module import render_fingerprint
from ntdd.notebook.read import notebook_of_bytes
from ntdd.pipeline.templates import module_templates
from ntdd.repository.local_code import code_sources
from ntdd.repository.named_files import named_paths
from ntdd.repository.notebook_imports import cell_imports
from ntdd.settings.typed import Settings

# The fields of `Settings` that can change a notebook's verdicts: each is in its key.
VERDICT_FIELDS = (
    "devices",
    "timeout",
    "notebook_timeout",
    "parameters",
    "template",
    "smoke",
    "run_untested",
    "skip_eval_false",
    "outputs",
    "writing",
    "threads",  # torch's and BLAS's threads: a reduction's float order
)
# The fields that cannot, and why: a new field must go in one of the two.
NOT_VERDICT_FIELDS = {
    "enabled": "every run that collects notebooks has it",
    "shard": "selects whole notebooks; a notebook is never split",
    "durations": "balances shards: which machine, not what runs",
    "store_durations": "a results file",
    "summary": "a results file",
    "slow_cells": "a list printed after the run",
    "slow_cells_min": "a list printed after the run",
    "report": "a results file",
    "reuse": "the store itself",
    "sources": "where each value came from, not what it is",
}
# pytest's own options that change verdicts: `-W`, `-p`, `-o`, `--runxfail`, `--import-mode`.
PYTEST_OPTIONS = ("pythonwarnings", "plugins", "override_ini", "runxfail", "importmode")
_MOST_FILES = 2000  # in one named folder: beyond that a notebook is not keyed, and runs
_LEFT_OUT = frozenset({"__pycache__", ".git", ".ipynb_checkpoints", ".pytest_cache"})


def run_part(config: pytest.Config, settings: Settings) -> str:
    """The run's part of every notebook's key; computed once a session."""
    digest = hashlib.sha256(b"ntdd-reuse 1\0")
    for name in VERDICT_FIELDS:
        digest.update(f"{name}={getattr(settings, name)!r}\0".encode())
    for name in PYTEST_OPTIONS:
        digest.update(f"{name}={getattr(config.option, name, None)!r}\0".encode())
    digest.update(render_fingerprint(module_templates(settings.template)).encode())
    digest.update(f"\0ntdd {__version__}\0python {sys.version}\0".encode())
    digest.update(f"{sys.platform} {platform.machine()}\0".encode())
    if config.inipath is not None:
        digest.update(_content(config.inipath))
    for line in installed():
        digest.update(line.encode() + b"\0")
    return digest.hexdigest()


def installed() -> list[str]:
    """Every installed distribution's name and version, sorted: read from the header of
    its METADATA (parsing it whole, as `Distribution.metadata` does, costs 20 times more)."""
    found = set()
    for dist in importlib.metadata.distributions():
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
        header = text.split("\n\n", 1)[0]
        fields = [line for line in header.splitlines() if line.startswith(("Name:", "Version:"))]
        found.add(" ".join(sorted(fields)))
    return sorted(found)


def notebook_key(run: str, root: Path, notebook: Path) -> str | None:
    """*notebook*'s key within the run whose part is *run*; None where it cannot be keyed
    (unreadable, or naming a folder too big to read), and so runs."""
    try:
        data = notebook.read_bytes()
        cells = notebook_of_bytes(data, notebook).cells
    except (OSError, NtddError):
        return None
    digest = hashlib.sha256(run.encode() + b"\0")
    digest.update(hashlib.sha256(data).digest())
    try:
        relative = notebook.resolve().relative_to(root.resolve())
    except ValueError:
        root, relative = notebook.resolve().parent, Path(notebook.name)
    name = relative.as_posix()
    imports = cell_imports(cells).modules
    reached = [
        *code_sources(root, None, [(name, imports)]),
        *named_paths(name, cells),
        *_conftests(root, relative),
    ]
    for path in sorted(set(reached)):
        files = _files(root / path.rstrip("/"))
        if files is None:
            return None
        for file in files:
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
            digest.update(_content(file))
    return digest.hexdigest()


def _conftests(root: Path, relative: Path) -> Iterator[str]:
    """The conftest.py files pytest reads for the notebook: its folder's and those above."""
    for folder in (relative.parent, *relative.parent.parents):
        if (root / folder / "conftest.py").is_file():
            yield (folder / "conftest.py").as_posix()


def _files(path: Path) -> list[Path] | None:
    """The file at *path*, or the files under the folder, sorted; none for nothing there;
    None for a folder of more than `_MOST_FILES`."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found: list[Path] = []
    for file in _walk(path):
        found.append(file)
        if len(found) > _MOST_FILES:
            return None
    return sorted(found)


def _walk(folder: Path) -> Iterable[Path]:
    for entry in sorted(folder.iterdir()):
        if entry.name in _LEFT_OUT or entry.name.startswith("."):
            continue
        if entry.is_dir():
            yield from _walk(entry)
        elif entry.is_file() and entry.suffix != ".pyc":
            yield entry


def _content(path: Path) -> bytes:
    """The file's SHA-256; a marker for one that cannot be read, which counts as a change."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return b"unreadable"
    return digest.digest()
