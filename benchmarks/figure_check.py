"""How the figure check of `--ntdd-outputs` judges real figures redrawn and changed.

Runs the corpus notebooks that draw with matplotlib (their cells in one
namespace, pyplot on Agg, at the 72 dpi their kernels saved them with), and
for each figure a cell leaves open draws it as `%matplotlib inline` saves it
(`bbox_inches="tight"`), then again:

- redrawn (should pass): its lines without antialiasing; laid out 1 or 2
  pixels taller or 1 shorter; and, with `--other-python`, by another
  matplotlib (the notebooks run again in that interpreter);
- changed (should fail): every plotted value moved by 3 spans, or doubled
  (autoscaled: only the tick labels change), a title or a legend entry
  changed by one letter.

It counts the pairs each check passes: the pixels alone (a kernel's saved
figure), ntdd's record of the figure (`ntdd.runtime.figure_summary`, where
ntdd saved it), and with `--before DIR` the check of the checkout in DIR
(its `ntdd/outputs/images.py`, at tolerance 0.1). Run by hand:

    python benchmarks/figure_check.py [--other-python PY] [--before DIR]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import importlib.util
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = [
    ROOT / "tests/corpus/real/handson-ml3__tools_matplotlib.ipynb",
    ROOT / "tests/corpus/real/handson-ml3__math_linear_algebra.ipynb",
    ROOT / "tests/corpus/real/nn-zero-to-hero__micrograd_lecture_first_half_roughly.ipynb",
]


def run_notebooks(paths: list[Path]) -> dict[tuple[str, int, int], Any]:
    """Each figure a cell leaves open, by (notebook, cell, figure), pickled."""
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    found: dict[tuple[str, int, int], Any] = {}
    here = os.getcwd()
    for path in paths:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        namespace: dict[str, Any] = {}
        plt.rcParams.update({"figure.dpi": 72, "figure.figsize": (6, 4)})
        with tempfile.TemporaryDirectory() as scratch:  # what the cells save lands here
            os.chdir(scratch)
            try:
                for n, cell in enumerate(cells):
                    if cell["cell_type"] != "code":
                        continue
                    source = "".join(cell["source"]).splitlines()
                    code = "\n".join(
                        "pass" if s.lstrip()[:1] in "%!" and s.strip() else s for s in source
                    )
                    plt.close("all")
                    with contextlib.suppress(Exception), contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(code, f"{path.name}:{n}", "exec"), namespace)
                    for k, number in enumerate(plt.get_fignums()):
                        found[(path.name, n, k)] = pickle.dumps(plt.figure(number))
                    plt.close("all")
            finally:
                os.chdir(here)
    return found


def png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _moved(figure: Any, double: bool) -> bool:
    import numpy as np

    changed = False
    for axes in figure.axes:
        if getattr(axes, "name", "") != "rectilinear":
            continue
        for line in axes.lines:
            y = np.asarray(line.get_ydata(), dtype=float)
            if y.size >= 2 and np.isfinite(y).any():
                span = float(np.nanmax(y) - np.nanmin(y)) or 1.0
                line.set_ydata(2 * y if double else y + 3 * span + 3)
                changed = True
        for collection in axes.collections:
            offsets = np.array(collection.get_offsets(), dtype=float)
            if len(offsets) >= 2:
                span = float(np.ptp(offsets[:, 1])) or 1.0
                offsets[:, 1] = 2 * offsets[:, 1] if double else offsets[:, 1] + 3 * span + 3
                collection.set_offsets(offsets)
                changed = True
        axes.relim()
        axes.autoscale_view()
    return changed


def _one_letter(text: str) -> str:
    return text[:-1] + ("x" if text[-1] != "x" else "y")


def _title(figure: Any) -> bool:
    for axes in figure.axes:
        if axes.get_title():
            axes.set_title(_one_letter(axes.get_title()))
            return True
    return False


def _legend(figure: Any) -> bool:
    for axes in figure.axes:
        legend = axes.get_legend()
        if legend is not None and legend.get_texts() and legend.get_texts()[0].get_text():
            legend.get_texts()[0].set_text(_one_letter(legend.get_texts()[0].get_text()))
            return True
    return False


def _aliased(figure: Any) -> bool:
    for axes in figure.axes:
        for artist in [*axes.lines, *axes.patches, *axes.collections]:
            artist.set_antialiased(False)
    return True


def _taller(pixels: int) -> Callable[[Any], bool]:
    def change(figure: Any) -> bool:
        width, height = figure.get_size_inches()
        figure.set_size_inches(width, height + pixels / figure.dpi)
        return True

    return change


REDRAWN: dict[str, Callable[[Any], bool]] = {
    "lines without antialiasing": _aliased,
    "1 px taller": _taller(1),
    "2 px taller": _taller(2),
    "1 px shorter": _taller(-1),
}
CHANGED: dict[str, Callable[[Any], bool]] = {
    "every value moved by 3 spans": lambda f: _moved(f, double=False),
    "every value doubled": lambda f: _moved(f, double=True),
    "title changed by one letter": _title,
    "legend entry changed by one letter": _legend,
}


def _before(directory: Path | None) -> Callable[[str, str], bool] | None:
    if directory is None:
        return None
    spec = importlib.util.spec_from_file_location(
        "images_before", directory / "ntdd/outputs/images.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return lambda saved, fresh: bool(module.compare_png(saved, fresh, 0.1).same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other-python", help="a Python with another matplotlib, to redraw by")
    parser.add_argument("--before", type=Path, help="a checkout of the code before, to compare")
    parser.add_argument("--collect", help=argparse.SUPPRESS)  # in the other Python: pngs to here
    options = parser.parse_args()
    if options.collect:
        figures = run_notebooks(NOTEBOOKS)
        pngs = {"|".join(map(str, k)): png(pickle.loads(v)) for k, v in figures.items()}
        Path(options.collect).write_text(json.dumps(pngs))
        return

    sys.path.insert(0, str(ROOT))
    import matplotlib.pyplot as plt

    from ntdd.outputs.images import compare_png, record_changes
    from ntdd.runtime.figure_summary import summary

    before = _before(options.before)
    figures = run_notebooks(NOTEBOOKS)
    print(f"{len(figures)} figures from {len(NOTEBOOKS)} notebooks")
    print(f"{'fresh figure beside the saved one':40s} {'pairs':>5s} {'pixels pass':>11s}", end="")
    print(f" {'record same':>11s}" + (f" {'before pass':>11s}" if before else ""))

    def row(name: str, pairs: list[tuple[str, str, Any, Any]]) -> None:
        pixels = sum(compare_png(a, b).same for a, b, _, _ in pairs)
        records = [r for r in pairs if r[2] is not None]
        same = sum(not record_changes(a, b) for _, _, a, b in records)
        line = f"{name:40s} {len(pairs):5d} {pixels:11d} {f'{same}/{len(records)}':>11s}"
        if before:
            line += f" {sum(before(a, b) for a, b, _, _ in pairs):11d}"
        print(line, flush=True)

    originals: dict[tuple[str, int, int], tuple[str, Any]] = {}
    for key, pickled in figures.items():
        figure = pickle.loads(pickled)
        originals[key] = (png(figure), summary(figure))
        plt.close(figure)
    for group in (REDRAWN, CHANGED):
        for name, change in group.items():
            pairs = []
            for key, pickled in figures.items():
                figure = pickle.loads(pickled)
                if change(figure):
                    drawn = png(figure)
                    pairs.append((originals[key][0], drawn, originals[key][1], summary(figure)))
                plt.close(figure)
            row(name, pairs)
    if options.other_python:
        with tempfile.TemporaryDirectory() as scratch:
            out = Path(scratch) / "pngs.json"
            subprocess.run(
                [options.other_python, __file__, "--collect", str(out)],
                check=True,
                capture_output=True,
            )
            other = json.loads(out.read_text())
        version = subprocess.run(
            [options.other_python, "-c", "import matplotlib; print(matplotlib.__version__)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        pairs = [
            (other[k], originals[key][0], None, None)
            for key in originals
            if (k := "|".join(map(str, key))) in other
        ]
        row(f"redrawn by matplotlib {version}", pairs)


if __name__ == "__main__":
    main()
