"""`-n auto` ÷ `-n 0` and `-n 2` ÷ `-n 0`, on training notebooks and on quick ones.

    python benchmarks/auto_workers.py --rounds 3

`-n auto` starts the workers the recorded work pays for (pytest's cache, which a
warm-up round fills, as a user's earlier run does). Two workloads: the ten d2l
training chapters of `tests/corpus/training` (with their offline `d2l` library),
each run to its end (`--ntdd-run-untested`), where workers pay; and the sample
notebooks, a second or two of work, where a worker's start-up (pytest, torch)
costs more than it saves. Every pytest runs in its own session, `-p no:randomly`,
pytest's cache on (as a user's is), the thread variables out of the environment
(ntdd sets each worker's); turn about in the same rounds (`pairs.interleaved`),
ratios round by round. Wall and CPU time (the workers included).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from pairs import interleaved, ratio
from run import pytest_cmd
from worker_threads import Run, chapters, seconds, x

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "sample_notebooks"
COUNTS = ("0", "2", "auto")


def samples(folder: Path) -> list[str]:
    """The sample notebooks, with the data they read."""
    shutil.copytree(SAMPLES / "data", folder / "data")
    names = []
    for source in sorted(SAMPLES.glob("*.ipynb")):
        shutil.copy(source, folder / source.name)
        names.append(source.name)
    return names


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ntdd-auto-workers-") as scratch:
        runs = {}
        for workload, copy in (("training", chapters), ("quick", samples)):
            folder = Path(scratch, workload)
            folder.mkdir()
            notebooks = copy(folder)
            for n in COUNTS:
                cmd = pytest_cmd(
                    "ntdd", "--ntdd", "--ntdd-run-untested", "-n", n, *notebooks, cache=True
                )
                name = f"{workload}, -n {n}"
                runs[name] = Run(name, HERE.parent, cmd, folder)
        walls = interleaved(runs, args.rounds, warmup=args.warmup)
    cpus = {name: run.cpu_figure(walls[name]) for name, run in runs.items()}
    for name in runs:
        print(f"{name}: wall {walls[name].describe(seconds)}, CPU {cpus[name].describe(seconds)}")
    for workload in ("training", "quick"):
        serial = f"{workload}, -n 0"
        for n in ("2", "auto"):
            wall = ratio(walls[f"{workload}, -n {n}"], walls[serial])
            cpu = ratio(cpus[f"{workload}, -n {n}"], cpus[serial])
            print(f"{workload}: -n {n} ÷ -n 0: wall {wall.describe(x)}, CPU {cpu.describe(x)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
