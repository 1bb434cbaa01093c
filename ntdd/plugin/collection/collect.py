"""`pytest --ntdd`: a notebook collected as the module `ntdd export` would write.

The module is rendered by the same code as the export, compiled with
pytest's assertion rewriting (left out by `--collect-only`, which runs no
test), and imported from memory; the compiled module is cached
(`module_cache`). pytest's own `Module` collector does the rest: functions,
fixtures, parametrization.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import linecache
import os
import sys
import types
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from ntdd.cells.cell_code import quiet_syntax_warnings, source_lines, to_python
from ntdd.cells.cell_names import asserts_at_import
from ntdd.errors import NotPythonError, NtddError
from ntdd.format.module import render_fingerprint
from ntdd.format.paths import module_path
from ntdd.notebook.copies import copy_of
from ntdd.notebook.positions import file_lines
from ntdd.notebook.read import notebook_of_bytes, read_bytes
from ntdd.notebook.text import TEXT_SUFFIXES, newest_inputs
from ntdd.pipeline.templates import module_templates
from ntdd.plugin.collection.module_cache import Entry, ModuleCache
from ntdd.plugin.results.output_checks import PlannedChecks, check_items, planned_checks
from ntdd.runtime.rewrite import compile_rewritten
from ntdd.runtime.settings import settings_of
from ntdd.values import Plan, TestKind

# A notebook's module, or why there is none, the file it was read from, its digest, and
# the cells whose saved outputs the run checks (or why they cannot be known), and the
# notebook it is ntdd's copy of, if it is one.
Loaded = tuple[Entry | None, NtddError | None, Path | None, str | None, PlannedChecks, str | None]


class NotebookModule(pytest.Module):
    """A `.ipynb` file whose `# TEST` cells pytest collects as a module."""

    read_error: NtddError | None = None
    plan_warnings: tuple[str, ...] = ()  # shown once collection is done
    _entry: Entry | None = None  # what collecting it produced, from the cache or made now
    _inputs: Path | None = None  # the file read: the notebook, or its newer jupytext pair
    read_digest: str | None = None  # SHA-256 of the bytes read: what a write-back may replace
    _checks: PlannedChecks = ()  # the cells whose saved outputs are checked, from the same read
    copy_of: str | None = None  # the notebook this file is a copy of (`copies`): not tested

    def load(self, loaded: dict[Path, Loaded] | None = None) -> None:
        """Read the notebook, once; a failure is raised later, as a collection error.

        pytest asks for a folder's files once per command-line argument in that
        folder (`pytest --ntdd a.ipynb b.ipynb …`), so what a session has
        *loaded* is reused. A notebook whose compiled module is in the cache is
        not even parsed.
        """
        if loaded is not None and self.path in loaded:
            (
                self._entry,
                self.read_error,
                self._inputs,
                self.read_digest,
                self._checks,
                self.copy_of,
            ) = loaded[self.path]
            return
        self._load()
        if loaded is not None:
            loaded[self.path] = (
                self._entry,
                self.read_error,
                self._inputs,
                self.read_digest,
                self._checks,
                self.copy_of,
            )

    def _load(self) -> None:
        path = newest_inputs(_shortest(self.path))  # a jupytext pair: its newer file
        self._inputs = self.path.parent / path.name
        try:
            data = read_bytes(path)  # not kept: a notebook's outputs can be large
            self.read_digest = hashlib.sha256(data).hexdigest()
            # A copy named on the command line is tested, as pytest collects any file named.
            named = self.session.isinitpath(self.path)
            self.copy_of = None if named else copy_of(self.path, self.config.rootpath, data)
            if self.copy_of is not None:
                return  # the output of a run, not a notebook: not planned, not cached
            self._checks = planned_checks(self.config, data, path)
            cache = ModuleCache.of(self.config)
            key = self._key(cache, data, path) if cache is not None else ""
            stored = cache.load(key) if cache is not None else None
            self._entry = self._usable(stored, path, data)
            if cache is not None and self._entry is not stored:
                cache.store(key, self._entry)
        except NtddError as e:
            self.read_error = e
        except SyntaxError as e:  # a bug of ntdd's: say so, in the notebook's place
            self.read_error = NtddError(f"{path}: its module does not compile: {e}")
        except RecursionError as e:  # Python's parser and compiler recurse once per level
            self.read_error = NtddError(f"{path}: {_too_deep(path)} nested too deeply: {e}")

    def _key(self, cache: ModuleCache, data: bytes, inputs: Path) -> str:
        settings = settings_of(self.config)
        parameters = settings.parameters.for_notebook(self.path)
        template = settings.template
        rendered_by = render_fingerprint(module_templates(template)) if template else ""
        untested = f"run_untested={settings.run_untested}"
        parts = (self._filename, str(self._resolved), str(inputs), repr(parameters), rendered_by)
        return cache.key(data, *parts, untested)

    def _usable(self, stored: Entry | None, path: Path, data: bytes) -> Entry:
        """The cached entry where this run can import it as it is, else one compiled now."""
        if stored is None:
            return self._collect(path, data)
        if stored.structure_only and not _structure_only(self.config):
            code = compile_rewritten(stored.source, self._filename, self.config)
            return dataclasses.replace(stored, code=code, structure_only=False)
        return stored

    def _collect(self, path: Path, data: bytes) -> Entry:
        """Read, plan, render (in memory: no hashes) and compile, with rewritten asserts.

        The pipeline is imported here: a notebook found in the module cache needs none."""
        from ntdd.pipeline import build_module

        settings = settings_of(self.config)
        parameters = settings.parameters.for_notebook(self.path)
        notebook = notebook_of_bytes(data, path)
        plan, source = build_module(
            notebook,
            parameters,
            None,
            settings.template,
            in_memory=True,
            run_untested=settings.run_untested,
        )
        assert source is not None
        code, structure_only = _compile(source, self._filename, self.config, plan)
        lines = file_lines(data, notebook, text_notebook=path.suffix in TEXT_SUFFIXES)
        return Entry(source, code, plan.warnings, lines, structure_only)

    @property
    def file(self) -> Path:
        """The file that reports point at: the notebook, or the jupytext file it was read from."""
        return self._inputs if self._inputs is not None else self.path

    def line_of(self, function: object) -> int | None:
        """The file line of the test cell *function* was written in: its `def` or first line."""
        code = getattr(inspect.unwrap(function), "__code__", None)  # type: ignore[arg-type]
        runtime = getattr(self.obj, "__ntdd__", None)
        if code is None or runtime is None or code.co_filename != runtime.cells.filename:
            return None
        line: int | None = runtime.cells.line_in_file(code.co_filename, code.co_firstlineno)
        return line

    @functools.cached_property
    def _resolved(self) -> Path:
        return self.path.resolve()

    @functools.cached_property
    def _filename(self) -> str:
        """The name the module's code is compiled under: the notebook, as tracebacks show it."""
        name = _display(self.path, self._resolved, self.config)
        return f"{name} (ntdd module)"  # no <...>: pytest hides it

    @property
    def passed_over(self) -> str | None:
        """The language of a notebook that is not Python and has no test cells, else None.

        Such a notebook has nothing for ntdd to run: it collects nothing, as a
        Python notebook without tests does, rather than fail every run.
        """
        error = self.read_error
        if isinstance(error, NotPythonError) and not error.has_tests:
            return error.language
        return None

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        if self._entry is None and self.read_error is None:
            self.load()  # not read as it was found: pytest was not expected to collect it
        if self.passed_over is not None or self.copy_of is not None:
            return ()
        collected = list(super().collect())
        if settings_of(self.config).outputs:  # the outputs of its cells, after its tests
            collected.extend(check_items(self, self.file, self._checks))
        return collected

    def _getobj(self) -> types.ModuleType:
        if self._entry is None and self.read_error is None:
            self.load()
        if self.read_error is not None:
            raise self.CollectError(f"ntdd: {self.read_error}") from self.read_error
        assert self._entry is not None
        self.plan_warnings = self._entry.warnings
        for_reports = {  # read by the runtime as the module starts
            "__ntdd_source_file__": str(self.file),
            "__ntdd_file_lines__": self._entry.file_lines,
            "__ntdd_announced__": self._entry.warnings,
        }
        return import_compiled(self.path, self._entry, self._filename, self._resolved, for_reports)


class NotebookFunction(pytest.Function):
    """A notebook's test: reports, JUnit, annotations and editors point at the notebook.

    pytest would name the in-memory module and a line of it; this names the
    notebook's file and the line in it where the test's cell is, as pytest
    names a `.py` file and its `def` line.
    """

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        path, _, domain = super().reportinfo()
        module = self.getparent(NotebookModule)
        if module is None:
            return path, _, domain
        line = module.line_of(self.obj)
        return module.file, line - 1 if line is not None else None, domain


def as_notebook_test(made: object) -> None:
    """Make a test that pytest collected from a notebook's module a `NotebookFunction`."""
    if type(made) is pytest.Function:
        made.__class__ = NotebookFunction


def import_compiled(
    notebook: Path,
    entry: Entry,
    filename: str,
    resolved: Path | None = None,
    names: Mapping[str, object] | None = None,
) -> types.ModuleType:
    """Execute a compiled module in memory, as if exported beside *notebook*.

    *resolved* is the notebook's real path, when the caller has it already;
    *names* are set in the module before it runs.
    """
    virtual_file = module_path(notebook)
    real = resolved or notebook.resolve()
    name = f"ntdd_{virtual_file.stem}_{hashlib.sha1(str(real).encode()).hexdigest()[:8]}"
    module = types.ModuleType(name)
    module.__file__ = str(virtual_file.resolve())
    module.__loader__ = _SourceLoader(entry.source)  # type: ignore[assignment]
    module.__ntdd_filename__ = filename  # type: ignore[attr-defined]
    module.__dict__.update(names or {})
    linecache.cache[filename] = (len(entry.source), None, source_lines(entry.source), filename)
    sys.modules[name] = module
    try:
        exec(entry.code, module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _compile(
    source: str, filename: str, config: pytest.Config, plan: Plan
) -> tuple[types.CodeType, bool]:
    """A module's code, and whether it was compiled for its structure only.

    A `--collect-only` run runs no test, so it leaves out pytest's assertion
    rewriting, the largest part of collecting a changed notebook, unless an
    assert may run as the module is imported (`_runs_own_code_at_import`); a run
    that runs the tests rewrites them before it imports the module
    (`_usable`), so every assert fails with the message it always had.
    """
    rewrites = config.getoption("assertmode", "rewrite") != "plain"
    if rewrites and _structure_only(config) and not _runs_own_code_at_import(plan):
        with quiet_syntax_warnings():
            tree = ast.parse(source, filename)
        if not asserts_at_import(tree):
            with quiet_syntax_warnings():
                return compile(tree, filename, "exec", dont_inherit=True), True
    return compile_rewritten(source, filename, config), False


# Builtins that run code named by a string: what they run cannot be seen.
_RUN_BY_NAME = frozenset({"eval", "exec", "globals", "locals", "vars", "__import__", "compile"})


def _runs_own_code_at_import(plan: Plan) -> bool:
    """Whether the top level of a `def test_*` cell may call code the module defines.

    Only such cells put code at the module's top level. Code they run there
    that the module defines (a helper, a decorator, a base class, any name a
    test cell binds) may assert as the module is imported, at collection.
    """
    cells = [t for t in plan.tests if t.kind is TestKind.FUNCTIONS]
    if not cells:
        return False
    own = {name for t in plan.tests for name in t.names} | _RUN_BY_NAME
    own |= {name for t in cells for name in t.binds}  # the plan read each cell once
    if plan.end is not None:
        own.add(plan.end.name)
    return any(t.reads_at_import & own for t in cells)


def _structure_only(config: pytest.Config) -> bool:
    """Whether the run only collects: its modules' tests never run."""
    return bool(config.getoption("collectonly", False))


def _too_deep(path: Path) -> str:
    """The code cell Python cannot parse for its depth, as messages name cells."""
    try:
        cells = notebook_of_bytes(read_bytes(path), path).cells
    except NtddError:
        return "a cell is"
    for cell in cells:
        if cell.cell_type == "code":
            try:
                to_python(cell.source)
            except RecursionError:
                return f"{cell.label} is"
            except SyntaxError:
                continue
    return "its module is"  # every cell parses alone: together they are too deep to compile


def _shortest(path: Path) -> Path:
    """*path* relative to the working directory when inside it: for messages."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _display(path: Path, resolved: Path, config: pytest.Config) -> str:
    try:
        return resolved.relative_to(config.rootpath).as_posix()
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
