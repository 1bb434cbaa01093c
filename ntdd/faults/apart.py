"""Each notebook's runs in a child process: a clean run that dies is that notebook's error.

`ntdd faults` runs a notebook's clean run in its own process, and forks the
fault runs from it. A clean run that crashes (a segfault in a cell) would
take the command with it, and the notebooks after it would never be
reported. So each notebook's runs happen in a child forked for it, which
sends its report home over a pipe; a child that dies is reported as that
notebook's error, and the command goes on with the next notebook.

Where forking is not safe (no `os.fork`, macOS, CUDA initialised in this
process), or not wanted (`--no-fork`), the runs happen here, as before:
an `os._exit` in a cell still fails its test, but a crash ends the command.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ntdd.faults.children import fork, import_torch_for, read_child, silence, warm_up
from ntdd.faults.results import DIED, NotebookReport, report_as_dict, report_from_dict


def run_apart(notebook: Path, runs: Callable[[], NotebookReport]) -> NotebookReport:
    """*runs* in a child process where that is safe; a child that dies is an error."""
    if not _can_fork():
        return runs()
    _preload(notebook)
    read, write = os.pipe()
    try:
        pid = fork()
    except OSError:
        os.close(read)
        os.close(write)
        return runs()
    if pid == 0:
        os.close(read)
        _child(runs, write)
    os.close(write)
    return _report(notebook, pid, read)


def _can_fork() -> bool:
    if not hasattr(os, "fork") or sys.platform == "darwin":
        return False
    torch: Any = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    return cuda is None or not cuda.is_initialized()  # is_available() would initialise it


def _preload(notebook: Path) -> None:
    """torch, and what its first optimizer step imports, imported once, here, rather
    than in each notebook's child (seconds each); see `children.warm_up`.

    Neither initialises CUDA: a child can still use it.
    """
    import_torch_for(notebook)
    warm_up()


def _child(runs: Callable[[], NotebookReport], pipe: int) -> None:
    """In the child: make the report, send it home, and end without the parent's exit."""
    status = 1
    try:
        silence()
        try:
            message: dict[str, Any] = {"report": report_as_dict(runs())}
        except BaseException as e:
            message = {"failed": "".join(traceback.format_exception_only(type(e), e)).strip()}
        data = json.dumps(message).encode() + b"\n"
        while data:
            data = data[os.write(pipe, data) :]
        status = 0
    finally:
        os._exit(status)


def _report(notebook: Path, pid: int, pipe: int) -> NotebookReport:
    """The child's report; or, when it died, an error naming how."""
    end = read_child(pid, pipe)
    last = end.last_line
    message = json.loads(last) if last.startswith(b"{") else {}
    if "report" in message:
        return report_from_dict(message["report"])
    if "failed" in message:
        return NotebookReport(str(notebook), DIED, error=f"its runs failed: {message['failed']}")
    return NotebookReport(str(notebook), DIED, error=f"its clean run {end.how}")
