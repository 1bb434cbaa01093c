"""The pytest side (`pytest11` entry point): options, and hand-off to `NtddSession`.

`pytest --ntdd` collects `.ipynb` files as the modules `ntdd export` would
write. Generated modules get their failures pointed at notebook cells, and
their tests grouped by device, with or without `--ntdd`.

Every pytest run of everyone who installed ntdd imports this module, so it
imports only what reading the options needs. Without `--ntdd`, ntdd stays
dormant: the rest loads only when a module ntdd generated is collected.

The package holds the session (its collection, run and report hooks), the
notebook collector and its module cache, xdist scheduling, sharding, the
job summary and the HTML report.

Its options and ini keys are the settings table's (`ntdd.settings.table`);
what they say is read once, by `ntdd.settings.resolve`, into the frozen
`Settings` every feature reads with `settings_of(config)`.

May import: the shared modules, ntdd.settings, ntdd.cells, ntdd.notebook, ntdd.format,
ntdd.pipeline, ntdd.runtime, ntdd.outputs, ntdd.torch (for the `ntdd_torch` fixture),
ntdd.repository (the files a notebook's cells reach, in its `--ntdd-reuse` key), pytest.
Never ntdd.commands.
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

import pytest

from ntdd.settings import table

if TYPE_CHECKING:
    from ntdd.settings.typed import Settings


def pytest_addoption(parser: pytest.Parser) -> None:
    """Every option and ini key of the settings table (`ntdd.settings.table`)."""
    table.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a slow test (`@slow` or the ntdd-slow tag)")
    config.addinivalue_line("markers", "timeout(seconds): a time limit for one notebook test")
    config.addinivalue_line(
        "markers", "full_run: the test's meaning needs the full run: skipped in smoke mode"
    )
    settings = _settings(config) if table.asked(config) else None
    if settings is not None and settings.enabled:
        from ntdd.plugin.session import NtddSession

        config.pluginmanager.register(NtddSession(config, settings), "ntdd-session")
        if config.pluginmanager.has_plugin("vscode_pytest"):
            from ntdd.plugin.beside.vscode import VariantsAsTests

            config.pluginmanager.register(VariantsAsTests(), "ntdd-beside-vscode")
    else:
        config.pluginmanager.register(Dormant(), "ntdd-dormant")
    if settings is not None:
        _register_scale_plugins(config, settings)


def _settings(config: pytest.Config) -> Settings:
    """The run's settings (`ntdd.settings.resolve`), resolved once."""
    from ntdd.settings.resolve import settings_for

    return settings_for(config)


def _register_scale_plugins(config: pytest.Config, settings: Settings) -> None:
    """Sharding, durations, xdist workers' threads, the job summary, the report and the
    notebooks written back: loaded only when asked for (or, for threads, by `-n`)."""
    if settings.results_files():
        from ntdd.plugin.results import files as results_files

        for file in settings.results_files():
            results_files.check(file)
        results_files.say_failures(config)
    if settings.shard is not None or settings.store_durations is not None:
        from ntdd.plugin.scale.shards import durations_recorder, shard_plugin

        for name, extra in (
            ("ntdd-shard", shard_plugin(config)),
            ("ntdd-durations", durations_recorder(config)),
        ):
            if extra is not None:
                config.pluginmanager.register(extra, name)
    if settings.enabled:
        from ntdd.plugin.scale.auto import cached_durations

        cached = cached_durations(config)
        if cached is not None:
            config.pluginmanager.register(cached, "ntdd-cached-durations")
    if settings.summary is not None:
        from ntdd.plugin.results.summary import summary_writer

        config.pluginmanager.register(summary_writer(config), "ntdd-summary")
    if settings.slow_cells is not None:
        from ntdd.plugin.results.slow_cells import slow_cells

        config.pluginmanager.register(slow_cells(config), "ntdd-slow-cells")
    if settings.report is not None:
        from ntdd.plugin.report.writer import report_writer

        config.pluginmanager.register(report_writer(config), "ntdd-report")
    if settings.enabled and config.pluginmanager.has_plugin("xdist"):
        from ntdd.plugin.scale.threads import worker_threads

        threads = worker_threads(config)
        if threads is not None:
            config.pluginmanager.register(threads, "ntdd-threads")
    if settings.writing is not None:
        from ntdd.plugin.results.written_notebooks import notebook_writer

        config.pluginmanager.register(notebook_writer(config), "ntdd-write-notebooks")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """A notebook's `async def` test stays ntdd's, whatever pytest-asyncio's mode; a
    test that uses `device` keeps its device itself (`ntdd.runtime.fixtures`)."""
    collected = yield
    if not collected or not _in_notebook(collector):
        return collected
    if inspect.iscoroutinefunction(obj):
        from ntdd.plugin.collection.async_tests import plain_functions

        collected = plain_functions(collected)
    if isinstance(collected, list):
        from ntdd.runtime.fixtures import take_device

        for made in collected:
            if isinstance(made, pytest.Function):
                take_device(made)
    return collected


def _in_notebook(collector: pytest.Collector) -> bool:
    module = collector.getparent(pytest.Module)
    return module is not None and hasattr(module.obj, "__ntdd__")


class Dormant:
    """ntdd without `--ntdd`: asleep until a module ntdd generated is collected.

    Then it reads its settings and registers the session plugin, which points
    failures at notebook cells, keeps a notebook's tests in notebook order and
    holds timeouts.
    """

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if not any(_generated(item) for item in items):
            return
        from ntdd.plugin.session import NtddSession

        awake = NtddSession(config, _settings(config))
        config.pluginmanager.register(awake, "ntdd-session")
        awake.running.pytest_sessionstart(session)  # it missed the start
        awake.collection.pytest_collection_modifyitems(items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        """Under `-n`, a generated module's tests go to one worker, so its cells run once."""
        from ntdd.plugin.scale.xdist import make_scheduler

        return make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: as many workers as the recorded work pays for (`scale.auto`).

    xdist asks before `pytest_configure`: the settings are resolved here, then.
    """
    if not table.asked(config):
        return None
    from ntdd.plugin.scale.auto import auto_workers

    return auto_workers(config, _settings(config))


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from ntdd.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    """A report's `TestRecord` crosses xdist's execnet (and report logs) as plain data."""
    data = yield
    if isinstance(data, dict) and "ntdd" in data:
        from ntdd.plugin.results.record import serialised

        return serialised(data)
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: Any) -> Any:
    report = yield
    if isinstance(data, dict) and "ntdd" in data:
        from ntdd.plugin.results.record import deserialised

        deserialised(report)
    return report


def _generated(item: pytest.Item) -> bool:
    return getattr(getattr(item, "module", None), "__ntdd__", None) is not None


@pytest.fixture
def ntdd_torch() -> types.ModuleType:
    """ntdd's PyTorch assertions (`ntdd.torch`), for tests that prefer a fixture.

    `def test_model(ntdd_torch): ntdd_torch.assert_mode(model, train=False)`
    """
    import ntdd.torch

    return ntdd.torch
