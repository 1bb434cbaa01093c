"""The root logger, as the notebook's own while its code runs.

A kernel's root logger starts with no handlers, at WARNING, so that
`logging.basicConfig()` in a cell configures logging. Under pytest the root
logger holds pytest's capture handlers, which make `basicConfig()` do
nothing, and pytest may set its level for each test. So while a notebook's
code runs, the root logger has the notebook's handlers and level, kept from
cell to cell; pytest's are put back around it. What the notebook logs goes
where its handlers send it (stderr, without any: Python's last resort), and
pytest shows it as the test's captured output.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class RootLogger:
    """The notebook's root logger: its handlers and its level."""

    handlers: tuple[logging.Handler, ...] = ()
    level: int = logging.WARNING  # a new process's

    @classmethod
    def capture(cls, leave_out: tuple[logging.Handler, ...] = ()) -> RootLogger:
        root = logging.getLogger()
        return cls(tuple(h for h in root.handlers if h not in leave_out), root.level)

    def apply(self, keep: tuple[logging.Handler, ...] = ()) -> None:
        """Make this the root logger's state, with *keep* (handlers of pytest's) after ours."""
        root = logging.getLogger()
        root.handlers[:] = [*self.handlers, *keep]
        if root.level != self.level:
            root.setLevel(self.level)  # setLevel clears every logger's cache: only on change


class TheNotebooks:
    """The root logger is *holder*'s while its code runs; what its code sets is kept there.

    *keep_pytests*: pytest's handlers stay too, after the notebook's (a test
    that takes `caplog` reads what they capture). A class, not a generator:
    it is entered twice for every test.
    """

    def __init__(self, holder: HoldsRootLogger, keep_pytests: bool = False) -> None:
        self._holder = holder
        self._keep_pytests = keep_pytests
        self._outside = RootLogger()
        self._keep: tuple[logging.Handler, ...] = ()

    def __enter__(self) -> None:
        self._outside = RootLogger.capture()
        self._keep = self._outside.handlers if self._keep_pytests else ()
        self._holder.root_logger.apply(self._keep)

    def __exit__(self, *exc_info: object) -> None:
        self._holder.root_logger = RootLogger.capture(leave_out=self._keep)
        self._outside.apply()


class HoldsRootLogger(Protocol):
    """What keeps a notebook run's root logger between its cells."""

    root_logger: RootLogger
