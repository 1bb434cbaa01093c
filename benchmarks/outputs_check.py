"""Checking saved outputs in ntdd's run against nbval's kernel: time, and the verdicts, paired.

    python benchmarks/outputs_check.py              # 5 paired rounds after a warm-up
    python benchmarks/outputs_check.py --rounds 2   # a look, not figures
    python benchmarks/outputs_check.py --quick      # 1 round, 3 notebooks: a smoke check

What a user replaces, on the same notebooks, each run a fresh pytest process
with only its plugins loaded (as `run.py` runs its tools: bytecode cached,
pytest's cache on, `OMP_NUM_THREADS=1`):

- lax: `pytest --nbval-lax --nbval-current-env` (nbval alone: its kernel runs
  every cell and checks the marked ones) against `pytest --ntdd
  --ntdd-outputs-lax` (ntdd's run: the notebook's tests, and the same checks);
- strict: `pytest --nbval --nbval-current-env` against `pytest --ntdd
  --ntdd-outputs`;
- lax beside ntdd: `pytest --ntdd --nbval-lax --nbval-current-env` (the
  workflow `ntdd init` writes by default: ntdd runs the tests, nbval's kernel
  every cell again) against `pytest --ntdd --ntdd-outputs-lax`.

nbval's side runs with ntdd installed and dormant, as a project has it.

Each notebook runs alone, then all of them in one run (`all`), each group
turn about after a warm-up round (`pairs.interleaved`). Figures are the
median (lowest–highest) of wall and CPU seconds (user + system of the pytest
process and its children, nbval's kernel included), and each nbval ÷ ntdd
ratio is computed round by round from the pair of runs made side by side.

Then the strict pair runs once more over all the notebooks, with junitxml:
for every cell ntdd checks, its verdict beside nbval's on the same cell, with
the per-cell mapping of `tests/test_outputs_nbval_oracle.py` (nbval's `Cell
K`, its K-th code cell, is ntdd's `outputs_of_cell_N`, every cell counted).
nbval runs alone there, so `# TEST` cells are compared as cells too. Each
disagreement is printed with both messages.

Notebooks: real ones, with saved outputs, that run on CPU in seconds with
nothing missing, under both tools. A notebook without a `# TEST` cell gets
one appended (`workloads.STATE_TEST`), so that `--ntdd` has tests to run:

- `tests/corpus/good/` (the same files as `../shared/corpus/good/`; see
  SOURCES.md), all but the two with no saved outputs (nbmake__raises_tag,
  testbook__inject): the d2l chapters autograd, information-theory,
  init-param, linear-algebra, model-construction, ndarray,
  padding-and-strides, parameters; nbclient's Clear_Output, Factorials, SVG,
  Skip_Exceptions_with_Cell_Tags, UnicodePy3, update-display-id; nbval's
  latex-example and test_coalesce;
- `tests/corpus/untested/`: d2l's lookup-api and subword-embedding;
- `tests/corpus/real/`: handson-ml3's math_linear_algebra (138 checked cells,
  numpy and matplotlib);
- `sample_notebooks/`: data_prep, failure_modes, tiny_classifier.

Left out: tools_matplotlib (a cell needs ffmpeg), the micrograd lectures
(graphviz), read-write (writes files beside itself), the training and d2l
folders (the `d2l` package), fastcore's (fastcore and nbdev).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import workloads
from pairs import Figure, interleaved, ratio
from run import Timed, pytest_cmd, pytest_without, run, s, say, x

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_outputs_nbval_oracle import Row, Verdict, junit_verdicts, rows  # noqa: E402

GOOD = "tests/corpus/good"
NOTEBOOKS: tuple[tuple[str, str], ...] = (
    *(
        (GOOD, f"d2l-pytorch-colab__{name}.ipynb")
        for name in (
            "autograd",
            "information-theory",
            "init-param",
            "linear-algebra",
            "model-construction",
            "ndarray",
            "padding-and-strides",
            "parameters",
        )
    ),
    *(
        (GOOD, f"nbclient__{name}.ipynb")
        for name in (
            "Clear_Output",
            "Factorials",
            "SVG",
            "Skip_Exceptions_with_Cell_Tags",
            "UnicodePy3",
            "update-display-id",
        )
    ),
    (GOOD, "nbval__latex-example.ipynb"),
    (GOOD, "nbval__test_coalesce.ipynb"),
    ("tests/corpus/untested", "d2l-pytorch-colab__lookup-api.ipynb"),
    ("tests/corpus/untested", "d2l-pytorch-colab__subword-embedding.ipynb"),
    ("tests/corpus/real", "handson-ml3__math_linear_algebra.ipynb"),
    ("sample_notebooks", "data_prep.ipynb"),
    ("sample_notebooks", "failure_modes.ipynb"),
    ("sample_notebooks", "tiny_classifier.ipynb"),
)
QUICK = ("nbclient__Factorials.ipynb", "nbval__test_coalesce.ipynb", "data_prep.ipynb")
MODES = {  # mode: (today's command's options, ntdd's)
    "lax": (("--nbval-lax", "--nbval-current-env"), ("--ntdd", "--ntdd-outputs-lax")),
    "strict": (("--nbval", "--nbval-current-env"), ("--ntdd", "--ntdd-outputs")),
    "lax beside ntdd": (
        ("--ntdd", "--nbval-lax", "--nbval-current-env"),
        ("--ntdd", "--ntdd-outputs-lax"),
    ),
}
ALL = "all"
RUN_BY_NTDD = "run by ntdd"  # nbval's skip of a `# TEST` cell beside ntdd


def prepare(folder: Path, chosen: Sequence[tuple[str, str]]) -> list[str]:
    """The *chosen* notebooks copied into *folder*, a test cell appended where none is."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(workloads.SAMPLES / "data", folder / "data", dirs_exist_ok=True)
    for where, name in chosen:
        notebook = json.loads((ROOT / where / name).read_text(encoding="utf-8"))
        if not any("# TEST" in "".join(c.get("source", "")) for c in notebook["cells"]):
            notebook["cells"].append(workloads.code_cell(workloads.STATE_TEST))
        (folder / name).write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
    return [name for _, name in chosen]


def commands(mode: str, names: Sequence[str], *extra: str) -> tuple[list[str], list[str]]:
    """Today's command and ntdd's, for *mode*, on *names*: nbval beside ntdd, ntdd alone."""
    today, new = MODES[mode]
    nbval = pytest_without(["nbmake"], *today, *extra, *names, cache=True)
    return nbval, pytest_cmd("ntdd", *new, *extra, *names, cache=True)


def measure(
    folder: Path, group: str, names: Sequence[str], rounds: int, warmup: int
) -> dict[str, tuple[Figure, Figure]]:
    """Each side's (wall, CPU) figures for *names* in one run, by "mode side"."""
    timed = {}
    for mode in MODES:
        nbval, ntdd = commands(mode, names)
        timed[f"{mode} nbval"] = Timed(nbval, folder)
        timed[f"{mode} ntdd"] = Timed(ntdd, folder)

    def progress(done: int, total: int) -> None:
        say(f"{group}: {'warm-up' if done <= 0 else f'round {done}/{total}'} done")

    walls = interleaved(timed, rounds, warmup, progress)
    return {name: (wall, timed[name].cpu_figure(wall)) for name, wall in walls.items()}


def table(figures: dict[str, dict[str, tuple[Figure, Figure]]], mode: str) -> str:
    """One mode's figures, a row per group, as markdown."""
    today, new = MODES[mode]
    lines = [
        f"### {mode}: `pytest {' '.join(today)}` ÷ `pytest {' '.join(new)}`",
        "",
        "| notebook | nbval wall | ntdd wall | wall ÷, paired "
        "| nbval CPU | ntdd CPU | CPU ÷, paired |",
        "|---|---|---|---|---|---|---|",
    ]
    for group, found in figures.items():
        (nbval_wall, nbval_cpu), (ntdd_wall, ntdd_cpu) = (
            found[f"{mode} nbval"],
            found[f"{mode} ntdd"],
        )
        lines.append(
            f"| {group} | {nbval_wall.describe(s)} | {ntdd_wall.describe(s)} | "
            f"{ratio(nbval_wall, ntdd_wall).describe(x)} | {nbval_cpu.describe(s)} | "
            f"{ntdd_cpu.describe(s)} | {ratio(nbval_cpu, ntdd_cpu).describe(x)} |"
        )
    alone = [ratio(f[f"{mode} nbval"][0], f[f"{mode} ntdd"][0]).median for g, f in figures.items()]
    alone = alone[:-1] if ALL in figures else alone
    if len(alone) > 1:
        spread = Figure(tuple(alone))
        lines += ["", f"Notebooks alone, their median wall ratios: {spread.describe(x)}."]
    return "\n".join(lines)


def agreement(folder: Path, names: Sequence[str]) -> list[Row]:
    """Each cell ntdd checks in the strict pair, with nbval's verdict: one run each."""
    found = {}
    for side, command in zip(("nbval", "ntdd"), commands("strict", names), strict=True):
        if side == "ntdd":  # its warnings shown under their cells, as a kernel shows them
            at = command.index("-W")
            command = command[:at] + command[at + 2 :]
        xml = folder / f"{side}.xml"
        run([*command, "--color=no", f"--junitxml={xml}"], folder)
        found[side] = junit_verdicts(xml, names)
    return rows(found["ntdd"], found["nbval"], {name: folder / name for name in names})


def gist(verdict: Verdict | None, lines: int = 3) -> str:
    """A verdict's outcome and the start of its message: what differs, not the cell's input."""
    if verdict is None:
        return "no item"
    text = verdict.message.splitlines()
    if "Traceback:" in text:  # nbval's: "Cell K: why", the input, then what differs
        why = next((t for t in text if t.startswith("Cell ")), "")
        text = [why, *text[text.index("Traceback:") + 1 :]]
    if text and text[0].endswith("its outputs differ from those saved in the notebook"):
        text = [t for t in text[1:] if not t.strip().startswith(("--- saved", "+++ fresh", "@@"))]
    shown = [t.strip() for t in text if t.strip()][:lines]
    return verdict.outcome + (": " + " | ".join(shown) if shown else "")


def report_agreement(found: list[Row], names: Sequence[str]) -> None:
    """Cells agreeing out of those compared, per notebook and in all, each other one shown."""
    print("\n### strict: verdicts on the cells ntdd checks (agreeing / compared)\n")
    compared = agreeing = 0
    for name in names:
        cells = [r for r in found if r.notebook == name and not _left_to_ntdd(r)]
        same = sum(r.agrees for r in cells)
        compared, agreeing = compared + len(cells), agreeing + same
        print(f"- {name}: {same} / {len(cells)}")
        for row in cells:
            if not row.agrees:
                print(f"  - cell {row.cell}: ntdd {gist(row.ntdd)}")
                print(f"    nbval {gist(row.nbval)}")
    share = agreeing / compared if compared else 0.0
    print(f"\nAll: {agreeing} / {compared} cells agree ({share:.1%}).")
    tests = sum(_left_to_ntdd(r) for r in found)
    print(f"Not compared: {tests} `# TEST` cell(s) that nbval leaves to ntdd ({RUN_BY_NTDD!r}).")


def _left_to_ntdd(row: Row) -> bool:
    """A `# TEST` cell, which nbval beside ntdd skips: ntdd's verdict alone, not compared."""
    theirs = row.nbval
    return theirs is not None and theirs.outcome == "skipped" and RUN_BY_NTDD in theirs.message


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1, help="rounds run and thrown away")
    parser.add_argument("--quick", action="store_true", help="1 round, 3 notebooks: a smoke check")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    chosen = [n for n in NOTEBOOKS if n[1] in QUICK] if args.quick else list(NOTEBOOKS)
    print(
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at the start; {len(chosen)} notebooks, "
        f"{args.warmup} warm-up + {rounds} round(s) per group\n"
    )
    with tempfile.TemporaryDirectory(prefix="ntdd-outputs-check-") as scratch:
        folder = Path(scratch)
        names = prepare(folder, chosen)
        figures = {}
        for name in names:
            figures[name] = measure(folder, name, [name], rounds, args.warmup)
        figures[ALL] = measure(folder, ALL, names, rounds, args.warmup)
        for mode in MODES:
            print(table(figures, mode) + "\n", flush=True)
        report_agreement(agreement(folder, names), names)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
