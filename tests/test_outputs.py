"""Each setup cell's outputs are recorded as a kernel records them, in nbformat's shapes:
streams merged and collapsed, a last expression's value, displays and their updates,
the inline backend's figures, and what a cell raised."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from conftest import run
from output_oracle import png_size

from ntdd.runtime.cell_outputs import STREAM_CAP, Outputs, collapsed

# A conftest that writes the cells each report's record holds (`record_of(report).cells`).
DUMP = """
import json
from ntdd.plugin.results.record import record_of
def pytest_runtest_logreport(report):
    record = record_of(report)
    for cell in record.cells if record is not None else ():
        with open("cells.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(cell.as_dict()) + "\\n")
"""


def outputs_of(
    pytester: pytest.Pytester, notebook: Any, cells: list[str], subprocess: bool = False
) -> dict[int, list[dict[str, Any]]]:
    """The outputs recorded for each setup cell of a notebook of *cells*, by cell number."""
    notebook(cells)
    pytester.makeconftest(DUMP)
    run(pytester, "--ntdd", "--ntdd-report=report.html", "nb.ipynb", subprocess=subprocess)
    lines = (pytester.path / "cells.jsonl").read_text(encoding="utf-8").splitlines()
    return {c["index"]: c["outputs"] for c in map(json.loads, lines)}


def test_stdout_and_stderr_are_streams_merged_in_the_order_written(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cell = "import sys\nprint('a')\nprint('b')\nprint('e', file=sys.stderr)\nprint('c')"
    outputs = outputs_of(pytester, notebook, [cell, "# TEST\nassert True"])
    assert outputs[1] == [
        nbformat.v4.new_output("stream", name="stdout", text="a\nb\n"),
        nbformat.v4.new_output("stream", name="stderr", text="e\n"),
        nbformat.v4.new_output("stream", name="stdout", text="c\n"),
    ]


def test_a_progress_line_shows_its_last_state(pytester: pytest.Pytester, notebook: Any) -> None:
    cell = "for i in range(0, 101, 25):\n    print(f'\\rtraining {i}%', end='')\nprint(' done')"
    outputs = outputs_of(pytester, notebook, [cell, "# TEST\nassert True"])
    assert outputs[1] == [nbformat.v4.new_output("stream", text="training 100% done\n")]


def test_a_last_expression_is_an_execute_result_unless_a_semicolon_hides_it(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = ["x = 41\nx + 1", "x;", "[x, 'a']", "# TEST\nassert x"]
    outputs = outputs_of(pytester, notebook, cells)
    assert outputs[1] == [
        nbformat.v4.new_output("execute_result", {"text/plain": "42"}, execution_count=1)
    ]
    assert outputs[2] == []
    assert outputs[3][0]["data"] == {"text/plain": "[41, 'a']"}  # IPython's own formatter
    assert outputs[3][0]["execution_count"] == 3


def test_a_rich_value_has_the_mime_bundle_a_kernel_gives(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "class Table:\n"
        "    def _repr_html_(self):\n        return '<table><tr><td>1</td></tr></table>'\n"
        "    def _repr_markdown_(self):\n        return ('**t**', {'isolated': True})\n"
        "    def __repr__(self):\n        return 'Table()'\n"
        "Table()",
        "# TEST\nassert True",
    ]
    (result,) = outputs_of(pytester, notebook, cells)[1]
    assert result["data"] == {
        "text/plain": "Table()",
        "text/html": "<table><tr><td>1</td></tr></table>",
        "text/markdown": "**t**",
    }
    assert result["metadata"] == {"text/markdown": {"isolated": True}}


def test_display_makes_display_data_and_a_display_id_updates_in_place(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "from IPython.display import HTML, Markdown, update_display\n"
        "display(HTML('<b>hi</b>'))\n"
        "h = display(Markdown('one'), display_id='m')\n"
        "print('between')\n"
        "h.update(Markdown('two'))",
        "# TEST\nassert h.display_id == 'm'",
    ]
    shown = outputs_of(pytester, notebook, cells)[1]
    assert [o["output_type"] for o in shown] == ["display_data", "display_data", "stream"]
    assert shown[0]["data"]["text/html"] == "<b>hi</b>"
    assert shown[1]["data"]["text/markdown"] == "two"  # updated where it was first shown


@pytest.mark.slow
def test_a_warning_shows_on_stderr_where_it_was_raised_as_a_kernel_prints_it(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cell = "import warnings\nprint('before')\nwarnings.warn('careful')\nprint('after')"
    # In a process of its own: this suite's own filters make a warning an error.
    outputs = outputs_of(pytester, notebook, [cell, "# TEST\nassert True"], subprocess=True)
    kinds = [(o["output_type"], o["name"]) for o in outputs[1]]
    assert kinds == [("stream", "stdout"), ("stream", "stderr"), ("stream", "stdout")]
    assert outputs[1][1]["text"].endswith("UserWarning: careful\n  warnings.warn('careful')\n")


@pytest.mark.slow
def test_a_deprecation_shows_where_a_kernel_shows_it_from_the_notebooks_own_code_only(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    pytester.makepyfile(
        lib="import warnings\ndef old():\n    warnings.warn('lib is old', DeprecationWarning)"
    )
    cells = [
        "import warnings, lib\nlib.old()\nwarnings.warn('mine is old', DeprecationWarning)",
        "# TEST\nassert lib",
    ]
    outputs = outputs_of(pytester, notebook, cells, subprocess=True)
    text = "".join(output["text"] for output in outputs[1])
    assert "mine is old" in text and "lib is old" not in text  # Python's default filters


def test_what_a_library_logs_shows_on_stderr_as_in_a_kernel(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    # As a library logs: the notebook's code never names the module (`'log' + 'ging'`).
    cell = "import json\n__import__('log' + 'ging').getLogger('lib').warning('font not found')"
    outputs = outputs_of(pytester, notebook, [cell, "# TEST\nassert json"])
    assert outputs[1] == [nbformat.v4.new_output("stream", name="stderr", text="font not found\n")]


def test_a_cell_that_raised_has_an_error_output(pytester: pytest.Pytester, notebook: Any) -> None:
    outputs = outputs_of(pytester, notebook, ["print('before')\n1 / 0", "# TEST\nassert True"])
    stream, error = outputs[1]
    assert stream["text"] == "before\n"
    assert (error["output_type"], error["ename"]) == ("error", "ZeroDivisionError")
    assert error["evalue"] == "division by zero"
    assert any("1 / 0" in line for line in error["traceback"])


def test_the_recorded_outputs_validate_as_a_notebooks(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = ["print('a')\n2", "display({'x': 1})", "1 / 0", "# TEST\nassert True"]
    outputs = outputs_of(pytester, notebook, cells)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("", outputs=outputs[n]) for n in sorted(outputs)]
    )
    nbformat.validate(nbformat.from_dict(nb))


@pytest.mark.slow
def test_a_cells_figure_is_shown_as_png_at_its_end_and_closed(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nprint('drawn')",
        "numbers = plt.get_fignums()",
        "# TEST\nassert numbers == []",
    ]
    outputs = outputs_of(pytester, notebook, cells, subprocess=True)
    stream, figure = outputs[1]
    assert stream["text"] == "drawn\n"
    assert figure["output_type"] == "display_data"
    assert figure["data"]["text/plain"] == "<Figure size 640x480 with 1 Axes>"
    width, height = png_size(figure["data"]["image/png"])
    assert 300 < width < 640 and 200 < height < 480  # 72 dpi, trimmed tight as a kernel trims
    assert outputs[2] == []


def test_a_stream_that_prints_a_lot_keeps_a_marked_tail() -> None:
    outputs = Outputs()
    for n in range(STREAM_CAP // 4):
        outputs.stream("stdout", f"{n:>9}\n")
    (stream,) = outputs.as_list()
    head, _, tail = stream["text"].partition("\n")
    assert head.startswith("[… ") and head.endswith("characters of output left out …]")
    assert tail.endswith(f"{STREAM_CAP // 4 - 1:>9}\n")
    assert STREAM_CAP <= len(tail) <= 2 * STREAM_CAP


def test_backspaces_and_carriage_returns_collapse_as_a_notebook_shows_them() -> None:
    assert collapsed("abc\x08\x08d\n") == "ad\n"
    assert collapsed("10%\r20%\r\n") == "20%\n"
    assert collapsed("a\rb\nc\n") == "b\nc\n"


def test_clear_output_clears_what_the_cell_showed_so_far(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    cells = [
        "from IPython.display import clear_output\n"
        "for i in range(3):\n    clear_output(wait=True)\n    print(i)",
        "h = display('Hello', display_id='x')\nclear_output()\nh.update('gone')\nprint('after')",
        "print('kept')\nclear_output(wait=True)  # nothing new comes: what it showed stays",
        "print('gone')\nclear_output()",
        "# TEST\nassert i == 2",
    ]
    outputs = outputs_of(pytester, notebook, cells)
    assert outputs[1] == [nbformat.v4.new_output("stream", text="2\n")]
    assert outputs[2] == [nbformat.v4.new_output("stream", text="after\n")]
    assert outputs[3] == [nbformat.v4.new_output("stream", text="kept\n")]
    assert outputs[4] == []
