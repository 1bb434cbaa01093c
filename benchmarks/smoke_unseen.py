"""Smoke mode on training notebooks it was not tuned on: false reds, crashes, cost, faults.

    python benchmarks/smoke_unseen.py                     # every notebook, 2 rounds, faults once
    python benchmarks/smoke_unseen.py --tree ../before    # another checkout of ntdd, same venv
    python benchmarks/smoke_unseen.py --no-faults --case NYU-DLSP20__05-regression

The notebooks are real training notebooks from courses and books, fetched
after smoke mode was written (`tests/unseen_cases.py`, from
`tests/corpus/training/`), each with the tests a careful user writes, written
against full runs only. For each, and in total:

- `pytest --ntdd` and `pytest --ntdd --ntdd-smoke` run turn about
  (`pairs.interleaved`) after a warm-up (a smoke run, discarded: it warms the
  same imports and files as a full run, and some full runs take minutes), each
  in a fresh process in a session of its own, with `OMP_NUM_THREADS=1` and
  `-p no:randomly`; each process counts whole in CPU time (user and system,
  start-up included); smoke ÷ full is computed round by round. Goal: ≤ 1.0
  on every notebook, ≤ 0.3 where the full run takes more than 30 s;
- the tests that pass in every full run and fail in a smoke run (the
  warm-up's included; read from the runs' JUnit XML): false reds, with how
  often where not every time;
- the setup cells that raise in smoke mode only (named by the failure
  messages, "setup cell N");
- the loops smoke mode capped, as its "ntdd: smoke mode capped:" summary
  lists them, and any it says it left alone;
- `ntdd faults --smoke` ÷ `ntdd faults`: the faults each catches (leave out
  with `--no-faults`, the slow part; not run where the full run takes more
  than `--faults-limit` seconds of CPU: a dozen reruns of a trainings of
  minutes);
- where the measured tree has `ntdd mark --smoke`: the false reds left after
  its proposal is written (`--write`) into a copy.

`--tree PATH` measures another checkout of ntdd (put first on PYTHONPATH;
the same interpreter and packages), e.g. a worktree of an older commit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pairs import Figure, interleaved, ratio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from unseen_cases import UNSEEN  # noqa: E402

CEILING = 1.0  # smoke ÷ full, on every notebook
LONG_CEILING = 0.3  # smoke ÷ full where the full run takes more than LONG seconds of CPU
LONG = 30.0
SETUP_CELL = re.compile(r"\(setup cell (\d+)[^)]*\)")


@dataclass
class Run:
    """A mode's runs of a notebook: each test's outcomes (one a run), and the latest run's
    setup cells that raised and output."""

    tests: dict[str, list[str]] = field(default_factory=dict)
    raised: set[str] = field(default_factory=set)
    output: str = ""


def environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(tree)}


def timed(
    command: list[str], folder: Path, tree: Path, into: Run, label: str
) -> Callable[[], float]:
    """Run *command* in *folder* in a session of its own; its CPU time, children included.
    Each run's outcomes replace the last run's in *into*."""
    junit = folder / f"{label}.xml"

    def measure() -> float:
        before = _children_cpu()
        done = subprocess.run(
            [*command, f"--junitxml={junit}"],
            cwd=folder,
            env=environment(tree),
            capture_output=True,
            text=True,
            start_new_session=True,
        )
        spent = _children_cpu() - before
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}")
        tests, into.raised = outcomes(junit)
        for test, outcome in tests.items():
            into.tests.setdefault(test, []).append(outcome)
        into.output = done.stdout
        return spent

    return measure


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def outcomes(junit: Path) -> tuple[dict[str, str], set[str]]:
    """Each test's outcome in a JUnit XML file, and the setup cells its failures name."""
    found: dict[str, str] = {}
    raised: set[str] = set()
    for case in ET.parse(junit).iter("testcase"):
        tags = [child for child in case if child.tag in ("failure", "error", "skipped")]
        name = case.get("name", "")
        found[name] = {"failure": "failed"}.get(tags[0].tag, tags[0].tag) if tags else "passed"
        for tag in tags:
            if tag.tag in ("failure", "error"):
                text = f"{tag.get('message', '')}\n{tag.text or ''}"
                raised.update(f"setup cell {n}" for n in SETUP_CELL.findall(text))
    return found, raised


def smoke_notes(output: str) -> tuple[list[str], list[str]]:
    """The loops smoke mode capped, and those it says it left alone, from its summary."""
    capped: list[str] = []
    left: list[str] = []
    section = False
    for line in output.splitlines():
        if line.startswith("ntdd: smoke mode"):
            section = line.rstrip().endswith(":")
            continue
        if section and line.startswith("  "):
            note = line.strip()
            (left if "left" in note or "in full" in note else capped).append(note)
        else:
            section = False
    return capped, left


def pytest_command(smoke: bool, notebook: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        "-o", "addopts=", "-rN", "--ntdd", *(["--ntdd-smoke"] if smoke else []), notebook,
    ]  # fmt: skip


def false_reds(full: dict[str, list[str]], smoke: dict[str, list[str]]) -> list[str]:
    """Tests that pass in every full run and fail (or error) in a smoke run, with how often
    where not always; skipped ones are not."""
    found = []
    for test, outcomes in full.items():
        red = sum(o in ("failed", "error") for o in smoke.get(test, []))
        if set(outcomes) == {"passed"} and red:
            runs = len(smoke[test])
            found.append(test if red == runs else f"{test} (in {red} of {runs} smoke runs)")
    return found


def caught(tree: Path, notebook: Path, smoke: bool) -> tuple[int, int]:
    """`ntdd faults`' caught and applicable counts on *notebook*."""
    done = subprocess.run(
        [sys.executable, "-m", "ntdd", "faults", "--json", *(["--smoke"] * smoke), notebook.name],
        cwd=notebook.parent,
        env=environment(tree),
        capture_output=True,
        text=True,
        start_new_session=True,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise RuntimeError(f"ntdd faults said:\n{done.stdout}\n{done.stderr}") from error
    return report["caught"], report["applicable"]


def has_mark_smoke(tree: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "ntdd", "mark", "--help"],
        env=environment(tree),
        capture_output=True,
        text=True,
    )
    return "--smoke" in done.stdout


def after_mark(tree: Path, name: str, folder: Path, full: dict[str, list[str]]) -> list[str]:
    """The false reds left once `ntdd mark --smoke --write` marked a copy of the notebook."""
    notebook = UNSEEN[name].notebook(folder)
    done = subprocess.run(
        [sys.executable, "-m", "ntdd", "mark", "--smoke", "--write", notebook.name],
        cwd=folder,
        env=environment(tree),
        capture_output=True,
        text=True,
        start_new_session=True,
    )
    if done.returncode == 2:  # bad input: its own words, not a figure
        raise SystemExit(f"ntdd mark --smoke on {name}: {done.stderr[-2000:]}")
    # 1: its check after writing found a test still red (or a cut no mark cures): the
    # smoke run below counts those.
    run = Run()
    timed(pytest_command(True, notebook.name), folder, tree, run, "smoke")()
    return false_reds(full, run.tests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1, help="smoke runs discarded first")
    parser.add_argument("--case", action="append", choices=list(UNSEEN))
    parser.add_argument("--no-faults", action="store_true", help="leave out `ntdd faults`")
    parser.add_argument(
        "--faults-limit", type=float, default=60.0, help="no faults where a full run takes longer"
    )
    parser.add_argument("--tree", type=Path, default=HERE.parent, help="the ntdd checkout to run")
    args = parser.parse_args()
    tree = args.tree.resolve()
    names = args.case or list(UNSEEN)
    marking = has_mark_smoke(tree)
    rows = [
        "| notebook | tests | full (CPU) | smoke (CPU) | smoke ÷ full | false reds |"
        + (" after mark |" if marking else "")
        + " smoke-only raising cells | capped | faults full | faults smoke |",
        "|---|---|---|---|---|---|" + ("---|" if marking else "") + "---|---|---|---|",
    ]
    details: list[str] = []
    shares: dict[str, Figure] = {}
    fulls: dict[str, Figure] = {}
    marked: list[str] = []
    totals = {"tests": 0, "passing": 0, "reds": 0, "marked reds": 0, "raised": 0, "capped": 0}
    kills = {"full": 0, "smoke": 0, "applicable": 0}
    with tempfile.TemporaryDirectory(prefix="ntdd-unseen-") as tmp:
        for name in names:
            notebook = UNSEEN[name].notebook(Path(tmp) / name / "runs")
            runs = {"full": Run(), "smoke": Run()}
            measures = {
                mode: timed(
                    pytest_command(mode == "smoke", notebook.name), notebook.parent, tree, run, mode
                )
                for mode, run in runs.items()
            }
            for _ in range(args.warmup):
                measures["smoke"]()
            figures = interleaved(measures, args.runs, warmup=0)
            full, smoke = runs["full"], runs["smoke"]
            share = ratio(figures["smoke"], figures["full"])
            shares[name], fulls[name] = share, figures["full"]
            reds = false_reds(full.tests, smoke.tests)
            raised = sorted(smoke.raised - full.raised, key=lambda c: int(c.split()[-1]))
            capped, left = smoke_notes(smoke.output)
            passing = sum(set(o) == {"passed"} for o in full.tests.values())
            totals["tests"] += len(full.tests)
            totals["passing"] += passing
            totals["reds"] += len(reds)
            totals["raised"] += len(raised)
            totals["capped"] += len(capped)
            flag = _flag(share, figures["full"])
            row = (
                f"| {name} | {passing}/{len(full.tests)} | "
                f"{figures['full'].describe(lambda x: f'{x:.1f} s')} | "
                f"{figures['smoke'].describe(lambda x: f'{x:.1f} s')} | "
                f"{share.describe(lambda x: f'{x:.2f}')}{flag} | {len(reds)} |"
            )
            if marking:
                marked = after_mark(tree, name, Path(tmp) / name / "marked", full.tests)
                totals["marked reds"] += len(marked)
                row += f" {len(marked)} |"
            row += f" {', '.join(raised) or '-'} | {len(capped)} |"
            if args.no_faults or figures["full"].median > args.faults_limit:
                row += " - | - |"
            else:
                (full_caught, applicable), (smoke_caught, _) = (
                    caught(tree, notebook, smoke=False),
                    caught(tree, notebook, smoke=True),
                )
                kills["full"] += full_caught
                kills["smoke"] += smoke_caught
                kills["applicable"] += applicable
                row += f" {full_caught}/{applicable} | {smoke_caught}/{applicable} |"
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
            found = _details(name, reds, raised, capped, left, smoke)
            if marking:
                found.append(f"  after `ntdd mark --smoke --write`: {len(marked)} false reds")
                found += [f"    still red: {t}" for t in marked]
            print("\n".join(found), file=sys.stderr, flush=True)
            details += found
    lines = [*rows, "", *_totals(shares, fulls, totals, kills, args.no_faults, marking), ""]
    print("\n".join([*lines, *details]))
    return 0


def _flag(share: Figure, full: Figure) -> str:
    if share.median > CEILING:
        return " **> 1.0**"
    if full.median > LONG and share.median > LONG_CEILING:
        return " **> 0.3**"
    return ""


def _details(
    name: str, reds: list[str], raised: list[str], capped: list[str], left: list[str], smoke: Run
) -> list[str]:
    lines = [f"{name}:"]
    lines += [f"  false red: {t}" for t in reds]
    for cell in raised:
        lines.append(f"  raises in smoke mode only: {cell}")
        lines += [f"    {line}" for line in _errors(smoke.output, cell)]
    lines += [f"  capped: {note}" for note in capped]
    lines += [f"  left alone: {note}" for note in left]
    return lines


def _errors(output: str, cell: str) -> list[str]:
    """The `E ...` lines of the failure that names *cell*, once each."""
    found: list[str] = []
    blocks = output.split("\n___")
    for block in blocks:
        if f"({cell}," not in block and f"({cell})" not in block:
            continue
        for line in block.splitlines():
            if line.startswith("E ") and line.strip() not in found:
                found.append(line.strip())
    return found[:3]


def _totals(
    shares: dict[str, Figure],
    fulls: dict[str, Figure],
    totals: dict[str, int],
    kills: dict[str, int],
    no_faults: bool,
    marking: bool,
) -> list[str]:
    medians = [share.median for share in shares.values()]
    over = [n for n, s in shares.items() if s.median > CEILING]
    long = [n for n, f in fulls.items() if f.median > LONG]
    long_over = [n for n in long if shares[n].median > LONG_CEILING]
    lines = [
        f"notebooks: {len(shares)}; tests passing in full: {totals['passing']}/{totals['tests']}",
        f"tests that pass in full and fail in smoke mode: {totals['reds']}"
        + (f"; after `ntdd mark --smoke`: {totals['marked reds']}" if marking else ""),
        f"setup cells that raise in smoke mode only: {totals['raised']}",
        f"loops smoke mode capped: {totals['capped']}",
        f"smoke ÷ full CPU over notebooks: median {statistics.median(medians):.2f}, "
        f"min {min(medians):.2f}, max {max(medians):.2f}; > {CEILING}: {', '.join(over) or 'none'}",
        f"full runs over {LONG:g} s: {len(long)}; of them smoke ÷ full > {LONG_CEILING}: "
        f"{', '.join(long_over) or 'none'}",
    ]
    if not no_faults:
        rate = kills["smoke"] / kills["full"] if kills["full"] else 1.0
        lines.append(
            f"faults caught: full {kills['full']}/{kills['applicable']}, smoke "
            f"{kills['smoke']}/{kills['applicable']} (smoke ÷ full {rate:.2f})"
        )
    return lines


if __name__ == "__main__":
    sys.exit(main())
