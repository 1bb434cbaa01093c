"""The parsers the table's rows name: a value as given, to what a run uses.

Each takes a `Given` (the value, the place it was given, the folder a path
there is relative to, and the setting's name) and returns the typed value,
or raises a `ConfigError` that starts with that place: the flag
(`--ntdd-timeout`), the ini key (`ini ntdd_timeout`) or the file
(`/repo/pyproject.toml [tool.ntdd]`). A value on the command line is a string;
one from the ini a string, a bool or a list of strings, as pytest types it;
one from `[tool.ntdd]` whatever TOML holds.

Imports no pytest: `ntdd export` reads `[tool.ntdd]` with these too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntdd.config import parse_devices, parse_timeout
from ntdd.errors import ConfigError
from ntdd.outputs.cleaning import parse_normalisers, sanitize_patterns
from ntdd.outputs.compare import IMAGES_OFF
from ntdd.parameters import Parameters, parse_assignments
from ntdd.parameters import parse_table as parse_parameter_table
from ntdd.settings.typed import Shard

# More shards than any CI matrix holds (GitHub Actions: 256 jobs; GitLab: 200) is a
# typo: refused before the partition's per-shard bins are made.
MAX_SHARDS = 1024
_SHARD = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Given:
    """A setting's value as one place gave it."""

    value: Any
    where: str  # the flag, `ini <key>`, or `<pyproject.toml> [tool.ntdd]`
    base: Path  # what a relative path there is relative to
    name: str  # the setting's name (its `[tool.ntdd]` key), as messages name it
    said: str  # how the user gave it: the flag, `ini <key>`, `<pyproject.toml> [tool.ntdd] <key>`


def switch(given: Given) -> bool:
    if not isinstance(given.value, bool):
        raise ConfigError(f"{given.where}: {given.name} must be true or false, got {given.value!r}")
    return given.value


def seconds(given: Given) -> float:
    return parse_timeout(given.value, given.where, given.name)


def budget(given: Given) -> float:
    """Seconds, or none (any case): no budget, as 0 is."""
    value = given.value
    if isinstance(value, str) and value.strip().lower() == "none":
        return 0.0
    try:
        found = seconds(given)
    except ConfigError:
        found = math.nan
    if math.isnan(found):
        raise ConfigError(
            f"{given.where}: {given.name} must be a number of seconds >= 0, or none; got {value!r}"
        )
    return found


def devices(given: Given) -> tuple[str, ...]:
    return parse_devices(given.value, given.where)


def parameters(given: Given) -> Parameters:
    """`NAME=VALUE` strings (the command line, the ini), or `[tool.ntdd.parameters]`."""
    if isinstance(given.value, list):
        return Parameters(parse_assignments(given.value, given.where))
    return parse_parameter_table(given.value, given.base, given.where)


def shard(given: Given) -> Shard:
    return parse_shard(given.value if isinstance(given.value, str) else "", given.where)


def parse_shard(text: str, where: str) -> Shard:
    """`"2/4"` -> `Shard(2, 4)`; anything else is a `ConfigError` saying what is accepted."""
    match = _SHARD.fullmatch(text)
    index, count = (int(match[1]), int(match[2])) if match else (0, 0)
    if not 1 <= index <= count:
        raise ConfigError(
            f"{where}: expected K/N, the K-th of N shards with 1 <= K <= N (e.g. 2/4); got {text!r}"
        )
    if count > MAX_SHARDS:
        raise ConfigError(
            f"{where}: {count} shards is more than any CI matrix runs (GitHub Actions: 256 "
            f"jobs); N is at most {MAX_SHARDS}"
        )
    return Shard(index, count)


def path(given: Given) -> Path:
    """A path, relative to where it was given."""
    if not isinstance(given.value, str) or not given.value:
        raise ConfigError(f"{given.where}: {given.name} must be a path string")
    return given.base / given.value


def folder(given: Given) -> Path:
    """A folder to write into: it need not exist yet, but must not be a file."""
    found = path(given)
    if found.exists() and not found.is_dir():
        raise ConfigError(f"{given.where} {given.value}: not a folder")
    return found


def count(given: Given) -> int:
    value = given.value
    try:
        number = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else 0
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"{given.where}: {given.name} must be a whole number >= 1, got {value!r}")
    return number


def names(given: Given) -> tuple[str, ...]:
    value = given.value
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
        isinstance(n, str) and n.isidentifier() for n in items
    ):
        raise ConfigError(
            f"{given.where}: {given.name} must be Python names separated by commas, got {value!r}"
        )
    return tuple(dict.fromkeys(items))


def outputs(given: Given) -> bool:
    """`[tool.ntdd] outputs`: True for "strict", False for "lax"."""
    if given.value not in ("strict", "lax"):
        raise ConfigError(f'{given.where}: outputs must be "strict" or "lax", got {given.value!r}')
    return bool(given.value == "strict")


def sanitize_file(given: Given) -> tuple[tuple[str, str], ...]:
    """The regex/replace pairs of a sanitize file in nbval's format, read now."""
    found = path(given)
    try:
        text = found.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise ConfigError(f"{given.where}: {found}: cannot be read: {reason}") from e
    try:
        return sanitize_patterns(text, str(found))
    except ValueError as e:
        raise ConfigError(f"{given.where}: {e}") from e


def normalisers(given: Given) -> frozenset[str]:
    try:
        return parse_normalisers(given.value, given.where)
    except ValueError as e:
        raise ConfigError(str(e)) from e


def digits(given: Given) -> int:
    value = given.value
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1 or isinstance(value, bool):
        raise ConfigError(f"{given.where}: {given.name} must be a whole number >= 1, got {value!r}")
    return number


def image_tolerance(given: Given) -> float:
    """A perceptual distance >= 0; "size" (inf: sizes compared only); "off" (`IMAGES_OFF`)."""
    value = given.value
    if isinstance(value, str) and value.strip().lower() in ("size", "off"):
        return math.inf if value.strip().lower() == "size" else IMAGES_OFF
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        tolerance = -1.0
    if isinstance(value, bool) or not tolerance >= 0:
        raise ConfigError(
            f'{given.where}: {given.name} must be a number >= 0 or "size", got {value!r}'
        )
    return tolerance


def threads(given: Given) -> int | None:
    """A thread count >= 1, or "auto" (None): the cores each worker has to itself."""
    value = given.value
    if isinstance(value, str) and value.strip().lower() == "auto":
        return None
    return count(given)


PARSERS: dict[str, Callable[[Given], Any]] = {
    "switch": switch,
    "seconds": seconds,
    "budget": budget,
    "devices": devices,
    "parameters": parameters,
    "shard": shard,
    "path": path,
    "file": path,
    "folder": folder,
    "count": count,
    "names": names,
    "outputs": outputs,
    "sanitize_file": sanitize_file,
    "normalisers": normalisers,
    "digits": digits,
    "image_tolerance": image_tolerance,
    "threads": threads,
}
