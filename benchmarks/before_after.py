"""This checkout against another one (the code before a change), paired, on a busy machine.

    git worktree add ../before <commit>
    python benchmarks/before_after.py ../before --rounds 6 collection tests
    python benchmarks/before_after.py ../before --rounds 10 real
    python benchmarks/before_after.py ../before --rounds 5 alone   # one notebook a process
    python benchmarks/before_after.py ../before --rounds 6 options # every results option on
    python benchmarks/before_after.py ../before --rounds 5 prints  # 65,000 lines printed
    python benchmarks/before_after.py ../before --earlier ../older --rounds 5 plots

Each measure runs as `run.py` runs its tools (a fresh pytest process, one
plugin, bytecode cached, `OMP_NUM_THREADS=1`), with one checkout or the other
first on `PYTHONPATH`, turn about in the same rounds (`pairs.interleaved`).
Figures are CPU time (user + system), which other load disturbs less than
wall time; every "after ÷ before" is computed round by round.
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
from pairs import Figure, interleaved, paired, ratio
from run import pytest_cmd

HERE = Path(__file__).resolve().parent


def cpu_of(
    checkout: Path, cmd: Sequence[str], cwd: Path, before: Callable[[], None] | None = None
) -> Callable[[], float]:
    """A measure: the CPU time of *cmd* run with *checkout* first on the path."""

    def measure() -> float:
        if before is not None:
            before()
        env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        start = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        end = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1, 5):
            raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
        return end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime

    return measure


def ms(value: float) -> str:
    return f"{value * 1000:.2f} ms"


def x(value: float) -> str:
    return f"{value:.3f}×"


def collection(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    count = 1000
    cold = workloads.many_notebooks(scratch / "cold", count)
    warm = workloads.many_notebooks(scratch / "warm", count)
    empty = scratch / "empty"
    empty.mkdir()
    command = pytest_cmd("ntdd", "--ntdd", "--co", ".", cache=True)

    def clear() -> None:
        shutil.rmtree(cold / ".pytest_cache", ignore_errors=True)

    measures = {}
    for name, path in paths.items():
        measures[f"{name} start-up"] = cpu_of(path, command, empty)
        measures[f"{name} cold"] = cpu_of(path, command, cold, clear)
        measures[f"{name} warm"] = cpu_of(path, command, warm)
        measures[f"{name} warm"]()  # each checkout's entries are keyed apart
    figures = interleaved(measures, rounds)
    for kind in ("cold", "warm"):
        per = {
            name: paired(
                lambda t, u: (t - u) / count, figures[f"{name} {kind}"], figures[f"{name} start-up"]
            )
            for name in paths
        }
        for name, figure in per.items():
            print(f"collection, {kind}, {name}: {figure.describe(ms)} per notebook")
        print(
            f"collection, {kind}, after ÷ before: {ratio(per['after'], per['before']).describe(x)}"
        )


def tests(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    sizes = (1, 1000, 5000)
    notebooks = {n: workloads.many_tests(scratch / f"tests_{n}", n) for n in sizes}
    measures = {
        f"{name} {n}": cpu_of(path, pytest_cmd("ntdd", "--ntdd", nb.name, cache=True), nb.parent)
        for name, path in paths.items()
        for n, nb in notebooks.items()
    }
    figures = interleaved(measures, rounds)
    per: dict[tuple[str, int], Figure] = {}
    for name in paths:
        for n in sizes[1:]:
            per[name, n] = paired(
                lambda t, one, n=n: (t - one) / (n - 1),
                figures[f"{name} {n}"],
                figures[f"{name} 1"],
            )
            print(f"tests, {name}, per test at {n}: {per[name, n].describe(ms)}")
        growth = ratio(per[name, 5000], per[name, 1000])
        print(f"tests, {name}, 5000 ÷ 1000 per test: {growth.describe(x)}")
    at_5000 = ratio(per["after", 5000], per["before", 5000])
    print(f"tests, per test at 5000, after ÷ before: {at_5000.describe(x)}")


def real(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    folder = scratch / "real"
    notebooks = [p.name for p in workloads.real_chapters(folder)]
    modules = [workloads.pytest_floor_module(folder / n, folder).name for n in notebooks]
    measures = {"floor": cpu_of(paths["after"], pytest_cmd(None, *modules, cache=True), folder)}
    for name, path in paths.items():
        measures[name] = cpu_of(path, pytest_cmd("ntdd", "--ntdd", *notebooks, cache=True), folder)
    figures = interleaved(measures, rounds)
    for name in ("floor", *paths):
        print(f"real, {name}: {figures[name].describe(lambda v: f'{v:.3f} s')}")
    for name in paths:
        print(f"real, {name} ÷ the floor: {ratio(figures[name], figures['floor']).describe(x)}")
    print(f"real, after ÷ before: {ratio(figures['after'], figures['before']).describe(x)}")


def alone(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    """The `real` chapters one per process, as a user runs one notebook: each checkout's
    `pytest --ntdd`, the same cells as a plain pytest module, and `--nbval-lax`."""
    folder = scratch / "alone"
    notebooks = [p.name for p in workloads.real_chapters(folder)]
    measures = {}
    for nb in notebooks:
        module = workloads.pytest_floor_module(folder / nb, folder).name
        floor = pytest_cmd(None, module, cache=True)
        measures[f"floor {nb}"] = cpu_of(paths["after"], floor, folder)
        measures[f"nbval {nb}"] = cpu_of(
            paths["after"], pytest_cmd("nbval", "--nbval-lax", nb, cache=True), folder
        )
        for name, path in paths.items():
            command = pytest_cmd("ntdd", "--ntdd", nb, cache=True)
            measures[f"{name} {nb}"] = cpu_of(path, command, folder)
    figures = interleaved(measures, rounds)
    over: dict[str, list[float]] = {"before": [], "after": [], "after ÷ before": [], "nbval": []}
    heads = ("floor", "before ÷ floor", "after ÷ floor", "after ÷ before", "nbval-lax ÷ after")
    print(f"| notebook | {' | '.join(heads)} |")
    print("|---|---|---|---|---|---|")
    for nb in notebooks:
        floor = figures[f"floor {nb}"]
        row = [ratio(figures[f"{name} {nb}"], floor) for name in paths]
        row.append(ratio(figures[f"after {nb}"], figures[f"before {nb}"]))
        row.append(ratio(figures[f"nbval {nb}"], figures[f"after {nb}"]))
        for key, figure in zip(over, row, strict=True):
            over[key].append(figure.median)
        cells = " | ".join(figure.describe(x) for figure in row)
        print(f"| {nb} | {floor.describe(lambda v: f'{v:.2f} s')} | {cells} |")
    medians = " | ".join(x(statistics.median(values)) for values in over.values())
    print(f"| median of the notebooks | | {medians} |")


def plots(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    """The plot-heavy chapters one per process (`workloads.plot_chapters`), nothing recorded:
    each checkout's CPU time, and each against the others, round by round."""
    folder = scratch / "plots"
    notebooks = [p.name for p in workloads.plot_chapters(folder)]
    measures = {
        f"{name} {nb}": cpu_of(path, pytest_cmd("ntdd", "--ntdd", nb, cache=True), folder)
        for nb in notebooks
        for name, path in paths.items()
    }
    figures = interleaved(measures, rounds)
    names = list(paths)
    pairs = [(a, b) for i, b in enumerate(names) for a in names[i + 1 :]]
    heads = [*names, *(f"{a} ÷ {b}" for a, b in pairs)]
    print(f"| notebook | {' | '.join(heads)} |")
    print(f"|---|{'---|' * len(heads)}")
    for nb in notebooks:
        row = [figures[f"{name} {nb}"].describe(lambda v: f"{v:.2f} s") for name in names]
        row += [ratio(figures[f"{a} {nb}"], figures[f"{b} {nb}"]).describe(x) for a, b in pairs]
        print(f"| {nb} | {' | '.join(row)} |")


# Every option that makes a run write or check something, as a CI job turns them on.
EVERY_OPTION = (
    "--ntdd-report=report.html",
    "--ntdd-summary=summary.md",
    "--ntdd-outputs-lax",
    "--ntdd-write-notebooks=written",
    "--junitxml=junit.xml",
    "--ntdd-store-durations=durations.json",
)


def options(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    """The `real` chapters with every results option on, against the plain run: what the
    options cost, before and after (each option's files removed before each run)."""
    folder = scratch / "options"
    notebooks = [p.name for p in workloads.real_chapters(folder)]

    def clear() -> None:
        shutil.rmtree(folder / "written", ignore_errors=True)
        for name in ("report.html", "summary.md", "junit.xml", "durations.json"):
            (folder / name).unlink(missing_ok=True)

    measures = {}
    for name, path in paths.items():
        plain = pytest_cmd("ntdd", "--ntdd", *notebooks, cache=True)
        every = pytest_cmd("ntdd", "--ntdd", *EVERY_OPTION, *notebooks, cache=True)
        measures[f"{name} plain"] = cpu_of(path, plain, folder)
        measures[f"{name} every"] = cpu_of(path, every, folder, clear)
    figures = interleaved(measures, rounds)
    seconds = lambda v: f"{v:.3f} s"  # noqa: E731
    for name in paths:
        for kind in ("plain", "every"):
            print(f"options, {name}, {kind}: {figures[f'{name} {kind}'].describe(seconds)}")
        cost = ratio(figures[f"{name} every"], figures[f"{name} plain"])
        print(f"options, {name}, every option ÷ plain: {cost.describe(x)}")
    for kind in ("plain", "every"):
        after = ratio(figures[f"after {kind}"], figures[f"before {kind}"])
        print(f"options, {kind}, after ÷ before: {after.describe(x)}")


def prints(paths: dict[str, Path], scratch: Path, rounds: int) -> None:
    """A cell printing 65,000 lines with the page recording outputs: what recording a
    long stream costs, before and after."""
    notebook = workloads.chatty_training(scratch / "prints", 65_000)
    cmd = pytest_cmd("ntdd", "--ntdd", "--ntdd-report=report.html", notebook.name, cache=True)
    measures = {name: cpu_of(path, cmd, notebook.parent) for name, path in paths.items()}
    figures = interleaved(measures, rounds)
    for name in paths:
        print(f"prints, {name}: {figures[name].describe(lambda v: f'{v:.3f} s')}")
    print(f"prints, after ÷ before: {ratio(figures['after'], figures['before']).describe(x)}")


WORKLOADS = {
    "collection": collection,
    "tests": tests,
    "real": real,
    "alone": alone,
    "options": options,
    "prints": prints,
    "plots": plots,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a checkout of the code before")
    parser.add_argument("workloads", nargs="+", choices=sorted(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--earlier", type=Path, help="a checkout older than *before*, measured beside them (plots)"
    )
    args = parser.parse_args(argv)
    paths = {"before": args.before.resolve(), "after": HERE.parent}
    if args.earlier is not None:
        paths = {"earlier": args.earlier.resolve(), **paths}
    for name in args.workloads:
        with tempfile.TemporaryDirectory(prefix=f"ntdd-before-after-{name}-") as scratch:
            WORKLOADS[name](paths, Path(scratch), args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
