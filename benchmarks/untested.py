"""Notebooks without tests: a kernel's Run All, `pytest --ntdd --ntdd-run-untested`, `--nbmake`.

    python benchmarks/untested.py                       # agreement, then 5 paired rounds
    python benchmarks/untested.py --rounds 1 --warmup 0 # a look, not figures
    python benchmarks/untested.py --only hybridize      # the notebooks whose name has it

The notebooks are those of tests/corpus/untested/ and tests/corpus/good/, and
the three of tests/corpus/bad/ that fail as they run, copied into a scratch
folder (some write files beside themselves).

Agreement: for each notebook, whether it runs to its end, and if not at
which cell it stops, as three say it: a kernel's Run All (`run_all` of
tests/oracle.py, the specification), ntdd (the cell that the error of its
one test, `test_notebook_runs_to_the_end`, names) and nbmake (its failing
cell). Cells are numbered as ntdd numbers them: every cell counts, from 1.
Each disagreement with the kernel is listed with both verdicts.

CPU time: `pytest --ntdd --ntdd-run-untested` and `pytest --nbmake` on the
whole folder, in fresh processes, turn about after a warm-up round
(`pairs.py`); user + system time of pytest and its children (nbmake's
kernels), medians with their spread, ratios computed round by round.

Each pytest loads its own plugin and no other (PYTEST_DISABLE_PLUGIN_AUTOLOAD,
`-p`), whatever else is installed. A kernel runs `!pip install` lines, which
ntdd never runs: every process here runs with PIP_NO_INDEX=1, so that they
fail at once and install nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pairs import interleaved, ratio
from run import PY, ROOT, Timed, child_env, s, say, x

sys.path.insert(0, str(ROOT / "tests"))
from oracle import first_failures, run_all  # the tests' oracle

CORPUS = ROOT / "tests" / "corpus"
FAILING_BAD = (
    "nbclient__Skip_Exceptions.ipynb",
    "nbmake__import_errs.ipynb",
    "nbval__exceptions.ipynb",
)
TIMEOUT = 120  # seconds per cell (kernel, nbmake) or per test (ntdd)
# A plugin for the verdict run of nbmake: the failing cell of each notebook, to a file.
NBMAKE_CELLS = """\
import json
import pytest

CELLS = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":
        failure = call.excinfo.value if call.excinfo is not None else None
        result = failure.args[0] if failure is not None and failure.args else None
        error = getattr(result, "error", None)
        if failure is None:
            CELLS[item.path.name] = None
        else:  # 0: failed, at no cell nbmake names
            CELLS[item.path.name] = error.failing_cell_index + 1 if error is not None else 0
    return report


def pytest_sessionfinish(session):
    with open("nbmake-cells.json", "w") as f:
        json.dump(CELLS, f)
"""

Verdicts = dict[str, int | None]  # notebook -> the cell where it stops; None: it runs


def notebooks(folder: Path, only: str | None) -> list[str]:
    """The notebooks, copied into *folder*: their names."""
    sources = [
        *sorted((CORPUS / "untested").glob("*.ipynb")),
        *sorted((CORPUS / "good").glob("*.ipynb")),
        *(CORPUS / "bad" / name for name in FAILING_BAD),
    ]
    return copied(sources, folder, only)


def copied(sources: list[Path], folder: Path, only: str | None) -> list[str]:
    """*sources* whose name holds *only* (all without it), copied into *folder*, a
    rootdir of its own: their names."""
    names = []
    for source in sources:
        if only is None or only in source.name:
            shutil.copy(source, folder / source.name)
            names.append(source.name)
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the rootdir
    return names


def kernel_verdicts(folder: Path, names: list[str]) -> Verdicts:
    verdicts = {}
    for name in names:
        say(f"kernel: {name}")
        verdicts[name] = run_all(folder / name, TIMEOUT)
    return verdicts


def ntdd_verdicts(folder: Path, names: list[str]) -> Verdicts:
    cmd = pytest_cmd("ntdd.plugin", *ntdd_args(names), "--junitxml=ntdd.xml")
    subprocess.run(cmd, cwd=folder, env=child_env(), stdout=subprocess.DEVNULL, check=False)
    found = first_failures(folder / "ntdd.xml")
    return {name: found.get(name) for name in names}


def nbmake_verdicts(folder: Path, names: list[str]) -> Verdicts:
    (folder / "ntdd_bench_nbmake_cells.py").write_text(NBMAKE_CELLS, encoding="utf-8")
    env = {**child_env(), "PYTHONPATH": os.pathsep.join((str(folder), child_env()["PYTHONPATH"]))}
    cmd = pytest_cmd("nbmake.pytest_plugin", *nbmake_args(names), "-p", "ntdd_bench_nbmake_cells")
    subprocess.run(cmd, cwd=folder, env=env, stdout=subprocess.DEVNULL, check=False)
    found = json.loads((folder / "nbmake-cells.json").read_text(encoding="utf-8"))
    return {name: found.get(name) for name in names}


def pytest_cmd(plugin: str, *args: str, cache: bool = False) -> list[str]:
    """pytest with *plugin* alone (autoloading is off: see `main`), its cache on or off."""
    cached = [] if cache else ["-p", "no:cacheprovider"]
    return [
        PY,
        "-m",
        "pytest",
        "-q",
        "-o",
        "addopts=",
        "-p",
        plugin,
        *cached,
        "-W",
        "ignore",
        *args,
    ]


def ntdd_args(names: list[str]) -> list[str]:
    return ["--ntdd", "--ntdd-run-untested", f"--ntdd-timeout={TIMEOUT}", *names]


def nbmake_args(names: list[str]) -> list[str]:
    return ["--nbmake", f"--nbmake-timeout={TIMEOUT}", *names]


def verdict(cell: int | None) -> str:
    return "runs" if cell is None else f"cell {cell}"


def agreement(names: list[str], kernel: Verdicts, tools: dict[str, Verdicts]) -> list[str]:
    """The agreement table, and each notebook where a tool differs from the kernel."""
    lines = [
        f"## Agreement with a kernel's Run All ({len(names)} notebooks)",
        "",
        "| | runs or fails as the kernel | stops at the kernel's cell | disagrees on |",
        "|---|---|---|---|",
    ]
    for tool, found in tools.items():
        same_outcome = [n for n in names if (found[n] is None) == (kernel[n] is None)]
        same_cell = [n for n in names if found[n] == kernel[n]]
        differ = ", ".join(n for n in names if found[n] != kernel[n]) or "none"
        lines.append(
            f"| {tool} | {len(same_outcome)}/{len(names)} | {len(same_cell)}/{len(names)} "
            f"| {differ} |"
        )
    lines += ["", "| notebook | kernel | " + " | ".join(tools) + " |", "|---|---|---|---|"]
    for name in names:
        marked = [
            verdict(found[name]) if found[name] == kernel[name] else f"**{verdict(found[name])}**"
            for found in tools.values()
        ]
        lines.append(f"| {name} | {verdict(kernel[name])} | " + " | ".join(marked) + " |")
    return lines


def cpu_time(folder: Path, names: list[str], rounds: int, warmup: int) -> list[str]:
    """ntdd and nbmake on the whole folder, turn about; CPU and wall time, paired."""
    measures = {
        "ntdd": Timed(pytest_cmd("ntdd.plugin", *ntdd_args(names), cache=True), folder),
        "nbmake": Timed(
            pytest_cmd("nbmake.pytest_plugin", *nbmake_args(names), cache=True), folder
        ),
    }

    def progress(done: int, total: int) -> None:
        say(f"round {done} of {total}" if done > 0 else "warm-up")

    walls = interleaved(measures, rounds, warmup, progress)
    cpus = {name: measures[name].cpu_figure(walls[name]) for name in measures}
    lines = [
        f"## CPU time ({len(names)} notebooks, {rounds} paired rounds after {warmup} warm-up)",
        "",
        "| runner | CPU time, median (min–max) | wall time | nbmake ÷ ntdd, CPU, paired "
        "| wall, paired |",
        "|---|---|---|---|---|",
    ]
    labels = {"ntdd": "`pytest --ntdd --ntdd-run-untested`", "nbmake": "`pytest --nbmake`"}
    for name, label in labels.items():
        slower = ["", ""]
        if name == "nbmake":
            slower = [ratio(f["nbmake"], f["ntdd"]).describe(x) for f in (cpus, walls)]
        cells = [label, cpus[name].describe(s), walls[name].describe(s), *slower]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--only", help="only the notebooks whose file name holds this")
    parser.add_argument("--no-timing", action="store_true", help="the agreement only")
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args(argv)
    os.environ["PIP_NO_INDEX"] = "1"  # kernels and every child inherit these
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_PLUGINS", None)
    folder = Path(tempfile.mkdtemp(prefix="ntdd-untested-"))
    try:
        names = notebooks(folder, args.only)
        kernel = kernel_verdicts(folder, names)
        say("ntdd, nbmake: verdicts")
        tools = {"ntdd": ntdd_verdicts(folder, names), "nbmake": nbmake_verdicts(folder, names)}
        lines = ["# Notebooks without tests: Run All, `--ntdd-run-untested`, `--nbmake`", ""]
        lines += agreement(names, kernel, tools)
        if not args.no_timing:
            lines += ["", *cpu_time(folder, names, args.rounds, args.warmup)]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
