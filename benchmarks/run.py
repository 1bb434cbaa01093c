"""ntdd against nbval, nbmake and plain Python, and its cost as notebooks and tests grow.

    python benchmarks/run.py                    # every workload but shards (about 20 minutes)
    python benchmarks/run.py --quick            # small sizes, few rounds: a look, not figures
    python benchmarks/run.py --workload corpus  # one workload alone; repeat the flag for more
    python benchmarks/run.py --list             # the workloads, and the peers each needs

Method: every tool of a workload runs once per round, each in a fresh process
from a scratch folder (no project configuration), with only its own pytest
plugin loaded. A warm-up round is run and thrown away; then each round runs
the tools in turn, starting one tool further along each time (A B C, B C A,
...). Each tool gets the same number of runs. Tables give each tool's median
and spread (lowest to highest); ratios and differences are computed round by round from
the runs made side by side, then their median and spread are given. Nothing
is subtracted that was not measured in the same rounds.

The peers (nbval, nbmake, ipykernel, pytest-xdist) come with
`pip install -e '.[bench]'`; the script checks for them before it starts.
The report goes to stdout and to benchmarks/results/latest.md; progress goes
to stderr. Benchmarks are run by hand; tests only check that this script runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import shards
import workloads
from pairs import Figure, interleaved, paired, ratio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
PLUGINS = ("ntdd", "nbval", "nbmake")
UNRELATED = ("hypothesispytest", "cov", "randomly")
INSTALL = "pip install -e '.[bench]'"


@dataclass(frozen=True)
class Sizes:
    peer_rounds: int  # the workloads that run nbval and nbmake, a kernel per notebook: slow
    rounds: int
    notebooks: int  # collection
    tests: tuple[int, ...]
    unused_runs: int
    memory_notebooks: int
    megabytes: int
    export: int
    shard_notebooks: int
    shard_seconds: float


FULL = Sizes(3, 4, 1000, (10, 100, 1000, 5000), 30, 40, 50, 500, 200, 40.0)
QUICK = Sizes(1, 2, 50, (10, 100), 4, 4, 10, 20, 12, 0.6)


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


@dataclass
class Context:
    """What every workload gets: a scratch folder, its sizes, and the rounds to run."""

    scratch: Path
    sizes: Sizes
    warmup: int
    rounds: int | None  # --rounds: every workload's rounds, overriding its sizes

    def compare(
        self, workload: str, measures: Mapping[str, Callable[[], float]], rounds: int
    ) -> dict[str, Figure]:
        """Run *measures* interleaved, telling stderr how far it got."""
        rounds = self.rounds or rounds
        start = time.perf_counter()
        say(f"{workload}: {len(measures)} tools × ({self.warmup} warm-up + {rounds} rounds)")

        def progress(done: int, total: int) -> None:
            label = f"round {done}/{total}" if done > 0 else "warm-up"
            say(f"{workload}: {label} done ({time.perf_counter() - start:.0f} s)")

        return interleaved(measures, rounds, self.warmup, progress)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- measuring ----------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """This checkout's ntdd first on the path; one thread per torch, as the cores are few.

    Bytecode is cached as on a user's machine: where the environment turns that
    off (PYTHONDONTWRITEBYTECODE), every run would compile ntdd's source checkout,
    and pytest would rewrite every module of the plugin, while the installed
    peers keep the bytecode pip wrote for them.
    """
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["OMP_NUM_THREADS"] = "1"
    return env


def pytest_cmd(plugin: str | None, *args: str, cache: bool = False) -> list[str]:
    """pytest with only *plugin* of ntdd, nbval and nbmake loaded, and no unrelated plugins."""
    off = [name for name in PLUGINS if name != plugin]
    return pytest_without(off, *args, cache=cache)


def pytest_without(off: Sequence[str], *args: str, cache: bool = False) -> list[str]:
    """pytest with the plugins *off* and the unrelated ones switched off."""
    off = [*off, *UNRELATED]
    if not cache:
        off.append("cacheprovider")  # also ntdd's module cache: every run collects afresh
    disabled = [arg for name in off for arg in ("-p", f"no:{name}")]
    return [PY, "-m", "pytest", "-q", "-o", "addopts=", *disabled, "-W", "ignore", *args]


def run(cmd: Sequence[str], cwd: Path, cpu: list[float] | None = None) -> float:
    """Run *cmd* to its end; its wall time. A test failing is fine, a crash is not.

    *cpu*, when given, gets the child's CPU time (user + system, its own
    children included), which other load on a shared machine disturbs less.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1, 5):  # 1: a test failed (some do, by design); 5: none
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return elapsed


class Timed:
    """A measure for `interleaved`: *before* (untimed), then *cmd*'s wall time.

    Each run's CPU time is kept too (`cpu`), warm-up included.
    """

    def __init__(
        self, cmd: Sequence[str], cwd: Path, before: Callable[[], None] | None = None
    ) -> None:
        self.cmd, self.cwd, self.before = cmd, cwd, before
        self.cpu: list[float] = []

    def __call__(self) -> float:
        if self.before is not None:
            self.before()
        return run(self.cmd, self.cwd, self.cpu)

    def cpu_figure(self, wall: Figure) -> Figure:
        """The CPU times of the runs *wall* kept (the warm-up's left out)."""
        return Figure(tuple(self.cpu[len(self.cpu) - len(wall.samples) :]))


def peak_rss(cmd: Sequence[str], cwd: Path) -> Callable[[], float]:
    """A measure: the peak resident memory (MB) of *cmd*, run as the only child of a probe."""
    probe = (
        "import resource, subprocess, sys;"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )

    def measure() -> float:
        out = subprocess.run(
            [PY, "-c", probe, *cmd], cwd=cwd, env=child_env(), capture_output=True, text=True
        )
        return int(out.stdout.strip()) / 1024  # Linux reports kilobytes

    return measure


def s(seconds: float) -> str:
    return f"{seconds:.2f} s"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def mb(megabytes: float) -> str:
    return f"{megabytes:.0f} MB"


def x(value: float) -> str:
    return f"{value:.2f}×"


# -- workloads ----------------------------------------------------------------------

PEER_TOOLS = {
    "floor": "plain Python, one process (`floor.py`)",
    "ntdd": "`pytest --ntdd`",
    "ntdd-cold": "`pytest --ntdd -p no:cacheprovider` (every run collects afresh)",
    "nbval": "`pytest --nbval-lax`",
    "nbmake": "`pytest --nbmake`",
}


def _against_peers(
    ctx: Context, workload: str, folder: Path, notebooks: list[Path]
) -> tuple[dict[str, Figure], Section]:
    """ntdd, nbval, nbmake and the floor on the same notebooks, turn about.

    pytest runs as users run it, its cache on: ntdd's module cache, which the
    warm-up round fills, spares later runs rendering and assertion rewriting
    (nbval and nbmake have nothing to cache). ntdd with the cache off runs too.
    """
    names = [p.name for p in notebooks]
    measures = {
        "floor": Timed([PY, str(HERE / "floor.py"), *names], folder),
        "ntdd": Timed(pytest_cmd("ntdd", "--ntdd", *names, cache=True), folder),
        "ntdd-cold": Timed(pytest_cmd("ntdd", "--ntdd", *names), folder),
        "nbval": Timed(pytest_cmd("nbval", "--nbval-lax", *names, cache=True), folder),
        "nbmake": Timed(pytest_cmd("nbmake", "--nbmake", *names, cache=True), folder),
    }
    figures = ctx.compare(workload, measures, ctx.sizes.peer_rounds)
    runs = len(figures["ntdd"].samples)
    section = Section(
        "",
        (
            "runner",
            f"wall time, median (min–max) of {runs}",
            "÷ the floor, paired",
            "ntdd is faster by, paired",
        ),
    )
    for name, label in PEER_TOOLS.items():
        faster = (
            "" if name in ("floor", "ntdd", "ntdd-cold") else ratio(figures[name], figures["ntdd"])
        )
        section.rows.append(
            (
                label,
                figures[name].describe(s),
                ratio(figures[name], figures["floor"]).describe(x),
                faster.describe(x) if isinstance(faster, Figure) else "",
            )
        )
    return figures, section


def corpus(ctx: Context) -> Section:
    """The 18 runnable third-party notebooks and the samples: ntdd, nbval, nbmake, the floor."""
    folder = ctx.scratch / "corpus"
    notebooks = workloads.real_notebooks(folder)
    figures, section = _against_peers(ctx, "corpus", folder, notebooks)
    section.title = f"Corpus ({len(notebooks)} notebooks: tests/corpus/good/ and sample_notebooks/)"
    for name, flag, least in (("nbval", "--nbval-lax", 8), ("nbmake", "--nbmake", 10)):
        faster = ratio(figures[name], figures["ntdd"])
        section.target(
            f"`--ntdd` ≥ {least}× faster than `{flag}`",
            faster.describe(x),
            faster.median >= least,
        )
    floor = ratio(figures["ntdd"], figures["floor"])
    section.target("`--ntdd` ≤ 1.15× the floor", floor.describe(x), floor.median <= 1.15)
    gap = paired(lambda a, b: (a - b) / len(notebooks), figures["nbval"], figures["ntdd"])
    section.notes.append(
        f"`--nbval-lax` takes {gap.describe(s)} more per notebook than `--ntdd` (paired): "
        "a kernel started, and every cell sent to it, per notebook."
    )
    return section


def heavy(ctx: Context) -> Section:
    """tiny_classifier.ipynb alone: the notebook's own work, not start-up, dominates."""
    notebook = workloads.heavy_notebook(ctx.scratch / "heavy")
    figures, section = _against_peers(ctx, "heavy", notebook.parent, [notebook])
    section.title = "Heavy notebook (tiny_classifier.ipynb alone)"
    for name in ("nbval", "nbmake"):
        gap = paired(lambda a, b: a - b, figures[name], figures["ntdd"])
        section.notes.append(f"{PEER_TOOLS[name]} minus `--ntdd`, paired: {gap.describe(s)}.")
    return section


def parallel(ctx: Context) -> Section:
    """The corpus with `-n 2` against `-n 0` (pytest-xdist)."""
    folder = ctx.scratch / "parallel"
    notebooks = workloads.real_notebooks(folder)
    names = [p.name for p in notebooks]
    measures = {
        "-n 0": Timed(pytest_cmd("ntdd", "--ntdd", "-n", "0", *names), folder),
        "-n 2": Timed(pytest_cmd("ntdd", "--ntdd", "-n", "2", *names), folder),
    }
    figures = ctx.compare("parallel", measures, ctx.sizes.rounds)
    section = Section(
        f"Parallel (the corpus, {len(notebooks)} notebooks, pytest-xdist)",
        ("workers", "wall time, median (min–max)", "÷ `-n 0`, paired"),
    )
    for name, figure in figures.items():
        section.rows.append(
            (f"`--ntdd {name}`", figure.describe(s), ratio(figure, figures["-n 0"]).describe(x))
        )
    return section


REAL_TOOLS = {
    "pytest": "the same cells as pytest modules (`pytest test_*.py`)",
    "ntdd": "`pytest --ntdd`",
    "pytest -n 2": "the pytest modules, `-n 2`",
    "ntdd -n 2": "`pytest --ntdd -n 2`",
    "nbval": "`pytest --nbval-lax`",
    "nbmake": "`pytest --nbmake`",
}


def real(ctx: Context) -> Section:
    """The d2l chapters (torch): ntdd against nbval, nbmake and the pytest floor, CPU and wall."""
    folder = ctx.scratch / "real"
    notebooks = [p.name for p in workloads.real_chapters(folder)]
    modules = [workloads.pytest_floor_module(folder / n, folder).name for n in notebooks]
    measures = {
        "pytest": Timed(pytest_cmd(None, *modules, cache=True), folder),
        "ntdd": Timed(pytest_cmd("ntdd", "--ntdd", *notebooks, cache=True), folder),
        "pytest -n 2": Timed(pytest_cmd(None, "-n", "2", *modules, cache=True), folder),
        "ntdd -n 2": Timed(pytest_cmd("ntdd", "--ntdd", "-n", "2", *notebooks, cache=True), folder),
        "nbval": Timed(pytest_cmd("nbval", "--nbval-lax", *notebooks, cache=True), folder),
        "nbmake": Timed(pytest_cmd("nbmake", "--nbmake", *notebooks, cache=True), folder),
    }
    walls = ctx.compare("real", measures, ctx.sizes.peer_rounds)
    cpus = {name: measures[name].cpu_figure(wall) for name, wall in walls.items()}
    section = Section(
        f"Real notebooks ({len(notebooks)} d2l chapters of tests/corpus/good/, "
        f"a state check every {workloads.REAL_TEST_EVERY} code cells)",
        ("runner", "wall, median (min–max)", "CPU", "÷ ntdd, wall, paired", "÷ ntdd, CPU, paired"),
    )
    for name, label in REAL_TOOLS.items():
        section.rows.append(
            (
                label,
                walls[name].describe(s),
                cpus[name].describe(s),
                ratio(walls[name], walls["ntdd"]).describe(x),
                ratio(cpus[name], cpus["ntdd"]).describe(x),
            )
        )
    floor = ratio(cpus["ntdd"], cpus["pytest"])
    section.target(
        "`--ntdd` ≤ 1.05× the pytest floor, CPU", floor.describe(x), floor.median <= 1.05
    )
    wall = ratio(walls["ntdd -n 2"], walls["ntdd"])
    section.target(
        "`--ntdd -n 2` no slower than `-n 0`, wall", wall.describe(x), wall.median <= 1.0
    )
    extra = paired(
        lambda a, b, c, d: (a - b) - (c - d),
        cpus["ntdd -n 2"],
        cpus["ntdd"],
        cpus["pytest -n 2"],
        cpus["pytest"],
    )
    section.notes.append(
        "CPU is the child's user + system time, its xdist workers included. `-n 2`'s extra CPU "
        "beyond what the same `-n 2` costs the pytest modules (xdist's own start-up, and each "
        f"worker importing torch again), paired: {extra.describe(s)}."
    )
    return section


def pinned(ctx: Context) -> Section:
    """Training notebooks with no `parameters` cell, with and without `--ntdd-param`."""
    folder = ctx.scratch / "pinned"
    notebooks = [p.name for p in workloads.training_notebooks(folder, 3)]
    measures = {
        "full": Timed(pytest_cmd("ntdd", "--ntdd", *notebooks, cache=True), folder),
        "pinned": Timed(
            pytest_cmd("ntdd", "--ntdd", "--ntdd-param", "num_epochs=1", *notebooks, cache=True),
            folder,
        ),
    }
    walls = ctx.compare("pinned", measures, ctx.sizes.rounds)
    cpus = {name: measures[name].cpu_figure(wall) for name, wall in walls.items()}
    section = Section(
        f"Pinned ({len(notebooks)} training notebooks, `num_epochs = 100` set where they train)",
        ("run", "wall, median (min–max)", "CPU", "÷ the full run, wall, paired"),
    )
    labels = {"full": "`pytest --ntdd`", "pinned": "`pytest --ntdd --ntdd-param num_epochs=1`"}
    for name, label in labels.items():
        section.rows.append(
            (
                label,
                walls[name].describe(s),
                cpus[name].describe(s),
                ratio(walls[name], walls["full"]).describe(x),
            )
        )
    return section


def collection(ctx: Context) -> Section:
    """`pytest --ntdd --co` on many notebooks, with the module cache cold and warm."""
    count = ctx.sizes.notebooks
    cold = workloads.many_notebooks(ctx.scratch / "collect_cold", count)
    warm = workloads.many_notebooks(ctx.scratch / "collect_warm", count)
    empty = ctx.scratch / "collect_empty"
    empty.mkdir(exist_ok=True)
    command = pytest_cmd("ntdd", "--ntdd", "--co", ".", cache=True)
    run(command, warm)  # fills the cache the warm runs read

    def clear() -> None:
        shutil.rmtree(cold / ".pytest_cache", ignore_errors=True)

    measures = {
        "start-up": Timed(command, empty),
        "cold": Timed(command, cold, before=clear),
        "warm": Timed(command, warm),
    }
    figures = ctx.compare("collection", measures, ctx.sizes.rounds)
    section = Section(
        f"Collection ({count} small notebooks, `pytest --ntdd --co`)",
        ("run", "wall time, median (min–max)", "per notebook, start-up aside, paired"),
    )
    labels = {
        "start-up": "start-up: an empty folder",
        "cold": "cold: cache emptied before each run",
        "warm": "warm: every notebook unchanged and cached",
    }
    cpus = {name: measures[name].cpu_figure(figure) for name, figure in figures.items()}
    per: dict[str, Figure] = {}
    for name, figure in figures.items():
        if name != "start-up":
            per[name] = paired(lambda t, u: (t - u) / count, figure, figures["start-up"])
            cpu = paired(lambda t, u: (t - u) / count, cpus[name], cpus["start-up"])
            section.notes.append(
                f"{labels[name]}: CPU time per notebook, paired: {cpu.describe(ms)}."
            )
        section.rows.append(
            (labels[name], figure.describe(s), per[name].describe(ms) if name in per else "")
        )
    section.target(
        f"warm ≤ 2 ms per notebook at {count}",
        per["warm"].describe(ms),
        per["warm"].median <= 0.002,
    )
    section.target(
        f"cold ≤ 5 ms per notebook at {count}",
        per["cold"].describe(ms),
        per["cold"].median <= 0.005,
    )
    return section


def tests(ctx: Context) -> Section:
    """One notebook of 10 to 5,000 tests: the cost of each test, collection included.

    Warm: the module cache holds the notebook's compiled module, as on every run
    after the first. Cold: no cache, so each run also renders the module and
    pytest rewrites each test's assert (about 1 ms an assert).
    """
    sizes = (1, *ctx.sizes.tests)
    notebooks = {n: workloads.many_tests(ctx.scratch / f"tests_{n}", n) for n in sizes}

    def measure(n: int, warm: bool) -> Timed:
        runs = notebooks[n].parent / "setup_runs.txt"
        command = pytest_cmd("ntdd", "--ntdd", notebooks[n].name, cache=warm)
        return Timed(command, runs.parent, lambda: runs.unlink(missing_ok=True))

    measures = {
        f"{kind} {n}": measure(n, kind == "warm") for n in sizes for kind in ("warm", "cold")
    }
    walls = ctx.compare("tests", dict(measures), ctx.sizes.rounds)
    cpus = {name: measures[name].cpu_figure(wall) for name, wall in walls.items()}
    section = Section(
        "Tests in one notebook (each run collects and runs every test)",
        (
            "tests",
            "wall time, warm cache",
            "per test beyond the first: wall, paired, warm cache",
            "per test: CPU, paired, warm cache",
            "per test: wall, paired, no cache",
            "setup ran",
        ),
    )

    def added(t: float, one: float, n: int) -> float:
        return (t - one) / (n - 1)

    per: dict[int, Figure] = {}
    for n in sizes:
        setups = len((notebooks[n].parent / "setup_runs.txt").read_text())  # an "x" per setup
        row = [str(n), walls[f"warm {n}"].describe(s), "", "", ""]
        if n > 1:

            def by(t: float, one: float, n: int = n) -> float:
                return added(t, one, n)

            per[n] = paired(by, walls[f"warm {n}"], walls["warm 1"])
            row[2:] = [
                per[n].describe(ms),
                paired(by, cpus[f"warm {n}"], cpus["warm 1"]).describe(ms),
                paired(by, walls[f"cold {n}"], walls["cold 1"]).describe(ms),
            ]
        section.rows.append((*row, f"{setups}×"))
    for n, figure in per.items():
        section.target(
            f"< 1.5 ms per test at {n}, wall, warm cache",
            figure.describe(ms),
            figure.median < 0.0015,
        )
    largest, previous = sorted(per)[-1], sorted(per)[-2]
    growth = per[largest].median / per[previous].median
    section.target(
        f"flat: per test at {largest} within 1.25× of at {previous}, wall, warm cache",
        x(growth),
        growth <= 1.25,
    )
    section.notes.append(
        "Each size's figure is its run's time less the one-test notebook's run in the same "
        "round, over the tests added; at 10 tests that difference is within the noise of a "
        "shared machine. CPU time is the child's user + system time. Without the cache, a "
        "run also renders the module and pytest rewrites every assert in it."
    )
    return section


def unused(ctx: Context) -> Section:
    """A plain pytest suite, ntdd installed but not asked for, against `-p no:ntdd`."""
    suite = workloads.plain_suite(ctx.scratch / "plain")
    measures = {
        "ntdd installed, no --ntdd": Timed(pytest_without(["nbval", "nbmake"], "."), suite),
        "-p no:ntdd": Timed(pytest_without(["nbval", "nbmake", "ntdd"], "."), suite),
    }
    figures = ctx.compare("unused", measures, ctx.sizes.unused_runs)
    with_ntdd, without = figures.values()
    section = Section(
        "Unused: a plain pytest suite (20 modules, 200 tests, no notebooks)",
        ("run", f"wall time, median (min–max) of {len(without.samples)}"),
    )
    section.rows += [("`pytest`, ntdd installed", with_ntdd.describe(ms))]
    section.rows += [("`pytest -p no:ntdd`", without.describe(ms))]
    extra = paired(lambda a, b: a - b, with_ntdd, without)
    cpu = paired(lambda a, b: a - b, *(measures[k].cpu_figure(f) for k, f in figures.items()))
    section.notes.append(
        f"CPU time (user + system) ntdd installed minus `-p no:ntdd`, paired: {cpu.describe(ms)}."
    )
    section.target(
        "ntdd costs ≤ 10 ms when unused, paired", extra.describe(ms), extra.median <= 0.010
    )
    return section


def memory(ctx: Context) -> Section:
    """Peak RSS of the pytest process: notebooks whose setup holds a large object."""
    count, size = ctx.sizes.memory_notebooks, ctx.sizes.megabytes
    cases = {
        "1 failing": workloads.heavy_notebooks(ctx.scratch / "mem_1", 1, size, fail=True),
        f"{count} failing": workloads.heavy_notebooks(
            ctx.scratch / "mem_f", count, size, fail=True
        ),
        f"{count} passing": workloads.heavy_notebooks(ctx.scratch / "mem_p", count, size),
    }
    command = pytest_cmd("ntdd", "--ntdd", ".")
    figures = ctx.compare(
        "memory", {k: peak_rss(command, f) for k, f in cases.items()}, ctx.sizes.rounds
    )
    one = figures["1 failing"]
    section = Section(
        f"Memory (notebooks whose setup holds {size} MB each; peak RSS of the pytest process)",
        ("notebooks", "peak RSS, median (min–max)", "÷ 1 failing, paired"),
    )
    for name, figure in figures.items():
        section.rows.append((name, figure.describe(mb), ratio(figure, one).describe(x)))
    failing = ratio(figures[f"{count} failing"], one)
    section.target(f"{count} failing < 2× one failing", failing.describe(x), failing.median < 2)
    section.notes.append(
        f"Each failing test holds its notebook's object in a local, which its traceback "
        f"keeps; held to the end, {count} notebooks would take about {count * size} MB."
    )
    return section


def export(ctx: Context) -> Section:
    """`ntdd export` of many notebooks: everything written, and nothing changed."""
    count = ctx.sizes.export
    folder = workloads.many_notebooks(ctx.scratch / "export", count)
    empty = ctx.scratch / "export_empty"
    empty.mkdir(exist_ok=True)
    cold_out, warm_out = ctx.scratch / "export_cold", ctx.scratch / "export_warm"
    ntdd = [PY, "-m", "ntdd", "export"]
    run([*ntdd, str(folder), "-o", str(warm_out)], ctx.scratch)

    def clean() -> None:
        shutil.rmtree(cold_out, ignore_errors=True)

    measures = {
        "start-up": Timed([*ntdd, str(empty)], ctx.scratch),
        "cold": Timed([*ntdd, str(folder), "-o", str(cold_out)], ctx.scratch, before=clean),
        "unchanged": Timed([*ntdd, str(folder), "-o", str(warm_out)], ctx.scratch),
    }
    figures = ctx.compare("export", measures, ctx.sizes.rounds)
    section = Section(
        f"Export ({count} small notebooks, `ntdd export`)",
        ("export", "wall time, median (min–max)", "per notebook, start-up aside, paired"),
    )
    labels = {
        "start-up": "start-up: an empty folder",
        "cold": "cold: every module written",
        "unchanged": "again, nothing changed",
    }
    for name, figure in figures.items():
        per = paired(lambda t, u: (t - u) / count, figure, figures["start-up"])
        section.rows.append(
            (labels[name], figure.describe(s), "" if name == "start-up" else per.describe(ms))
        )
    section.notes.append(
        f"Cold ÷ unchanged, end to end, paired: "
        f"{ratio(figures['cold'], figures['unchanged']).describe(x)}."
    )
    return section


def shard_balance(ctx: Context) -> Section:
    """Shards of notebooks with skewed durations (benchmarks/shards.py); not a timing race."""
    sizes = ctx.sizes
    measured = shards.measure(ctx.scratch, sizes.shard_notebooks, sizes.shard_seconds, 4)
    section = Section(shards.title(measured), shards.header(measured), shards.rows(measured))
    section.target(*shards.target(measured))
    section.notes.append(shards.note(measured))
    return section


@dataclass(frozen=True)
class Workload:
    measure: Callable[[Context], Section]
    peers: tuple[str, ...]  # modules the workload's tools need
    default: bool = True


KERNEL_PEERS = ("nbval", "nbmake", "ipykernel")


def _summary(measure: Callable[..., object]) -> str:
    """A workload's one-line description: its docstring's first line."""
    return (measure.__doc__ or "").strip().splitlines()[0] if measure.__doc__ else ""


WORKLOADS = {
    "corpus": Workload(corpus, KERNEL_PEERS),
    "heavy": Workload(heavy, KERNEL_PEERS),
    "parallel": Workload(parallel, ("xdist",)),
    "real": Workload(real, (*KERNEL_PEERS, "xdist")),
    "pinned": Workload(pinned, ("torch",)),
    "collection": Workload(collection, ()),
    "tests": Workload(tests, ()),
    "unused": Workload(unused, ()),
    "memory": Workload(memory, ()),
    "export": Workload(export, ()),
    "shards": Workload(shard_balance, (), default=False),
}


def missing_peers(names: Sequence[str]) -> dict[str, list[str]]:
    """The peers *names* need that this Python cannot import, with the workloads needing them."""
    missing: dict[str, list[str]] = {}
    for name in names:
        for module in WORKLOADS[name].peers:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.setdefault(module, []).append(name)
    return missing


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes and few rounds")
    parser.add_argument(
        "--workload",
        action="append",
        choices=list(WORKLOADS),
        metavar="NAME",
        help="run this workload (repeatable); default: all but shards",
    )
    parser.add_argument("--list", action="store_true", help="list the workloads and stop")
    parser.add_argument("--rounds", type=int, help="rounds per workload, instead of its own")
    parser.add_argument("--warmup", type=int, default=1, help="rounds run and thrown away")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "latest.md")
    args = parser.parse_args(argv)
    if args.list:
        for name, workload in WORKLOADS.items():
            needs = f" [needs {', '.join(workload.peers)}]" if workload.peers else ""
            extra = "" if workload.default else " (not run by default)"
            print(f"{name:<11} {_summary(workload.measure)}{needs}{extra}")
        return 0
    chosen = args.workload or [name for name, w in WORKLOADS.items() if w.default]
    missing = missing_peers(chosen)
    if missing:
        for module, needers in missing.items():
            say(f"benchmarks: {module} is not installed; workload {', '.join(needers)} needs it.")
        say(f"benchmarks: install every peer they compare against with: {INSTALL}")
        return 2
    sizes = QUICK if args.quick else FULL
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    report = [f"# ntdd benchmarks\n\n{machine}; {args.warmup} warm-up round(s) per workload.\n"]
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ntdd-bench-") as scratch:
        context = Context(Path(scratch), sizes, args.warmup, args.rounds)
        for name in chosen:
            say(f"{name}: {_summary(WORKLOADS[name].measure)}")
            section = WORKLOADS[name].measure(context)
            print(section.markdown(), flush=True)
            report.append(section.markdown())
    took = time.perf_counter() - started
    report.append(
        f"All of it took {took / 60:.1f} minutes; "
        f"load average {os.getloadavg()[0]:.1f} at the end.\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(report), encoding="utf-8")
    say(f"written to {args.out} ({took:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
