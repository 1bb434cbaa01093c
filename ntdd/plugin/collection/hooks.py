"""How ntdd collects: notebooks as modules, in notebook order, and what it says of them.

`pytest --ntdd` collects each notebook beside other plugins' collectors
(nbval's), leaves out an exported module whose notebook it collects, keeps
an unreadable notebook to one collection error that stops no other, and
orders every generated module's tests as the notebook's cells run: device
by device, each notebook on one xdist worker.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import sys
import warnings
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ntdd.format.module import parse_header
from ntdd.notebook.files import is_notebook_file
from ntdd.plugin.beside import nbval as beside_nbval
from ntdd.plugin.collection.collect import Loaded, NotebookModule, as_notebook_test
from ntdd.plugin.collection.copies import LeftOutCopies
from ntdd.plugin.collection.untested import UntestedNotebooks
from ntdd.plugin.items import notebook_module, runtime_of
from ntdd.plugin.results.output_checks import OutputCheck
from ntdd.runtime.devices import device_unavailable
from ntdd.runtime.fixtures import device_under_test
from ntdd.runtime.settings import Settings


class CollectionHooks:
    """Collects notebooks, leaves out their exported copies, keeps notebooks together."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        untested: UntestedNotebooks,
        copies: LeftOutCopies,
    ) -> None:
        self.config = config
        self.settings = settings
        self.untested = untested  # told of each notebook collected without a test
        self.copies = copies  # told of each copy ntdd wrote that it leaves out
        self.deduplicated: list[tuple[Path, Path]] = []
        self.passed_over: dict[Path, str] = {}  # other languages' notebooks, without tests
        self.unreadable = 0  # notebooks that failed to collect
        self.notebook_ids: set[str] = set()  # node ids of the notebooks collected
        self.notebooks: list[NotebookModule] = []  # their collectors, tests or none
        self._loaded: dict[Path, Loaded] = {}  # each notebook read once per session

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> Generator[None, list[Any], list[Any]]:
        """Add ntdd's collector for a notebook beside other plugins' (nbval's).

        The notebook is read here, once. When it cannot be read, only ntdd's
        collection error is kept, so a broken file is one error, not one per
        plugin. A file beside a given one (`pytest --ntdd nbs/a.ipynb`) is
        not read: pytest asks for each file of the folder, and keeps the given.
        """
        others = yield
        if not (self.settings.enabled and _notebook_file(file_path, parent)):
            return others
        ours = NotebookModule.from_parent(parent, path=file_path)
        if not _under_a_given_path(file_path, parent.session):
            return [ours, *_not_as_python(file_path, others)]
        ours.load(self._loaded)
        if ours.copy_of is not None:  # a run's output (`--ntdd-write-notebooks`): no one's test
            self.copies.found(file_path, ours.copy_of)
            return []
        if ours.passed_over is not None:  # nbval may still run it, in its own kernel
            self.passed_over[file_path] = ours.passed_over
            return [ours, *others]
        self.notebook_ids.add(ours.nodeid)
        self.notebooks.append(ours)
        if ours.read_error is not None:
            others = [c for c in others if type(c).__name__ != "IPyNbFile"]
        return [ours, *_not_as_python(file_path, others)]

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """A folder's link to a notebook that is gone (or a link loop) is its error.

        pytest's folders collect files and folders only, and a broken link is
        neither: a committed link to a deleted notebook would be tested by no
        one and the run green, where the CI job names it and fails."""
        report = yield
        if self.settings.enabled and report.passed and isinstance(collector, pytest.Directory):
            for path in _broken_notebook_links(collector.path):
                if not collector.ihook.pytest_ignore_collect(
                    collection_path=path, config=self.config
                ):
                    report.result.extend(
                        collector.ihook.pytest_collect_file(file_path=path, parent=collector)
                    )
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(
        self, collector: pytest.Collector, name: str, obj: object
    ) -> Generator[None, Any, Any]:
        """A notebook's tests report the notebook's file and line (`NotebookFunction`)."""
        made = yield
        if isinstance(collector.getparent(pytest.Module), NotebookModule):
            for each in made if isinstance(made, list) else [made]:
                as_notebook_test(each)
        return made

    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """With --ntdd, an exported module whose notebook is collected is left out."""
        if not self.settings.enabled or collection_path.suffix != ".py":
            return None
        notebook = _generated_from(collection_path)
        if notebook is not None and self._collects(notebook):
            self.deduplicated.append((collection_path, notebook))
            return True
        return None

    def _collects(self, notebook: Path) -> bool:
        roots = [Path(arg.split("::")[0]).resolve() for arg in self.config.args or ["."]]
        return notebook.exists() and any(r == notebook or r in notebook.parents for r in roots)

    def pytest_sessionstart(self) -> None:
        """Under coverage without ntdd's plugin, coverage.py is not left to warn "Couldn't
        parse" of each cell's in-memory code, under a name that is no file (and, taken
        as relative to the notebook's folder, a folder doubled): the header says once
        what to add."""
        measuring = _coverage_measuring() if self.settings.enabled else None
        if measuring is not None and not _with_ntdds_plugin(measuring):
            from coverage.exceptions import CoverageWarning

            warnings.filterwarnings("ignore", _NOTEBOOK_CODE, CoverageWarning)

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Under coverage, say what it measures of notebooks: nothing without ntdd's
        plugin, and with it their lines, never their branches."""
        measuring = _coverage_measuring() if self.settings.enabled else None
        if measuring is None:
            return []
        if not _with_ntdds_plugin(measuring):
            return [
                "ntdd: coverage measures notebooks only with its plugin: add "
                'plugins = ["ntdd.coverage"] under [tool.coverage.run] (or [run] in .coveragerc)'
            ]
        if measuring.get_option("run:branch"):
            return [
                "ntdd: coverage measures notebooks' lines, not their branches: "
                "with --cov-branch their rows count no branches"
            ]
        return []

    def pytest_report_collectionfinish(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> list[str]:
        """Say what ntdd decided: modules left out, each notebook's warnings, and
        (with `-v`) the test parameters each notebook gets.

        A notebook without tests has warnings too: `# Test:` instead of `# TEST`
        leaves it with none, and the warning is all that says so.
        """
        lines = [
            f"ntdd: {_relative(module, config)} not collected: "
            f"its notebook {_relative(notebook, config)} is collected directly"
            for module, notebook in self.deduplicated
        ]
        warnings = {m.nodeid: m.plan_warnings for m in self.notebooks if m.plan_warnings}
        for found in warnings.values():
            lines += [f"ntdd: warning: {warning}" for warning in found]
        if config.get_verbosity() > 0:
            lines += [
                f"ntdd: {_relative(path, config)} not collected: "
                f"a {language!r} notebook without test cells"
                for path, language in self.passed_over.items()
            ]
            # The kernel extension's runtime has no parameters: it tests the live namespace.
            of_items = (runtime_of(i) for i in items)
            runtimes = {id(r): r for r in of_items if r is not None and r.points_at_cells}
            notes = (r.cells.parameters_note(config) for r in runtimes.values())
            lines += [f"ntdd: {note}" for note in notes if note]
        return lines

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Tests of a notebook run in notebook order, device by device, so that its
        cells run once per device; with nbval beside it, nbval's kernel runs the
        `# TEST` cells too, and leaves their verdict to ntdd."""
        items[:] = _in_notebook_order(items, self.settings.devices)
        if self.settings.enabled:  # without --ntdd, nbval's verdicts are the only ones
            beside_nbval.hand_over(items)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Count the notebooks that failed to collect, and those that have no test."""
        if not self.settings.enabled or report.nodeid not in self.notebook_ids:
            return
        if report.failed:
            self.unreadable += 1
        elif report.passed and not report.result and not self.settings.run_untested:
            self.untested.passed_over(report.nodeid)  # (with the option: nothing to run)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self) -> Generator[None, object, object]:
        """What start-up made is left out of the collector's passes while notebooks are collected.

        Collection makes pytest's items and the notebooks' modules, and runs no
        cell; the collector's automatic passes, more of them the more tests,
        each walked every module pytest and its plugins had imported.
        """
        if not self.settings.enabled:
            return (yield)
        gc.freeze()
        try:
            return (yield)
        except BaseException:
            gc.unfreeze()  # no run follows to undo it
            raise

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """A notebook that cannot be read is a collection error, but the others still run.

        pytest interrupts a session that has collection errors; when every
        error is an unreadable notebook, they are held back while the tests
        run, and counted again afterwards so the exit status still says so.
        """
        held = self.unreadable if session.testsfailed == self.unreadable else 0
        session.testsfailed -= held
        try:
            with _collection_frozen(self.settings.enabled):
                return (yield)
        finally:
            session.testsfailed += held

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Under `-n`, a notebook's tests go to one worker, so its setup runs once."""
        from ntdd.plugin.scale.xdist import make_scheduler

        return make_scheduler(config, log)


# coverage.py's warning for code compiled under one of the names ntdd gives a notebook's code.
_NOTEBOOK_CODE = r"Couldn't parse '.* \((?:ntdd module|(?:setup |test )?cell \d+)"


def _with_ntdds_plugin(measuring: Any) -> bool:
    return "ntdd.coverage" in (measuring.get_option("run:plugins") or [])


def _coverage_measuring() -> Any:
    """The coverage.py measurement of this process, if any (coverage is not imported for it)."""
    module = sys.modules.get("coverage")
    current = getattr(getattr(module, "Coverage", None), "current", None)
    return current() if current is not None else None


def _notebook_file(path: Path, parent: pytest.Collector) -> bool:
    """A `.ipynb` file, or a jupytext text notebook (see `files.is_notebook_file`)."""
    return is_notebook_file(path, given=parent.session.isinitpath(path))


def _broken_notebook_links(folder: Path) -> list[Path]:
    """The links to `.ipynb` files in *folder* that lead nowhere (gone, or a loop), by name."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    return [
        Path(entry.path)
        for entry in entries
        if entry.name.endswith(".ipynb") and entry.is_symlink() and _leads_nowhere(entry.path)
    ]


def _leads_nowhere(link: str) -> bool:
    try:
        os.stat(link)
    except OSError:
        return True
    return False


def _under_a_given_path(path: Path, session: pytest.Session) -> bool:
    """Whether *path* is, or is in a folder, given to pytest (its arguments, or `testpaths`)."""
    return session.isinitpath(path) or any(session.isinitpath(p) for p in path.parents)


def _not_as_python(path: Path, others: list[Any]) -> list[Any]:
    """A text notebook named `test_*.py` is not also collected as a Python module."""
    return (
        [c for c in others if not isinstance(c, pytest.Module)] if path.suffix == ".py" else others
    )


def _relative(path: Path, config: pytest.Config) -> str:
    try:
        return path.resolve().relative_to(config.rootpath).as_posix()
    except ValueError:
        return str(path)


def _in_notebook_order(items: list[pytest.Item], devices: tuple[str, ...]) -> list[pytest.Item]:
    """Within each generated module, tests in notebook order, device by device.

    Other items, and the order of modules, are left as they are. A module's
    lines are in notebook order, so a test's line gives its place.
    """
    out: list[pytest.Item] = []
    block: list[pytest.Item] = []
    current: Any = None
    for item in [*items, None]:
        module = notebook_module(item) if item is not None else None
        if module is not current or module is None:
            out.extend(_sort_block(block, devices))
            block = []
            current = module
        if item is None:
            break
        if module is None:
            out.append(item)
        else:
            block.append(item)
    return out


def _sort_block(block: list[pytest.Item], devices: tuple[str, ...]) -> list[pytest.Item]:
    if not block:
        return block
    available = next((i for i, d in enumerate(devices) if not device_unavailable(d)), 0)

    def order(item: pytest.Item) -> tuple[int, int, int]:
        device = device_under_test(item)
        rank = devices.index(device) if device in devices else available
        if isinstance(item, OutputCheck):  # after the tests, once the notebook ran to its end
            return rank, sys.maxsize, item.checked.cell.index
        function = getattr(item, "function", None)
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        return rank, code.co_firstlineno if code is not None else 0, 0

    return sorted(block, key=order)


@functools.lru_cache(maxsize=4096)
def _generated_from(path: Path) -> Path | None:
    """The notebook a generated module names in its header, or None.

    An editor may have saved it with a byte-order mark: still the notebook's module.
    """
    try:
        with path.open(encoding="utf-8-sig") as f:
            head = f.read(1024)
    except (OSError, UnicodeDecodeError):
        return None
    header = parse_header(head)
    return (path.parent / header.notebook).resolve() if header is not None else None


@contextlib.contextmanager
def _collection_frozen(enabled: bool) -> Iterator[None]:
    """What collection made is left out of the cyclic collector's passes while tests run.

    pytest's items, and the notebooks' modules, live to the end of the run;
    every automatic full pass walked them all again (0.4 s in a run of 5,000
    tests), more the more tests. The notebooks' cells run after this, so the
    objects they make are collected as in a kernel; at the end of the run
    everything is collected as before (pytest's pass at exit included).
    """
    if not enabled:
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
