"""`pytest --ntdd`: a notebook collected as the module `ntdd export` would write.

The module is rendered by the same code as the export, compiled with
pytest's assertion rewriting, and imported from memory. pytest's own
`Module` collector does the rest: functions, fixtures, parametrization.
"""

from __future__ import annotations

import hashlib
import linecache
import sys
import types
from pathlib import Path

import pytest

from ntdd.errors import NtddError
from ntdd.model import Notebook
from ntdd.paths import module_path
from ntdd.plan import make_plan
from ntdd.reader import read_notebook
from ntdd.render import render_module
from ntdd.rewrite import compile_rewritten
from ntdd.settings import settings_of
from ntdd.source import source_lines


class NotebookModule(pytest.Module):
    """A `.ipynb` file whose `# TEST` cells pytest collects as a module."""

    notebook: Notebook | None = None
    read_error: NtddError | None = None
    plan_warnings: tuple[str, ...] = ()  # shown once collection is done

    def load(self) -> None:
        """Read the notebook, once; a failure is raised later, as a collection error."""
        try:
            self.notebook = read_notebook(_shortest(self.path))
        except NtddError as e:
            self.read_error = e

    def _getobj(self) -> types.ModuleType:
        if self.notebook is None and self.read_error is None:
            self.load()
        try:
            if self.read_error is not None:
                raise self.read_error
            assert self.notebook is not None
            parameters = settings_of(self.config).parameters.for_notebook(self.path)
            plan = make_plan(self.notebook, parameters)
            source = render_module(plan)
        except NtddError as e:
            raise self.CollectError(f"ntdd: {e}") from e
        self.plan_warnings = plan.warnings
        self.notebook = None  # the module holds what is needed from here on
        return import_rendered(self.path, source, self.config)


def import_rendered(notebook: Path, source: str, config: pytest.Config) -> types.ModuleType:
    """Compile and execute a rendered module in memory, as if exported beside *notebook*."""
    virtual_file = module_path(notebook)
    name = (
        f"ntdd_{virtual_file.stem}_{hashlib.sha1(str(notebook.resolve()).encode()).hexdigest()[:8]}"
    )
    filename = f"{_display(notebook, config)} (ntdd module)"  # no <...>: pytest would hide it
    module = types.ModuleType(name)
    module.__file__ = str(virtual_file.resolve())
    module.__loader__ = _SourceLoader(source)  # type: ignore[assignment]
    module.__ntdd_filename__ = filename  # type: ignore[attr-defined]
    linecache.cache[filename] = (len(source), None, source_lines(source), filename)
    code = compile_rewritten(source, filename, config)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _shortest(path: Path) -> Path:
    """*path* relative to the working directory when inside it: for messages."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _display(path: Path, config: pytest.Config) -> str:
    try:
        return path.resolve().relative_to(config.rootpath).as_posix()
    except ValueError:
        return str(path)


class _SourceLoader:
    """Lets linecache find an in-memory module's source again after a clearcache()."""

    def __init__(self, source: str) -> None:
        self._source = source

    def get_source(self, name: str) -> str:
        return self._source

    def __repr__(self) -> str:
        return "<ntdd in-memory module>"
