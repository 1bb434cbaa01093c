"""Figures under `--ntdd-outputs`: what a user sees when a plot's data change, and when
only its drawing does.

Each notebook is saved by ntdd itself (`--ntdd-write-notebooks`), as a user
saves one; where a kernel's saved figure is meant, ntdd's record of the
figure is taken out of the output's metadata, since a kernel keeps none. Then
the cell's source changes and `--ntdd-outputs` judges the figure it draws
now. Every run is a process of its own, as any run whose notebook imports
matplotlib.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import run, write_notebook

pytest.importorskip("matplotlib")

PLOT = """\
import numpy as np
import matplotlib.pyplot as plt
x = np.linspace(0, 10, 100)
plt.plot(x, 0.5 + 0.4 * np.sin(x), label="sin")
plt.title("Loss", pad=6 + EXTRA * 0.72)  # EXTRA pixels (0.72 points at dpi 100) taller
plt.legend();"""


def plot(**changes: str) -> str:
    source = PLOT
    for old, new in changes.items():
        source = source.replace(old, new)
    return source


def saved(pytester: pytest.Pytester, source: str, kernel: bool = False) -> Path:
    """nb.ipynb, its figure saved by a run of ntdd (without ntdd's record where
    *kernel*: a kernel's saved figure)."""
    path = write_notebook(pytester.path / "nb.ipynb", ["%matplotlib inline\nEXTRA = 0", source])
    written = run(
        pytester, "--ntdd", "--ntdd-run-untested", "--ntdd-overwrite", "nb.ipynb", subprocess=True
    )
    written.assert_outcomes(passed=1)
    notebook = nbformat.read(path, as_version=4)
    (figure,) = notebook.cells[1].outputs
    assert "image/png" in figure["data"]
    if kernel:
        figure["metadata"] = {}
    nbformat.write(notebook, path)
    return path


def rerun(pytester: pytest.Pytester, path: Path, source: str) -> pytest.RunResult:
    """`--ntdd-outputs` on the notebook, its figure's cell changed to *source*."""
    notebook = nbformat.read(path, as_version=4)
    notebook.cells[1].source = source
    nbformat.write(notebook, path)
    return run(pytester, "--ntdd-outputs", str(path.name), subprocess=True)


def record(path: Path) -> Any:
    notebook = nbformat.read(path, as_version=4)
    return notebook.cells[1].outputs[0]["metadata"]["image/png"]["ntdd"]["figure"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("changed", "said"),
    [
        pytest.param(
            {"0.5 + 0.4": "3.5 + 0.4"},
            "  axes: y tick labels: saved '0.1', '0.2', *, fresh '3.1', '3.2', *",
            id="every value moved by 3",
        ),
        pytest.param(
            {"0.5 + 0.4 * np.sin(x)": "2 * (0.5 + 0.4 * np.sin(x))"},
            "  axes: y tick labels: saved '0.1', *, fresh '0.2', *",
            id="every value doubled",
        ),
        pytest.param({"Loss": "Lass"}, "  axes: title: saved 'Loss', fresh 'Lass'", id="title"),
        pytest.param(
            {'label="sin"': 'label="cos"'}, "  axes: legend: saved 'sin', fresh 'cos'", id="legend"
        ),
        pytest.param(
            {"plt.legend();": "plt.legend(); plt.yticks([0.1, 0.5, 0.9], ['lo', 'mid', 'hi']);"},
            "  axes: y tick labels: saved '0.1', *, fresh 'lo', 'mid', 'hi'",
            id="tick labels",
        ),
    ],
)
def test_a_figure_ntdd_saved_whose_data_or_texts_changed_fails_naming_the_change(
    pytester: pytest.Pytester, changed: dict[str, str], said: str
) -> None:
    """matplotlib scales the axes to the data: moved or doubled values draw the same
    curve on the same pixels, with other tick labels; a one-letter title or legend is a
    few pixels. Each passed before, at a perceptual distance of 0 to 0.02."""
    path = saved(pytester, PLOT)
    assert record(path)["axes"][0]["title"] == ["Loss"]
    got = rerun(pytester, path, plot(**changed))
    got.assert_outcomes(passed=2, failed=1)
    got.stdout.fnmatch_lines(
        ["image/png (figure 1 of 1) differs in what it shows:", said], consecutive=True
    )


@pytest.mark.slow
@pytest.mark.parametrize("pixels", [1, 2, -1, -2])
@pytest.mark.parametrize("kernel", [False, True], ids=["saved by ntdd", "saved by a kernel"])
def test_a_figure_redrawn_a_pixel_or_two_taller_or_shorter_passes(
    pytester: pytest.Pytester, pixels: int, kernel: bool
) -> None:
    """Another matplotlib or FreeType lays text out a pixel taller, and the figure with it:
    the same figure, which failed on its size before."""
    path = saved(pytester, PLOT, kernel)
    got = rerun(pytester, path, PLOT.replace("EXTRA", str(pixels)))
    got.assert_outcomes(passed=3)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [False, True], ids=["saved by ntdd", "saved by a kernel"])
def test_a_figure_whose_line_is_drawn_without_antialiasing_passes(
    pytester: pytest.Pytester, kernel: bool
) -> None:
    path = saved(pytester, PLOT, kernel)
    got = rerun(pytester, path, PLOT.replace("label=", "antialiased=False, label="))
    got.assert_outcomes(passed=3)
