"""What positional semantics cost: ntdd now against ntdd before it, and replays.

    python benchmarks/positions.py                  # 10 paired runs per workload
    python benchmarks/positions.py --runs 20
    python benchmarks/positions.py --baseline REV   # another revision to compare with

Before, every test saw the notebook's final state: setup ran in full before
the first test. Now each test sees the state at its cell, and the notebook
advances cell by cell. In pytest's order both run every cell once; this
measures what the bookkeeping costs, against the baseline revision (by
default the last commit before positional semantics), with the two versions
run turn about in fresh processes. The replay table shows how often a
notebook is run again from its start when tests come out of notebook order.

The time measured is pytest's run phase (collection done to session end),
from a small plugin: its CPU time, which other load on a shared machine
disturbs less than wall time, and its wall time; and the whole process.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from io import BytesIO
from pathlib import Path

import workloads
from pairs import Figure, interleaved, ratio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BASELINE = "3766973"  # the last commit where every test saw the notebook's final state

TIMER = """\
import json, os, time

_start = []


def pytest_collection_finish(session):
    _start.append((time.perf_counter(), time.process_time()))


def pytest_sessionfinish(session):
    if _start:
        wall, cpu = _start[0]
        with open(os.environ["NTDD_BENCH_TIMES"], "w") as f:
            json.dump([time.perf_counter() - wall, time.process_time() - cpu], f)
"""

# pytest-randomly's order: modules shuffled, then the tests inside each module.
RANDOMLY = '''\
import random
import pytest


def _shuffled(items, seed):
    rng = random.Random(seed)
    modules = {}
    for item in items:
        modules.setdefault(item.module.__name__, []).append(item)
    blocks = list(modules.values())
    rng.shuffle(blocks)
    for block in blocks:
        rng.shuffle(block)
    return [item for block in blocks for item in block]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """As pytest-randomly does: before other plugins order the items."""
    items[:] = _shuffled(items, int(__import__("os").environ.get("NTDD_BENCH_SEED", "1")))
'''

FORCED = '''\
import pytest
from bench_randomly import _shuffled


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    """After every plugin, ntdd included: the order ntdd chose is lost."""
    yield
    items[:] = _shuffled(items, int(__import__("os").environ.get("NTDD_BENCH_SEED", "1")))
'''


def interleaved_notebook(folder: Path, tests: int, every: int = 5) -> Path:
    """One notebook whose setup cells and tests alternate, each test needing the cells above."""
    cells = ["import math\nvalues = []"]
    for i in range(tests):
        if i % every == 0:
            cells.append(f"values.append(math.sqrt({i}))\nlast = {i}")
        cells.append(f"# TEST: step {i}\nassert len(values) == {i // every + 1}")
    return workloads.write_notebook(folder / f"interleaved_{tests}.ipynb", cells)


class Runner:
    """Runs pytest on a workload with one version of ntdd, in a fresh process."""

    def __init__(self, code: Path, scratch: Path) -> None:
        self.code = code
        self.scratch = scratch

    def __call__(self, folder: Path, *args: str) -> tuple[list[float], float, str]:
        times = self.scratch / f"times-{os.getpid()}.json"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.code), str(self.scratch)]),
            "NTDD_BENCH_TIMES": str(times),
            "OMP_NUM_THREADS": "1",
        }
        cmd = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
            "-p", "no:randomly", "-p", "no:nbval", "-p", "bench_timer", "-W", "ignore",
            "--ntdd", *args,
        ]  # fmt: skip
        start = time.perf_counter()
        done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}")
        return json.loads(times.read_text()), wall, done.stdout


def baseline_code(revision: str, scratch: Path) -> Path:
    """ntdd and its templates as they were at *revision*, extracted beside the workloads."""
    target = scratch / f"ntdd-{revision}"
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "ntdd", "templates"],
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target


def compare(
    name: str, folder: Path, runners: dict[str, Runner], runs: int, *args: str
) -> list[str]:
    """One row: the run phase's CPU time for both versions, and paired ratios of three times."""
    measures: dict[str, Callable[[], float]] = {}
    walls: dict[str, list[float]] = {key: [] for key in runners}
    processes: dict[str, list[float]] = {key: [] for key in runners}
    for key, runner in runners.items():

        def measure(key: str = key, runner: Runner = runner) -> float:
            (wall, cpu), process, _ = runner(folder, *args)
            walls[key].append(wall)
            processes[key].append(process)
            return cpu

        measures[key] = measure
    figures = interleaved(measures, runs)
    now, before = figures["now"], figures["baseline"]

    def paired(times: dict[str, list[float]]) -> Figure:
        return ratio(Figure(tuple(times["now"][-runs:])), Figure(tuple(times["baseline"][-runs:])))

    return [
        f"| {name} | {before.describe(_s)} | {now.describe(_s)} | "
        f"{ratio(now, before).describe(_x)} | {paired(walls).describe(_x)} | "
        f"{paired(processes).describe(_x)} |"
    ]


def replays(folder: Path, notebook: str, tests: int, runner: Runner, runs: int) -> list[str]:
    orders: dict[str, tuple[str, ...]] = {
        "notebook order (pytest's default)": (),
        "pytest-randomly's order (shuffled before ntdd orders a notebook)": (
            "-p",
            "bench_randomly",
        ),
        "shuffled after ntdd (the order ntdd chose is lost)": ("-p", "bench_forced"),
        "every other test deselected": tuple(
            arg for i in range(1, tests, 2) for arg in ("--deselect", f"{notebook}::test_step_{i}")
        ),
    }
    rows = []
    first: Figure | None = None
    for label, args in orders.items():
        counts: list[int] = []

        def measure(args: tuple[str, ...] = args, counts: list[int] = counts) -> float:
            (_, cpu), _, out = runner(folder, *args)
            match = re.search(r"ntdd: (\d+) test\(s\) ran out of notebook order", out)
            counts.append(int(match[1]) if match else 0)
            return cpu

        figure = interleaved({label: measure}, runs)[label]
        first = first or figure
        rows.append(
            f"| {label} | {counts[-1]} | {figure.describe(_s)} | "
            f"{_x(figure.median / first.median)} |"
        )
    return rows


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def _x(value: float) -> str:
    return f"{value:.2f}×"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="paired runs per workload")
    parser.add_argument("--baseline", default=BASELINE, help="the revision to compare with")
    parser.add_argument("--tiny", action="store_true", help="the smallest sizes (for tests)")
    args = parser.parse_args(argv)
    tests = 10 if args.tiny else 200
    with tempfile.TemporaryDirectory(prefix="ntdd-positions-") as tmp:
        scratch = Path(tmp)
        (scratch / "bench_timer.py").write_text(TIMER)
        (scratch / "bench_randomly.py").write_text(RANDOMLY)
        (scratch / "bench_forced.py").write_text(FORCED)
        runners = {
            "baseline": Runner(baseline_code(args.baseline, scratch), scratch),
            "now": Runner(ROOT, scratch),
        }
        samples = scratch / "samples"
        shutil.copytree(workloads.SAMPLES, samples, ignore=shutil.ignore_patterns("test_*.py"))
        interleaved_dir = scratch / "interleaved"
        interleaved_notebook(interleaved_dir, tests)
        many = workloads.many_notebooks(scratch / "many", 10 if args.tiny else 100)
        print(
            f"# Positional semantics: cost in pytest's order\n\n{args.runs} paired runs each, "
            "after a warm-up. CPU time of the run phase (collection done to session end), "
            "median (min–max); ratios of each pair's CPU time, run-phase wall time and "
            "whole-process wall time.\n"
        )
        print(
            f"| workload | baseline ({args.baseline}), CPU | now, CPU | now ÷ baseline: CPU | "
            "wall | whole process |"
        )
        print("|---|---|---|---|---|---|")
        for name, folder in (
            ("sample notebooks (3 notebooks, 19 tests)", samples),
            (f"one notebook, {tests} tests between setup cells", interleaved_dir),
            (f"{len(list(many.glob('*.ipynb')))} small notebooks, 2 tests each", many),
        ):
            print("\n".join(compare(name, folder, runners, args.runs)), flush=True)
        print(f"\n# Replays: {tests} tests in one notebook, by order\n")
        print("| order | replays | run phase, CPU | ÷ notebook order |")
        print("|---|---|---|---|")
        notebook = interleaved_notebook(interleaved_dir, tests).name
        print("\n".join(replays(interleaved_dir, notebook, tests, runners["now"], args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
