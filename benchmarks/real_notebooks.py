"""Real notebooks nobody here wrote, judged by a kernel: ntdd alone, in one session, their cost.

    python benchmarks/real_notebooks.py                        # agreement, then 3 paired rounds
    python benchmarks/real_notebooks.py --rounds 1 --warmup 0  # a look, not figures
    python benchmarks/real_notebooks.py --only fastcore        # the notebooks whose name has it
    python benchmarks/real_notebooks.py --no-timing            # the agreement only

The notebooks are those of tests/corpus/real/ (nbdev projects' API notebooks,
course and book chapters; attribution in its SOURCES.md), tests/corpus/good/
and tests/corpus/untested/, copied into a scratch folder (some write files
beside themselves). fastcore's notebooks need fastcore 1.7.28 and nbdev
2.3.34, the versions of their snapshot: `pip install --target DIR
fastcore==1.7.28 nbdev==2.3.34 'setuptools<81'` and `PYTHONPATH=DIR` (not in
the test extra; without them they stop at their first import, in the kernel
and under ntdd alike).

Agreement, as notebooks: where a kernel's Run All stops (`run_all` of
tests/oracle.py, the specification) against where `pytest --ntdd
--ntdd-run-untested` says each stops (the cell its one test names), run one
notebook per pytest process ("alone") and all of them in one ("one
session"). As marked cells: copies of the notebooks in which `ntdd mark`
turned the notebooks' own check cells into `# TEST` cells, judged test by
test (`kernel_verdicts`: whether each raised in a kernel, going on after
errors) against `pytest --ntdd`, alone and in one session.

Cost: on the notebooks a kernel runs to the end whose `pytest --ntdd` takes
`--heavy` seconds of CPU or more alone (the marked copy where it has checks,
else the notebook under `--ntdd-run-untested`), `pytest --ntdd`, `pytest
--nbval-lax` and the same cells as plain pytest modules
(`workloads.pytest_floor_module`, no notebook plugin), one notebook per
process, turn about after a warm-up round; CPU time (user + system, kernels
included), ratios round by round, per notebook and their median. The floor's
modules are read from pytest's bytecode cache, so `--ntdd` reads its
notebooks' modules from its module cache, as a second run of a user's does;
`--cold` renders them every run, as these figures were taken before.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import workloads
from pairs import interleaved, ratio
from run import ROOT, Timed, child_env, s, say, x
from untested import copied, pytest_cmd

sys.path.insert(0, str(ROOT / "tests"))
from oracle import first_failures, kernel_verdicts, run_all  # the tests' oracle

CORPUS = ROOT / "tests" / "corpus"
TIMEOUT = 300  # seconds per cell (kernel) or per test (ntdd)

Stops = dict[str, int | None]  # notebook -> the cell Run All stops at; None: it runs
Tests = dict[str, dict[str, bool]]  # notebook -> test -> whether it raised


def notebooks(folder: Path, only: str | None) -> list[str]:
    sources = [
        *sorted((CORPUS / "real").glob("*.ipynb")),
        *sorted((CORPUS / "good").glob("*.ipynb")),
        *sorted((CORPUS / "untested").glob("*.ipynb")),
    ]
    return copied(sources, folder, only)


def ntdd_stops(folder: Path, names: list[str], together: bool) -> Stops:
    found: Stops = {}
    for group in [names] if together else [[n] for n in names]:
        junit = folder / "ntdd.xml"
        junit.unlink(missing_ok=True)
        cmd = pytest_cmd(
            "ntdd.plugin", "--ntdd", "--ntdd-run-untested", f"--ntdd-timeout={TIMEOUT}",
            *group, f"--junitxml={junit}",
        )  # fmt: skip
        subprocess.run(cmd, cwd=folder, env=child_env(), stdout=subprocess.DEVNULL, check=False)
        stops = first_failures(junit) if junit.exists() else {}
        found.update({name: stops.get(name) for name in group})
    return found


def marked(folder: Path, names: list[str]) -> list[str]:
    """The notebooks of *folder* with a `# TEST` on their check cells (`ntdd mark --write`),
    in *folder*/marked: those that have one."""
    target = folder / "marked"
    target.mkdir()
    for name in names:
        shutil.copy(folder / name, target / name)
    (target / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "ntdd", "mark", "--write", "."]
    subprocess.run(cmd, cwd=target, env=child_env(), capture_output=True, check=False)
    return [n for n in names if "# TEST" in (target / n).read_text(encoding="utf-8")]


def ntdd_tests(folder: Path, names: list[str], together: bool) -> Tests:
    found: Tests = {}
    for group in [names] if together else [[n] for n in names]:
        junit = folder / "ntdd.xml"
        junit.unlink(missing_ok=True)
        cmd = pytest_cmd("ntdd.plugin", "--ntdd", f"--ntdd-timeout={TIMEOUT}", *group)
        cmd.append(f"--junitxml={junit}")
        subprocess.run(cmd, cwd=folder, env=child_env(), stdout=subprocess.DEVNULL, check=False)
        for case in ET.parse(junit).getroot().iter("testcase") if junit.exists() else ():
            notebook = Path(case.get("classname", "")).name  # the notebook's path
            raised = any(case.find(tag) is not None for tag in ("error", "failure"))
            skipped = case.find("skipped") is not None
            if not skipped:
                name = case.get("name", "").split("[")[0]
                tests = found.setdefault(notebook, {})
                tests[name] = tests.get(name, False) or raised
    return found


def stop(cell: int | None) -> str:
    return "runs" if cell is None else f"cell {cell}"


def stops_table(names: list[str], kernel: Stops, alone: Stops, together: Stops) -> list[str]:
    agree_alone = [n for n in names if alone[n] == kernel[n]]
    agree_together = [n for n in names if together[n] == kernel[n]]
    lines = [
        f"## Notebooks: where Run All stops ({len(names)} notebooks)",
        "",
        "| | agree with the kernel | disagree |",
        "|---|---|---|",
        f"| alone | {len(agree_alone)}/{len(names)} | "
        f"{', '.join(n for n in names if n not in agree_alone) or 'none'} |",
        f"| one session | {len(agree_together)}/{len(names)} | "
        f"{', '.join(n for n in names if n not in agree_together) or 'none'} |",
        "",
        "| notebook | kernel | alone | one session |",
        "|---|---|---|---|",
    ]
    for n in names:
        shown = [
            stop(v[n]) if v[n] == kernel[n] else f"**{stop(v[n])}**" for v in (alone, together)
        ]
        lines.append(f"| {n} | {stop(kernel[n])} | " + " | ".join(shown) + " |")
    return lines


def tests_table(names: list[str], kernel: Tests, alone: Tests, together: Tests) -> list[str]:
    def agreeing(found: Tests) -> tuple[int, int, list[str]]:
        same = total = 0
        differ = []
        for n in names:
            for test, raised in kernel.get(n, {}).items():
                total += 1
                if found.get(n, {}).get(test) == raised:
                    same += 1
                else:
                    differ.append(f"{n}::{test}")
        return same, total, differ

    lines = [
        f"## Marked cells: the notebooks' own checks as `# TEST` cells ({len(names)} notebooks)",
        "",
        "| | tests agreeing with the kernel | notebooks agreeing | disagree |",
        "|---|---|---|---|",
    ]
    for label, found in (("alone", alone), ("one session", together)):
        same, total, differ = agreeing(found)
        whole = sum(found.get(n) == kernel.get(n) for n in names)
        lines.append(
            f"| {label} | {same}/{total} | {whole}/{len(names)} | {', '.join(differ) or 'none'} |"
        )
    return lines


def cost(
    places: dict[str, Path],
    untested: set[str],
    rounds: int,
    warmup: int,
    heavy: float,
    cold: bool = False,
) -> list[str]:
    """ntdd, nbval-lax and the pytest floor on each heavy notebook, turn about; CPU, paired.

    *places*: notebook -> the folder of the copy measured; those in *untested* have no
    `# TEST` cell, and run under `--ntdd-run-untested`.
    """
    names = list(places)
    measures: dict[str, Timed] = {}
    for name in names:
        folder = places[name]
        floor = folder / "floor"
        floor.mkdir(exist_ok=True)
        module = workloads.pytest_floor_module(folder / name, floor)
        extra = ["--ntdd-run-untested"] if name in untested else []
        ntdd = pytest_cmd("ntdd.plugin", "--ntdd", *extra, name, cache=not cold)
        measures[f"ntdd {name}"] = Timed(ntdd, folder)
        measures[f"nbval {name}"] = Timed(
            pytest_cmd("nbval.plugin", "--nbval-lax", name, "--nbval-cell-timeout=300"), folder
        )
        measures[f"floor {name}"] = Timed(pytest_cmd("ntdd.plugin", module.name), floor)
    broken = []  # a floor module that stops where the notebook does not: no floor to pair
    for name in names:  # which are heavy: ntdd's own CPU alone, once
        try:
            measures[f"floor {name}"]()
        except RuntimeError:
            broken.append(name)
            continue
        measures[f"ntdd {name}"]()
    kept = [n for n in names if n not in broken and measures[f"ntdd {n}"].cpu[-1] >= heavy]
    chosen = {k: v for k, v in measures.items() if k.split(" ", 1)[1] in kept}

    if not kept:
        return [f"## CPU: no notebook of {heavy:g} s or more"]

    def progress(done: int, total: int) -> None:
        say(f"round {done} of {total}" if done > 0 else "warm-up")

    walls = interleaved(chosen, rounds, warmup, progress)
    cpus = {k: chosen[k].cpu_figure(walls[k]) for k in chosen}
    lines = [
        f"## CPU on the notebooks of {heavy:g} s or more ({len(kept)}; {rounds} paired rounds "
        f"after {warmup} warm-up)",
        "",
        "| notebook | `--ntdd` CPU | ntdd ÷ the pytest floor | nbval-lax ÷ ntdd |",
        "|---|---|---|---|",
    ]
    over_floor, nbval_over = [], []
    for n in kept:
        a = ratio(cpus[f"ntdd {n}"], cpus[f"floor {n}"])
        b = ratio(cpus[f"nbval {n}"], cpus[f"ntdd {n}"])
        over_floor.append(a.median)
        nbval_over.append(b.median)
        cpu = cpus[f"ntdd {n}"].describe(s)
        lines.append(f"| {n} | {cpu} | {a.describe(x)} | {b.describe(x)} |")
    lines.append(
        f"| median of the notebooks | | {x(statistics.median(over_floor))} "
        f"| {x(statistics.median(nbval_over))} |"
    )
    if broken:
        lines += [
            "",
            f"No floor (its module stops where the notebook does not): {', '.join(broken)}.",
        ]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--heavy", type=float, default=3.0, help="CPU seconds (default 3)")
    parser.add_argument("--cold", action="store_true", help="--ntdd without its module cache")
    parser.add_argument("--only", help="only the notebooks whose file name holds this")
    parser.add_argument("--no-timing", action="store_true", help="the agreement only")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    os.environ["PIP_NO_INDEX"] = "1"  # kernels and every child inherit these
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_PLUGINS", None)
    folder = Path(tempfile.mkdtemp(prefix="ntdd-real-"))
    try:
        names = notebooks(folder, args.only)
        kernel: Stops = {}
        for name in names:
            say(f"kernel: {name}")
            kernel[name] = run_all(folder / name, TIMEOUT)
        say("ntdd: alone, then one session")
        lines = ["# Real notebooks: a kernel's verdict, ntdd alone and in one session", ""]
        lines += stops_table(
            names, kernel, ntdd_stops(folder, names, False), ntdd_stops(folder, names, True)
        )
        checks = marked(folder, names)
        target = folder / "marked"
        judged: Tests = {}
        for name in checks:
            say(f"kernel, marked: {name}")
            judged[name] = kernel_verdicts(target / name, TIMEOUT)
        alone, together = ntdd_tests(target, checks, False), ntdd_tests(target, checks, True)
        lines += ["", *tests_table(checks, judged, alone, together)]
        if not args.no_timing:
            ends = [n for n in names if kernel[n] is None]  # the notebooks Run All runs through
            places = {n: target if n in checks else folder for n in ends}
            untested = {n for n in ends if n not in checks}
            lines += ["", *cost(places, untested, args.rounds, args.warmup, args.heavy, args.cold)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
