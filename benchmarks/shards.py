"""How evenly `pytest --ntdd-shard K/N` splits a run of notebooks with skewed durations.

    python benchmarks/shards.py            # 200 notebooks, 40 s of setup in all (about 3 minutes)
    python benchmarks/shards.py --quick    # 200 notebooks, 10 s
    python benchmarks/shards.py --notebooks 50 --seconds 5 --shards 3

One unsharded run records each notebook's seconds (--ntdd-store-durations).
Then every shard runs, balanced by those durations, and again by test count.
A shard's seconds are what its own run recorded (setup, call and teardown of
its tests), which leaves out pytest's start-up and collection: the same in
every shard. The target: the largest shard within 1.15x of the mean when
balanced by recorded durations. Run by hand; `run.py --workload shards` runs it too.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import workloads

TARGET = 1.15


@dataclass(frozen=True)
class Balance:
    """One way of balancing: each shard's recorded seconds and wall-clock time."""

    by: str
    seconds: tuple[float, ...]
    wall: tuple[float, ...]

    @property
    def ratio(self) -> float:
        """The largest shard's seconds over the mean shard's."""
        mean = sum(self.seconds) / len(self.seconds)
        return max(self.seconds) / mean if mean else 1.0


@dataclass(frozen=True)
class Measured:
    notebooks: int
    tests: int
    recorded: float  # the unsharded run's seconds, summed over notebooks
    balances: tuple[Balance, ...]


def pytest_ntdd(folder: Path, *args: str) -> float:
    """Run `pytest --ntdd` in *folder* with only ntdd's plugin and xdist's; the wall time."""
    others = ("nbval", "nbmake", "cov", "hypothesispytest", "randomly")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    command += [arg for name in others for arg in ("-p", f"no:{name}")]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "-W", "ignore", "--ntdd", *args], cwd=folder, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"pytest {' '.join(args)} exited {done.returncode}:\n{done.stdout}")
    return time.perf_counter() - start


def measure(scratch: Path, notebooks: int, seconds: float, shards: int) -> Measured:
    folder = scratch / "w7"
    workloads.skewed_notebooks(folder, notebooks, seconds)
    recorded = folder / "durations.json"
    pytest_ntdd(folder, f"--ntdd-store-durations={recorded}")
    ways = {"recorded durations": [f"--ntdd-durations={recorded}"], "test count": []}
    balances = tuple(_balance(folder, by, extra, shards) for by, extra in ways.items())
    tests = sum(path.read_text().count("# TEST") for path in folder.glob("*.ipynb"))
    total = sum(json.loads(recorded.read_text()).values())
    return Measured(notebooks, tests, total, balances)


def _balance(folder: Path, by: str, extra: list[str], shards: int) -> Balance:
    seconds, wall = [], []
    for k in range(1, shards + 1):
        out = folder / f"shard_{k}.json"
        out.unlink(missing_ok=True)
        wall.append(
            pytest_ntdd(
                folder, f"--ntdd-shard={k}/{shards}", *extra, f"--ntdd-store-durations={out}"
            )
        )
        seconds.append(sum(json.loads(out.read_text()).values()) if out.exists() else 0.0)
    return Balance(by, tuple(seconds), tuple(wall))


def title(measured: Measured) -> str:
    return (
        f"7. Shards ({measured.notebooks} notebooks, {measured.tests} tests, "
        f"{measured.recorded:.1f} s recorded, {len(measured.balances[0].seconds)} shards)"
    )


def header(measured: Measured) -> tuple[str, ...]:
    count = len(measured.balances[0].seconds)
    return ("balanced by", *(f"shard {k}" for k in range(1, count + 1)), "largest ÷ mean")


def rows(measured: Measured) -> list[tuple[str, ...]]:
    """One row per way of balancing: each shard's seconds, and the balance."""
    return [
        (b.by, *(f"{s:.2f} s" for s in b.seconds), f"{b.ratio:.3f}×") for b in measured.balances
    ]


def target(measured: Measured) -> tuple[str, str, bool]:
    ratio = measured.balances[0].ratio
    return (
        f"largest shard ≤ {TARGET}× the mean, by recorded durations",
        f"{ratio:.3f}×",
        (ratio <= TARGET),
    )


def note(measured: Measured) -> str:
    walls = "; ".join(
        f"{b.by}: {', '.join(f'{w:.1f} s' for w in b.wall)}" for b in measured.balances
    )
    return (
        "Seconds are each shard's own recorded test time; wall clock per shard, "
        f"pytest's start-up and collection included: {walls}."
    )


def markdown(measured: Measured) -> str:
    name, value, met = target(measured)
    lines = [f"## {title(measured)}", "", "| " + " | ".join(header(measured)) + " |"]
    lines.append("|" + "---|" * len(header(measured)))
    lines += ["| " + " | ".join(row) + " |" for row in rows(measured)]
    lines += ["", "| target | measured | met |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {'yes' if met else '**no**'} |", "", note(measured), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--notebooks", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=40.0, help="setup time in all")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="10 seconds in all")
    args = parser.parse_args(argv)
    seconds = 10.0 if args.quick else args.seconds
    with tempfile.TemporaryDirectory(prefix="ntdd-shards-") as scratch:
        measured = measure(Path(scratch), args.notebooks, seconds, args.shards)
    print(markdown(measured))
    return 0 if measured.balances[0].ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
