"""Do the outputs ntdd records agree with a kernel's? Real notebooks, each cell compared.

Each notebook of the corpus (`../shared/corpus/good` by default, or the
folders given) runs twice: in a Jupyter kernel by nbclient (errors allowed,
as Run All shows them), and under `pytest --ntdd --ntdd-run-untested
--ntdd-report`, whose per-cell outputs (`report.ntdd_cells`) a conftest
writes out. Each cell ntdd ran is compared after nbval's kind of
normalisation: memory addresses and timings masked, an execution count
ignored, an error by its name and message (not its frames), an image by
its kind and pixel size (not its bytes). Each notebook runs in a kernel
twice: a cell whose outputs differ between two kernels (unseeded random
draws) is classified as varying in a kernel, whatever ntdd shows. The
script prints the cells agreeing out of those compared, and each other
cell's first difference, classified.

    python benchmarks/outputs_parity.py [-v] [FOLDER ...]   # -v: each class's first example
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpus" / "good"
DUMP = """
import json
def pytest_runtest_logreport(report):
    for cell in getattr(report, "ntdd_cells", ()):
        cell["notebook"] = report.nodeid.split("::")[0]
        with open("cells.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(cell) + "\\n")
"""
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_TIME = re.compile(r"\d+(?:\.\d+)?\s*(?:ns|µs|us|ms|s|sec|seconds)\b")


def kernel_outputs(path: Path) -> list[list[dict[str, Any]]]:
    """Each cell's outputs as a kernel's Run All leaves them."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return [cell.get("outputs", []) for cell in nb.cells]


def ntdd_outputs(folder: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """(notebook file name, cell number) -> the outputs ntdd recorded for it."""
    (folder / "conftest.py").write_text(DUMP, encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--ntdd",
            "--ntdd-run-untested",
            "--ntdd-report=report.html",
            ".",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    dump = folder / "cells.jsonl"
    for line in dump.read_text(encoding="utf-8").splitlines() if dump.exists() else []:
        cell = json.loads(line)
        found.setdefault((Path(cell["notebook"]).name, cell["index"]), cell["outputs"])
    return found


def _text(value: Any) -> str:
    text = "".join(value) if isinstance(value, list) else str(value)
    return _TIME.sub("TIME", _ADDRESS.sub("0xADDR", text)).rstrip()


def _png_size(data: str) -> tuple[int, int]:
    width, height = struct.unpack(">II", base64.b64decode(data)[16:24])
    return width, height


def normalised(outputs: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Outputs as nbval compares them, each (kind, what is compared); consecutive streams of
    one name merged, as a notebook shows them."""
    shown: list[tuple[str, Any]] = []
    for output in outputs:
        kind = output["output_type"]
        if kind == "stream":
            text = _text(output["text"])
            if shown and shown[-1][0] == f"stream:{output['name']}":
                shown[-1] = (shown[-1][0], (shown[-1][1] + "\n" + text).strip())
            elif text:
                shown.append((f"stream:{output['name']}", text))
        elif kind == "error":
            shown.append(("error", (output["ename"], _text(output["evalue"]))))
        else:
            data = output.get("data", {})
            bundle = {
                mime: _png_size(value) if mime == "image/png" else _text(value)
                for mime, value in data.items()
            }
            shown.append((kind, bundle))
    return shown


def difference(kernel: list[tuple[str, Any]], ntdd: list[tuple[str, Any]]) -> str:
    """The first difference, classified."""
    for (k_kind, k_value), (n_kind, n_value) in zip(kernel, ntdd, strict=False):
        if k_kind != n_kind:
            return f"output kinds differ: kernel {k_kind}, ntdd {n_kind}"
        if k_value != n_value:
            if isinstance(k_value, dict) and isinstance(n_value, dict):
                if k_value.keys() != n_value.keys():
                    return f"{k_kind}: mime types differ ({sorted(k_value)} / {sorted(n_value)})"
                mime = next(m for m in k_value if k_value[m] != n_value[m])
                return f"{k_kind}: {mime} differs"
            return f"{k_kind} differs"
    if len(kernel) > len(ntdd):
        return f"only the kernel shows {kernel[len(ntdd)][0]}"
    return f"only ntdd shows {ntdd[len(kernel)][0]}"


def main(folders: list[Path], verbose: bool = False) -> None:
    compared = agreeing = 0
    classes: Counter[str] = Counter()
    examples: dict[str, str] = {}
    shown: dict[str, str] = {}  # the first example's two sides, for -v
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        paths = [p for folder in folders for p in sorted(folder.glob("*.ipynb"))]
        for path in paths:
            shutil.copy(path, work / path.name)
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
