"""`-n 2` ÷ `-n 0` on the torch training chapters, this checkout against another one.

    git worktree add ../before <commit>
    python benchmarks/worker_threads.py ../before --rounds 2

Each xdist worker imports torch, whose intra-op threads default to a thread
per core; with two workers on two cores they oversubscribe the machine.
Unlike the other benchmarks, which run every pytest with `OMP_NUM_THREADS=1`,
this one takes the thread variables out of the environment: their default is
what is measured. The d2l training chapters of `tests/corpus/training` (with
their offline `d2l` library) each run to their end as one test
(`--ntdd-run-untested`); every pytest runs in its own session (so that the
workers it starts are its own), `-p no:randomly`, one checkout or the other
first on `PYTHONPATH`, turn about in the same rounds (`pairs.interleaved`).
Wall and CPU time (user + system, the workers included) are kept for each;
"-n 2 ÷ -n 0" and "after ÷ before" are computed round by round.
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
from collections.abc import Sequence
from pathlib import Path

from pairs import Figure, interleaved, ratio
from run import pytest_cmd

HERE = Path(__file__).resolve().parent
TRAINING = HERE.parent / "tests" / "corpus" / "training"
THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def chapters(folder: Path) -> list[str]:
    """The d2l training chapters, copied with the `d2l` library they import."""
    shutil.copytree(TRAINING / "d2l", folder / "d2l")
    names = []
    for source in sorted(TRAINING.glob("d2l-*.ipynb")):
        shutil.copy(source, folder / source.name)
        names.append(source.name)
    return names


class Run:
    """A measure: *cmd*'s wall time with *checkout* first on the path; its CPU time kept,
    and each run's printed as it ends (a round on a busy machine takes minutes)."""

    def __init__(self, name: str, checkout: Path, cmd: Sequence[str], cwd: Path) -> None:
        self.name, self.checkout, self.cmd, self.cwd = name, checkout, cmd, cwd
        self.cpu: list[float] = []

    def __call__(self) -> float:
        env = {k: v for k, v in os.environ.items() if k not in THREADS}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPATH"] = os.pathsep.join([str(self.checkout), str(self.cwd)])
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            self.cmd, cwd=self.cwd, env=env, capture_output=True, text=True, start_new_session=True
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(self.cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}"
            )
        self.cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        print(f"  {self.name}: wall {wall:.1f} s, CPU {self.cpu[-1]:.1f} s", flush=True)
        return wall

    def cpu_figure(self, wall: Figure) -> Figure:
        return Figure(tuple(self.cpu[len(self.cpu) - len(wall.samples) :]))


def x(value: float) -> str:
    return f"{value:.2f}×"


def seconds(value: float) -> str:
    return f"{value:.1f} s"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout of the code before")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=0)
    args = parser.parse_args(argv)
    paths = {"before": args.before.resolve(), "after": HERE.parent}
    with tempfile.TemporaryDirectory(prefix="ntdd-worker-threads-") as scratch:
        folder = Path(scratch)
        notebooks = chapters(folder)
        runs = {
            f"{name}, -n {n}": Run(
                f"{name}, -n {n}",
                path,
                pytest_cmd(
                    "ntdd",
                    "--ntdd",
                    "--ntdd-run-untested",
                    "-n",
                    str(n),
                    *notebooks,
                ),
                folder,
            )
            for name, path in paths.items()
            for n in (0, 2)
        }
        walls = interleaved(runs, args.rounds, warmup=args.warmup)
    cpus = {name: run.cpu_figure(walls[name]) for name, run in runs.items()}
    for name in runs:
        print(f"{name}: wall {walls[name].describe(seconds)}, CPU {cpus[name].describe(seconds)}")
    for name in paths:
        wall = ratio(walls[f"{name}, -n 2"], walls[f"{name}, -n 0"])
        cpu = ratio(cpus[f"{name}, -n 2"], cpus[f"{name}, -n 0"])
        print(f"{name}: -n 2 ÷ -n 0: wall {wall.describe(x)}, CPU {cpu.describe(x)}")
    wall = ratio(walls["after, -n 2"], walls["before, -n 2"])
    cpu = ratio(cpus["after, -n 2"], cpus["before, -n 2"])
    print(f"-n 2, after ÷ before: wall {wall.describe(x)}, CPU {cpu.describe(x)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
