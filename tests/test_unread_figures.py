"""A figure shown where nothing records the cell's outputs is laid out, not encoded.

`plt.show()`, `display(fig)` and a figure as a cell's last value draw it, in
a kernel, for a front-end to show. A run without a report, written-back
notebooks or an output check shows nobody: the figure is drawn for what
drawing raises, and its PNG is never made. Where something records, or the
notebook itself asks for the image, it is made as before. Every run is a
process of its own, as any run whose notebook imports matplotlib.
"""

from __future__ import annotations

import pytest
from conftest import run

pytest.importorskip("matplotlib")

# Counts the PNGs matplotlib writes: a figure's print into a buffer that ends up holding
# bytes (laying a figure out calls the same method, and stops before it writes).
COUNTING = """\
import functools, io
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from IPython.display import display
encoded = []
_print_png = FigureCanvasAgg.print_png
@functools.wraps(_print_png)  # matplotlib passes what its signature takes
def counting(self, target, *args, **kwargs):
    _print_png(self, target, *args, **kwargs)
    if isinstance(target, io.BytesIO) and target.getvalue():
        encoded.append(self.figure)
FigureCanvasAgg.print_png = counting"""

SHOWN = [
    COUNTING,
    "plt.plot([1, 2])\nplt.show()",
    "fig = plt.figure(); plt.plot([1, 3]); plt.close(fig)\ndisplay(fig)",
    "fig",
    "# TEST: the figures shown\nprint('ENCODED', len(encoded))",
]


def test_a_figure_shown_where_nothing_records_it_is_not_encoded(
    pytester: pytest.Pytester, notebook: object
) -> None:
    notebook(SHOWN)  # type: ignore[operator]
    result = run(pytester, "--ntdd", "-s", "nb.ipynb", subprocess=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*ENCODED 0*"])


@pytest.mark.parametrize(
    "option",
    [
        "--ntdd-report=report.html",
        pytest.param("--ntdd-write-notebooks=written", marks=pytest.mark.slow),
    ],
)
def test_a_run_that_records_the_outputs_gets_every_figure_shown(
    pytester: pytest.Pytester, notebook: object, option: str
) -> None:
    notebook(SHOWN)  # type: ignore[operator]
    result = run(pytester, "--ntdd", "-s", option, "nb.ipynb", subprocess=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*ENCODED 3*"])
    if option.startswith("--ntdd-report"):
        assert (pytester.path / "report.html").read_text().count("data:image/png;base64") >= 3


@pytest.mark.slow
def test_the_notebook_asking_for_a_figures_image_gets_it(
    pytester: pytest.Pytester, notebook: object
) -> None:
    notebook(  # type: ignore[operator]
        [
            "import matplotlib.pyplot as plt\nfrom IPython.utils.capture import capture_output\n"
            "fig = plt.figure(); plt.plot([1, 2]); plt.close(fig)",
            "# TEST: from the shell's formatter\n"
            "data, metadata = get_ipython().display_formatter.format(fig)\n"
            "assert data['image/png']",
            "# TEST: captured\nplt.plot([2, 1])\nwith capture_output() as captured:\n"
            "    plt.show()\nassert captured.outputs[0].data['image/png']",
        ]
    )
    run(pytester, "--ntdd", "nb.ipynb", subprocess=True).assert_outcomes(passed=2)


BROKEN = "$\\\\frac{$"  # a mathtext label matplotlib cannot parse: drawing it raises


@pytest.mark.parametrize(
    "option", [None, pytest.param("--ntdd-report=report.html", marks=pytest.mark.slow)]
)
def test_a_figure_that_cannot_be_drawn_fails_where_it_is_shown(
    pytester: pytest.Pytester, notebook: object, option: str | None
) -> None:
    notebook(  # type: ignore[operator]
        [
            "import matplotlib.pyplot as plt\nfrom IPython.display import display",
            f"# TEST: shown\nplt.plot([1, 2]); plt.title('{BROKEN}')\nplt.show()\n"
            "print('not reached')",
            f"# TEST: displayed\nfig = plt.figure(); plt.title('{BROKEN}'); plt.close(fig)\n"
            "display(fig)",
            "# TEST: the last value\nfig",
            "# TEST: as svg\nfrom matplotlib_inline.backend_inline import set_matplotlib_formats\n"
            "set_matplotlib_formats('svg')\nfig",
            f"# TEST: closed unshown\nplt.plot([1, 2]); plt.title('{BROKEN}'); plt.close()",
        ]
    )
    args = ["--ntdd", "nb.ipynb", *([option] if option else [])]
    result = run(pytester, *args, subprocess=True)
    result.assert_outcomes(failed=4, passed=1)
    result.stdout.fnmatch_lines(
        [
            "FAILED nb.ipynb::test_shown - ValueError*",
            "FAILED nb.ipynb::test_displayed - ValueError*",
            "FAILED nb.ipynb::test_the_last_value - ValueError*",
            "FAILED nb.ipynb::test_as_svg - ValueError*",
        ]
    )
    assert "not reached" not in result.stdout.str()


LEFT_OPEN = [  # each test's figure left open at its cell's end: the inline backend draws it
    "import matplotlib.pyplot as plt\nfrom matplotlib.ticker import FuncFormatter",
    f"# TEST: a broken title\nplt.plot([1, 2]); plt.title('{BROKEN}')",
    "# TEST: a tick formatter that raises\nfig, ax = plt.subplots(); ax.plot([1, 2])\n"
    "def bad(x, pos):\n    raise ValueError('no label for a tick')\n"
    "ax.xaxis.set_major_formatter(FuncFormatter(bad))",
    f"# TEST: closed by the cell\nplt.plot([1, 2]); plt.title('{BROKEN}'); plt.close()",
    "# TEST: a good figure\nplt.plot([1, 3]); plt.title('$x^2$')",
]
SETUP_LEAVES_ONE = [
    f"import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.title('{BROKEN}')",
    "# TEST: below it\nassert True",
]


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--ntdd-report=report.html"],
        pytest.param(["--ntdd-write-notebooks=written"], marks=pytest.mark.slow),
        pytest.param(["--ntdd-outputs-lax"], marks=pytest.mark.slow),
        pytest.param(["-n", "2"], marks=pytest.mark.slow),
        pytest.param(["--ntdd-smoke"], marks=pytest.mark.slow),
    ],
    ids=["plain", "report", "write-notebooks", "outputs-lax", "xdist", "smoke"],
)
def test_a_figure_left_open_that_cannot_be_drawn_fails_its_cell_in_every_run(
    pytester: pytest.Pytester, notebook: object, options: list[str]
) -> None:
    notebook(LEFT_OPEN)  # type: ignore[operator]
    notebook(SETUP_LEAVES_ONE, name="setup.ipynb")  # type: ignore[operator]
    plugins = ["xdist"] if "-n" in options else []
    args = ["--ntdd", "-rfE", "nb.ipynb", "setup.ipynb", *options]
    result = run(pytester, *args, plugins=plugins, subprocess=True)
    result.assert_outcomes(failed=2, passed=2, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "FAILED nb.ipynb::test_a_broken_title - ValueError*",
            "FAILED nb.ipynb::test_a_tick_formatter_that_raises - ValueError: no label*",
            "ERROR setup.ipynb::test_below_it - ValueError in setup cell 1*",
        ]
    )
