"""What `ntdd faults` costs on real training notebooks: twelve faults ÷ one test run, in CPU.

    python benchmarks/faults_cost.py                       # every real training notebook, 3 rounds
    python benchmarks/faults_cost.py --runs 5 --case d2l-pytorch-colab__dropout
    python benchmarks/faults_cost.py --before path/to/old/checkout   # before → after, paired
    python benchmarks/faults_cost.py --smoke               # `ntdd faults --smoke` ÷ one full run

The notebooks are the real training notebooks of the oracle
(`tests/fault_cases.py`, from `tests/corpus/training/`), each with the tests a
careful user writes. For each, one `pytest --ntdd` run of its tests and
`ntdd faults` (twelve faults, forked) run turn about in fresh processes
(`pairs.interleaved`), with `OMP_NUM_THREADS=1`; with `--before`, also `ntdd
faults` from another checkout (its `ntdd` package first on the path), in the
same rounds. Each process counts whole, start-up included, and its CPU time
(user and system, forked children included) is what is compared: ratios are
taken round by round, then the median over the notebooks. The target, with
the kill rule's repeated runs: 12 faults ≤ 4× one run's CPU, and ≤ 2× with
`--smoke` (every run of `ntdd faults` in smoke mode, against one full run).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from pairs import Figure, interleaved, ratio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fault_cases import CASES, REAL_TRAINING  # noqa: E402

TARGET = 4.0
SMOKE_TARGET = 2.0


def timed(
    command: list[str], folder: Path, cpu: list[float], path: str = ""
) -> Callable[[], float]:
    """Run *command* in *folder*; its CPU time (children included) goes to *cpu*."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if path:
        env["PYTHONPATH"] = path
    else:
        env.pop("PYTHONPATH", None)

    def measure() -> float:
        before = _children_cpu()
        done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
        cpu.append(_children_cpu() - before)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}")
        return cpu[-1]

    return measure


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(
    name: str, scratch: Path, runs: int, before: str, smoke: bool = False
) -> dict[str, Figure]:
    notebook = CASES[name].notebook(scratch / name)
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    faults = [sys.executable, "-m", "ntdd", "faults", notebook.name, *(["--smoke"] * smoke)]
    cpu: dict[str, list[float]] = {}
    measures = {
        "run": timed(
            [*pytest, "--ntdd", notebook.name], notebook.parent, cpu.setdefault("run", [])
        ),
        "after": timed(faults, notebook.parent, cpu.setdefault("after", [])),
    }
    if before:
        measures["before"] = timed(faults, notebook.parent, cpu.setdefault("before", []), before)
    return interleaved(measures, runs, warmup=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=REAL_TRAINING)
    parser.add_argument("--before", default="", help="a checkout of the code before")
    parser.add_argument("--smoke", action="store_true", help="ntdd faults --smoke ÷ one full run")
    args = parser.parse_args()
    target = SMOKE_TARGET if args.smoke else TARGET
    names = args.case or list(REAL_TRAINING)
    lines = [
        "| notebook | one run (CPU) | `ntdd faults` ÷ one run"
        + (" (before → after)" if args.before else "")
        + " |",
        "|---|---|---|",
    ]
    medians: dict[str, list[float]] = {"after": [], "before": []}
    with tempfile.TemporaryDirectory(prefix="ntdd-faults-cost-") as tmp:
        for name in names:
            found = measure(name, Path(tmp), args.runs, args.before, args.smoke)
            shares = {k: ratio(found[k], found["run"]) for k in found if k != "run"}
            for k, share in shares.items():
                medians[k].append(share.median)
            text = shares["after"].describe(lambda x: f"{x:.2f}×")
            if "before" in shares:
                text = f"{shares['before'].describe(lambda x: f'{x:.2f}×')} → {text}"
            lines.append(f"| {name} | {found['run'].median:.1f} s | {text} |")
            print(lines[-1], file=sys.stderr)
    after = statistics.median(medians["after"])
    summary = f"median over {len(names)} notebooks: {after:.2f}×"
    if medians["before"]:
        before = statistics.median(medians["before"])
        summary = f"median over {len(names)} notebooks: {before:.2f}× → {after:.2f}×"
    lines += ["", f"{summary} (target ≤ {target:g}×: {'met' if after <= target else 'NOT met'})"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
