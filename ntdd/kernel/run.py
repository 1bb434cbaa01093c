"""Running the kernel's tests with `pytest.main`, in the kernel's own process.

pytest collects one module, which `KernelTests.module` made of the tests to
run, through a directory collector for the kernel's working directory: so
the `conftest.py` files there and above it are loaded, and pytest's own
fixtures (`tmp_path`, `capsys`, `monkeypatch`) and ntdd's plugin (timeouts,
failures pointed at cells, `async def` tests) work as under `pytest --ntdd`.
The project's `addopts` are left out: options meant for a whole test run
(`-n 4`, `--cov`, `--junitxml`) have no place in one cell. Nothing is
written: pytest's cache is off.
"""

from __future__ import annotations

import contextlib
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pytest

from ntdd.defaults import LoadsPlugin

_MODULE = pytest.StashKey[types.ModuleType]()
_NODE_NAME = pytest.StashKey[str]()
# Options of every in-kernel run: quiet, no cache written, no plugin that reorders the
# tests (pytest-randomly would shuffle the cells' order), the project's addopts left
# out, and no warning that modules the kernel imported before pytest started (ntdd,
# pytest plugins) cannot have their asserts rewritten: in a kernel, that is always so.
# ntdd's own plugin is loaded even where plugins are not autoloaded (LoadsPlugin).
BASE_OPTIONS = (
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-o",
    "addopts=",
    "-W",
    "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning",
)


@dataclass(frozen=True)
class Result:
    """One test's outcome: pytest's category for it, and the reason of a skip or xfail."""

    name: str
    category: str  # passed, failed, error, skipped, xfailed, xpassed
    reason: str = ""
    stdout: str = ""  # what it printed, which pytest captured
    stderr: str = ""


@dataclass
class Outcome:
    """What a run did: pytest's exit code and each test's result, in the order they ran."""

    exit_code: int | pytest.ExitCode
    results: dict[str, Result] = field(default_factory=dict)
    warnings: int = 0
    deselected: set[str] = field(default_factory=set)  # by -k, or by a conftest's hook

    @property
    def failed(self) -> bool:
        return failed(self.exit_code)


def failed(exit_code: int) -> bool:
    """Whether a `pytest` exit code is red: anything but passing, or finding no test."""
    return exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)


def run_tests(module: types.ModuleType, node_name: str, options: list[str], out: TextIO) -> Outcome:
    """Run *module*'s tests as `<cwd>/<node_name>`; pytest's report goes to *out*."""
    plugin = _KernelCollection(module, node_name, Path.cwd())
    with contextlib.redirect_stdout(out):
        code = pytest.main(
            [str(plugin.anchor), *BASE_OPTIONS, *options], plugins=[LoadsPlugin(), plugin]
        )
    plugin.outcome.exit_code = code
    return plugin.outcome


class _KernelCollection:
    """The plugin of an in-kernel run: collects the given module, records outcomes."""

    def __init__(self, module: types.ModuleType, node_name: str, anchor: Path) -> None:
        self.module = module
        self.node_name = node_name
        self.anchor = anchor  # the working directory: the folder the tests seem to be in
        self.outcome = Outcome(pytest.ExitCode.OK)

    def pytest_configure(self, config: pytest.Config) -> None:
        config.stash[_MODULE] = self.module
        config.stash[_NODE_NAME] = self.node_name

    @pytest.hookimpl(tryfirst=True)
    def pytest_collect_directory(self, path: Path, parent: pytest.Collector) -> Any:
        """The working directory holds the kernel's tests, and nothing else is collected."""
        if path != self.anchor:
            return None
        return _KernelDirectory.from_parent(parent, path=path)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.split("::", 1)[-1]
        known = self.outcome.results.get(name)
        category = _category(report)
        if not category or (known is not None and known.category in ("failed", "error")):
            category, reason = (known.category, known.reason) if known else ("", "")
        else:
            reason = _reason(report)
        # Each phase's report holds what the phases so far printed.
        self.outcome.results[name] = Result(
            name, category, reason, report.capstdout, report.capstderr
        )

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        names = (item.nodeid.split("::", 1)[-1] for item in items)
        self.outcome.deselected.update(map(defined_name, names))

    def pytest_warning_recorded(self) -> None:
        self.outcome.warnings += 1


class _KernelDirectory(pytest.Directory):
    """The kernel's working directory, as pytest sees it in an in-kernel run."""

    def collect(self) -> list[pytest.Module]:
        name = self.config.stash[_NODE_NAME]
        return [_KernelModule.from_parent(self, path=self.path / name)]


class _KernelModule(pytest.Module):
    """The tests to run, already defined in the kernel: nothing is imported."""

    def _getobj(self) -> types.ModuleType:
        return self.config.stash[_MODULE]


def defined_name(test: str) -> str:
    """The name a cell defined for a test: `TestShape` for `TestShape::test_a[2]`."""
    return test.split("::", 1)[0].split("[", 1)[0]


def _category(report: pytest.TestReport) -> str:
    """pytest's word for a report: passed, failed, error (outside the call), skipped, xfailed…"""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "skipped"
    return "passed" if report.when == "call" else ""


def _reason(report: pytest.TestReport) -> str:
    reason = getattr(report, "wasxfail", "")
    if not reason and report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(reason)
