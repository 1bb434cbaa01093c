"""A notebook test's failure as the notebook shows it: its cells' frames, never ntdd's.

pytest cuts a test's traceback at the test's function and hides frames that
set `__tracebackhide__`, but a notebook's failure passes through more than
a `.py` file's: ntdd's hooks, its runtime, and for a setup cell the
`SetupError` that fails the tests below it, chained to the cell's own
exception. Each notebook test's report is made again from the frames of the
notebook's code alone (with those of the libraries it calls, as a `.py`
file's shows them), so that every consumer of the report reads it so: the
terminal in every `--tb` style, `--tb=native` included, JUnit, PyCharm's
teamcity messages, VS Code, the HTML report, annotations and the job
summary. `--fulltrace` keeps pytest's report, every frame in it.

A setup cell's failure is reported as the cell's exception under the first
test that needed the cell, its summary naming the cell (`ZeroDivisionError
in setup cell 3: division by zero`); each test below it says so in one line.
"""

from __future__ import annotations

import inspect
import linecache
import traceback
import types
from pathlib import Path
from typing import Any

import pluggy
import pytest

from ntdd.errors import SetupError
from ntdd.runtime.protocol import Runtime

# Frames of ntdd, pytest and pluggy are the machinery around a notebook's code: the
# folders of the three packages.
_MACHINERY = tuple(
    f"{Path(path).resolve().parent}/"
    for path in (inspect.getfile(SetupError), inspect.getfile(pytest.Item), inspect.getfile(pluggy))
)


def notebook_failure(
    item: pytest.Item, runtime: Runtime, excinfo: pytest.ExceptionInfo[BaseException]
) -> Any:
    """The report of *excinfo* from the notebook's frames; None to keep pytest's own."""
    if item.config.getoption("fulltrace", False):
        return None
    error = excinfo.value
    if isinstance(error, SetupError):
        return _setup_failure(item, runtime, error)
    own = _of_the_notebook(runtime, error, excinfo.tb)
    return item.repr_failure(own) if own is not None else None


def _setup_failure(item: pytest.Item, runtime: Runtime, error: SetupError) -> Any:
    """The cell's own exception, for the test that ran the cell; one line for the others."""
    cause = error.__cause__
    own = _of_the_notebook(runtime, cause, cause.__traceback__) if cause is not None else None
    if cause is None or own is None:
        info = pytest.ExceptionInfo.from_exception(error)
        shown = info.getrepr(style="value", chain=not error.first)
        crash = shown.reprcrash
        if crash is not None:
            crash.path = runtime.cells.cell_filename(error.index, error.cell_id)
            crash.lineno = 1
            raised = error.raised.__name__ if error.raised else "an error"
            crash.message = f"{raised} in setup cell {error.index} (see {error.where})"
        if error.first and cause is not None:  # the first test: the cause, no frame of it
            _show_alone(shown, cause, error.index)
        return shown
    cells = item.repr_failure(own)
    crash = getattr(cells, "reprcrash", None)
    if crash is not None:
        message = f": {cause}" if str(cause) else ""  # a bare `assert` has none
        crash.message = f"{type(cause).__name__} in setup cell {error.index}{message}"
    return cells


def _show_alone(shown: Any, cause: BaseException, index: int) -> None:
    """*cause* as Python prints an exception that no frame of the cell raised: a syntax
    error's line and caret, as a kernel shows them, or its message."""
    entries = shown.chain[-1][0].reprentries if hasattr(shown, "chain") else []
    if entries:
        lines = traceback.format_exception_only(type(cause), cause)
        entries[-1].lines[:] = "".join(lines).rstrip("\n").splitlines()
    message = f": {_message(cause)}" if _message(cause) else ""
    if shown.reprcrash is not None:
        shown.reprcrash.message = f"{type(cause).__name__} in setup cell {index}{message}"


def _message(error: BaseException) -> str:
    """What *error* says, without the file and line a syntax error adds to it."""
    return error.msg if isinstance(error, SyntaxError) and error.msg else str(error)


def _of_the_notebook(
    runtime: Runtime, error: BaseException, tb: types.TracebackType | None
) -> pytest.ExceptionInfo[BaseException] | None:
    """*error* with a traceback from its first frame of the notebook's code on, without
    ntdd's, pytest's and hidden frames; None when no frame is the notebook's."""
    kept: list[types.TracebackType] = []
    while tb is not None:
        ours = kept or runtime.runs_code_of(tb.tb_frame.f_code.co_filename)
        if ours and not _machinery(tb.tb_frame):
            kept.append(tb)
        tb = tb.tb_next
    while len(kept) > 1 and _runs_a_cell(runtime, kept[0]):
        del kept[0]
    if not kept:
        return None
    chain: types.TracebackType | None = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return pytest.ExceptionInfo.from_exc_info((type(error), error, chain))  # type: ignore[arg-type]


def _runs_a_cell(runtime: Runtime, tb: types.TracebackType) -> bool:
    """A frame of the module's own code that hands a cell to ntdd (`__ntdd__.run_cell(…)`):
    the cell's frame below it is the notebook's line."""
    filename = tb.tb_frame.f_code.co_filename
    return filename == runtime.cells.filename and linecache.getline(
        filename, tb.tb_lineno
    ).lstrip().startswith("__ntdd__.")


def _machinery(frame: types.FrameType) -> bool:
    """A frame of ntdd, pytest or pluggy, or one that hides itself (`__tracebackhide__`)."""
    hidden = frame.f_locals.get("__tracebackhide__", frame.f_globals.get("__tracebackhide__"))
    return bool(hidden) or frame.f_code.co_filename.startswith(_MACHINERY)
