"""What `ntdd faults` costs: twelve faults against one `pytest --ntdd` run of the notebook.

    python benchmarks/faults.py              # 10 paired rounds (about 4 minutes)
    python benchmarks/faults.py --runs 20
    python benchmarks/faults.py --notebook path/to/nb.ipynb
    python benchmarks/faults.py --faults nan,shape   # some of the faults only

On `sample_notebooks/failure_modes.ipynb` (by default), three commands run
turn about in fresh processes, after a warm-up round: one `pytest --ntdd`
run of the notebook's tests; `ntdd faults` with its twelve faults, forked
from the clean run; and `ntdd faults --no-fork`, one run per fault. Each
process counts whole, start-up (Python, pytest, torch) included: that is
what a user waits for. Wall time, and CPU time (user and system, the forked
children included), which other load on a shared machine disturbs less.
Ratios are computed round by round, from the runs made side by side. The
target: `ntdd faults` within 3x of one test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pairs import Figure, interleaved, ratio

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample_notebooks" / "failure_modes.ipynb"
TARGET = 3.0
BIN = Path(sys.executable).parent


def commands(notebook: str, faults: str | None = None) -> dict[str, list[str]]:
    """The commands compared; *faults* (comma-separated) limits the faults, all by default."""
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    ntdd = [str(BIN / "ntdd"), "faults", notebook, *(["--faults", faults] if faults else [])]
    count = len(faults.split(",")) if faults else 12
    return {
        "one test run: `pytest --ntdd`": [*pytest, "--ntdd", notebook],
        f"`ntdd faults` ({count} faults, forked)": ntdd,
        f"`ntdd faults --no-fork` ({count} faults, one run each)": [*ntdd, "--no-fork"],
    }


def timed(command: list[str], folder: Path, cpu: list[float]) -> Callable[[], float]:
    """A measure: run *command* in *folder*; its wall time. Its CPU time (user and system,
    its forked children included) goes to *cpu*. Exit 0 or 1 (faults missed) only."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def measure() -> float:
        before = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        cpu.append(_children_cpu() - before)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
        return seconds

    return measure


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(walls: dict[str, Figure], cpus: dict[str, Figure], runs: int, notebook: str) -> str:
    base = next(iter(walls))
    lines = [
        f"# `ntdd faults` on {notebook}",
        "",
        f"{runs} paired rounds after a warm-up; whole processes, start-up included: wall time and "
        "CPU time (user + system, forked children included), median (min–max); ratios to the "
        "test run computed round by round.",
        "",
        "| command | wall time | ÷ one test run | CPU time | ÷ one test run |",
        "|---|---|---|---|---|",
    ]
    for name in walls:
        row = [name]
        for figures in (walls, cpus):
            share = "1×" if name == base else ratio(figures[name], figures[base]).describe(_x)
            row += [figures[name].describe(_s), share]
        lines.append("| " + " | ".join(row) + " |")
    forked = [ratio(f[name], f[base]).median for f in (walls, cpus) for name in list(f)[1:2]]
    met = "met" if max(forked) <= TARGET else "NOT met"
    lines += [
        "",
        f"Target: `ntdd faults` ≤ {TARGET:g}× one test run: {_x(forked[0])} wall, "
        f"{_x(forked[1])} CPU; {met}.",
    ]
    return "\n".join(lines)


def _s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def _x(value: float) -> str:
    return f"{value:.2f}×"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10, help="paired rounds")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run first and not kept")
    parser.add_argument("--notebook", type=Path, default=SAMPLE, help="the notebook to run")
    parser.add_argument("--faults", help="comma-separated faults to inject (default: all)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ntdd-faults-bench-") as tmp:
        folder = Path(tmp)
        shutil.copy(args.notebook, folder / args.notebook.name)
        cpu: dict[str, list[float]] = {}
        measures = {
            name: timed(command, folder, cpu.setdefault(name, []))
            for name, command in commands(args.notebook.name, args.faults).items()
        }
        walls = interleaved(measures, args.runs, args.warmup)
    cpus = {name: Figure(tuple(times[-args.runs :])) for name, times in cpu.items()}
    text = report(walls, cpus, args.runs, args.notebook.name)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
