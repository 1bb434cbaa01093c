"""A cell's outputs as a kernel records them, in nbformat's own shapes, for the report.

A kernel sends a cell's outputs to the notebook as it runs: its writes to
stdout and stderr as `stream` outputs (consecutive writes to one stream
merged, as Jupyter merges them), its last expression as an `execute_result`,
`display()` as `display_data` (a `display_id` updated in place), and what it
raised as an `error`; `clear_output()` clears them. While a report records
a setup cell, its `Outputs` is the current one, and the runtime's writes,
display hook and `display` add to it; without a report none is current, and
nothing is kept.

A stream is kept as a notebook shows it: `\\r` progress lines collapsed to
the last state (nbconvert's `coalesce_streams`), and a cell that prints a lot
keeps a capped tail, marked, so memory stays flat; such a stream's whole
length and digest are worked out as it is printed (`ntdd.notebook.streams`),
for the output checks and the notebooks written back.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any

from ntdd.notebook.streams import WholeStream, collapsed, left_out_note

STREAM_CAP = 200_000  # characters of one stream output kept: its tail, marked

# What `IPython.display.clear_output` writes to stdout outside a kernel (a terminal's
# "erase the line"): in a kernel it clears the cell's outputs so far.
CLEAR_OUTPUT = "\x1b[2K\r"

_current: list[Outputs] = []  # the cell being recorded, innermost last


class Outputs:
    """One cell run's outputs, in the order the cell made them."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._ids: dict[str, list[dict[str, Any]]] = {}  # display_id: the outputs it names
        self._dropped: dict[int, int] = {}  # id of a stream output: characters left out
        self._progress: set[int] = set()  # ids of stream outputs a `\r` rewrote: progress bars
        self._whole: dict[str, WholeStream] = {}  # of each stream that was shortened, by name
        self._pending_clear = False  # `clear_output(wait=True)` was called
        self.updates: list[dict[str, Any]] = []  # each `update_display`: cells above see it too
        # The last stream output's writes not yet joined into its text: a training loop's
        # thousands of prints would otherwise copy the whole text on each (quadratic).
        self._unjoined: list[str] = []
        self._unjoined_length = 0

    def stream(self, name: str, text: str) -> None:
        """A write to stdout or stderr; merged into the last output when that is the same
        stream, as Jupyter merges consecutive chunks."""
        if not text:
            return
        if text == CLEAR_OUTPUT and name == "stdout":
            self.clear(_waits())
            return
        if self._pending_clear:  # `clear_output(wait=True)`: cleared when new output comes
            self._cleared()
        last = self.items[-1] if self.items else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            self._unjoined.append(text)
            self._unjoined_length += len(text)
        else:
            self._join()
            last = {"output_type": "stream", "name": name, "text": text}
            self.items.append(last)
        if "\r" in text:
            self._progress.add(id(last))
        whole = self._whole.get(name)
        if whole is not None:
            whole.add(text)
        if len(last["text"]) + self._unjoined_length > 2 * STREAM_CAP:  # trimmed in steps
            self._join()
            if whole is None:  # the first cut of this stream: what it printed so far, whole
                whole = self._whole[name] = WholeStream()
                for output in self.items:
                    if output["output_type"] == "stream" and output["name"] == name:
                        whole.add(output["text"])
            cut = len(last["text"]) - STREAM_CAP
            self._dropped[id(last)] = self._dropped.get(id(last), 0) + cut
            last["text"] = last["text"][cut:]

    def clear(self, wait: bool = False) -> None:
        """`clear_output()`: the outputs so far are gone; with *wait*, when new output comes."""
        self._pending_clear = wait
        if not wait:
            self._cleared()

    def _join(self) -> None:
        """The last stream output's text made whole, before anything else reads or follows it."""
        if self._unjoined:
            self.items[-1]["text"] += "".join(self._unjoined)
            self._unjoined, self._unjoined_length = [], 0

    def _cleared(self) -> None:
        self._unjoined, self._unjoined_length = [], 0
        self.items, self._ids, self._pending_clear = [], {}, False
        self._dropped, self._progress, self._whole = {}, set(), {}

    def display(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any],
        display_id: str | None = None,
        update: bool = False,
    ) -> None:
        """`display()`: a new `display_data`, or (*update*) the outputs of *display_id* changed
        in place, as `update_display` changes them in a notebook."""
        if not data:
            return
        self._join()
        if self._pending_clear and not update:
            self._cleared()
        shown = {"output_type": "display_data", "data": _plain(data), "metadata": metadata}
        if update:
            for output in self._ids.get(display_id or "", []):
                output["data"], output["metadata"] = shown["data"], shown["metadata"]
            if display_id:  # the outputs of the cells above with this id change too
                self.updates.append({"display_id": display_id, **shown})
            return
        self.items.append(shown)
        if display_id:
            self._ids.setdefault(display_id, []).append(shown)

    def result(
        self,
        data: dict[str, Any],
        metadata: dict[str, Any],
        count: int | None,
        display_id: str | None = None,
    ) -> None:
        """The cell's last expression, as its `Out[n]` (with *display_id*, one an update may
        change, as a kernel's message may name one)."""
        if not data:
            return
        self._join()
        shown = {
            "output_type": "execute_result",
            "data": _plain(data),
            "metadata": metadata,
            "execution_count": count,
        }
        self.items.append(shown)
        if display_id:
            self._ids.setdefault(display_id, []).append(shown)

    def error(self, error: BaseException, traceback_text: str, evalue: str | None = None) -> None:
        """What the cell raised: its name, its message (*evalue*, where it is not the
        error's own), the notebook's frames."""
        self._join()
        self.items.append(
            {
                "output_type": "error",
                "ename": type(error).__name__,
                "evalue": str(error) if evalue is None else evalue,
                "traceback": traceback_text.splitlines(),
            }
        )

    def as_list(self) -> list[dict[str, Any]]:
        """The outputs as a notebook would hold them (plain dicts in nbformat's shapes)."""
        self._join()
        shown: list[dict[str, Any]] = []
        for output in self.items:
            if output["output_type"] == "stream":
                text = collapsed(output["text"])
                dropped = self._dropped.get(id(output))
                if dropped:
                    text = left_out_note(dropped) + text
                output = {**output, "text": text}
            shown.append(output)
        return shown

    def shortened(self) -> dict[str, dict[str, Any]]:
        """Each stream recorded as its tail, by name: the whole stream's length and SHA-256
        as a notebook shows it (`WholeStream.summary`), what an output check compares."""
        return {name: whole.summary() for name, whole in self._whole.items()}

    def displays(self) -> dict[str, list[int]]:
        """Each `display_id` shown, and the positions in `as_list` of its outputs: where an
        update from a cell below lands."""
        self._join()
        where = {id(output): n for n, output in enumerate(self.items)}
        found = {
            key: [where[id(o)] for o in shown if id(o) in where] for key, shown in self._ids.items()
        }
        return {key: positions for key, positions in found.items() if positions}

    def progress(self) -> list[int]:
        """The positions in `as_list` of the streams a `\r` rewrote: a progress bar (tqdm's
        on stderr), which the report shows as text, not as an error's output."""
        self._join()
        return [n for n, output in enumerate(self.items) if id(output) in self._progress]


def _waits() -> bool:
    """Whether the `clear_output` writing the line erase was called with `wait=True` (its
    frame is a few above: this, the stream's `write`, then it)."""
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(4):
        if frame is None:
            break
        if frame.f_code.co_name == "clear_output":
            return bool(frame.f_locals.get("wait"))
        frame = frame.f_back
    return False


def current() -> Outputs | None:
    """The outputs of the cell being recorded, or None where nothing records."""
    return _current[-1] if _current else None


@contextlib.contextmanager
def recording(outputs: Outputs) -> Iterator[Outputs]:
    """*outputs* is where the running cell's outputs go until the block ends."""
    _current.append(outputs)
    try:
        yield outputs
    finally:
        _current.remove(outputs)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """A mime bundle as a notebook stores it: bytes (an image) as base64 text."""
    return {
        mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        for mime, value in data.items()
    }
