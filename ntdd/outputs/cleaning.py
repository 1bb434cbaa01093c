"""Outputs made comparable: nbval's sanitize files, and normalisers for brittle outputs.

A sanitize file is nbval's (`--nbval-sanitize-with`): pairs of lines

    regex: \\d{2}:\\d{2}:\\d{2}
    replace: TIMESTAMP

applied in file order to every text output, saved and fresh alike, as
`re.sub` applies them. The normalisers do the same for what makes outputs
brittle from run to run, each by name (`NORMALISERS`); the docs show each
with an example.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ntdd.defaults import DEFAULT_FLOAT_DIGITS

_SANITIZE_PAIR = re.compile(r"^regex: (.*)$\n^replace: (.*)$", re.MULTILINE)  # nbval's own

_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,16}\b")
_DATE_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
_TIME = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b")
# tqdm's `[elapsed<remaining, rate`: what follows the rate (`, loss=0.523]`) is the postfix
_TQDM = re.compile(
    r"\[\d+:\d{2}(?::\d{2})?<(?:\d+:\d{2}(?::\d{2})?|\?)(?:,\s*[^,\]\s/]*/[^,\]\s]+)?(?=[,\]])"
)
_RATE = re.compile(r"(?:\d+(?:\.\d+)?|\?)\s?(?:it/s|s/it|[kMG]?B/s)")
_DURATION = re.compile(
    r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|[µμ]s|us|ms|s|sec|secs|seconds|min|mins|minutes|h|hours)\b"
)
_LOOPS = re.compile(r"\b\d[\d,]* loops? each\b")  # `%timeit`'s count, chosen by its timing
_FLOAT = re.compile(
    r"(?<![\w.])-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)(?!\.?\w)"
)

NORMALISERS = ("addresses", "timestamps", "durations", "tqdm", "floats")
DEFAULT_DIGITS = DEFAULT_FLOAT_DIGITS


@dataclass(frozen=True)
class Cleaning:
    """What is done to each text output, saved and fresh alike, before they are compared."""

    patterns: tuple[tuple[str, str], ...] = ()  # a sanitize file's (regex, replacement)s
    normalisers: frozenset[str] = frozenset()  # of NORMALISERS
    digits: int = DEFAULT_DIGITS  # `floats`: significant digits kept

    def __call__(self, text: str) -> str:
        for regex, replacement in self.patterns:
            text = re.sub(regex, replacement, text)
        for name in NORMALISERS:  # in this order: a timestamp is no float
            if name in self.normalisers:
                text = _NORMALISE[name](text, self.digits)
        return text


def sanitize_patterns(text: str, where: str) -> tuple[tuple[str, str], ...]:
    """The (regex, replacement) pairs of a sanitize file in nbval's format; a pattern
    that does not compile raises `ValueError` naming it and *where* it was read."""
    pairs = dict(_SANITIZE_PAIR.findall(text))  # nbval keeps one replacement per regex
    for regex, replacement in pairs.items():
        try:
            re.sub(regex, replacement, "")
        except re.error as e:
            raise ValueError(f"{where}: regex {regex!r} with replace {replacement!r}: {e}") from e
    return tuple(pairs.items())


def parse_normalisers(value: object, where: str) -> frozenset[str]:
    """Normaliser names from `"addresses,floats"`, a list of them, or `"all"`."""
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(n, str) for n in items):
        raise ValueError(f"{where}: normalize must be names separated by commas, got {value!r}")
    names = {n.strip().lower() for n in items}
    if "all" in names:
        return frozenset(NORMALISERS)
    unknown = names - set(NORMALISERS)
    if unknown:
        raise ValueError(
            f"{where}: unknown normaliser(s) {', '.join(sorted(unknown))} "
            f"(known: {', '.join(NORMALISERS)}, or all)"
        )
    return frozenset(names)


def _timestamps(text: str, digits: int) -> str:
    return _TIME.sub("<time>", _DATE_TIME.sub("<timestamp>", text))


def _durations(text: str, digits: int) -> str:
    return _LOOPS.sub("<n> loops each", _DURATION.sub("<duration>", text))


def _tqdm(text: str, digits: int) -> str:
    return _RATE.sub("<rate>", _TQDM.sub("[<elapsed>", text))


def _floats(text: str, digits: int) -> str:
    return _FLOAT.sub(lambda m: _rounded(m.group(), digits), text)


def _rounded(number: str, digits: int) -> str:
    try:
        return format(float(number), f".{digits}g")
    except (ValueError, OverflowError):
        return number


_NORMALISE: dict[str, Callable[[str, int], str]] = {
    "addresses": lambda text, digits: _ADDRESS.sub("0x…", text),
    "timestamps": _timestamps,
    "durations": _durations,
    "tqdm": _tqdm,
    "floats": _floats,
}
