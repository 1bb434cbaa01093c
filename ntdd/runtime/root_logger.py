"""The root logger, as the notebook's own while its code runs.

A kernel's root logger starts with no handlers, at WARNING, so that
`logging.basicConfig()` in a cell configures logging. Under pytest the root
logger holds pytest's capture handlers, which make `basicConfig()` do
nothing, and pytest may set its level for each test. So while a notebook's
code runs, the root logger has the notebook's handlers and level, kept from
cell to cell; pytest's are put back around it. What the notebook logs goes
where its handlers send it (stderr, without any: Python's last resort), and
pytest shows it as the test's captured output. (Only for a notebook whose
code names `logging`: the others cannot tell, and keep pytest's capture.)
"""

from __future__ import annotations

import logging
from typing import NamedTuple


class RootLogger(NamedTuple):
    """The notebook's root logger: its handlers and its level."""

    handlers: tuple[logging.Handler, ...] = ()
    level: int = logging.WARNING  # a new process's


def swap_in(mine: RootLogger, keep_pytests: bool) -> RootLogger:
    """Give the root logger *mine*'s handlers and level; returns what it had.

    *keep_pytests*: pytest's handlers stay too, after the notebook's (a test
    that takes `caplog` reads what they capture).
    """
    root = logging.root
    outside = RootLogger(tuple(root.handlers), root.level)
    root.handlers[:] = (*mine.handlers, *outside.handlers) if keep_pytests else mine.handlers
    _set_level(root, mine.level)
    return outside


def swap_out(outside: RootLogger, keep_pytests: bool) -> RootLogger:
    """Give the root logger back what it had; returns the notebook's, as its code left it."""
    root = logging.root
    handlers = tuple(root.handlers)
    if keep_pytests:
        handlers = tuple(h for h in handlers if h not in outside.handlers)
    mine = RootLogger(handlers, root.level)
    root.handlers[:] = outside.handlers
    _set_level(root, outside.level)
    return mine


def _set_level(root: logging.Logger, level: int) -> None:
    if root.level != level:
        root.setLevel(level)  # setLevel clears every logger's cache: only on a change
