"""The output oracle: what a real Jupyter kernel shows under each cell, and ntdd's the same way.

A kernel runs the notebook top to bottom with nbclient, going on after errors
(as Run All shows them). ntdd runs it under `pytest --ntdd
--ntdd-run-untested` and writes it back (`--ntdd-write-notebooks
--ntdd-write-incomplete`) from copies with no saved outputs, so that a cell
with an execution count is one ntdd ran. Outputs are compared after nbval's
kind of normalisation: memory addresses and timings masked, an execution
count ignored, an error by its name and message (not its frames), an image
by its kind and pixel size (not its bytes).
"""

from __future__ import annotations

import base64
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_TIME = re.compile(r"\d+(?:\.\d+)?\s*(?:ns|µs|us|ms|s|sec|seconds)\b")

# (kind, what is compared) for each output of a cell
Shown = list[tuple[str, Any]]


def cleared_copy(source: Path, folder: Path) -> Path:
    """*source* copied into *folder* without its saved outputs and execution counts."""
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    path = folder / source.name
    nbformat.write(nb, path)
    return path


def kernel_outputs(path: Path) -> list[list[dict[str, Any]]]:
    """Each cell's outputs as a kernel's Run All leaves them (errors allowed)."""
    nb = nbformat.read(path, as_version=4)
    where = {"metadata": {"path": str(path.parent)}}
    NotebookClient(nb, timeout=300, allow_errors=True, resources=where).execute()
    return [cell.get("outputs", []) for cell in nb.cells]


def ntdd_outputs(folder: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """(notebook file name, cell number) -> the outputs ntdd wrote back for each cell it ran,
    the notebooks of *folder* run in one `pytest --ntdd` of its own."""
    out = folder / "_written"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    command += ["--ntdd", "--ntdd-run-untested", f"--ntdd-write-notebooks={out}"]
    subprocess.run(
        [*command, "--ntdd-write-incomplete", "."], cwd=folder, capture_output=True, check=False
    )
    found: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for path in sorted(out.glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells, start=1):
            if cell.cell_type == "code" and cell.execution_count is not None:
                found[path.name, index] = cell.outputs
    return found


def normalised(outputs: list[dict[str, Any]]) -> Shown:
    """Outputs as nbval compares them, each (kind, what is compared); consecutive streams of
    one name merged, as a notebook shows them."""
    shown: Shown = []
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
                mime: png_size(value) if mime == "image/png" else _text(value)
                for mime, value in data.items()
            }
            shown.append((kind, bundle))
    return shown


def difference(kernel: Shown, ntdd: Shown) -> str:
    """The first difference between two cells' normalised outputs, classified."""
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


def _text(value: Any) -> str:
    text = "".join(value) if isinstance(value, list) else str(value)
    return _TIME.sub("TIME", _ADDRESS.sub("0xADDR", text)).rstrip()


def png_size(data: str) -> tuple[int, int]:
    """A PNG's width and height, read from its header (base64 as a notebook holds it)."""
    width, height = struct.unpack(">II", base64.b64decode(data)[16:24])
    return width, height
