"""Paired measurements: tools run turn about, after a warm-up, the same number of times.

A shared machine drifts (other load, caches, thermal state); running the
tools one after another in turns, and computing each ratio from runs made
side by side, keeps that drift out of the comparison.
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

    def describe(self, unit: Callable[[float], str]) -> str:
        low, high = min(self.samples), max(self.samples)
        return f"{unit(self.median)} ({unit(low)}–{unit(high)})"


def interleaved(
    measures: Mapping[str, Callable[[], float]], runs: int, warmup: int = 1
) -> dict[str, Figure]:
    """Measure each of *measures* *runs* times, in turns, after *warmup* discarded rounds.

    Rounds alternate the order (A B, B A, ...), so that neither tool always
    runs first on a warm cache.
    """
    names = list(measures)
    kept: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(warmup + runs):
        for name in names if round_ % 2 == 0 else names[::-1]:
            value = measures[name]()
            if round_ >= warmup:
                kept[name].append(value)
    return {name: Figure(tuple(values)) for name, values in kept.items()}


def ratio(numerator: Figure, denominator: Figure) -> Figure:
    """The ratio of two figures, computed round by round from their paired runs."""
    return Figure(tuple(a / b for a, b in zip(numerator.samples, denominator.samples, strict=True)))
