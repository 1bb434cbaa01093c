"""The settings of a run: each declared once, read from every place it can come from.

`table` declares every setting once (its command-line flag, ini key and
`[tool.ntdd]` key, where each exists, its parser, default and help), and
`pytest_addoption` is generated from it. `resolve` reads each from the
command line, then the ini file, then `[tool.ntdd]` (`pyproject`), then its
default; a bad value is an error naming where it came from, and a
combination that would silently change what a file says is refused there,
in one line naming both options. What it builds is one frozen, typed
`Settings` (`typed`), kept in `config.stash` for the whole run: features read
it with `settings_of(config)`, never `config.getoption`.

The table is imported by every pytest run of everyone who installed ntdd:
it imports nothing but `ntdd.defaults`. The rest loads when ntdd is asked
for.

May import: the shared modules, ntdd.outputs (what output checks are given
as), pytest. Never ntdd.runtime, ntdd.plugin or ntdd.commands: they read it.
"""
