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

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format, ntdd.pipeline,
ntdd.runtime, ntdd.outputs, ntdd.torch (for the `ntdd_torch` fixture), pytest. Never
ntdd.commands.
"""

from __future__ import annotations

import inspect
import types
from typing import TYPE_CHECKING, Any

import pytest

from ntdd.defaults import (
    DEFAULT_DEVICES,
    DEFAULT_SMOKE_BATCHES,
    DEFAULT_SMOKE_EPOCHS,
    DEFAULT_SMOKE_EXAMPLES,
    DEFAULT_SMOKE_NAMES,
    DEFAULT_TIMEOUT,
)

if TYPE_CHECKING:
    from ntdd.config import Config, Smoke
    from ntdd.runtime.settings import Settings


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ntdd", "ntdd: notebooks as test suites")
    group.addoption(
        "--ntdd",
        action="store_true",
        default=None,
        dest="ntdd",
        help="collect .ipynb files and run their `# TEST` cells (ini: ntdd = true)",
    )
    group.addoption(
        "--ntdd-timeout",
        dest="ntdd_timeout",
        metavar="SECONDS",
        help="fail a notebook test that runs longer, setup included; default "
        f"{DEFAULT_TIMEOUT:g}, 0 for none (ini: ntdd_timeout)",
    )
    group.addoption(
        "--ntdd-devices",
        dest="ntdd_devices",
        metavar="LIST",
        help="devices that tests using `device` run on: cpu, cuda, cuda:N, mps; "
        "default cpu,cuda (ini: ntdd_devices)",
    )
    group.addoption(
        "--ntdd-param",
        dest="ntdd_params",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a notebook's `parameters` cell under test, e.g. num_epochs=1; "
        "a Python literal; repeat for more (ini: ntdd_parameters)",
    )
    group.addoption(
        "--ntdd-run-untested",
        action="store_true",
        default=None,
        dest="ntdd_run_untested",
        help="run each notebook without `# TEST` cells as one test, "
        "test_notebook_runs_to_the_end: it passes when Run All would "
        "(ini: ntdd_run_untested)",
    )
    group.addoption(
        "--ntdd-skip-eval-false",
        action="store_true",
        default=None,
        dest="ntdd_skip_eval_false",
        help="leave out the cells marked `#| eval: false`, as nbdev_test and Quarto do; "
        "by default they run, as in a kernel's Run All (ini: ntdd_skip_eval_false)",
    )
    parser.addini("ntdd", "collect notebooks, as --ntdd does", type="bool", default=False)
    parser.addini(
        "ntdd_skip_eval_false",
        "leave out the cells marked `#| eval: false`",
        type="bool",
        default=None,
    )
    # No default: unset, `[tool.ntdd] run_untested` decides (pytest 8 gives [] for None).
    parser.addini(
        "ntdd_run_untested", "run notebooks without tests, one test each", type="bool", default=None
    )
    parser.addini("ntdd_parameters", "test-only parameters, e.g. num_epochs=1 lr=0.1", type="args")
    parser.addini("ntdd_timeout", "seconds per notebook test, setup included", default="")
    parser.addini("ntdd_devices", "devices for `device` tests, e.g. cpu,cuda", default="")
    _scale_options(group, parser)
    _smoke_options(group, parser)
    _write_options(group)
    _output_options(group)


def _output_options(group: pytest.OptionGroup) -> None:
    """Saved outputs checked as nbval checks them, without a kernel (`output_checks` here)."""
    group.addoption(
        "--ntdd-outputs",
        action="store_true",
        default=False,
        dest="ntdd_outputs",
        help="check every code cell's fresh outputs against those saved in the notebook, as "
        '--nbval does, in this run (implies --ntdd; [tool.ntdd] outputs = "strict")',
    )
    group.addoption(
        "--ntdd-outputs-lax",
        action="store_true",
        default=False,
        dest="ntdd_outputs_lax",
        help="check the outputs of the cells marked # NBVAL_CHECK_OUTPUT only, as "
        '--nbval-lax does (implies --ntdd; [tool.ntdd] outputs = "lax")',
    )
    group.addoption(
        "--ntdd-outputs-sanitize-with",
        dest="ntdd_outputs_sanitize_with",
        metavar="FILE",
        help="regex/replace pairs applied to outputs before they compare, in nbval's "
        "sanitize-file format (--nbval-sanitize-with is read too)",
    )
    group.addoption(
        "--ntdd-outputs-normalize",
        dest="ntdd_outputs_normalize",
        metavar="LIST",
        help="normalisers for brittle outputs: addresses, timestamps, durations, tqdm, "
        "floats, or all; default none, as nbval",
    )
    group.addoption(
        "--ntdd-outputs-float-digits",
        dest="ntdd_outputs_float_digits",
        metavar="N",
        help="significant digits the floats normaliser keeps; default 6",
    )
    group.addoption(
        "--ntdd-outputs-image-tolerance",
        dest="ntdd_outputs_image_tolerance",
        metavar="X",
        help="the largest perceptual distance between a saved figure and the fresh one "
        "that passes (default 0.1), size (compare sizes only) or off (not compared, as "
        "nbval); a cell sets its own with `#| image-tolerance: X`",
    )


def _smoke_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Smoke runs: each notebook's trainings cut short, its file unedited (ntdd.runtime.smoke)."""
    group.addoption(
        "--ntdd-smoke",
        action="store_true",
        default=None,
        dest="ntdd_smoke",
        help="smoke mode: DataLoaders yield few batches a pass and training loops run few "
        "times; tests marked @full_run are skipped (ini: ntdd_smoke)",
    )
    for name, what, default in (
        ("batches", "batches a DataLoader yields per pass", DEFAULT_SMOKE_BATCHES),
        ("epochs", "times a training loop runs (and the --ntdd-smoke-names)", DEFAULT_SMOKE_EPOCHS),
        (
            "examples",
            "examples a Dataset yields a pass to a training loop that iterates it itself",
            DEFAULT_SMOKE_EXAMPLES,
        ),
    ):
        group.addoption(
            f"--ntdd-smoke-{name}",
            dest=f"ntdd_smoke_{name}",
            metavar="N",
            help=f"in smoke mode, the most {what}; default {default} (ini: ntdd_smoke_{name})",
        )
        parser.addini(f"ntdd_smoke_{name}", f"smoke mode: the most {what}", default="")
    group.addoption(
        "--ntdd-smoke-names",
        dest="ntdd_smoke_names",
        metavar="LIST",
        help="in smoke mode, names whose integer values (`max_epochs=10`) are capped like "
        f"epochs; default {','.join(DEFAULT_SMOKE_NAMES)} (ini: ntdd_smoke_names)",
    )
    # No default: unset, `[tool.ntdd] smoke` decides (pytest 8 gives [] for None).
    parser.addini("ntdd_smoke", "run notebooks in smoke mode", type="bool", default=None)
    parser.addini("ntdd_smoke_names", "smoke mode: names capped like epochs", default="")


def _scale_options(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Sharding a run over machines, and the job summary (`shards`, `summary` here)."""
    group.addoption(
        "--ntdd-shard",
        dest="ntdd_shard",
        metavar="K/N",
        help="run the K-th of N disjoint shards; a notebook (a file) is never split",
    )
    group.addoption(
        "--ntdd-durations",
        dest="ntdd_durations",
        metavar="FILE",
        help="balance shards by the seconds recorded in FILE, not by test count "
        "(ini: ntdd_durations)",
    )
    group.addoption(
        "--ntdd-store-durations",
        dest="ntdd_store_durations",
        metavar="FILE",
        help="record each notebook's (each file's) seconds in FILE, for --ntdd-durations",
    )
    group.addoption(
        "--ntdd-summary",
        dest="ntdd_summary",
        metavar="FILE",
        help='append a Markdown summary of the results to FILE (e.g. "$GITHUB_STEP_SUMMARY")',
    )
    group.addoption(
        "--ntdd-report",
        dest="ntdd_report",
        metavar="FILE",
        help="write the run as one HTML page to FILE: the notebooks, each test cell marked "
        "with its verdict ([tool.ntdd] report; needs ntdd[nbconvert])",
    )
    parser.addini("ntdd_durations", "durations file that balances --ntdd-shard", default="")


def _write_options(group: pytest.OptionGroup) -> None:
    """Notebooks written back as they ran (`written_notebooks` here)."""
    group.addoption(
        "--ntdd-write-notebooks",
        dest="ntdd_write_notebooks",
        metavar="DIR",
        help="write each notebook as it ran (its cells' fresh outputs and execution counts) "
        "into DIR, at its path under the rootdir; only notebooks whose run completed",
    )
    group.addoption(
        "--ntdd-overwrite",
        action="store_true",
        default=False,
        dest="ntdd_overwrite",
        help="write each notebook as it ran over the notebook itself, as nbmake --overwrite "
        "does; only notebooks whose run completed and that did not change meanwhile",
    )
    group.addoption(
        "--ntdd-write-incomplete",
        action="store_true",
        default=False,
        dest="ntdd_write_incomplete",
        help="with --ntdd-write-notebooks or --ntdd-overwrite, also write notebooks whose "
        "run did not complete, with the outputs it had",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: a slow test (`@slow` or the ntdd-slow tag)")
    config.addinivalue_line("markers", "timeout(seconds): a time limit for one notebook test")
    config.addinivalue_line(
        "markers", "full_run: the test's meaning needs the full run: skipped in smoke mode"
    )
    if _enabled(config):
        from ntdd.plugin.session import NtddSession

        config.pluginmanager.register(NtddSession(config, _settings(config)), "ntdd-session")
        if config.pluginmanager.has_plugin("vscode_pytest"):
            from ntdd.plugin.beside_vscode import VariantsAsTests

            config.pluginmanager.register(VariantsAsTests(), "ntdd-beside-vscode")
    else:
        config.pluginmanager.register(Dormant(), "ntdd-dormant")
    _register_scale_plugins(config)


def _enabled(config: pytest.Config) -> bool:
    """`--ntdd`, the ini's `ntdd`, or an option that checks outputs (which needs the run)."""
    return bool(
        config.getoption("ntdd")
        or config.getini("ntdd")
        or config.getoption("ntdd_outputs")
        or config.getoption("ntdd_outputs_lax")
    )


def _register_scale_plugins(config: pytest.Config) -> None:
    """Sharding, durations, the job summary and the report: loaded only when asked for."""
    _check_results_files(config)
    if config.getoption("ntdd_shard") or config.getoption("ntdd_store_durations"):
        from ntdd.plugin.shards import durations_recorder, shard_plugin

        for name, extra in (
            ("ntdd-shard", shard_plugin(config)),
            ("ntdd-durations", durations_recorder(config)),
        ):
            if extra is not None:
                config.pluginmanager.register(extra, name)
    if config.getoption("ntdd_summary"):
        from ntdd.plugin.summary import summary_writer

        config.pluginmanager.register(summary_writer(config), "ntdd-summary")
    report = _report_path(config)
    if report:
        from ntdd.plugin.report import report_writer

        config.pluginmanager.register(report_writer(config, report), "ntdd-report")
    if any(config.getoption(name) for name in _WRITE_OPTIONS):
        from ntdd.plugin.written_notebooks import notebook_writer

        writer = notebook_writer(config)
        if writer is not None:
            config.pluginmanager.register(writer, "ntdd-write-notebooks")


_WRITE_OPTIONS = ("ntdd_write_notebooks", "ntdd_overwrite", "ntdd_write_incomplete")


def _check_results_files(config: pytest.Config) -> None:
    """The files the run is to write its results to, checked before it runs."""
    given = [
        (option, config.getoption(dest))
        for option, dest in (
            ("--ntdd-summary", "ntdd_summary"),
            ("--ntdd-store-durations", "ntdd_store_durations"),
        )
    ]
    given.append(("--ntdd-report", _report_path(config)))
    given = [(option, raw) for option, raw in given if raw]
    if not given:
        return
    from ntdd.plugin import results_files

    for option, raw in given:
        results_files.check(config, option, raw)
    results_files.say_failures(config)


def _report_path(config: pytest.Config) -> str | None:
    """`--ntdd-report`, else `[tool.ntdd] report` (read only when ntdd is on)."""
    given: str | None = config.getoption("ntdd_report")
    if given or not _enabled(config):
        return given
    from ntdd.config import load_config
    from ntdd.errors import ConfigError

    try:
        path = load_config(config.rootpath).report
    except ConfigError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e
    return str(path) if path is not None else None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Any:
    """A notebook's `async def` test stays ntdd's, whatever pytest-asyncio's mode; a
    test that uses `device` keeps its device itself (`ntdd.runtime.fixtures`)."""
    collected = yield
    if not collected or not _in_notebook(collector):
        return collected
    if inspect.iscoroutinefunction(obj):
        from ntdd.plugin.beside_asyncio import plain_functions

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
        from ntdd.plugin.xdist import make_scheduler

        return make_scheduler(config, log)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto` with a durations file: as many workers as this shard's work pays for.

    Without one, xdist decides (a worker per core).
    """
    from ntdd.plugin.shards import auto_workers

    return auto_workers(config)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from ntdd.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(config: pytest.Config, report: Any) -> Any:
    """A report's `TestRecord` crosses xdist's execnet (and report logs) as plain data."""
    data = yield
    if isinstance(data, dict) and "ntdd" in data:
        from ntdd.plugin.record import serialised

        return serialised(data)
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(config: pytest.Config, data: Any) -> Any:
    report = yield
    if isinstance(data, dict) and "ntdd" in data:
        from ntdd.plugin.record import deserialised

        deserialised(report)
    return report


def _generated(item: pytest.Item) -> bool:
    return getattr(getattr(item, "module", None), "__ntdd__", None) is not None


def _settings(config: pytest.Config) -> Settings:
    """Command line, then ini keys, then `[tool.ntdd]` in pyproject.toml."""
    from ntdd.errors import ConfigError

    try:
        return _read_settings(config)
    except ConfigError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e


def _read_settings(config: pytest.Config) -> Settings:
    from ntdd.config import load_config, parse_devices, parse_timeout
    from ntdd.errors import ConfigError
    from ntdd.parameters import Parameters, parse_assignments
    from ntdd.runtime.settings import Settings

    file = load_config(config.rootpath)
    enabled = _enabled(config)
    raw_devices = config.getoption("ntdd_devices") or config.getini("ntdd_devices")
    raw_timeout = config.getoption("ntdd_timeout") or config.getini("ntdd_timeout")
    devices = parse_devices(raw_devices, "--ntdd-devices") if raw_devices else file.devices
    timeout = parse_timeout(raw_timeout, "--ntdd-timeout") if raw_timeout else file.timeout
    if timeout is None:
        timeout = DEFAULT_TIMEOUT  # a hung cell must not hang CI until the job is killed
    ini = Parameters(parse_assignments(config.getini("ntdd_parameters"), "ntdd_parameters"))
    given = Parameters(parse_assignments(config.getoption("ntdd_params") or [], "--ntdd-param"))
    if file.template is not None and not file.template.is_file():
        raise ConfigError(f"[tool.ntdd] template: {file.template}: no such file")
    outputs = _output_checking(config, file)
    ini_untested = config.getini("ntdd_run_untested")
    ini_eval = config.getini("ntdd_skip_eval_false")
    return Settings(
        enabled=bool(enabled),
        devices=devices or DEFAULT_DEVICES,
        timeout=timeout or None,
        parameters=given.over(ini.over(file.parameters)),
        template=file.template,
        smoke=_smoke(config, file),
        run_untested=bool(
            config.getoption("ntdd_run_untested")
            or (ini_untested if isinstance(ini_untested, bool) else file.run_untested)
            or outputs  # every notebook's outputs are checked: each runs to its end
        ),
        skip_eval_false=bool(
            config.getoption("ntdd_skip_eval_false")
            or (ini_eval if isinstance(ini_eval, bool) else file.skip_eval_false)
        ),
    )


def _output_checking(config: pytest.Config, file: Config) -> bool:
    """Whether the run checks outputs; if so, how, put in `config.stash` for its items."""
    wanted = file.outputs_table.get("outputs") if file.outputs_table else None
    if not (config.getoption("ntdd_outputs") or config.getoption("ntdd_outputs_lax") or wanted):
        return False
    from ntdd.plugin.output_checks import OUTPUT_CHECKING, output_checking

    where = str(file.source) if file.source is not None else "[tool.ntdd]"
    config.stash[OUTPUT_CHECKING] = output_checking(config, file.outputs_table, where)
    return True


def _smoke(config: pytest.Config, file: Config) -> Smoke | None:
    """`--ntdd-smoke`, the ini's `ntdd_smoke`, `[tool.ntdd] smoke`; each cap the same way."""
    from ntdd.config import parse_smoke

    ini = config.getini("ntdd_smoke")
    if not (config.getoption("ntdd_smoke") or (ini if isinstance(ini, bool) else file.smoke)):
        return None
    caps = dict(file.smoke_caps)
    where = {key: str(file.source) for key in caps}
    for key in ("smoke_batches", "smoke_epochs", "smoke_examples", "smoke_names"):
        given = config.getoption(f"ntdd_{key}")
        if given:
            caps[key], where[key] = given, f"--ntdd-{key.replace('_', '-')}"
        elif config.getini(f"ntdd_{key}"):
            caps[key], where[key] = config.getini(f"ntdd_{key}"), f"ini ntdd_{key}"
    for key, value in caps.items():  # each checked where it was given
        parse_smoke({key: value}, where[key])
    return parse_smoke(caps, "smoke mode")


@pytest.fixture
def ntdd_torch() -> types.ModuleType:
    """ntdd's PyTorch assertions (`ntdd.torch`), for tests that prefer a fixture.

    `def test_model(ntdd_torch): ntdd_torch.assert_mode(model, train=False)`
    """
    import ntdd.torch

    return ntdd.torch
