"""Values the command line and the plugin share: smoke mode's caps, devices, a timeout.

Where each setting can be given, and how `[tool.ntdd]` is read, is
`ntdd.settings`; these are the values and parsers it shares with the
commands (`ntdd faults --devices`, `--timeout`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ntdd.defaults import (
    DEFAULT_SMOKE_BATCHES,
    DEFAULT_SMOKE_EPOCHS,
    DEFAULT_SMOKE_EXAMPLES,
    DEFAULT_SMOKE_MIN_SECONDS,
    DEFAULT_SMOKE_NAMES,
)
from ntdd.errors import ConfigError


@dataclass(frozen=True)
class Smoke:
    """What a smoke run caps (`--ntdd-smoke`): long trainings cut short, notebooks unedited."""

    batches: int = DEFAULT_SMOKE_BATCHES  # a DataLoader's batches per pass
    epochs: int = DEFAULT_SMOKE_EPOCHS  # a training loop's passes
    examples: int = DEFAULT_SMOKE_EXAMPLES  # a Dataset's examples a pass of a training loop
    names: tuple[str, ...] = DEFAULT_SMOKE_NAMES  # integers of these names: at most `epochs`
    min_seconds: float = DEFAULT_SMOKE_MIN_SECONDS  # what a cut must save, else none

    def describe(self) -> str:
        """The caps, as the header and the report say them."""
        return (
            f"a DataLoader yields at most {self.batches} batch(es) a pass, its last among them, "
            f"a training loop runs at most {self.epochs} time(s), its last among them, and "
            f"so do {', '.join(self.names)}; a Dataset a training loop iterates itself yields "
            f"at most {self.examples} example(s) a pass; "
            + (
                f"each only where the passes it skips would take {self.min_seconds:g} s or more"
                if self.min_seconds
                else "each however short"
            )
        )


_DEVICE = re.compile(r"cpu|cuda(:\d+)?|mps")


def parse_devices(value: object, where: str) -> tuple[str, ...]:
    """`"cpu,cuda"` or `["cpu", "cuda"]` -> `("cpu", "cuda")`."""
    items = value.split(",") if isinstance(value, str) else value
    accepted = "devices are cpu, cuda, cuda:N or mps, separated by commas"
    if not isinstance(items, (list, tuple)) or not all(isinstance(d, str) for d in items):
        raise ConfigError(f"{where}: {accepted}; got {value!r}")
    devices = tuple(d.strip() for d in items if d.strip())
    unknown = [d for d in devices if not _DEVICE.fullmatch(d)]
    if not devices or unknown:
        raise ConfigError(f"{where}: {accepted}; got {', '.join(unknown) or repr(value)}")
    return tuple(dict.fromkeys(devices))


def parse_timeout(value: object, where: str, name: str = "timeout") -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds < 0 or isinstance(value, bool):
        raise ConfigError(f"{where}: {name} must be a number of seconds >= 0, got {value!r}")
    return seconds
