"""`--ntdd-reuse`: what a run costs when nothing, one notebook, one helper or a package changed.

    python benchmarks/reuse.py --rounds 2

Twenty real notebooks from `tests/corpus` that pass and take seconds each
(`good/`, less nbmake's `raises_tag`, and three d2l chapters of `untested/`,
two of which import the offline `d2l` library beside them), each one test
(`--ntdd-run-untested`), and a distribution of no use to them installed on
`PYTHONPATH` (a `*.dist-info` folder). Each round starts from a fresh copy and
an empty store, and runs five steps in order, each `pytest --ntdd
--ntdd-reuse store` in its own session (`start_new_session=True`),
`-p no:randomly`, pytest's cache off (`--cache`: on, as in a user's own runs):

1. first: every notebook runs and is stored;
2. unchanged: every notebook reused (the goal: at most 5 % of the first's wall);
   beside it, the same command with `--co`: pytest's start and the collection,
   which every run pays, reused or not;
3. one notebook edited: it runs, the others are reused;
4. a helper module edited (`d2l/torch.py`): the notebooks that import it run;
5. a package's version changed: every notebook runs.

Wall and CPU time (user + system of the pytest process) are kept for each
step; each step's ratio to the first is computed round by round
(`pairs.ratio`), from runs made side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pairs import Figure, ratio
from run import pytest_cmd

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "tests" / "corpus"
LEFT_OUT = {"nbmake__raises_tag.ipynb"}  # it raises on purpose, marked for nbmake
USING_D2L = ("d2l-pytorch-colab__custom-layer.ipynb", "d2l-pytorch-colab__lazy-init.ipynb")
# From untested/ too, without d2l. (Not `read-write`: it saves files that its code names,
# so the second run finds them new, and only the third reuses it.)
OTHERS = ("d2l-pytorch-colab__subword-embedding.ipynb",)
EDITED = "nbclient__Factorials.ipynb"
DIST = "ntdd_bench_dist-{}.dist-info"
METADATA = "Metadata-Version: 2.1\nName: ntdd-bench-dist\nVersion: {}\n"


def notebooks(folder: Path) -> list[str]:
    """The twenty notebooks, copied into *folder* with the `d2l` library two of them import."""
    names = []
    for source in sorted((CORPUS / "good").glob("*.ipynb")):
        if source.name not in LEFT_OUT:
            shutil.copy(source, folder / source.name)
            names.append(source.name)
    for name in (*USING_D2L, *OTHERS):
        shutil.copy(CORPUS / "untested" / name, folder / name)
        names.append(name)
    shutil.copytree(CORPUS / "training" / "d2l", folder / "d2l")
    return names


def install(site: Path, version: str) -> None:
    """The distribution at *version*, as pip leaves one: `name-version.dist-info/METADATA`."""
    for old in site.glob(DIST.format("*")):
        shutil.rmtree(old)
    folder = site / DIST.format(version)
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(METADATA.format(version))


def edit_notebook(folder: Path) -> None:
    path = folder / EDITED
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cells"].append(
        {"cell_type": "markdown", "id": "bench-edit", "metadata": {}, "source": "An edit."}
    )
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def edit_helper(folder: Path) -> None:
    with (folder / "d2l" / "torch.py").open("a", encoding="utf-8") as f:
        f.write("\n# an edit\n")


@dataclass
class Step:
    name: str
    change: Callable[[Path, Path], None]  # (folder, site)
    extra: tuple[str, ...] = ()  # arguments of this step's pytest alone
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    counts: str = ""


STEPS = [
    Step("first run", lambda folder, site: None),
    Step("unchanged", lambda folder, site: None),
    # The floor of any run: pytest's start and the notebooks' collection, nothing run.
    Step("(collection alone: --co)", lambda folder, site: None, ("--co",)),
    Step("one notebook edited", lambda folder, site: edit_notebook(folder)),
    Step("a helper module edited", lambda folder, site: edit_helper(folder)),
    Step("a package version changed", lambda folder, site: install(site, "1.1")),
]


def measure(cmd: list[str], cwd: Path, site: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of one pytest, in its own session; its totals line."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(site)])
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, start_new_session=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}")
    totals = [line for line in done.stdout.splitlines() if re.search(r" in [\d.]+s", line)]
    counts = re.sub(r" in [\d.]+s.*", "", totals[-1]).strip("= ") if totals else "?"
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, counts


def one_round(number: int, cache: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="ntdd-reuse-") as scratch:
        folder, site = Path(scratch) / "notebooks", Path(scratch) / "site"
        folder.mkdir()
        names = notebooks(folder)
        install(site, "1.0")
        cmd = pytest_cmd(
            "ntdd", "-p", "no:randomly", "--ntdd", "--ntdd-run-untested",
            "--ntdd-reuse", "store", *names, cache=cache,
        )  # fmt: skip
        for step in STEPS:
            step.change(folder, site)
            wall, cpu, counts = measure([*cmd, *step.extra], folder, site)
            step.walls.append(wall)
            step.cpus.append(cpu)
            step.counts = counts
            print(f"  round {number}, {step.name}: wall {wall:.2f} s, CPU {cpu:.2f} s, {counts}",
                  file=sys.stderr, flush=True)  # fmt: skip


def seconds(value: float) -> str:
    return f"{value:.2f} s"


def share(value: float) -> str:
    return f"{100 * value:.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--cache",
        action="store_true",
        help="pytest's cache on, as in a user's own runs: ntdd's module cache then spares "
        "a reused notebook's collection the module's building",
    )
    args = parser.parse_args(argv)
    for number in range(1, args.rounds + 1):
        one_round(number, args.cache)
    first_wall, first_cpu = Figure(tuple(STEPS[0].walls)), Figure(tuple(STEPS[0].cpus))
    print("| step | pytest says | wall | CPU | wall ÷ first | CPU ÷ first |")
    print("|---|---|---|---|---|---|")
    for step in STEPS:
        wall, cpu = Figure(tuple(step.walls)), Figure(tuple(step.cpus))
        of_wall, of_cpu = ratio(wall, first_wall), ratio(cpu, first_cpu)
        print(
            f"| {step.name} | {step.counts} | {wall.describe(seconds)} | {cpu.describe(seconds)} "
            f"| {of_wall.describe(share)} | {of_cpu.describe(share)} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
