"""Does `ntdd faults` tell the truth, and the same truth twice? Its verdicts against the bugs
written in by hand, under the same rule, and against itself under other seeds and threads.

    python benchmarks/faults_oracle.py                   # the oracle's real training notebooks
    python benchmarks/faults_oracle.py --set all --stability --json after.json
    python benchmarks/faults_oracle.py --compare before.json after.json
    python benchmarks/faults_oracle.py --case d2l-pytorch-colab__dropout

For each notebook (`tests/fault_cases.py`, `tests/unseen_cases.py`,
`tests/fresh_training_cases.py`: real training notebooks with the tests a
careful user writes and each fault's bug written in by hand), `ntdd faults`
runs on a copy; then the written-in bugs go through the same runs and the
same kill rule (`tests/written_in.py`): the clean copy and each mutant under
the same seeds and thread counts. The table shows, per notebook and fault,
`ntdd faults`' verdict and the written-in bug's, and counts the agreements.
With `--stability`, `ntdd faults` runs twice more: from seed 100 (its
verdicts against the first run's: the verdicts that change between two runs)
and with torch on 2 threads (those that change with the thread count).

To measure the code before the kill rule, put a copy of its `ntdd` package
first on the path (`PYTHONPATH=path/to/old/checkout`): there `ntdd faults`
and each written-in bug make one run, the seed is set in this process before
each command (the old code started every run from the process's generators),
and 2 threads are pinned where it pinned one (its faults then run one after
another: forked children cannot use a thread pool their parent started).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fault_cases import CASES, REAL_TRAINING, Case  # noqa: E402

import ntdd  # noqa: E402
from ntdd.faults import FAULTS  # noqa: E402
from ntdd.faults.command import Request, run_notebook  # noqa: E402
from ntdd.faults.results import CAUGHT_BY, NotebookReport  # noqa: E402

RULE = importlib.util.find_spec("ntdd.faults.trials") is not None  # the code has the kill rule
SHORT = {
    "caught": "C", "survived": "S", "not applicable": "-", "error": "E", "timed out": "T",
    "undecided": "U",
}  # fmt: skip
SECOND_SEED = 100


def case_sets() -> dict[str, dict[str, Case]]:
    sets = {"training": {n: CASES[n] for n in REAL_TRAINING}, "samples": dict(CASES)}
    for name, module, attribute in (
        ("unseen", "unseen_cases", "UNSEEN"),
        ("fresh", "fresh_training_cases", "FRESH"),
    ):
        with contextlib.suppress(ImportError):
            cases = getattr(__import__(module), attribute)
            sets[name] = {n: c for n, c in cases.items() if c.mutants}
    sets["all"] = {**sets["training"], **sets.get("unseen", {}), **sets.get("fresh", {})}
    return sets


def faults(notebook: Path, seed: int = 0, threads: int = 1) -> NotebookReport:
    """`ntdd faults` on *notebook*, its runs from *seed* at *threads*."""
    if RULE:
        request = Request((str(notebook),), tuple(FAULTS), seed=seed, threads=threads)  # type: ignore[call-arg]
        return run_notebook(notebook, request)
    seed_everything(seed)
    with pinned(threads):
        return run_notebook(notebook, Request((str(notebook),), tuple(FAULTS), fork=threads == 1))


def seed_everything(seed: int) -> None:
    import numpy.random
    import torch

    random.seed(seed)
    numpy.random.seed(seed)
    torch.manual_seed(seed)


@contextlib.contextmanager
def pinned(threads: int) -> Iterator[None]:
    """The code before the kill rule at *threads* torch threads (it pinned one)."""
    if threads == 1:
        yield
        return
    import torch

    from ntdd.faults import runs

    @contextlib.contextmanager
    def same_threads() -> Iterator[None]:
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    original = runs.same_threads  # type: ignore[attr-defined]
    runs.same_threads = same_threads  # type: ignore[attr-defined]
    try:
        yield
    finally:
        runs.same_threads = original  # type: ignore[attr-defined]


def oracle(case: Case, folder: Path) -> tuple[NotebookReport, dict[str, str], dict[str, int]]:
    """`ntdd faults`' report, the written-in bugs' verdicts, and `ntdd faults`' runs per fault."""
    if RULE:
        from written_in import verdicts

        found = verdicts(case, tuple(FAULTS), folder, Request(()))
        theirs = {r.name: r.status for r in found.theirs.results}
        return found.ours, theirs, {r.name: r.runs for r in found.ours.results}
    notebook = case.notebook(folder / "clean")
    seed_everything(0)
    report = run_notebook(notebook, Request((str(notebook),), tuple(FAULTS)))
    theirs = {k: written_in_once(case, k, folder, report.baseline) for k in FAULTS}
    return report, theirs, {r.name: 1 for r in report.results if r.status != "not applicable"}


def written_in_once(case: Case, kind: str, folder: Path, baseline: dict[str, str]) -> str:
    """The code before the kill rule: one run of the written-in bug."""
    from ntdd.faults.children import same_threads
    from ntdd.faults.runs import run_session

    if kind not in case.mutants:
        return "not applicable"
    mutant = case.notebook(folder / kind, case.mutants[kind])
    seed_everything(0)
    with same_threads():
        outcomes = run_session(mutant, Request(()).pytest_args())
    passing = [t for t, outcome in baseline.items() if outcome == "passed"]
    return "caught" if any(outcomes.tests.get(t) in CAUGHT_BY for t in passing) else "survived"


def measure(case: Case, folder: Path, stability: bool) -> dict[str, Any]:
    start = time.perf_counter()
    report, theirs, runs = oracle(case, folder)
    ours = {r.name: r.status for r in report.results}
    row: dict[str, Any] = {"ours": ours, "theirs": theirs, "runs": runs}
    row["seeds_itself"] = getattr(report, "seeds_itself", "")
    row["flaky"] = getattr(report, "flaky", {})
    row["failing"] = report.failing_cleanly
    if stability:
        again = case.notebook(folder / "again")
        row["seed"] = {r.name: r.status for r in faults(again, SECOND_SEED).results}
        row["threads"] = {r.name: r.status for r in faults(again, 0, 2).results}
    row["seconds"] = time.perf_counter() - start
    return row


def main() -> int:
    sets = case_sets()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(sets), default="training")
    parser.add_argument("--case", action="append", help="a notebook of the set (repeatable)")
    parser.add_argument("--stability", action="store_true", help="ntdd faults from seed 100 too")
    parser.add_argument("--json", type=Path, help="every row as JSON, for --compare")
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text(encoding="utf-8")) for p in args.compare)
        print(compare(before, after))
        return 0
    cases = sets[args.set]
    names = args.case or list(cases)
    import torch

    torch.set_num_threads(1)  # as `ntdd faults` runs; a fork after a thread pool is unsafe
    print(f"ntdd from {Path(ntdd.__file__).parent} (kill rule: {RULE})", file=sys.stderr)
    found: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            case = cases[name]
            missing = [m for m in case.needs if importlib.util.find_spec(m) is None]
            if missing:
                print(f"  {name}: skipped, needs {', '.join(missing)}", file=sys.stderr)
                continue
            found[name] = measure(case, Path(scratch) / name, args.stability)
            print(f"  {name}: {found[name]['seconds']:.0f} s", file=sys.stderr)
            if args.json:
                args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")
    print(table(found))
    print(figures(found))
    return 0


def table(found: dict[str, dict[str, Any]]) -> str:
    """Notebook × fault: `ntdd faults`' verdict/the written-in bug's (C caught, S survived,
    U undecided, - not applicable, E error, T timed out), `!` where they differ."""
    width = max((len(n) for n in found), default=len("notebook"))
    head = "notebook".ljust(width) + "  " + "  ".join(f"{k[:6]:<6}" for k in FAULTS) + "  agree"
    lines = [head]
    for name, row in found.items():
        cells = []
        for kind in FAULTS:
            ours, theirs = row["ours"].get(kind, "?"), row["theirs"].get(kind, "?")
            mark = " " if ours == theirs else "!"
            cells.append(f"{SHORT.get(ours, '?')}/{SHORT.get(theirs, '?')}{mark}".ljust(6))
        same = sum(row["ours"].get(k) == row["theirs"].get(k) for k in FAULTS)
        lines.append(f"{name:<{width}}  " + "  ".join(cells) + f"  {same}/{len(FAULTS)}")
    return "\n".join(lines)


def figures(found: dict[str, dict[str, Any]]) -> str:
    """The issue's figures over every notebook: agreement, false kills, flips, runs per fault."""
    pairs = [(row["ours"].get(k), row["theirs"].get(k)) for row in found.values() for k in FAULTS]
    agree = sum(a == b for a, b in pairs)
    false_kills = sum(a == "caught" and b != "caught" for a, b in pairs)
    missed = sum(b == "caught" and a != "caught" for a, b in pairs)
    runs = [n for row in found.values() for n in row["runs"].values() if n]
    lines = [
        f"\nagreement with the written-in bugs: {agree}/{len(pairs)} verdicts "
        f"({false_kills} false kills: caught by ntdd, not by the bug; {missed} the other way)",
        f"runs per applicable fault: median {statistics.median(runs) if runs else 0:g}, "
        f"max {max(runs, default=0)}",
        f"notebooks that seed themselves: {sum(bool(r['seeds_itself']) for r in found.values())}"
        f" of {len(found)}; with flaky tests: {sum(bool(r['flaky']) for r in found.values())}",
    ]
    for key, what in (("seed", f"from seed {SECOND_SEED}"), ("threads", "at 2 threads")):
        if all(key in row for row in found.values()) and found:
            flips = [
                f"{name}:{k} {row['ours'].get(k)}→{row[key].get(k)}"
                for name, row in found.items()
                for k in FAULTS
                if row["ours"].get(k) != row[key].get(k)
            ]
            lines.append(
                f"verdicts that change {what}: {len(flips)}/{len(pairs)}"
                + (f" ({'; '.join(flips)})" if flips else "")
            )
    return "\n".join(lines)


def compare(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> str:
    common = {n: before[n] for n in before if n in after}
    return (
        "before:\n"
        + figures(common)
        + "\n\nafter:\n"
        + figures({n: after[n] for n in common})
        + f"\n\n({len(common)} notebooks measured both ways)"
    )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
