"""ntdd's own notes to a user: what it did not do as a kernel would, as an `NtddWarning`.

A note is never a cell's error: under `filterwarnings = error` it is shown,
not raised, so that a dropped `%pip` cannot fail the run it was dropped from.
"""

from __future__ import annotations

import warnings


class NtddWarning(UserWarning):
    """Something in a notebook that ntdd could not do as a kernel would."""


def note(message: str, stacklevel: int) -> None:
    """Warn with an `NtddWarning`, which is ntdd's note and never the cell's error:
    where a filter (`filterwarnings = error`) would raise it, it is shown instead."""
    try:
        warnings.warn(message, NtddWarning, stacklevel=stacklevel + 1)
    except NtddWarning:
        with warnings.catch_warnings():
            warnings.simplefilter("always", NtddWarning)
            warnings.warn(message, NtddWarning, stacklevel=stacklevel + 1)
