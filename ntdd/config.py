"""`[tool.ntdd]` in pyproject.toml: settings shared by the CLI and the plugin.

    [tool.ntdd]
    output = "tests/notebooks"   # where `ntdd export` writes modules
    template = "my_module.py.j2"  # a template of your own
    devices = ["cpu", "cuda"]     # devices that `device` tests run on
    timeout = 60                  # seconds per test, setup included
    report = "ntdd-report.html"   # `pytest --ntdd` writes its HTML report there
    run_untested = true           # `pytest --ntdd` runs notebooks without tests, one test each
    smoke = true                  # `pytest --ntdd` runs every notebook in smoke mode
    smoke_batches = 4             # ...where a DataLoader yields at most 4 batches a pass
    smoke_epochs = 2              # ...and a training loop runs at most 2 times
    smoke_examples = 16           # ...over at most 16 examples of a Dataset it iterates itself
    skip_eval_false = true        # cells marked `#| eval: false` are left out, as nbdev_test does
    outputs = "lax"               # `pytest --ntdd` checks saved outputs, as nbval's --nbval-lax
    outputs_sanitize_with = "sanitize.cfg"   # ...cleaned by nbval's regex/replace pairs
    outputs_normalize = ["addresses", "timestamps"]  # ...and by these normalisers
    outputs_float_digits = 6      # ...the floats normaliser keeping 6 significant digits
    outputs_image_tolerance = 0.2 # ...a figure passing within this perceptual distance

    [tool.ntdd.parameters]        # test-only overrides of the `parameters` cell
    num_epochs = 1
    [tool.ntdd.parameters."notebooks/train.ipynb"]
    lr = 0.1

Paths are relative to the pyproject.toml that holds them.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntdd.defaults import (
    DEFAULT_SMOKE_BATCHES,
    DEFAULT_SMOKE_EPOCHS,
    DEFAULT_SMOKE_EXAMPLES,
    DEFAULT_SMOKE_NAMES,
)
from ntdd.errors import ConfigError
from ntdd.parameters import Parameters
from ntdd.parameters import parse_table as parse_parameters

SMOKE_KEYS = ("smoke", "smoke_batches", "smoke_epochs", "smoke_examples", "smoke_names")
OUTPUT_KEYS = (
    "outputs",
    "outputs_sanitize_with",
    "outputs_normalize",
    "outputs_float_digits",
    "outputs_image_tolerance",
)
KEYS = frozenset(
    {
        "output",
        "template",
        "devices",
        "timeout",
        "parameters",
        "report",
        "run_untested",
        *SMOKE_KEYS,
        *OUTPUT_KEYS,
        "skip_eval_false",
    }
)


@dataclass(frozen=True)
class Smoke:
    """What a smoke run caps (`--ntdd-smoke`): long trainings cut short, notebooks unedited."""

    batches: int = DEFAULT_SMOKE_BATCHES  # a DataLoader's batches per pass
    epochs: int = DEFAULT_SMOKE_EPOCHS  # a training loop's passes
    examples: int = DEFAULT_SMOKE_EXAMPLES  # a Dataset's examples a pass of a training loop
    names: tuple[str, ...] = DEFAULT_SMOKE_NAMES  # integers of these names: at most `epochs`

    def describe(self) -> str:
        """The caps, as the header and the report say them."""
        return (
            f"a DataLoader yields at most {self.batches} batch(es) a pass, a training loop "
            f"runs at most {self.epochs} time(s), and so do {', '.join(self.names)}; "
            f"a Dataset a training loop iterates itself yields at most {self.examples} "
            "example(s) a pass"
        )


@dataclass(frozen=True)
class Config:
    output: Path | None = None
    template: Path | None = None
    devices: tuple[str, ...] | None = None
    timeout: float | None = None
    parameters: Parameters = field(default_factory=Parameters)
    report: Path | None = None  # where `pytest --ntdd` writes its HTML report
    run_untested: bool | None = None  # `pytest --ntdd` runs notebooks without tests
    smoke: bool | None = None  # `pytest --ntdd` runs notebooks in smoke mode
    smoke_caps: dict[str, Any] = field(default_factory=dict)  # `smoke_*` keys, as given
    skip_eval_false: bool | None = None  # cells marked `#| eval: false` are left out
    outputs_table: dict[str, Any] = field(default_factory=dict)  # `outputs*` keys, as given
    source: Path | None = None  # the pyproject.toml read, if any


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above *start*."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path | None = None) -> Config:
    """Read `[tool.ntdd]` from the nearest pyproject.toml; defaults when there is none."""
    pyproject = find_pyproject((start or Path.cwd()).resolve())
    if pyproject is None:
        return Config()
    if sys.version_info >= (3, 11):  # imported here: a run without a pyproject.toml needs none
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{pyproject}: cannot be read as TOML: {e}") from e
    table = data.get("tool", {}).get("ntdd", {})
    return parse_table(table, pyproject)


def parse_table(table: dict[str, Any], pyproject: Path) -> Config:
    unknown = set(table) - KEYS
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown key(s) in [tool.ntdd]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(KEYS))})"
        )
    base = pyproject.parent
    return Config(
        output=base / _str(table, "output", pyproject) if "output" in table else None,
        template=base / _str(table, "template", pyproject) if "template" in table else None,
        devices=parse_devices(table["devices"], str(pyproject)) if "devices" in table else None,
        timeout=parse_timeout(table["timeout"], str(pyproject)) if "timeout" in table else None,
        parameters=parse_parameters(table.get("parameters", {}), base, str(pyproject)),
        report=base / _str(table, "report", pyproject) if "report" in table else None,
        run_untested=_bool(table, "run_untested", pyproject),
        smoke=_bool(table, "smoke", pyproject),
        smoke_caps={key: table[key] for key in SMOKE_KEYS[1:] if key in table},
        skip_eval_false=_bool(table, "skip_eval_false", pyproject),
        outputs_table={key: table[key] for key in OUTPUT_KEYS if key in table},
        source=pyproject,
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


def parse_timeout(value: object, where: str) -> float:
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds < 0 or isinstance(value, bool):
        raise ConfigError(f"{where}: timeout must be a number of seconds >= 0, got {value!r}")
    return seconds


def parse_smoke(given: dict[str, Any], where: str) -> Smoke:
    """The caps of a smoke run, from `{"smoke_batches": 8, "smoke_names": "epochs,steps"}`."""
    batches = given.get("smoke_batches", DEFAULT_SMOKE_BATCHES)
    epochs = given.get("smoke_epochs", DEFAULT_SMOKE_EPOCHS)
    examples = given.get("smoke_examples", DEFAULT_SMOKE_EXAMPLES)
    names = given.get("smoke_names", DEFAULT_SMOKE_NAMES)
    return Smoke(
        batches=_count(batches, "smoke_batches", where),
        epochs=_count(epochs, "smoke_epochs", where),
        examples=_count(examples, "smoke_examples", where),
        names=_names(names, where),
    )


def _count(value: object, key: str, where: str) -> int:
    try:
        count = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else 0
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError(f"{where}: {key} must be a whole number >= 1, got {value!r}")
    return count


def _names(value: object, where: str) -> tuple[str, ...]:
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
        isinstance(n, str) and n.isidentifier() for n in items
    ):
        raise ConfigError(
            f"{where}: smoke_names must be Python names separated by commas, got {value!r}"
        )
    return tuple(dict.fromkeys(items))


def _bool(table: dict[str, Any], key: str, pyproject: Path) -> bool | None:
    value = table.get(key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"{pyproject}: [tool.ntdd] {key} must be true or false, got {value!r}")
    return value


def _str(table: dict[str, Any], key: str, pyproject: Path) -> str:
    value = table[key]
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{pyproject}: [tool.ntdd] {key} must be a path string")
    return value
