"""What a notebook test's deadline needs to know when the test outlives its timeout.

The runtime raises the timeout again while one of the notebook's cells
runs, and ends the process when the test still goes on (`ntdd.runtime.
timeout`); this module tells it which frames are the notebook's cells, and
lets the last words through pytest's output capture to the terminal.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import sys
import time
from types import FrameType
from typing import Any

import pytest

from ntdd.runtime.protocol import Runtime
from ntdd.runtime.timeout import HARD_END_GRACE, HARD_END_STATUS, Overrun


def overrun_of(runtime: Runtime, item: pytest.Item) -> Overrun:
    """The overrun handling of *item*, a test of *runtime*'s notebook.

    In a kernel (`%ntdd`), the process is the user's kernel: it is never ended.
    """
    cell_of = functools.partial(running_cell, runtime)
    if not runtime.ends_the_process:
        return Overrun(cell_of, grace=None)
    last_words = functools.partial(release_capture, item.config)
    results = functools.partial(leave_results, item, time.monotonic())
    return Overrun(cell_of, HARD_END_GRACE, last_words, results)


def leave_results(item: pytest.Item, started: float, message: str) -> None:
    """Before the process ends: *item* failed with *message*, and the session finishes,
    so that the JUnit XML, the report, the summary, the durations and pytest's
    own last failures say what this run did, never what an earlier one left.

    Under pytest-xdist a worker only ends: the controller reports its test as
    crashed and writes the files itself.
    """
    if hasattr(item.config, "workerinput"):
        return
    report = pytest.TestReport(
        item.nodeid,
        item.location,
        keywords=dict.fromkeys(item.keywords, 1),
        outcome="failed",
        longrepr=message,
        when="call",
        duration=time.monotonic() - started,
    )
    item.ihook.pytest_runtest_logreport(report=report)
    session = item.session
    session.exitstatus = HARD_END_STATUS
    item.config.hook.pytest_sessionfinish(session=session, exitstatus=HARD_END_STATUS)
    for stream in (sys.stdout, sys.stderr):  # the process ends with os._exit: no flush
        with contextlib.suppress(Exception):
            stream.flush()


def running_cell(runtime: Any, frame: FrameType) -> str | None:
    """The notebook cell *frame* runs a line of, described; None for any other frame."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    if filename == runtime.cells.filename:  # a test cell, as a function of the module
        where = runtime.cells.layout.locate(line, runtime.display_path)
        return where.describe() if where is not None else None
    if filename.startswith(f"{runtime.display_path} ("):  # a cell run as code
        return f"{filename}, line {line}: {linecache.getline(filename, line).strip()}"
    return None


def release_capture(config: pytest.Config) -> str:
    """pytest's capture lets go of stdout and stderr; what the test printed, to show first."""
    with contextlib.suppress(Exception):
        config.get_terminal_writer().flush()  # the progress line, before the last words
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is None:
        return ""
    capture.suspend(in_=True)
    out, err = capture.read_global_capture()
    return _section("stdout", out) + _section("stderr", err)


def _section(name: str, text: str) -> str:
    if not text:
        return ""
    if not text.endswith("\n"):
        text += "\n"
    return f"{f' Captured {name} ':-^80}\n{text}"
