"""Paired measurements: tools run turn about, after a warm-up, the same number of times.

A shared machine drifts (other load, caches, thermal state); running the
tools one after another in turns, and computing each ratio from runs made
side by side, keeps that drift out of the comparison. Every benchmark here
measures through `interleaved`, and derives figures round by round
(`ratio`, `paired`): never from two medians taken apart.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    """Several measurements of one thing: its median and its spread."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def describe(self, unit: Callable[[float], str]) -> str:
        """The median, then the lowest and highest sample; a single sample has no spread to show."""
        if len(self.samples) == 1:
            return unit(self.median)
        return f"{unit(self.median)} ({unit(self.low)}–{unit(self.high)})"


def interleaved(
    measures: Mapping[str, Callable[[], float]],
    runs: int,
    warmup: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Figure]:
    """Measure each of *measures* *runs* times, in turns, after *warmup* discarded rounds.

    Each round starts one tool further along (A B C, B C A, C A B, ...), so
    that no tool always runs first, or always right after the same other
    one. *progress* is told each round's number (warm-ups count from 1 - warmup).
    """
    names = list(measures)
    kept: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(warmup + runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            value = measures[name]()
            if round_ >= warmup:
                kept[name].append(value)
        if progress is not None:
            progress(round_ + 1 - warmup, runs)
    return {name: Figure(tuple(values)) for name, values in kept.items()}


def paired(combine: Callable[..., float], *figures: Figure) -> Figure:
    """*combine* applied round by round to the paired samples of *figures*."""
    return Figure(
        tuple(combine(*values) for values in zip(*(f.samples for f in figures), strict=True))
    )


def ratio(numerator: Figure, denominator: Figure) -> Figure:
    """The ratio of two figures, computed round by round from their paired runs."""
    return paired(lambda a, b: a / b, numerator, denominator)
