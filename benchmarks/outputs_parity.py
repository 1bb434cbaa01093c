"""Do the outputs ntdd records agree with a kernel's? Real notebooks, each cell compared.

Each notebook of the corpus (`../shared/corpus/good` by default, or the
folders given), its saved outputs cleared, runs twice: in a Jupyter kernel
by nbclient (errors allowed, as Run All shows them), and under `pytest
--ntdd --ntdd-run-untested`, which writes each notebook back as it ran
(`--ntdd-write-notebooks`, `--ntdd-write-incomplete`). Each cell ntdd ran is
compared after nbval's kind of normalisation (`tests/output_oracle.py`).
Each notebook runs in a kernel twice: a cell whose outputs differ between
two kernels (unseeded random draws) is classified as varying in a kernel,
whatever ntdd shows. The script prints the cells agreeing out of those
compared, and each other cell's first difference, classified.

    python benchmarks/outputs_parity.py [-v] [FOLDER ...]   # -v: each class's first example
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpus" / "good"
sys.path.insert(0, str(HERE.parent / "tests"))
from output_oracle import cleared_copy, difference, kernel_outputs, normalised, ntdd_outputs  # noqa: E402


def main(folders: list[Path], verbose: bool = False) -> None:
    compared = agreeing = 0
    classes: Counter[str] = Counter()
    examples: dict[str, str] = {}
    shown: dict[str, str] = {}  # the first example's two sides, for -v
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        paths = [p for folder in folders for p in sorted(folder.glob("*.ipynb"))]
        for path in paths:
            cleared_copy(path, work)
        ran = ntdd_outputs(work)
        for path in paths:
            kernel = kernel_outputs(work / path.name)
            again = kernel_outputs(work / path.name)
            for index, (outputs, second) in enumerate(zip(kernel, again, strict=True), start=1):
                mine = ran.get((path.name, index))
                if mine is None:
                    continue  # a markdown cell, or one ntdd did not run
                compared += 1
                k, n = normalised(outputs), normalised(mine)
                if k == n:
                    agreeing += 1
                    continue
                varies = k != normalised(second)
                why = "varies between two kernels' runs" if varies else difference(k, n)
                classes[why] += 1
                if why not in examples:
                    examples[why] = f"{path.name} cell {index}"
                    shown[why] = f"kernel {k!r:.300}\n        ntdd   {n!r:.300}"
    share = agreeing / compared if compared else 0.0
    print(
        f"notebooks: {len(paths)}; cells agreeing / compared: {agreeing} / {compared} ({share:.1%})"
    )
    for why, count in classes.most_common():
        print(f"  {count:4}  {why}  (e.g. {examples[why]})")
        if verbose:
            print(f"        {shown[why]}")


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "-v"]
    main([Path(a) for a in arguments] or [CORPUS], verbose="-v" in sys.argv[1:])
