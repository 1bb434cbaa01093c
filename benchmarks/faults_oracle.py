"""Does `ntdd faults` tell the truth? Its verdicts against the bugs written in by hand.

    python benchmarks/faults_oracle.py                   # every notebook of tests/fault_cases.py
    python benchmarks/faults_oracle.py --case d2l-pytorch-colab__dropout
    python benchmarks/faults_oracle.py --json out.json   # the table as JSON too

For each notebook of the oracle (`tests/fault_cases.py`: the sample notebooks,
small lecture-style ones, and the real training notebooks of
`tests/corpus/training/`), `ntdd faults` runs on a copy with the tests a
careful user writes; then, fault by fault, the same bug is written into
another copy by hand and that copy's tests run (`pytest --ntdd`, in this
process). A fault is caught by the written-in bug when a test that passed
cleanly fails or errors. The table shows, per notebook and fault, `ntdd
faults`' verdict and the written-in bug's, and counts the agreements.

To measure the code before a change, put a copy of its `ntdd` package first
on the path: `PYTHONPATH=path/to/old/checkout python benchmarks/faults_oracle.py`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from fault_cases import CASES, Case  # noqa: E402

import ntdd  # noqa: E402
from ntdd.faults import FAULTS  # noqa: E402
from ntdd.faults.command import Request, run_notebook  # noqa: E402
from ntdd.faults.results import CAUGHT_BY  # noqa: E402
from ntdd.faults.runs import run_session  # noqa: E402

SHORT = {"caught": "C", "survived": "S", "not applicable": "-", "error": "E", "timed out": "T"}


def written_in(case: Case, kind: str, folder: Path, baseline: dict[str, str]) -> str:
    """The verdict of the bug written in by hand: caught, survived, or not applicable."""
    if kind not in case.mutants:
        return "not applicable"
    mutant = case.notebook(folder / kind, case.mutants[kind])
    outcomes = run_session(mutant, Request(()).pytest_args())
    passing = [t for t, outcome in baseline.items() if outcome == "passed"]
    return "caught" if any(outcomes.tests.get(t) in CAUGHT_BY for t in passing) else "survived"


def table(case: Case, folder: Path) -> dict[str, tuple[str, str]]:
    notebook = case.notebook(folder / "clean")
    report = run_notebook(notebook, Request((str(notebook),), tuple(FAULTS)))
    failing = [t for t, outcome in report.baseline.items() if outcome != "passed"]
    if failing or report.status != "tested":
        print(
            f"  {case.name}: {report.status} {report.error} failing cleanly: {failing}",
            file=sys.stderr,
        )
    ours = {r.name: r.status for r in report.results}
    return {
        k: (ours.get(k, report.status), written_in(case, k, folder, report.baseline))
        for k in FAULTS
    }


def main() -> int:
    import torch

    torch.set_num_threads(1)  # as every run of `ntdd faults` does; a fork after a pool is unsafe
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    names = args.case or list(CASES)
    print(f"ntdd from {Path(ntdd.__file__).parent}", file=sys.stderr)
    found: dict[str, dict[str, tuple[str, str]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            missing = [m for m in CASES[name].needs if importlib.util.find_spec(m) is None]
            if missing:
                print(f"  {name}: skipped, needs {', '.join(missing)}", file=sys.stderr)
                continue
            start = time.perf_counter()
            found[name] = table(CASES[name], Path(scratch) / name)
            print(f"  {name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    print(report(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return 0


def report(found: dict[str, dict[str, tuple[str, str]]]) -> str:
    """Notebook × fault: `ntdd faults`' verdict/the written-in bug's (C caught, S survived,
    - not applicable, E error, T timed out), a `!` where they differ; the agreement."""
    width = max((len(n) for n in found), default=len("notebook"))
    lines = [
        "notebook".ljust(width) + "  " + "  ".join(f"{k[:6]:<6}" for k in FAULTS) + "  agree",
    ]
    total = agree = 0
    for name, row in found.items():
        cells, same = [], 0
        for kind in FAULTS:
            ours, theirs = row[kind]
            ok = ours == theirs
            same += ok
            cells.append(
                f"{SHORT.get(ours, '?')}/{SHORT.get(theirs, '?')}{' ' if ok else '!'}".ljust(6)
            )
        total, agree = total + len(FAULTS), agree + same
        lines.append(f"{name:<{width}}  " + "  ".join(cells) + f"  {same}/{len(FAULTS)}")
    lines.append(f"\nagreement: {agree}/{total} verdicts")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
