"""What ntdd does during a pytest session, as one registered plugin object."""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import linecache
import sys
import types
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ntdd.format.locate import CellLocation
from ntdd.format.module import parse_header
from ntdd.notebook.files import is_notebook_file
from ntdd.plugin import beside_nbval, places
from ntdd.plugin.collect import Loaded, NotebookModule, as_notebook_test
from ntdd.plugin.overrun import overrun_of
from ntdd.plugin.places import failing_line
from ntdd.runtime import containment, timeout, wakeup
from ntdd.runtime.isolation import BASELINE, ProcessState
from ntdd.runtime.notebook_runtime import NotebookRuntime, SetupError, device_unavailable
from ntdd.runtime.settings import SETTINGS, Settings, counts_of
from ntdd.runtime.timeout import Deadline

_deadline_key = pytest.StashKey[Deadline]()
_cell_key = pytest.StashKey["CellLocation | None"]()
_other_timeout_key = pytest.StashKey[float]()  # pytest-timeout's seconds for a test


class NtddSession:
    """Collects notebooks, points failures at cells, keeps notebooks together."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.deduplicated: list[tuple[Path, Path]] = []
        self.passed_over: dict[Path, str] = {}  # other languages' notebooks, without tests
        self.unreadable = 0  # notebooks that failed to collect
        self.notebook_ids: set[str] = set()  # node ids of the notebooks collected
        self.notebooks: list[NotebookModule] = []  # their collectors, tests or none
        self._loaded: dict[Path, Loaded] = {}  # each notebook read once per session
        self._annotated: set[object] = set()  # GitHub annotations written, once each
        config.stash[SETTINGS] = settings
        config.pluginmanager.register(CellsInTheirFolder(), "ntdd-cells-folder")

    # -- collection ------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> Generator[None, list[Any], list[Any]]:
        """Add ntdd's collector for a notebook beside other plugins' (nbval's).

        The notebook is read here, once. When it cannot be read, only ntdd's
        collection error is kept, so a broken file is one error, not one per
        plugin.
        """
        others = yield
        if not (self.settings.enabled and _notebook_file(file_path, parent)):
            return others
        ours = NotebookModule.from_parent(parent, path=file_path)
        ours.load(self._loaded)
        if ours.passed_over is not None:  # nbval may still run it, in its own kernel
            self.passed_over[file_path] = ours.passed_over
            return [ours, *others]
        self.notebook_ids.add(ours.nodeid)
        self.notebooks.append(ours)
        if ours.read_error is not None:
            others = [c for c in others if type(c).__name__ != "IPyNbFile"]
        return [ours, *_not_as_python(file_path, others)]

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

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        """Under coverage without ntdd's plugin, say how notebooks get measured."""
        if not self.settings.enabled or not _coverage_lacks_plugin():
            return []
        return [
            "ntdd: coverage measures notebooks only with its plugin: add "
            'plugins = ["ntdd.coverage"] under [tool.coverage.run] (or [run] in .coveragerc)'
        ]

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
            runtimes = {id(r): r for i in items if isinstance(r := _runtime(i), NotebookRuntime)}
            notes = (r.parameters_note(config) for r in runtimes.values())
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
        if self.settings.enabled and report.failed and report.nodeid in self.notebook_ids:
            self.unreadable += 1

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

    # -- running ---------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Note the process as it starts: every notebook starts from this state."""
        session.config.stash[BASELINE] = ProcessState.baseline()
        containment.watch_ctrl_c()
        wakeup.install()

    def pytest_sessionfinish(self) -> None:
        containment.unwatch_ctrl_c()
        wakeup.uninstall()

    @pytest.hookimpl(tryfirst=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """One pass of the garbage collector at exit, not pytest's two.

        pytest collects garbage twice as it closes (at unconfigure and at
        cleanup) to report objects whose `__del__` raised; with torch imported
        by a notebook each pass walks its whole heap (0.2 s). The pass is done
        once here, before pytest's, and pytest's are set to none in the stash
        key pytest has for that (its own pytester does the same); what the pass
        finds is still reported by pytest.
        """
        if not config.pluginmanager.has_plugin("unraisableexception"):
            return  # `-p no:unraisableexception`: pytest collects nothing, nor does ntdd
        try:
            from _pytest.unraisableexception import gc_collect_iterations_key as key
        except ImportError:  # another pytest: it collects as it always did
            return
        default = 5 if sys.implementation.name == "pypy" else 1  # pytest's own defaults
        for _ in range(config.stash.get(key, default)):
            gc.collect()
        config.stash[key] = 0

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """An `async def` test of a notebook awaits on the notebook's event loop.

        Any test of a notebook draws from the random generators where its cells
        left them (`pytest_runtest_makereport` notes where it leaves them).
        """
        module = _notebook_module(pyfuncitem)
        if module is not None and isinstance(module.__ntdd__, NotebookRuntime):
            module.__ntdd__.resume_generators()
        function = pyfuncitem.obj
        if module is None or not inspect.iscoroutinefunction(function):
            return None
        info = pyfuncitem._fixtureinfo  # the arguments pytest itself would pass
        arguments = {name: pyfuncitem.funcargs[name] for name in info.argnames}
        module.__ntdd__.run_coroutine(function, arguments)
        return True

    @pytest.hookimpl(wrapper=True, specname="pytest_pyfunc_call")
    def pytest_pyfunc_call_as_a_cell(
        self, pyfuncitem: pytest.Function
    ) -> Generator[None, object, object]:
        """A notebook test's code runs as its cell would in a kernel: with the
        notebook's root logger and its event loop running."""
        runtime = _runtime(pyfuncitem)
        if not isinstance(runtime, NotebookRuntime):
            return (yield)
        with runtime.calling(pyfuncitem):
            return (yield)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        counts = counts_of(self.config)
        if counts.replays:
            terminalreporter.write_line(
                f"ntdd: {counts.replays} test(s) ran out of notebook order; their notebook "
                "was run again from its start for each"
            )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        if _deadline_key in item.stash:  # a rerun (pytest-rerunfailures): a fresh budget
            del item.stash[_deadline_key]
        with self._contained(item):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._contained(item), beside_nbval.verdict_of_ntdd(item):
            return (yield)

    @pytest.hookimpl(specname="pytest_runtest_setup", wrapper=True, trylast=True)
    def pytest_runtest_setup_streams(self, item: pytest.Item) -> Generator[None, None, None]:
        """Inside pytest's capture (trylast): the streams the cells write to stay open.

        (pytest takes hooks only from names that start with `pytest_`.)
        """
        with self._streams_kept_open(item):
            return (yield)

    @pytest.hookimpl(specname="pytest_runtest_call", wrapper=True, trylast=True)
    def pytest_runtest_call_streams(self, item: pytest.Item) -> Generator[None, None, None]:
        with self._streams_kept_open(item):
            return (yield)

    def _streams_kept_open(self, item: pytest.Item) -> contextlib.AbstractContextManager[None]:
        if _notebook_module(item) is None:
            return _nothing()
        return containment.streams_kept_open(item.nodeid)

    @contextlib.contextmanager
    def _contained(self, item: pytest.Item) -> Iterator[None]:
        """A notebook test's phase, within its time budget, its damage kept in."""
        __tracebackhide__ = True
        if _notebook_module(item) is None:
            yield
            return
        deadline = item.stash.get(_deadline_key, None)
        seconds = self._timeout(item)
        if deadline is None and seconds:
            overrun = overrun_of(_runtime(item), item.config)
            deadline = item.stash.setdefault(_deadline_key, Deadline(seconds, item.nodeid, overrun))
        notebook_code = _notebook_code(_runtime(item))
        with (
            containment.contained(item.nodeid, notebook_code),
            deadline.running() if deadline else _nothing(),
        ):
            yield

    def _timeout(self, item: pytest.Item) -> float | None:
        """The cell's `@timeout`, else the stricter of ntdd's and pytest-timeout's own."""
        if _notebook_module(item) is None:
            return None
        mark = item.get_closest_marker("timeout")
        given = mark.args[0] if mark is not None and mark.args else None
        if mark is not None and given is None:
            given = mark.kwargs.get("timeout")  # pytest-timeout's spelling
        if given is not None:
            return float(given) or None
        limits = [self.settings.timeout, item.stash.get(_other_timeout_key, None)]
        return min((s for s in limits if s), default=None)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """pytest-timeout's timer for a notebook test: ntdd's deadline keeps it, alone.

        Two timers on one test fail it with whichever fires first. pytest-timeout's
        `timeout` mark is the one ntdd reads (`@timeout` in a marker); its
        `--timeout` counts for notebook tests without one.
        """
        if _notebook_module(item) is None:
            return None
        seconds = getattr(settings, "timeout", None)
        if seconds:
            item.stash[_other_timeout_key] = float(seconds)
        return True

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        return True if _notebook_module(item) is not None else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        timeout.phase_ended()  # a deadline its phase left armed goes no further
        runtime = _runtime(item)
        if call.when == "call" and isinstance(runtime, NotebookRuntime):
            runtime.keep_generators()
        where = _test_cell(item)
        if where is not None and call.when == "setup":
            item.user_properties.extend(
                [("notebook", where.notebook), ("cell", where.index), ("cell_id", where.id or "")]
            )
        if where is None and isinstance(runtime, NotebookRuntime) and _setup_cell_failed(call):
            _name_the_cell(item, runtime, call)  # the end test: the cell that raised is its place
        if where is not None and call.excinfo is not None and call.when == "call":
            _add_note(call.excinfo.value, item)
        failure = call.excinfo if isinstance(runtime, NotebookRuntime) else None
        if failure is not None and _expected_failure(item, failure.value):
            _keep_notebook_frames(failure, runtime)
        report = yield
        beside_nbval.at_the_cell(item, report)
        if isinstance(runtime, NotebookRuntime) and _setup_cell_failed(call):
            _not_expected(report)
        if where is not None or isinstance(runtime, NotebookRuntime):  # the end test too
            report.ntdd_description = _description(item, where)  # type: ignore[attr-defined]
        if report.failed and isinstance(runtime, NotebookRuntime) and runtime.file_lines:
            line = failing_line(runtime, call.excinfo.value) if call.excinfo else None
            places.point_at_notebook(report, runtime, line)
            report.ntdd_notebook = True  # type: ignore[attr-defined]  # for the annotation
        if call.excinfo is not None and isinstance(runtime, NotebookRuntime):
            runtime.hold_failure(call.excinfo.tb)  # the report is written: frames may go
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On GitHub Actions, a notebook test's failure is annotated at the notebook's line."""
        if not (getattr(report, "ntdd_notebook", False) and places.annotates(self.config)):
            return
        key = (report.location[:2], str(getattr(report.longrepr, "reprcrash", "")))
        if key not in self._annotated:  # a setup cell's failure errors every test below it
            self._annotated.add(key)
            places.annotate(report, self.config)

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, Any, Any]:
        result = yield
        # Only the live `-v` line shows the description: the first ask for a
        # report's status comes from it, the later ones from the summaries.
        description = getattr(report, "ntdd_description", "")
        if description:
            report.ntdd_description = ""  # type: ignore[attr-defined]
        if not (description and config.get_verbosity() > 0 and isinstance(result, tuple)):
            return result
        category, letter, word = result
        if not word or (report.when != "call" and report.passed):
            return result
        if isinstance(word, tuple):
            return category, letter, (f"{word[0]} - {description}", word[1])
        return category, letter, f"{word} - {description}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Under `-n`, a notebook's tests go to one worker, so its setup runs once."""
        if config.getvalue("dist") not in ("load", "loadgroup", "worksteal"):
            return None  # xdist's own scheduler does not split a file
        from ntdd.plugin.xdist import make_scheduler

        return make_scheduler(config, log)


class CellsInTheirFolder:
    """A notebook test's function runs in the notebook's folder; all else in the session's.

    A wrapper of its own, outside every `pytest_pyfunc_call` (ntdd's for
    `async def` tests included): the test's body is the notebook's cell.
    """

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[None, Any, Any]:
        runtime = _runtime(pyfuncitem)
        if not isinstance(runtime, NotebookRuntime):
            return (yield)
        with runtime.in_its_folder():
            return (yield)


_nothing = contextlib.nullcontext


def _coverage_lacks_plugin() -> bool:
    """Whether coverage.py is measuring this process without ntdd's plugin."""
    module = sys.modules.get("coverage")
    current = getattr(getattr(module, "Coverage", None), "current", None)
    measuring = current() if current is not None else None
    if measuring is None:
        return False
    return "ntdd.coverage" not in (measuring.get_option("run:plugins") or [])


def _notebook_file(path: Path, parent: pytest.Collector) -> bool:
    """A `.ipynb` file, or a jupytext text notebook (see `files.is_notebook_file`)."""
    return is_notebook_file(path, given=parent.session.isinitpath(path))


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


def _runtime(item: pytest.Item) -> Any:
    module = _notebook_module(item)
    return module.__ntdd__ if module is not None else None


def _notebook_code(runtime: Any) -> Callable[[str], bool]:
    """Whether a frame's file name is the notebook's code: its module, or a cell run as code."""
    if isinstance(runtime, NotebookRuntime):
        return runtime.runs_code_of
    return lambda filename: filename == runtime.filename or filename in runtime.cell_files


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


def _notebook_module(item: pytest.Item) -> Any:
    module = getattr(item, "module", None)
    return module if module is not None and hasattr(module, "__ntdd__") else None


def _test_cell(item: pytest.Item) -> CellLocation | None:
    """The cell a test came from, found once per test."""
    if _cell_key in item.stash:
        return item.stash[_cell_key]
    module = _notebook_module(item)
    function = getattr(item, "function", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if function else None
    where = None
    if module is not None and code is not None:
        runtime = module.__ntdd__
        where = runtime.layout.locate(code.co_firstlineno, runtime.display_path)
    item.stash[_cell_key] = where
    return where


def _add_note(error: BaseException, item: pytest.Item) -> None:
    module = _notebook_module(item)
    where = _failure_location(module, error.__traceback__) if module is not None else None
    if where is None:
        return
    note = f"in notebook {where.describe()}"
    notes = getattr(error, "__notes__", None)
    if notes is None:
        try:
            error.__notes__ = notes = []  # type: ignore[attr-defined]
        except AttributeError:
            return
    if note not in notes:
        notes.append(note)


def _failure_location(module: Any, tb: types.TracebackType | None) -> CellLocation | None:
    """The deepest frame of *tb* that runs a line of one of *module*'s test cells."""
    runtime = module.__ntdd__
    found: CellLocation | None = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename == runtime.filename:
            found = runtime.layout.locate(tb.tb_lineno, runtime.display_path) or found
        elif filename in runtime.cell_files:  # a test cell run as notebook code
            index, cell_id = runtime.cell_files[filename]
            text = linecache.getline(filename, tb.tb_lineno).strip()
            found = CellLocation(runtime.display_path, index, cell_id, tb.tb_lineno, "", text)
        tb = tb.tb_next
    return found


def _setup_cell_failed(call: pytest.CallInfo[None]) -> bool:
    """A setup cell above the test raised: the notebook's failure, not the test's."""
    return (
        call.when == "setup" and call.excinfo is not None and call.excinfo.errisinstance(SetupError)
    )


def _name_the_cell(
    item: pytest.Item, runtime: NotebookRuntime, call: pytest.CallInfo[None]
) -> None:
    """Report properties naming the setup cell that raised, for a test in no cell."""
    assert call.excinfo is not None
    error = call.excinfo.value
    assert isinstance(error, SetupError)
    item.user_properties.extend(
        [
            ("notebook", runtime.display_path),
            ("cell", error.index),
            ("cell_id", error.cell_id or ""),
        ]
    )


def _not_expected(report: pytest.TestReport) -> None:
    """An error, whatever the test's `@xfail` says: the reason names another failure.

    pytest counts any error of an xfail test's setup as the expected failure;
    the failure here is a setup cell's, which the reason does not speak of.
    """
    if hasattr(report, "wasxfail"):
        del report.wasxfail
        report.outcome = "failed"


def _expected_failure(item: pytest.Item, error: BaseException) -> bool:
    """Whether pytest will report *error* as an xfail: the test's first xfail mark
    has no condition, and its `raises`, if any, is a class the error is an instance of.

    Marks with conditions, and `raises` given as a matcher, are left to pytest
    (this answers no), as is everything under `--runxfail`.
    """
    if item.config.getoption("runxfail", False) or isinstance(error, SetupError):
        return False
    mark = item.get_closest_marker("xfail")
    if mark is None or mark.args or "condition" in mark.kwargs:
        return False
    raises = mark.kwargs.get("raises")
    if raises is None:
        return True
    classes = raises if isinstance(raises, tuple) else (raises,)
    return all(isinstance(c, type) for c in classes) and isinstance(error, classes)


def _keep_notebook_frames(
    excinfo: pytest.ExceptionInfo[BaseException], runtime: NotebookRuntime
) -> None:
    """An expected failure's report keeps the notebook's frames only.

    pytest writes every failure's report, an xfail's too, though it never
    prints an xfail's; formatting a frame reads and parses its whole source
    file, and for a frame in torch that is a 7,000-line module (a quarter of
    a second for one xfail). The notebook's frames still say where it failed;
    `hold_failure` still gets the original traceback, whose frames it frees.
    """
    kept = []
    tb: types.TracebackType | None = excinfo.tb
    while tb is not None:
        if runtime.runs_code_of(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    # A chain of its own: pytest cuts a traceback at the test's frame and
    # follows `tb_next` from there, which in the original leads into torch.
    chain: types.TracebackType | None = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    if chain is not None:
        excinfo.traceback = type(excinfo.traceback)(chain)


def _description(item: pytest.Item, where: CellLocation | None) -> str:
    doc = getattr(getattr(item, "function", None), "__doc__", None)
    if isinstance(doc, str) and doc.strip():
        return doc.strip().splitlines()[0]
    return where.title if where is not None else ""


def _in_notebook_order(items: list[pytest.Item], devices: tuple[str, ...]) -> list[pytest.Item]:
    """Within each generated module, tests in notebook order, device by device.

    Other items, and the order of modules, are left as they are. A module's
    lines are in notebook order, so a test's line gives its place.
    """
    out: list[pytest.Item] = []
    block: list[pytest.Item] = []
    current: Any = None
    for item in [*items, None]:
        module = _notebook_module(item) if item is not None else None
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

    def order(item: pytest.Item) -> tuple[int, int]:
        callspec = getattr(item, "callspec", None)
        device = callspec.params.get("device") if callspec is not None else None
        rank = devices.index(device) if device in devices else available
        function = getattr(item, "function", None)
        code = getattr(inspect.unwrap(function), "__code__", None) if function else None
        return rank, code.co_firstlineno if code is not None else 0

    return sorted(block, key=order)


@functools.lru_cache(maxsize=4096)
def _generated_from(path: Path) -> Path | None:
    """The notebook a generated module names in its header, or None."""
    try:
        with path.open(encoding="utf-8") as f:
            head = f.read(1024)
    except (OSError, UnicodeDecodeError):
        return None
    header = parse_header(head)
    return (path.parent / header.notebook).resolve() if header is not None else None
