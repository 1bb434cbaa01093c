"""Smoke mode on real training notebooks: its cost, and whether tests and faults keep their teeth.

    python benchmarks/smoke.py                        # every real training notebook, 3 rounds
    python benchmarks/smoke.py --runs 5 --case d2l-pytorch-colab__lenet
    python benchmarks/smoke.py --no-faults            # the CPU table and the tests' agreement only
    python benchmarks/smoke.py --no-long              # leave out the two long notebooks

The notebooks are the real training notebooks of the faults oracle
(`tests/fault_cases.py`, from `tests/corpus/training/`), each with the tests a
careful user writes, and two of them as their authors run them
(`fault_cases.LONG`: d2l's MLP and LeNet chapters on FashionMNIST's real size,
60,000 images, and their own ten epochs), whose full runs take minutes. For
each:

- `pytest --ntdd` and `pytest --ntdd --ntdd-smoke` run turn about in fresh
  processes (`pairs.interleaved`), with `OMP_NUM_THREADS=1`; each process
  counts whole, start-up included, in CPU time (user and system). The target:
  a smoke run costs at most a tenth of the full run, or under 10 s;
- every test that passes in the full run and is not marked `@full_run` must
  pass in smoke mode too (read from the runs' JUnit XML);
- `ntdd faults` runs in full and in smoke mode (`--smoke`): the faults caught
  in smoke mode ÷ those caught in the full run (target ≥ 95 %); and, fault by
  fault, smoke mode's verdict beside the same bug written in by hand and run
  in smoke mode (`tests/fault_cases.py`'s mutants), as `faults_oracle.py`
  does for full runs; and each fault the full run catches and smoke mode
  does not, with the written-in bug's verdict beside it. Not on the long
  two: a dozen full runs each; their short copies are the same notebooks
  with the same tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from pairs import Figure, interleaved, ratio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fault_cases import CASES, LONG, REAL_TRAINING, Case  # noqa: E402

FLOOR = 10.0  # seconds: a smoke run under this is cheap enough, whatever the full run costs
SHARE = 0.1  # or at most this share of the full run
KILLS = 0.95  # smoke mode catches at least this share of the faults the full run catches


def timed(command: list[str], folder: Path, junit: Path) -> Callable[[], float]:
    """Run *command* in *folder*, its results to *junit*; its CPU time, children included."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)

    def measure() -> float:
        before = _children_cpu()
        done = subprocess.run(
            [*command, f"--junitxml={junit}"], cwd=folder, env=env, capture_output=True, text=True
        )
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}")
        return _children_cpu() - before

    return measure


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def outcomes(junit: Path) -> dict[str, str]:
    """Each test's outcome in a JUnit XML file: passed, failed, error or skipped."""
    found = {}
    for case in ET.parse(junit).iter("testcase"):
        tags = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[case.get("name", "")] = (
            {"failure": "failed"}.get(tags[0], tags[0]) if tags else "passed"
        )
    return found


def costs(notebook: Path, runs: int) -> tuple[dict[str, Figure], dict[str, dict[str, str]]]:
    """The full and the smoke run's CPU, paired, and each one's test outcomes."""
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="]
    junit = {mode: notebook.parent / f"{mode}.xml" for mode in ("full", "smoke")}
    measures = {
        "full": timed([*pytest, "--ntdd", notebook.name], notebook.parent, junit["full"]),
        "smoke": timed(
            [*pytest, "--ntdd", "--ntdd-smoke", notebook.name], notebook.parent, junit["smoke"]
        ),
    }
    figures = interleaved(measures, runs, warmup=0)
    return figures, {mode: outcomes(path) for mode, path in junit.items()}


def faults(case: Case, folder: Path) -> dict[str, dict[str, str]]:
    """`ntdd faults`' verdicts in full and smoke mode, and the written-in bugs' in smoke mode."""
    from ntdd.faults import FAULTS
    from ntdd.faults.command import Request, run_notebook
    from ntdd.faults.results import CAUGHT_BY
    from ntdd.faults.runs import run_session

    notebook = case.notebook(folder / "clean")
    found: dict[str, dict[str, str]] = {}
    baselines = {}
    for mode, smoke in (("full", False), ("smoke", True)):
        report = run_notebook(notebook, Request((str(notebook),), tuple(FAULTS), smoke=smoke))
        found[mode] = {r.name: r.status for r in report.results}
        baselines[mode] = report.baseline
    written = {}
    passing = [t for t, outcome in baselines["smoke"].items() if outcome == "passed"]
    for kind in FAULTS:
        if kind not in case.mutants:
            written[kind] = "not applicable"
            continue
        mutant = case.notebook(folder / kind, case.mutants[kind])
        ran = run_session(mutant, Request((), smoke=True).pytest_args())
        caught = any(ran.tests.get(t) in CAUGHT_BY for t in passing)
        written[kind] = "caught" if caught else "survived"
    found["written in, smoke"] = written
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--case", action="append", choices=[*REAL_TRAINING, *LONG])
    parser.add_argument("--no-faults", action="store_true", help="leave out `ntdd faults`")
    parser.add_argument("--no-long", action="store_true", help="leave out the long notebooks")
    args = parser.parse_args()
    names = args.case or [*REAL_TRAINING, *(() if args.no_long else LONG)]
    cases = {**CASES, **LONG}
    if not args.no_faults:
        import torch

        torch.set_num_threads(1)  # as every run of `ntdd faults` does
    cost = ["| notebook | full run (CPU) | smoke run (CPU) | smoke ÷ full | target met |"]
    cost.append("|---|---|---|---|---|")
    agreement: list[str] = []
    kills = {"full": 0, "smoke": 0, "both": 0}
    oracle = {"agree": 0, "total": 0}
    differences: list[str] = []
    lost: list[str] = []  # caught in the full run, not in smoke mode
    with tempfile.TemporaryDirectory(prefix="ntdd-smoke-") as tmp:
        for name in names:
            notebook = cases[name].notebook(Path(tmp) / name / "runs")
            figures, tests = costs(notebook, args.runs)
            full, smoke = figures["full"], figures["smoke"]
            share = ratio(smoke, full)
            met = smoke.median <= max(full.median * SHARE, FLOOR)
            cost.append(
                f"| {name} | {full.describe(lambda x: f'{x:.1f} s')} | "
                f"{smoke.describe(lambda x: f'{x:.1f} s')} | "
                f"{share.describe(lambda x: f'{x:.2f}')} | {'yes' if met else 'NO'} |"
            )
            print(cost[-1], file=sys.stderr)
            agreement.append(_agreement(name, tests))
            if args.no_faults or name in LONG:
                continue
            verdicts = faults(CASES[name], Path(tmp) / name)
            for kind, status in verdicts["full"].items():
                smoke_status = verdicts["smoke"].get(kind)
                kills["full"] += status == "caught"
                kills["smoke"] += smoke_status == "caught"
                kills["both"] += status == "caught" and smoke_status == "caught"
                written = verdicts["written in, smoke"][kind]
                if status == "caught" and smoke_status != "caught":
                    lost.append(f"{name} {kind}: smoke {smoke_status}, written in {written}")
                oracle["total"] += 1
                oracle["agree"] += smoke_status == written
                if smoke_status != written:
                    differences.append(f"{name} {kind}: smoke {smoke_status}, written in {written}")
            print(f"  {name}: faults {kills}", file=sys.stderr)
    lines = [*cost, "", "tests that pass in the full run and are not marked @full_run:", *agreement]
    if not args.no_faults:
        rate = kills["both"] / kills["full"] if kills["full"] else 1.0
        lines += [
            "",
            f"faults caught: full run {kills['full']}, smoke mode {kills['smoke']}; "
            f"of the full run's, smoke mode catches {kills['both']} ({rate:.0%}; "
            f"target ≥ {KILLS:.0%}: {'met' if rate >= KILLS else 'NOT met'})",
            f"smoke mode's verdicts agree with the bug written in (run in smoke mode): "
            f"{oracle['agree']}/{oracle['total']}",
            *(f"  differs: {line}" for line in differences),
            "caught in the full run, not in smoke mode (beside the bug written in, smoke mode):",
            *(f"  lost: {line}" for line in lost),
        ]
    print("\n".join(lines))
    return 0


def _agreement(name: str, tests: dict[str, dict[str, str]]) -> str:
    full, smoke = tests["full"], tests["smoke"]
    passing = [t for t, outcome in full.items() if outcome == "passed"]
    kept = [t for t in passing if smoke.get(t) != "skipped"]
    lost = [t for t in kept if smoke.get(t) != "passed"]
    skipped = len(passing) - len(kept)
    text = f"- {name}: {len(kept) - len(lost)}/{len(kept)} pass in smoke mode too"
    text += f" ({skipped} marked @full_run)" if skipped else ""
    return text + (f"; NOT: {', '.join(lost)}" if lost else "")


if __name__ == "__main__":
    sys.exit(main())
