"""Kernel-judged output parity on real notebooks nobody here wrote: each cell ntdd runs, as
`--ntdd-write-notebooks` writes it back, shows what a kernel's Run All shows under it
(after nbval's kind of normalisation, `output_oracle`). The notebooks are those of the
corpus whose outputs a kernel reproduces run after run (no unseeded random draws)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from output_oracle import cleared_copy, difference, kernel_outputs, normalised, ntdd_outputs

CORPUS = Path(__file__).parent / "corpus" / "good"
REPRODUCIBLE = [
    "d2l-pytorch-colab__linear-algebra.ipynb",  # tensors shown as values, 30 code cells
    "d2l-pytorch-colab__padding-and-strides.ipynb",
    "nbclient__Clear_Output.ipynb",  # clear_output, a display updated from the cell below
    "nbclient__Factorials.ipynb",  # prints in a loop
    "nbclient__SVG.ipynb",  # a rich value: image/svg+xml
    "nbclient__Skip_Exceptions_with_Cell_Tags.ipynb",  # an error output, Run All going on
    "nbclient__UnicodePy3.ipynb",
    "nbclient__update-display-id.ipynb",  # display messages sent through the kernel's session
    "nbmake__raises_tag.ipynb",
    "nbval__latex-example.ipynb",  # sympy's printing: text/latex, image/png
    "testbook__inject.ipynb",
]


@pytest.mark.slow
def test_real_notebooks_written_back_show_under_each_cell_what_a_kernel_shows(
    tmp_path: Path,
) -> None:
    for name in REPRODUCIBLE:
        cleared_copy(CORPUS / name, tmp_path)

    ran = ntdd_outputs(tmp_path)

    compared, differ = 0, []
    for name in REPRODUCIBLE:
        sources = [cell.source for cell in nbformat.read(tmp_path / name, as_version=4).cells]
        for index, outputs in enumerate(kernel_outputs(tmp_path / name), start=1):
            mine = ran.get((name, index))
            if mine is None or "NBVAL_IGNORE_OUTPUT" in sources[index - 1]:
                continue  # a markdown cell, or one whose author says its output varies
            compared += 1
            kernel, ntdd = normalised(outputs), normalised(mine)
            if kernel != ntdd:
                differ.append(f"{name} cell {index}: {difference(kernel, ntdd)}")
    assert not differ
    assert compared >= 50  # every notebook ran: 55 code cells compared
