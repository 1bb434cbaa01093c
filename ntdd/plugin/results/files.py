"""The files a run writes its results to: checked before the run, written after it.

A report, a summary or a durations file is named by an option that takes a
value, so a notebook meant as the run's argument may end up named as the
file (`pytest --ntdd --ntdd-report nb.ipynb`). Each is checked before any
test runs (`check`), so that nothing ntdd writes replaces a notebook and a
file that cannot be written is said before the run, not after it. One that
still fails when written (a full disk, `/dev/full`) is one line under the
run's summary, and the run's exit status is no longer OK.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import NtddError
from ntdd.notebook.files import check_results_file
from ntdd.settings.typed import File

_failures = pytest.StashKey[list[str]]()


def check(file: File) -> None:
    """Refuse the *file* a setting names before the run: a usage error, in one line."""
    try:
        check_results_file(file.path, file.said, file.given)
    except NtddError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e


def write(session: pytest.Session, option: str, path: Path, writing: Callable[[], None]) -> None:
    """Run *writing*; where it fails, say so once the run is summed up, and fail the run."""
    try:
        writing()
    except NtddError as e:
        failed(session, f"{option} {e}")
    except OSError as e:
        failed(session, f"{option} {path}: cannot write it: {e.strerror or type(e).__name__}")


def failed(session: pytest.Session, message: str) -> None:
    """A file the run was to write was not: one line under the summary, and the run not OK."""
    session.config.stash.setdefault(_failures, []).append(message)
    if session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def say_failures(config: pytest.Config) -> None:
    """Register the plugin that lists the files not written under the run's summary, once."""
    if not config.pluginmanager.has_plugin(_PLUGIN):
        config.pluginmanager.register(ResultsFileErrors(config), _PLUGIN)


_PLUGIN = "ntdd-results-files"


class ResultsFileErrors:
    """Says which results files could not be written, under the run's summary."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for failure in self.config.stash.get(_failures, []):
            terminalreporter.write_line(f"ntdd: error: {failure}", red=True, bold=True)
