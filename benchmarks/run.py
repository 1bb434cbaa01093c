"""ntdd against nbval and nbmake, and its cost as notebooks and tests grow.

    python benchmarks/run.py            # everything, medians of 3 (about 10 minutes)
    python benchmarks/run.py --quick    # smaller sizes, for a look
    python benchmarks/run.py --only 2,3 # some workloads

Every competitor runs on the same inputs in the same run, each in a fresh
process from a scratch folder (no project configuration), loading only its
own pytest plugin. The table goes to stdout and to benchmarks/results/.
Benchmarks are run by hand; tests only check that this script runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import shards
import workloads

HERE = Path(__file__).resolve().parent
PY = sys.executable
PLUGINS = {"ntdd": "ntdd", "nbval": "nbval", "nbmake": "nbmake"}
UNRELATED = ("hypothesispytest", "cov", "randomly")


@dataclass
class Section:
    title: str
    header: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    targets: list[tuple[str, str, bool]] = field(default_factory=list)  # (target, measured, met)
    notes: list[str] = field(default_factory=list)

    def target(self, name: str, measured: str, met: bool) -> None:
        self.targets.append((name, measured, met))

    def markdown(self) -> str:
        lines = [f"## {self.title}", "", "| " + " | ".join(self.header) + " |"]
        lines.append("|" + "---|" * len(self.header))
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.targets:
            lines += ["", "| target | measured | met |", "|---|---|---|"]
            lines += [f"| {t} | {m} | {'yes' if ok else '**no**'} |" for t, m, ok in self.targets]
        lines += ["", *self.notes] if self.notes else []
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Sizes:
    notebooks: tuple[int, ...]
    competitors_at: int
    tests: tuple[int, ...]
    heavy: int
    heavy_mb: int
    export: int
    parallel: int
    shard_notebooks: int
    shard_seconds: float


FULL = Sizes((1, 10, 100, 500), 100, (1, 10, 100, 1000), 40, 50, 500, 100, 200, 40.0)
QUICK = Sizes((1, 10, 100), 10, (1, 10, 100, 1000), 10, 50, 100, 100, 200, 10.0)
TINY = Sizes((1, 3), 0, (1, 10), 3, 5, 5, 3, 12, 0.6)


# -- measuring ----------------------------------------------------------------------


def pytest_cmd(plugin: str, *args: str) -> list[str]:
    """pytest with only *plugin* of the three loaded, and no unrelated plugins."""
    off = [name for name in PLUGINS if name != plugin] + list(UNRELATED)
    disabled = [arg for name in off for arg in ("-p", f"no:{name}")]
    return [
        PY,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        *disabled,
        "-W",
        "ignore",
        *args,
    ]


def run(cmd: Sequence[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1, 5):  # 1: a test failed, by design; 5: none collected
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def median(
    cmd: Sequence[str], cwd: Path, repeat: int, before: Callable[[], None] | None = None
) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        times.append(run(cmd, cwd))
    return statistics.median(times)


def peak_rss_mb(cmd: Sequence[str], cwd: Path) -> float:
    """Peak resident memory of *cmd*, measured in a process of its own."""
    probe = (
        "import resource, subprocess, sys;"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [PY, "-c", probe, *cmd], cwd=cwd, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip()) / 1024


def s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def x(ratio: float) -> str:
    return f"{ratio:.1f}×"


# -- workloads ----------------------------------------------------------------------


def real_notebooks(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    folder = scratch / "w1"
    notebooks = workloads.real_notebooks(folder)
    empty = scratch / "empty"
    empty.mkdir(exist_ok=True)
    startup = median(pytest_cmd("ntdd", "--ntdd", "--co", "."), empty, repeat)
    floor = median([PY, str(HERE / "floor.py"), *map(str, notebooks)], folder, repeat)
    ntdd = median(pytest_cmd("ntdd", "--ntdd", "."), folder, repeat)
    section = Section(
        f"1. Real notebooks ({len(notebooks)}: sample_notebooks/ and tests/corpus/good/)",
        ("runner", f"median of {repeat}", "vs the floor", "ntdd is faster by"),
    )
    section.rows.append(
        ("floor: the same cells as plain Python, one process", s(floor), "1.0×", "")
    )
    section.rows.append(("`pytest --ntdd`", s(ntdd), x(ntdd / floor), ""))
    section.rows.append(
        (
            "`pytest --ntdd`, pytest's start-up aside",
            s(ntdd - startup),
            x((ntdd - startup) / floor),
            "",
        )
    )
    if sizes.competitors_at:
        for name, flag in (("nbval", "--nbval-lax"), ("nbmake", "--nbmake")):
            took = median(pytest_cmd(name, flag, "."), folder, repeat)
            section.rows.append((f"`pytest {flag}`", s(took), x(took / floor), x(took / ntdd)))
            section.target(f"`--ntdd` ≥ 7× faster than `{flag}`", x(took / ntdd), took / ntdd >= 7)
    section.target(
        "`--ntdd` within 1.3× of the floor, start-up aside",
        x((ntdd - startup) / floor),
        (ntdd - startup) / floor <= 1.3,
    )
    section.notes.append(
        f"pytest's start-up (`pytest --ntdd --co` on an empty folder): {s(startup)}."
    )
    return section


def many_notebooks(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    empty = scratch / "empty"
    empty.mkdir(exist_ok=True)
    startup = median(pytest_cmd("ntdd", "--ntdd", "--co", "."), empty, repeat)
    section = Section(
        "2. Many notebooks (small, plain Python, 2 tests each)",
        ("notebooks", "collect", "collect per notebook*", "run", "run per notebook*"),
    )
    per_notebook: dict[int, tuple[float, float]] = {}
    for count in sizes.notebooks:
        folder = workloads.many_notebooks(scratch / f"w2_{count}", count)
        collect = median(pytest_cmd("ntdd", "--ntdd", "--co", "."), folder, repeat)
        full = median(pytest_cmd("ntdd", "--ntdd", "."), folder, repeat)
        per_notebook[count] = ((collect - startup) / count, (full - startup) / count)
        section.rows.append(
            (
                str(count),
                s(collect),
                ms(per_notebook[count][0]),
                s(full),
                ms(per_notebook[count][1]),
            )
        )
    largest = max(sizes.notebooks)
    previous = sorted(sizes.notebooks)[-2]
    growth = per_notebook[largest][1] / per_notebook[previous][1]
    section.target(
        f"growth linear or better ({previous} → {largest} notebooks, run per notebook)",
        x(growth),
        growth <= 1.25,
    )
    section.target(
        f"collection ≤ 5 ms per notebook at {largest}",
        ms(per_notebook[largest][0]),
        per_notebook[largest][0] <= 0.005,
    )
    if sizes.competitors_at:
        count = sizes.competitors_at
        folder = scratch / f"w2_{count}"
        ntdd = median(pytest_cmd("ntdd", "--ntdd", "."), folder, repeat)
        for name, flag in (("nbval", "--nbval-lax"), ("nbmake", "--nbmake")):
            took = median(pytest_cmd(name, flag, "."), folder, 1)
            section.notes.append(
                f"`pytest {flag}` on {count} notebooks: {s(took)} (1 run), `--ntdd`: {s(ntdd)}."
            )
            section.target(
                f"`--ntdd` ≥ 10× faster than `{flag}` at {count}", x(took / ntdd), took / ntdd >= 10
            )
    section.notes.append(f"\\* pytest's start-up ({s(startup)}) aside.")
    return section


def many_tests(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    section = Section("3. Many tests (one notebook)", ("tests", "run", "setup ran"))
    took: dict[int, float] = {}
    for count in sizes.tests:
        folder = scratch / f"w3_{count}"
        notebook = workloads.many_tests(folder, count)
        runs = folder / "setup_runs.txt"

        def fresh(runs: Path = runs) -> None:
            runs.unlink(missing_ok=True)

        took[count] = median(pytest_cmd("ntdd", "--ntdd", notebook.name), folder, repeat, fresh)
        setups = len(runs.read_text())  # one character per setup, in the last run
        section.rows.append((str(count), s(took[count]), f"{setups}×"))
        if setups != 1:
            section.notes.append(f"setup ran {setups} times for {count} tests")
    low, high = min(sizes.tests), max(sizes.tests)
    overhead = (took[high] - took[low]) / (high - low)
    section.target(f"per-test overhead < 2 ms at {high} tests", ms(overhead), overhead < 0.002)
    return section


def memory(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    section = Section(
        f"4. Memory ({sizes.heavy} notebooks whose setup holds {sizes.heavy_mb} MB each)",
        ("notebooks", "peak RSS"),
    )
    one = workloads.heavy_notebooks(scratch / "w4_1", 1, sizes.heavy_mb)
    many = workloads.heavy_notebooks(scratch / "w4_n", sizes.heavy, sizes.heavy_mb)
    single = peak_rss_mb(pytest_cmd("ntdd", "--ntdd", "."), one)
    total = peak_rss_mb(pytest_cmd("ntdd", "--ntdd", "."), many)
    section.rows += [("1", f"{single:.0f} MB"), (str(sizes.heavy), f"{total:.0f} MB")]
    section.target("peak RSS < 3× one notebook's run", x(total / single), total / single < 3)
    section.notes.append(
        f"Without release, {sizes.heavy} notebooks would hold about "
        f"{sizes.heavy * sizes.heavy_mb} MB."
    )
    return section


def export(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    folder = workloads.many_notebooks(scratch / "w5", sizes.export)
    out = scratch / "w5_out"
    empty = scratch / "empty"
    empty.mkdir(exist_ok=True)
    ntdd = [PY, "-m", "ntdd", "export"]
    startup = median([*ntdd, str(empty)], scratch, repeat)

    def clean() -> None:
        for module in out.glob("*.py"):
            module.unlink()

    cold = median([*ntdd, str(folder), "-o", str(out)], scratch, repeat, before=clean)
    warm = median([*ntdd, str(folder), "-o", str(out)], scratch, repeat)
    section = Section(
        f"5. Export ({sizes.export} notebooks)", ("export", "end to end", "per notebook*")
    )
    section.rows.append(
        ("cold: every module written", s(cold), ms((cold - startup) / sizes.export))
    )
    section.rows.append(("again, nothing changed", s(warm), ms((warm - startup) / sizes.export)))
    ratio = (cold - startup) / (warm - startup)
    section.target("re-export ≥ 10× faster than cold, start-up aside", x(ratio), ratio >= 10)
    section.notes.append(
        f"End to end, start-up included: {x(cold / warm)}. "
        f"\\* `ntdd` start-up ({s(startup)}) aside."
    )
    return section


def parallel(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    folder = workloads.many_notebooks(scratch / f"w6_{sizes.parallel}", sizes.parallel)
    serial = median(pytest_cmd("ntdd", "--ntdd", "-n", "0", "."), folder, repeat)
    two = median(pytest_cmd("ntdd", "--ntdd", "-n", "2", "."), folder, repeat)
    section = Section(
        f"6. Parallel (workload 2 at {sizes.parallel} notebooks)",
        ("workers", f"median of {repeat}"),
    )
    section.rows += [("`-n 0`", s(serial)), ("`-n 2`", s(two))]
    section.notes.append(
        f"`-n 2` against `-n 0`: {x(serial / two)} (2 cores; each worker starts its own pytest)."
    )
    return section


def shard_balance(scratch: Path, sizes: Sizes, repeat: int) -> Section:
    """Workload 7: 4 shards of notebooks with skewed durations (benchmarks/shards.py)."""
    measured = shards.measure(scratch, sizes.shard_notebooks, sizes.shard_seconds, 4)
    section = Section(shards.title(measured), shards.header(measured), shards.rows(measured))
    section.target(*shards.target(measured))
    section.notes.append(shards.note(measured))
    return section


WORKLOADS = {
    "1": real_notebooks,
    "2": many_notebooks,
    "3": many_tests,
    "4": memory,
    "5": export,
    "6": parallel,
    "7": shard_balance,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes, competitors at 10 notebooks"
    )
    parser.add_argument(
        "--tiny", action="store_true", help="the smallest sizes, no competitors (for tests)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--only", default=",".join(WORKLOADS), help="workloads to run, e.g. 1,3")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "latest.md")
    args = parser.parse_args(argv)
    sizes = TINY if args.tiny else QUICK if args.quick else FULL
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    report = [f"# ntdd benchmarks\n\n{machine}; medians of {args.repeat} runs.\n"]
    with tempfile.TemporaryDirectory(prefix="ntdd-bench-") as scratch:
        for key in args.only.split(","):
            section = WORKLOADS[key.strip()](Path(scratch), sizes, args.repeat)
            print(section.markdown(), flush=True)
            report.append(section.markdown())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report), encoding="utf-8")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
