"""What the paths given name: each notebook with its module, once; and where modules go.

`ntdd export`, `--check` and `sync` take notebooks, folders and modules
alike. A notebook's module is where export writes it (`ntdd.format.paths`);
a module names its notebook in its header. The output folder and the
template are the command line's where it gives them, else `[tool.ntdd]`'s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from ntdd.errors import NtddError
from ntdd.format import paths as where
from ntdd.format.module import is_generated
from ntdd.notebook.files import is_notebook_file
from ntdd.parameters import Parameters


class ModuleSettings(NamedTuple):
    """Where modules go, the template they are rendered with, and the test parameters."""

    out_dir: Path | None
    template: Path | None
    parameters: Parameters


def module_settings(output: Path | None, template: Path | None) -> ModuleSettings:
    """The output folder, template and test parameters: *output* and *template* where
    given, else `[tool.ntdd]`'s."""
    from ntdd.settings.pyproject import load_config  # the settings' parsers load pytest

    config = load_config()
    template = template or config.template
    if template is not None and not template.is_file():
        raise NtddError(f"{template}: template not found")
    return ModuleSettings(output or config.output, template, config.parameters)


class Named(NamedTuple):
    """A notebook, and its module."""

    notebook: Path
    module: Path


def named_by(
    paths: Sequence[str], out_dir: Path | None, skip_others: bool, located: bool
) -> Iterator[Named]:
    """(notebook, module) for each path, each notebook once.

    A notebook's module is where export writes it; with *located*, where one
    was written already, if elsewhere. A module names its notebook in its
    header. A `.py` file is a notebook when it is a jupytext text notebook,
    else a module. With *skip_others*, files that are neither are passed over.
    """
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        notebook = path.is_dir() or is_notebook_file(path, given=True)
        if path.suffix == ".py" and not notebook:
            named = _named_by_module(path, skip_others)
            found = [named] if named is not None else []
        elif skip_others and not notebook:
            continue
        else:
            locate = where.find_module if located else where.module_path
            found = [
                Named(p.notebook, locate(p.notebook, out_dir, p.base))
                for p in where.notebooks_under([path])
            ]
        for named in found:
            key = Path(os.path.abspath(named.notebook))
            if key not in seen:
                seen.add(key)
                yield named


def _named_by_module(path: Path, skip_others: bool) -> Named | None:
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    except (OSError, UnicodeDecodeError):
        text = ""
    if skip_others and not is_generated(text):
        return None
    return Named(where.notebook_of(path, text), path)
