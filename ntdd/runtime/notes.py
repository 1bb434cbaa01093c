"""ntdd's own notes to a user: what it did not do as a kernel would, as an `NtddWarning`.

A note is never a cell's error: under `filterwarnings = error` it is shown,
not raised, so that a dropped `%pip` cannot fail the run it was dropped from.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from ntdd.errors import NtddWarning


def note(message: str, stacklevel: int) -> None:
    """Warn with an `NtddWarning`, which is ntdd's note and never the cell's error:
    where a filter (`filterwarnings = error`) would raise it, it is shown instead."""
    _never_raised(lambda: warnings.warn(message, NtddWarning, stacklevel=stacklevel + 2))


def note_at(message: str, filename: str, lineno: int) -> None:
    """`note`, at a place of the notebook's own (`nb.ipynb`, a line of its file)."""
    _never_raised(lambda: warnings.warn_explicit(message, NtddWarning, filename, lineno))


def _never_raised(warn: Callable[[], None]) -> None:
    try:
        warn()
    except NtddWarning:
        with warnings.catch_warnings():
            warnings.simplefilter("always", NtddWarning)
            warn()
