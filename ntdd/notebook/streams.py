"""A stream output's text as a notebook shows it, and a long one known by its digest.

A notebook shows a stream with what a `\\r` or a backspace overwrote gone
(nbconvert's `coalesce_streams`): `collapsed`. A cell that prints more than a
run keeps (a long training log) is recorded as its tail, after a note of how
much was left out (`left_out_note`); what it printed stays comparable whole
through its length and SHA-256, worked out as it is printed (`WholeStream`),
and a notebook written back records them in the cell's `ntdd` metadata
(`SHORTENED`), so that a later check compares the whole stream, never a tail.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

SHORTENED = "shortened_streams"  # a cell's `ntdd` metadata: stream name -> its `summary`
LINE_LIMIT = 1_000_000  # characters of one unfinished line a digest waits for, at most
_CARRIAGE_RETURN = re.compile(r".*\r(?=[^\n])")  # nbconvert's: a line a later `\r` overwrote
_BACKSPACE = re.compile(r"[^\n]\x08")
_NOTE = re.compile(r"^\[… [\d,]+ characters of output left out …\]$", re.MULTILINE)


def collapsed(text: str) -> str:
    """Stream text as a notebook shows it: what a `\\r` or a backspace overwrote is gone."""
    if "\r" not in text and "\x08" not in text:
        return text
    text = text.replace("\r\n", "\n")
    while True:
        shorter = _BACKSPACE.sub("", text)
        if shorter == text:
            break
        text = shorter
    return _CARRIAGE_RETURN.sub("", text)


def left_out_note(count: int) -> str:
    """The line a shortened stream starts with."""
    return f"[… {count:,} characters of output left out …]\n"


def shortened(text: str) -> bool:
    """Whether *text* holds a stream ntdd recorded shortened: its note, then its tail."""
    return "characters of output left out" in text and _NOTE.search(text) is not None


def summary_of(text: str) -> dict[str, Any]:
    """A stream held whole, summed up as `WholeStream.summary` sums up one printed."""
    shown = collapsed(text)
    return {"length": len(shown), "sha256": hashlib.sha256(_encoded(shown)).hexdigest()}


class WholeStream:
    """The length and SHA-256 of a stream as a notebook shows it, worked out as it is
    printed, line by line, in constant memory: a line is collapsed once it ends, and an
    unfinished one keeps only what follows its last `\\r` (a progress bar's last state).

    An unfinished line longer than `LINE_LIMIT` is not kept: the digest is then unknown.
    """

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._length = 0
        self._line = ""  # the unfinished line, as printed so far
        self._lost = False

    def add(self, text: str) -> None:
        pending = self._line + text
        end = pending.rfind("\n") + 1
        if end:
            done = collapsed(pending[:end])
            self._sha.update(_encoded(done))
            self._length += len(done)
            pending = pending[end:]
        if "\r" in pending[:-1] and "\x08" not in pending:  # overwritten: gone when shown
            pending = pending[pending.rfind("\r", 0, len(pending) - 1) + 1 :]
        if len(pending) > LINE_LIMIT:
            self._lost, pending = True, pending[-LINE_LIMIT:]
        self._line = pending

    def summary(self) -> dict[str, Any]:
        """`{"length": characters shown, "sha256": hex digest, or None when unknown}`."""
        last = collapsed(self._line)
        sha = self._sha.copy()
        sha.update(_encoded(last))
        return {
            "length": self._length + len(last),
            "sha256": None if self._lost else sha.hexdigest(),
        }


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")
