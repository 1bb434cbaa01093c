"""What each cell printed and how long it took, for `--ntdd-report` and the notebooks written
back (`--ntdd-write-notebooks`, `--ntdd-overwrite`).

A kernel shows a cell's output under the cell; pytest captures a test's
output per test, and a setup cell runs inside the first test that needs it.
When a run records cells, the runtime writes down each setup cell it runs,
and each test cell as its test runs it: its stdout and stderr (Python-level
writes: `print`, `display`, warnings; not what a C extension or a
subprocess writes to the file descriptors), its duration, what it raised,
and its outputs as a kernel records them (`cell_outputs`: streams, its
value, displays, figures, its error). Otherwise nothing is recorded, and a
cell costs one dictionary look-up more.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, TextIO

import pytest

from ntdd.runtime import cell_outputs
from ntdd.runtime.json_safe import json_safe, outputs_safe, text_safe


@dataclass(frozen=True)
class CellRun:
    """One cell as one device's run ran it: a setup cell, or a test cell run by its test."""

    index: int  # as Jupyter counts cells: 1 is the first
    cell_id: str | None
    device: str
    seconds: float
    stdout: str
    stderr: str
    error: str = ""  # what it raised: the exception, then the notebook's frames
    message: str = ""  # what it raised, in one line: `ModuleNotFoundError: No module named 'x'`
    outputs: list[dict[str, Any]] = field(default_factory=list)  # nbformat's shapes
    progress: list[int] = field(default_factory=list)  # which of them are progress bars
    test: str = ""  # a test cell's kind ("statements", "functions"); "" for a setup cell
    displays: dict[str, list[int]] = field(default_factory=dict)  # display_id: its outputs
    updates: list[dict[str, Any]] = field(default_factory=list)  # `update_display`s it made
    notes: list[str] = field(default_factory=list)  # outputs with no JSON form, shown by repr
    shortened: dict[str, dict[str, Any]] = field(default_factory=dict)  # streams kept as tails:
    # each one's whole length and SHA-256, by stream name (`Outputs.shortened`)
    started: str = ""  # when it started and ended, UTC, as Jupyter's timing metadata says it
    ended: str = ""

    def execution(self) -> dict[str, str]:
        """The cell's `metadata.execution` as nbclient's `record_timing` (and JupyterLab's
        "record timing") writes it: the kernel's busy and input messages at its start, its
        reply and idle at its end; {} for a run that did not time it."""
        if not (self.started and self.ended):
            return {}
        return {
            "iopub.status.busy": self.started,
            "iopub.execute_input": self.started,
            "shell.execute_reply": self.ended,
            "iopub.status.idle": self.ended,
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (its outputs were made JSON-safe where they were recorded)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CellRun:
        return cls(**data)


@dataclass
class CellLog:
    """The cells run since the last `take`, in the order they ran."""

    runs: list[CellRun] = field(default_factory=list)

    def take(self) -> list[CellRun]:
        """The cells recorded so far; the log starts empty again."""
        runs, self.runs = self.runs, []
        return runs


CELL_LOG = pytest.StashKey[CellLog]()
COPY_CAP = 20_000  # characters of a cell's stdout (or stderr) kept beside its outputs
CAPPED = "… output capped:"


def capped_note(left_out: int) -> str:
    """The line that ends a copy cut short, saying how much was left out."""
    return f"\n{CAPPED} {left_out:,} more characters not shown\n"


def cell_log_of(config: pytest.Config | None) -> CellLog | None:
    """The session's log, or None when no report records cells."""
    return config.stash.get(CELL_LOG, None) if config is not None else None


class _Tee:
    """A stream that writes to the stream it replaced and keeps a copy of its first
    `COPY_CAP` characters (a cell that prints 100 MB keeps memory flat).

    Everything else (`encoding`, `isatty()`, `fileno()`, `buffer`) is the
    replaced stream's, so that a cell behaves as it does without a report.
    """

    def __init__(self, stream: TextIO, name: str, outputs: cell_outputs.Outputs) -> None:
        self._stream = stream
        self._copy = io.StringIO()
        self._kept = self._left_out = 0
        self._name, self._outputs = name, outputs

    def write(self, text: str) -> int:
        room = COPY_CAP - self._kept
        if room > 0:
            self._copy.write(text[:room])
            self._kept += min(room, len(text))
        self._left_out += max(0, len(text) - max(room, 0))
        self._outputs.stream(self._name, text)
        return self._stream.write(text)

    def copy(self) -> str:
        """What was written, cut at `COPY_CAP` characters with a note of how much more."""
        text = self._copy.getvalue()
        return text + capped_note(self._left_out) if self._left_out else text

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def recorded(
    log: CellLog,
    index: int,
    cell_id: str | None,
    device: str,
    describe: Callable[[BaseException], str],
    at_the_end: Callable[[], None] = lambda: None,
    test: str = "",
) -> Iterator[None]:
    """Run a cell with its output copied and its outputs recorded, its time taken, then log it.

    *describe* formats what the cell raised, if it raises; *at_the_end* runs
    as a kernel's post-execute callbacks do, its outputs still the cell's
    (the inline backend showing the cell's figures). A test cell (*test*, its
    kind) keeps what it raised among its outputs only: its test's report says it.
    """
    outputs = cell_outputs.Outputs()
    out, err = _Tee(sys.stdout, "stdout", outputs), _Tee(sys.stderr, "stderr", outputs)
    sys.stdout, sys.stderr = out, err
    start, started = time.perf_counter(), _now()
    error = message = ""
    try:
        with cell_outputs.recording(outputs):
            try:
                yield
            except BaseException as e:
                described = describe(e)
                outputs.error(e, described, as_a_kernel_says(e) if test else None)
                if not test:
                    error = described
                    message = traceback.format_exception_only(type(e), e)[0].strip()
                raise
            finally:
                at_the_end()
    finally:
        seconds = time.perf_counter() - start
        if sys.stdout is out:  # a cell that set its own stream keeps it
            sys.stdout = out._stream
        if sys.stderr is err:
            sys.stderr = err._stream
        notes: list[str] = []  # made JSON-safe here, as a kernel sends them: see `json_safe`
        run = CellRun(
            index,
            cell_id,
            device,
            seconds,
            text_safe(out.copy()),
            text_safe(err.copy()),
            text_safe(error),
            text_safe(message),
            outputs=outputs_safe(outputs.as_list(), notes),
            progress=outputs.progress(),
            test=test,
            displays=outputs.displays(),
            updates=json_safe(outputs.updates, notes),
            notes=notes,
            shortened=outputs.shortened(),
            started=started,
            ended=_now(),
        )
        log.runs.append(run)


def _now() -> str:
    """Now, as a kernel's message header dates it and nbclient writes it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_a_kernel_says(error: BaseException) -> str:
    """A test cell's error message as a kernel shows it: pytest rewrote its `assert`s for
    the test's report (`assert 0.3 == 0.30000000000000004`), a kernel shows the assert's
    own message only, or nothing."""
    text = str(error)
    if not isinstance(error, AssertionError):
        return text
    lines = text.split("\n")
    explained = next((n for n, line in enumerate(lines) if line.startswith("assert ")), None)
    return text if explained is None else "\n".join(lines[:explained])


def settled(runs: list[CellRun]) -> list[CellRun]:
    """One run's cells, in the order they ran, with each `update_display` applied to the
    outputs of the cells above that showed its `display_id`, as a notebook shows them."""
    done: list[CellRun] = []
    for run in runs:
        for update in run.updates:
            key = update["display_id"]
            for n, earlier in enumerate(done):
                if key in earlier.displays:
                    done[n] = _updated(earlier, earlier.displays[key], update)
        done.append(run)
    return done


def _updated(run: CellRun, positions: list[int], update: dict[str, Any]) -> CellRun:
    outputs = list(run.outputs)
    for n in positions:
        outputs[n] = {**outputs[n], "data": update["data"], "metadata": update["metadata"]}
    return replace(run, outputs=outputs)


def notebook_traceback(
    error: BaseException,
    place: Callable[[str, int], str | None],
    hidden: Callable[[str], bool] = lambda note: False,
) -> str:
    """*error* as Python prints it, with only the frames of the notebook's code: the part
    of a traceback a reader of the notebook can act on. *place* names a frame's file and
    line as the notebook's cell and line, or says None for a frame that is not the notebook's;
    notes that *hidden* says yes to are left out (one naming the place the frames show).
    """
    entries: list[str] = []
    for frame in traceback.extract_tb(error.__traceback__):
        where = place(frame.filename, frame.lineno or 0)
        if where is not None:
            entry = f"  {where}, in {frame.name}\n" + (f"    {frame.line}\n" if frame.line else "")
            entries.append(entry)
    lines = _once_each(entries)
    head = ["Traceback (most recent call last):\n", *lines] if lines else []
    only = traceback.format_exception_only(type(error), error)
    only = [only[0], *(line for line in only[1:] if not hidden(line.rstrip("\n")))]
    return "".join([*head, *only]).rstrip()


def _once_each(entries: list[str]) -> list[str]:
    """A frame the same as the one before it shown once: a bare test cell's function and
    the cell's code it runs are one line of the notebook, seen twice. A longer run
    (recursion) says how long, as Python's traceback does."""
    lines: list[str] = []
    for entry, run in itertools.groupby(entries):
        lines.append(entry)
        count = len(list(run))
        if count > 2:
            lines.append(f"  [Previous line repeated {count - 1} more times]\n")
    return lines
