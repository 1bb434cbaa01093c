"""What ntdd does during a pytest session: its plugins, registered together.

`CollectionHooks` collects notebooks and orders their tests, `RunHooks` runs
them as a kernel runs cells, `ReportHooks` points their reports at cells;
`AwaitsOnTheLoop` awaits an `async def` test on its notebook's loop. How
their implementations of one hook nest is said by each (`wrapper`,
`tryfirst`), never by the order they are registered in.
"""

from __future__ import annotations

import pytest

from ntdd.plugin.collection.copies import LeftOutCopies
from ntdd.plugin.collection.hooks import CollectionHooks
from ntdd.plugin.collection.untested import UntestedNotebooks
from ntdd.plugin.failures.hooks import ReportHooks
from ntdd.plugin.results.output_checks import output_records
from ntdd.plugin.running.hooks import AwaitsOnTheLoop, RunHooks
from ntdd.settings.typed import Settings


class NtddSession:
    """ntdd's part of a pytest session: its plugins, registered as it is made."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings  # the run's (`settings_of(config)`), resolved once
        self.untested = UntestedNotebooks(config)
        self.copies = LeftOutCopies(config)
        self.collection = CollectionHooks(config, settings, self.untested, self.copies)
        self.reporting = ReportHooks(config)
        self.running = RunHooks(config, settings)
        plugins = config.pluginmanager
        plugins.register(self.collection, "ntdd-collection")
        plugins.register(self.untested, "ntdd-untested")
        plugins.register(self.copies, "ntdd-copies")
        plugins.register(self.reporting, "ntdd-reporting")
        plugins.register(self.running, "ntdd-running")
        plugins.register(AwaitsOnTheLoop(), "ntdd-await")
        if self.running.budgets is not None:
            plugins.register(self.running.budgets, "ntdd-notebook-budgets")
        if settings.outputs is not None:
            output_records(config)
        if settings.reuse is not None:
            from ntdd.plugin.reuse.hooks import Reuse

            plugins.register(Reuse(config, settings), "ntdd-reuse")
        if settings.smoke is not None:
            from ntdd.plugin.running.smoke import SmokeHooks

            plugins.register(SmokeHooks(config, settings.smoke), "ntdd-smoke")
