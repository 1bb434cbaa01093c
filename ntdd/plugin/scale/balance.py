"""Splitting a test run into N disjoint shards, balanced, the same on every machine.

The unit of a shard is a file: a notebook (ntdd's items and nbval's for it
share its path) or a test module. A notebook is never split, or its setup
would run once per shard. Units are weighed by the seconds a durations file
recorded for them, else by their number of tests, and dealt out longest
first, each to the least-loaded shard (LPT). Ties break by path and by shard
number, so every machine of a CI matrix computes the same partition.

Pure functions on plain values: no pytest here (see `ntdd.plugin.scale.shards`).
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ntdd.errors import ConfigError


@dataclass(frozen=True)
class Weights:
    """How much each unit weighs, and what the weights are made of."""

    of: dict[str, float]
    by_durations: bool  # recorded seconds, rather than test counts
    recorded: int = 0  # units whose seconds the durations file holds


def load_durations(path: Path, where: str) -> dict[str, float]:
    """Read a durations file: a JSON object of {unit path: seconds}.

    A file that cannot be read, or holds anything else, is a `ConfigError`:
    a silently ignored file would balance the shards by test count without
    anyone noticing.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{where}: {path}: cannot be read as JSON: {e}") from e
    if not isinstance(data, dict) or not all(_is_seconds(v) for v in data.values()):
        raise ConfigError(
            f"{where}: {path}: not a durations file: expected a JSON object of "
            '{"path/to/nb.ipynb": seconds, ...}, as --ntdd-store-durations writes'
        )
    return {str(unit): float(seconds) for unit, seconds in data.items()}


def dump_durations(durations: Mapping[str, float]) -> str:
    """The file's text: sorted, milliseconds, one unit a line, so that diffs stay small."""
    rounded = {unit: round(seconds, 3) for unit, seconds in sorted(durations.items())}
    return json.dumps(rounded, indent=2) + "\n"


def weigh(counts: Mapping[str, int], recorded: Mapping[str, float] | None) -> Weights:
    """Each unit's weight: its recorded seconds, else its test count.

    A unit the durations file does not know (a new notebook) weighs the mean
    recorded seconds per test of the units it does know, times its tests.
    """
    known = [unit for unit in counts if recorded is not None and unit in recorded]
    if recorded is None or not known:
        return Weights({unit: float(n) for unit, n in counts.items()}, by_durations=False)
    tests = sum(counts[unit] for unit in known)
    per_test = sum(recorded[unit] for unit in known) / tests if tests else 0.0
    weights = {unit: recorded.get(unit, per_test * n) for unit, n in counts.items()}
    return Weights(weights, by_durations=True, recorded=len(known))


def partition(weights: Mapping[str, float], count: int) -> list[list[str]]:
    """Deal the units out to *count* shards, heaviest first, each to the lightest shard.

    Longest-processing-time-first greedy: within 4/3 of the best possible
    largest shard, and in practice within a few per cent. Ties between units
    go by path, ties between shards by number: deterministic.
    """
    shards: list[list[str]] = [[] for _ in range(count)]
    loads = [(0.0, number) for number in range(count)]  # a heap: lightest, then lowest
    for unit in sorted(weights, key=lambda u: (-weights[u], u)):
        load, number = heapq.heappop(loads)
        shards[number].append(unit)
        heapq.heappush(loads, (load + weights[unit], number))
    return shards


def _is_seconds(value: object) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


# The seconds of work one more xdist worker must take off the longest worker's
# share to pay for itself. Each worker starts pytest and imports the notebooks'
# libraries again: on the sample notebooks a second worker and the controller
# cost 3.5 s more CPU than `-n 0`, and `-n 2` lost on wall time where it moved
# 4 s of work; on the d2l training chapters it moved 10 s and took 0.3 of the wall
# time (`benchmarks/auto_workers.py`).
SECONDS_PER_WORKER = 8.0


def workers_that_pay(seconds: Sequence[float], cpus: int) -> int:
    """How many xdist workers the recorded work pays for; 0: none (no xdist).

    *seconds* holds one entry per notebook or test file. A notebook's tests all
    run on one worker, so each file is dealt out whole, heaviest first: one long
    notebook beside quick ones gains nothing from a second worker. The most
    workers that each take `SECONDS_PER_WORKER` of work off the longest share
    are started, at most one per core and per file; one worker never pays (a
    controller and a worker, for the work of one). With files of equal length,
    that is a worker per `SECONDS_PER_WORKER` of work.
    """
    weights = {str(number): max(0.0, s) for number, s in enumerate(seconds)}
    total = sum(weights.values())
    best = 0
    for workers in range(2, min(cpus, len(weights)) + 1):
        longest = max(sum(weights[unit] for unit in shard) for shard in partition(weights, workers))
        if total - longest >= SECONDS_PER_WORKER * (workers - 1) - 1e-9:
            best = workers
    return best
