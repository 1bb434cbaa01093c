"""After a notebook's last test: its failures freed, what its cells left running ended, the
module put back as it was imported.

A failure's traceback holds the frames of the test and of pytest's call in
a reference cycle, and with them the tensors the test made; only the cyclic
collector would free those, and it may not run for many notebooks. Clearing
the frames' locals frees them now, at no cost; the reports, which pytest has
already written, keep the locals they show.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types

from ntdd.runtime import containment, processes
from ntdd.runtime.cell_map import CellMap
from ntdd.runtime.notes import note_at
from ntdd.runtime.process_wide import patched_classes


def free_failures(failures: list[types.TracebackType]) -> None:
    for failure in failures:
        _clear_frames(failure)
    failures.clear()


def leave_threads(cells: CellMap, before: frozenset[threading.Thread]) -> None:
    """Threads the cells started and left running: a kernel would be shut down now.

    Each is reported and abandoned: pytest would otherwise wait for it at
    exit, after its last line ("1 passed"), for ever.
    """
    for thread in containment.stray_threads(before):
        note_at(
            f"{cells.display_path}: thread {thread.name!r} (started by its cells) is still "
            "running after the notebook's last test; a kernel would be shut down here, "
            "so the run does not wait for it at exit",
            cells.display_path,
            _line_running_in(cells, thread),
        )
        containment.abandon(thread)


def end_processes(cells: CellMap, started: set[int]) -> None:
    """The processes the cells started and left running end, as at a kernel's shutdown."""

    def say_ended(pid: int, command: str) -> None:
        note_at(
            f"{cells.display_path}: process {pid} ({command}), started by its cells, was still "
            "running after the notebook's last test; ended, as a kernel's shutdown ends "
            "its processes",
            cells.display_path,
            1,
        )

    processes.end(started, say_ended)


def restore_module(cells: CellMap) -> None:
    """The module's names as it was imported (unless a class's method still reads them)."""
    if not patched_classes(cells.namespace):
        cells.namespace.clear()
        cells.namespace.update(cells.pristine or cells.base)


def _line_running_in(cells: CellMap, thread: threading.Thread) -> int:
    """The notebook's line where *thread* is now, its innermost frame of the notebook's
    code; 1 (the notebook) when it runs none (`Thread(target=event.wait)`)."""
    frame = sys._current_frames().get(thread.ident or 0)
    while frame is not None:
        line = cells.line_in_file(frame.f_code.co_filename, frame.f_lineno)
        if line is not None:
            return line
        frame = frame.f_back
    return 1


def _clear_frames(tb: types.TracebackType | None) -> None:
    """Drop the locals of a finished failure's frames, so that what they held is freed now.

    Before Python 3.13 a frame keeps a snapshot of its locals once they were
    read (pytest's report reads them), and `frame.clear()` leaves it: reading
    `f_locals` again syncs the snapshot with the now empty frame.
    """
    while tb is not None:
        with contextlib.suppress(RuntimeError):  # a frame still running keeps its locals
            tb.tb_frame.clear()
            tb.tb_frame.f_locals  # noqa: B018 - the read is the point
        tb = tb.tb_next
