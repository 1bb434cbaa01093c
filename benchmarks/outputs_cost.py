"""What recording outputs costs: notebooks written back against the same run that writes nothing.

    python benchmarks/outputs_cost.py              # 5 paired rounds after a warm-up
    python benchmarks/outputs_cost.py --rounds 2   # a look, not figures

CPU: the d2l chapters of `workloads.real_chapters` (a notebook's size, a
few values and prints a cell), `pytest --ntdd` alone against `pytest --ntdd
--ntdd-write-notebooks DIR` (every cell's outputs recorded, each notebook
written), one process each, turn about (`pairs.interleaved`), CPU time
(user + system). Memory: one notebook whose cell prints 100 MB against one
that prints 1 MB, each run with and without recording, peak RSS of the
pytest process (its own capture of the test's output included, which
recording does not change): recording keeps a capped tail, so the two
runs' peaks should stay side by side.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import workloads
from pairs import interleaved, ratio
from run import child_env, pytest_cmd, x

PRINTS = "chunk = 'x' * 1023 + '\\n'\nfor _ in range({n}):\n    print(chunk, end='')"


def _child(cmd: Sequence[str], cwd: Path, before: Callable[[], None]) -> resource.struct_rusage:
    """Run *cmd* in a fresh process; the resources it used, measured with `wait4`."""
    before()
    process = subprocess.Popen(
        cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{process.stderr.read().decode()[-2000:]}")
    return usage


def cpu(cmd: Sequence[str], cwd: Path, before: Callable[[], None]) -> Callable[[], float]:
    def measure() -> float:
        usage = _child(cmd, cwd, before)
        return usage.ru_utime + usage.ru_stime

    return measure


def peak(cmd: Sequence[str], cwd: Path, before: Callable[[], None]) -> Callable[[], float]:
    def measure() -> float:
        return _child(cmd, cwd, before).ru_maxrss / 1024  # MiB

    return measure


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="ntdd-outputs-cost-"))
    try:
        chapters = scratch / "chapters"
        names = [p.name for p in workloads.real_chapters(chapters)]
        out = scratch / "written"

        def clear() -> None:
            shutil.rmtree(out, ignore_errors=True)

        plain = pytest_cmd("ntdd", "--ntdd", *names, cache=True)
        written = [*plain, f"--ntdd-write-notebooks={out}"]
        figures = interleaved(
            {"plain": cpu(plain, chapters, clear), "written": cpu(written, chapters, clear)},
            args.rounds,
        )
        print(f"chapters ({len(names)} in one run), CPU:")
        print(f"  without recording: {figures['plain'].describe(lambda v: f'{v:.2f} s')}")
        print(f"  written back:      {figures['written'].describe(lambda v: f'{v:.2f} s')}")
        print(f"  written ÷ without: {ratio(figures['written'], figures['plain']).describe(x)}")

        prints = scratch / "prints"
        measures = {}
        for megabytes in (1, 100):
            name = f"prints_{megabytes}mb.ipynb"
            workloads.write_notebook(
                prints / name, [PRINTS.format(n=megabytes * 1024), "# TEST\nassert chunk"]
            )
            alone = pytest_cmd("ntdd", "--ntdd", name, cache=True)
            measures[f"{megabytes} MB"] = peak(alone, prints, clear)
            recorded = [*alone, f"--ntdd-write-notebooks={out}"]
            measures[f"{megabytes} MB, written"] = peak(recorded, prints, clear)
        peaks = interleaved(measures, max(2, args.rounds // 2))
        print("a cell that prints, peak RSS of the pytest process:")
        for label, figure in peaks.items():
            print(f"  {label}: {figure.describe(lambda v: f'{v:.0f} MiB')}")
        for megabytes in (1, 100):
            grown = ratio(peaks[f"{megabytes} MB, written"], peaks[f"{megabytes} MB"])
            print(f"  {megabytes} MB, written ÷ without: {grown.describe(x)}")
        kept = statistics.median(peaks["100 MB, written"].samples) - statistics.median(
            peaks["100 MB"].samples
        )
        print(f"  recording 100 MB keeps {kept:+.0f} MiB over the same run without it")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
