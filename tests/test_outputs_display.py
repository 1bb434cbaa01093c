"""IPython's own `display` and the inline backend's settings make the outputs a kernel makes.

`from IPython.display import display` (and library code calling it: matplotlib-inline's
`show()`, which a mid-cell `plt.show()` calls) publishes through the notebook's shell, in
order with the cell's other outputs; `%config InlineBackend.…` changes the figures of the
cells below, and only in its own notebook. Each case is judged by a kernel: per cell, the
same output types with the same mime types, in the same order.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import run
from oracle import kernel_verdicts, ntdd_run
from output_oracle import kernel_outputs, png_size
from test_outputs import DUMP, outputs_of

pytestmark = pytest.mark.slow  # each case starts a kernel

Kinds = list[tuple[str, list[str]]]


def kinds(outputs: list[dict[str, Any]]) -> Kinds:
    """Each output's type and mime types, in order."""
    return [(o["output_type"], sorted(o.get("data", {}))) for o in outputs]


def both(
    pytester: pytest.Pytester, notebook: Any, cells: list[str]
) -> tuple[dict[int, Kinds], dict[int, Kinds]]:
    """Per setup cell, the output kinds ntdd records and those a kernel records."""
    ntdd = outputs_of(pytester, notebook, cells, subprocess=True)
    kernel = kernel_outputs(pytester.path / "nb.ipynb")
    return (
        {n: kinds(o) for n, o in ntdd.items()},
        {n: kinds(kernel[n - 1]) for n in ntdd},
    )


def test_ipythons_display_of_html_is_display_data_in_order(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "print('before')\nfrom IPython.display import display, HTML\n"
        "display(HTML('<b>x</b>'))\nprint('after')",
        "# TEST\nassert True",
    ]
    ntdd, kernel = both(pytester, notebook, cells)
    assert ntdd == kernel
    assert ntdd[1] == [
        ("stream", []),
        ("display_data", ["text/html", "text/plain"]),
        ("stream", []),
    ]


def test_a_mid_cell_show_is_an_image_before_what_the_cell_prints_after(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nprint('shown')\n"
        "open_after = plt.get_fignums()",
        "# TEST: the inline backend closed what it showed\nassert open_after == []",
    ]
    ntdd, kernel = both(pytester, notebook, cells)
    assert ntdd == kernel
    assert ntdd[1] == [("display_data", ["image/png", "text/plain"]), ("stream", [])]


def test_config_figure_formats_changes_the_figures_below(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "import matplotlib.pyplot as plt\nplt.plot([1, 2]);",
        "%config InlineBackend.figure_formats = ['svg']",
        "plt.plot([1, 3]);",
        "from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
        "set_matplotlib_formats('png', 'svg')\nplt.plot([1, 4]);",
        "# TEST\nassert True",
    ]
    ntdd, kernel = both(pytester, notebook, cells)
    assert ntdd == kernel
    assert ntdd[1] == [("display_data", ["image/png", "text/plain"])]
    assert ntdd[3] == [("display_data", ["image/svg+xml", "text/plain"])]
    assert ntdd[4] == [("display_data", ["image/png", "image/svg+xml", "text/plain"])]


def test_config_print_figure_kwargs_changes_the_images_below(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "import matplotlib.pyplot as plt\nplt.plot([1, 2]);",
        "%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}\nplt.plot([1, 3]);",
        "# TEST\nassert True",
    ]
    outputs = outputs_of(pytester, notebook, cells, subprocess=True)
    kernel = kernel_outputs(pytester.path / "nb.ipynb")
    for n in (1, 2):
        ours, theirs = outputs[n][0]["data"]["image/png"], kernel[n - 1][0]["data"]["image/png"]
        assert png_size(ours) == png_size(theirs)
    assert png_size(outputs[2][0]["data"]["image/png"]) == (640, 480)  # not trimmed


def test_a_notebooks_config_stays_in_its_notebook(pytester: pytest.Pytester, notebook: Any) -> None:
    """Each notebook has a kernel of its own: the next starts with a kernel's settings."""
    plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2]);"
    notebook(["%config InlineBackend.figure_format = 'svg'\n" + plot, "# TEST\n1"], "a.ipynb")
    notebook([plot, "# TEST\nassert True"], "b.ipynb")
    pytester.makeconftest(DUMP)
    run(pytester, "--ntdd", "--ntdd-report=report.html", "a.ipynb", "b.ipynb", subprocess=True)
    lines = (pytester.path / "cells.jsonl").read_text(encoding="utf-8").splitlines()
    setup = [cell for cell in map(json.loads, lines) if not cell["test"]]  # not the tests' own
    first, second = (kinds(cell["outputs"]) for cell in setup)
    assert first == [("display_data", ["image/svg+xml", "text/plain"])]
    assert second == [("display_data", ["image/png", "text/plain"])]


def test_ipythons_display_fails_and_passes_tests_as_in_a_kernel(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    """No report records outputs: a `_repr_html_` that raises fails its test (a kernel
    shows its error), and `display_id` gives a handle."""
    path = notebook(
        [
            "from IPython.display import display, HTML\n"
            "class Bad:\n    def _repr_html_(self):\n        raise RuntimeError('no html')",
            "# TEST: a failing format\ndisplay(Bad())",
            "# TEST: a handle\nh = display(HTML('<i>x</i>'), display_id=True)\n"
            "assert h is not None\nh.update(HTML('y'))",
            "# TEST: IPython's get_ipython is the notebook's\n"
            "from IPython import get_ipython as ipythons\nassert ipythons() is not None",
        ]
    )
    kernel = kernel_verdicts(path)
    assert sorted(kernel.values()) == [False, False, True]
    assert ntdd_run(pytester, "--ntdd", str(path), in_a_process=False) == kernel
