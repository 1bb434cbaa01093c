"""A notebook test's failure, pointed at the notebook's file and line, for tools.

People read `cell 4, line 2` in the message; tools read fields: the report's
`location` (JUnit's `file=`/`line=`, pytest-sugar), the `path:line:` of each
traceback entry (GitHub annotations, editors' links) and the workflow
command ntdd writes itself on GitHub Actions. Each frame of the notebook's
code, the in-memory module or a cell compiled on its own, is mapped to the
line of the notebook's file that holds its source line.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import NtddError, SetupError
from ntdd.format.locate import CellLocation, TestRegion
from ntdd.notebook.read import read_notebook
from ntdd.runtime.protocol import Runtime

# The plugin that annotates failures itself, by the name it registers its reporter under.
ANNOTATING_PLUGIN = "annotate_errors"


def failing_line(runtime: Runtime, error: BaseException) -> int | None:
    """The notebook's line that *error* came from: for a setup cell's failure, the
    line of that cell that raised (or its first line, for the tests after it); for a
    test cell that cannot run, the line its problem names."""
    if isinstance(error, SetupError):
        cause = error.__cause__
        found = _deepest(runtime, cause.__traceback__) if cause is not None else None
        return found if found is not None else runtime.cells.cell_line_in_file(error.index, None)
    broken = broken_cell_line(runtime, error)
    if broken is not None:
        return runtime.cells.cell_line_in_file(broken.index, broken.line)
    return _deepest(runtime, error.__traceback__)


_NAMED_LINE = re.compile(r"\bline (\d+)\b")


def broken_cell_line(runtime: Runtime, error: BaseException) -> CellLocation | None:
    """For a test cell that cannot run (a syntax error): the line of the cell its
    problem names, with its text, read from the notebook; None for other failures.

    The test's body is ntdd's call that fails it (`__ntdd__.broken(…)`), which
    quotes nothing of the cell.
    """
    if not isinstance(error, pytest.fail.Exception):
        return None
    tb = error.__traceback__
    while tb is not None:
        filename, lineno = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        if filename == runtime.cells.filename and _calls_broken(filename, lineno):
            break
        tb = tb.tb_next
    test = runtime.cells.layout.test_at(tb.tb_lineno) if tb is not None else None
    if test is None:
        return None
    problem = str(error).partition(f"cell {test.index}")[2]
    named = _NAMED_LINE.search(problem)
    line = int(named[1]) if named else None
    return CellLocation(
        runtime.display_path,
        test.index,
        test.region.id,
        line,
        test.title,
        _text(runtime, test, line),
    )


def _calls_broken(filename: str, lineno: int) -> bool:
    return linecache.getline(filename, lineno).lstrip().startswith("__ntdd__.broken(")


def _text(runtime: Runtime, test: TestRegion, line: int | None) -> str:
    """Line *line* of the test's cell, as the notebook holds it ("" where it cannot be read)."""
    try:
        cells = read_notebook(runtime.cells.source_file).cells
    except NtddError:
        return ""
    cell = next((c for c in cells if c.index == test.index), None)
    lines = cell.source.splitlines() if cell is not None else []
    return lines[line - 1].strip() if line is not None and 0 < line <= len(lines) else ""


def _deepest(runtime: Runtime, tb: types.TracebackType | None) -> int | None:
    """The file line of the deepest frame of *tb* that runs the notebook's code."""
    found = None
    while tb is not None:
        line = runtime.cells.line_in_file(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        found = line if line is not None else found
        tb = tb.tb_next
    return found


def point_at_notebook(report: pytest.TestReport, runtime: Runtime, line: int | None) -> None:
    """The report's location and traceback entries name the notebook's file and lines.

    An entry's `path:line:` is followed by the cell and its line, for people:
    `nb.ipynb:42: TypeError (setup cell 3, id 1a2b, line 2)`.
    """
    path = _shown(runtime.cells.source_file)
    if line is not None:
        report.location = (report.location[0], line - 1, report.location[2])
    for entry in _module_entries(report.longrepr, runtime.cells.filename):
        entry.lines = _cell_lines_only(runtime, entry.lines, entry.reprfileloc.lineno)
    for location, is_entry in _file_locations(report.longrepr):
        found = runtime.cells.line_in_file(location.path, location.lineno)
        if found is None:
            continue
        if is_entry:  # the crash's message is the error's, as summaries quote it
            words = _cell_words(runtime, location.path, location.lineno)
            location.message = f"{location.message} ({words})".lstrip()
        location.path, location.lineno = path, found
    for entry in _native_entries(report.longrepr):
        entry.lines = [_native_frames(runtime, path, chunk) for chunk in entry.lines]


def _module_entries(longrepr: object, filename: str) -> Iterator[Any]:
    """The traceback entries of a failure's report at a line of the notebook's module."""
    chain = getattr(longrepr, "chain", None)
    tracebacks = [t for t, _, _ in chain] if chain else [getattr(longrepr, "reprtraceback", None)]
    for traceback in tracebacks:
        for entry in getattr(traceback, "reprentries", ()):
            location = getattr(entry, "reprfileloc", None)
            if location is not None and location.path == filename:
                yield entry


def _cell_lines_only(runtime: Runtime, lines: list[str], failing: int) -> list[str]:
    """An entry's source lines less those ntdd wrote around a cell of bare statements
    (its `def test_x():`, its `global` line, its marks): the cell's lines, as it reads.

    The entry shows the module's lines up to the failing one, marked `>`, and the
    lines its statement continues on; the lines after are the error's (`E`).
    """
    at = next((i for i, text in enumerate(lines) if text.startswith(">")), None)
    if at is None:
        return lines
    kept = []
    for i, text in enumerate(lines):
        carets = text.strip() and not text.strip().strip("^~")
        source = not (text.startswith("E ") or carets) and (i <= at or text.startswith("    "))
        if source and i != at and _written_by_ntdd(runtime, failing + i - at):
            continue
        kept.append(text)
    return kept


def _written_by_ntdd(runtime: Runtime, lineno: int) -> bool:
    test = runtime.cells.layout.test_at(lineno)
    return test is not None and lineno not in test.cell_lines


_NATIVE_FRAME = re.compile(
    r'^(?P<head>\s*File ")(?P<file>.+)", line (?P<line>\d+)(?P<tail>.*)$', re.M
)


def _native_frames(runtime: Runtime, path: str, text: str) -> str:
    """Lines of a `--tb=native` traceback, each frame of the notebook's code at the
    notebook's file and line: `File "nb.ipynb", line 42, in test_x (test cell 4, line 2)`."""

    def at_notebook(frame: re.Match[str]) -> str:
        name, lineno = frame["file"], int(frame["line"])
        found = runtime.cells.line_in_file(name, lineno)
        if found is None:
            return frame[0]
        words = _cell_words(runtime, name, lineno)
        return f'{frame["head"]}{path}", line {found}{frame["tail"]} ({words})'

    return _NATIVE_FRAME.sub(at_notebook, text)


def _native_entries(longrepr: object) -> Iterator[Any]:
    """The `--tb=native` entries of a failure's report: Python's own traceback text."""
    chain = getattr(longrepr, "chain", None)
    tracebacks = [t for t, _, _ in chain] if chain else [getattr(longrepr, "reprtraceback", None)]
    for traceback in tracebacks:
        for entry in getattr(traceback, "reprentries", ()):
            if getattr(entry, "style", None) == "native":
                yield entry


def _cell_words(runtime: Runtime, filename: str, lineno: int) -> str:
    """`test cell 4, id 1a2b, line 2`: where a line of the notebook's code is, for people."""
    if filename != runtime.cells.filename:  # a cell compiled alone: its name says which
        return f"{filename[len(runtime.display_path) + 2 : -1]}, line {lineno}"
    where = runtime.cells.layout.locate(lineno, "")
    if where is None:
        return ""
    ident = f", id {where.id}" if where.id else ""
    line = f", line {where.line}" if where.line is not None else ""
    return f"test cell {where.index}{ident}{line}"


def _file_locations(longrepr: object) -> Iterator[tuple[Any, bool]]:
    """Every `path:line:` of a failure's report: its entries' (True) and its crash's."""
    chain = getattr(longrepr, "chain", None)
    if chain is None:
        crash = getattr(longrepr, "reprcrash", None)
        chain = [(getattr(longrepr, "reprtraceback", None), crash, None)]
    for traceback, crash, _ in chain:
        for entry in getattr(traceback, "reprentries", ()):
            location = getattr(entry, "reprfileloc", None)
            if location is not None:
                yield location, True
        if crash is not None:
            yield crash, False


def _shown(path: Path) -> str:
    """*path* as pytest shows a file in a traceback: relative to the cwd when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# -- GitHub Actions ------------------------------------------------------------------


def annotates(config: pytest.Config) -> bool:
    """Whether ntdd writes failures' workflow commands: on GitHub Actions, in the
    process that reports (not an xdist worker), unless the annotating plugin does."""
    return (
        os.environ.get("GITHUB_ACTIONS") == "true"
        and not hasattr(config, "workerinput")
        and not config.pluginmanager.has_plugin(ANNOTATING_PLUGIN)
    )


def annotate(report: pytest.TestReport, config: pytest.Config) -> None:
    """One `::error file=…,line=…::` for a notebook test's failure, at the notebook's line."""
    path, line, _ = report.location
    crash = getattr(report.longrepr, "reprcrash", None)
    message = report.head_line or report.nodeid
    if crash is not None:
        message += f"\n\n{crash.message}"
    where = f"file={_in_workspace(config.rootpath / path)}"
    if line is not None:
        where += f",line={line + 1}"
    where += f",title={_escaped_property(report.nodeid)}"
    print(f"::error {where}::{_escaped(message)}", file=sys.stderr)


def _in_workspace(path: Path) -> str:
    """The path as GitHub wants it: relative to the checkout, when inside it."""
    workspace = os.environ.get("GITHUB_WORKSPACE")
    base = Path(workspace) if workspace else Path.cwd()
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _escaped(text: str) -> str:
    """A workflow command's message, escaped as GitHub reads it back."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escaped_property(text: str) -> str:
    return _escaped(text).replace(":", "%3A").replace(",", "%2C")
