"""ntdd's defaults, in a module of their own: the pytest plugin needs them for
`--help` on every run, before anything else of ntdd is imported."""

DEFAULT_DEVICES = ("cpu", "cuda")
DEFAULT_TIMEOUT = 600.0  # seconds per notebook test, setup included
