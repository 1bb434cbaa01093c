"""`--ntdd-report` shows each setup cell's outputs under it as JupyterLab would: a value
as `Out[n]`, tables, markdown, figures inline as data: URIs, a progress bar as text,
and nothing that fetches or runs."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import run
from report_page import Elements, chromium, needs_chromium, report_of
from test_report_edges import cell_html

TABLE = "<table><tr><th>a</th></tr><tr><td>1</td></tr></table>"


def report_in_a_process(pytester: pytest.Pytester) -> str:
    """The page of a run in a process of its own: its notebook imports matplotlib."""
    run(pytester, "--ntdd", "--ntdd-report=report.html", "nb.ipynb", subprocess=True)
    return (pytester.path / "report.html").read_text(encoding="utf-8")


def test_a_value_and_displays_show_under_their_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "x = 41\nx + 1",
            "from IPython.display import HTML, Markdown\n"
            f"display(HTML({TABLE!r}))\ndisplay(Markdown('**bold** text'))",
            "# TEST\nassert x",
        ]
    )
    html = report_of(pytester, "nb.ipynb")
    first = cell_html(html, "nb-1-cell-1")
    assert "Out[1]:" in first and "<pre>42</pre>" in first
    second = cell_html(html, "nb-1-cell-2")
    assert "<th>a</th>" in second and "<td>1</td>" in second  # the table, as HTML
    assert "<strong>bold</strong> text" in second  # the markdown, rendered


def test_a_bare_test_cell_shows_what_its_test_printed_and_showed(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "x = 41",
            "# TEST: the table\nfrom IPython.display import HTML\nprint('checking')\n"
            f"assert x == 41\nHTML({TABLE!r})",
        ]
    )
    html = report_of(pytester, "nb.ipynb")
    cell = cell_html(html, "nb-1-cell-2")
    assert "checking" in cell
    assert "<th>a</th>" in cell and "<td>1</td>" in cell  # its value, as HTML


@pytest.mark.slow
def test_a_figure_shows_inline_as_a_png(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["import matplotlib.pyplot as plt\nplt.plot([1, 2]);", "# TEST\nassert plt"])
    html = report_in_a_process(pytester)
    images = [src for src in Elements(html).resources if src.startswith("data:")]
    assert len(images) == 1 and images[0].startswith("data:image/png;base64,iVBOR")
    assert 'src="data:image/png' in cell_html(html, "nb-1-cell-1")


def test_an_html_output_cannot_run_or_fetch(notebook: Any, pytester: pytest.Pytester) -> None:
    shown = (
        "<b>kept</b><script>alert(1)</script><img src='http://example.com/x.png'>"
        "<img src='data:image/gif;base64,R0lGODlhAQABAAAAACw='><a href='data:text/html,x'>a</a>"
        "<style>body {display: none}</style>"
    )
    notebook([f"from IPython.display import HTML\nHTML({shown!r})", "# TEST\nassert True"])
    html = report_of(pytester, "nb.ipynb")
    cell = cell_html(html, "nb-1-cell-1")
    assert "<b>kept</b>" in cell
    assert "&lt;script&gt;" in cell  # shown as text
    assert "<style" not in cell and "display: none}</" not in cell  # dropped, its text with it
    assert "example.com" not in "".join(Elements(html).resources)
    assert 'src="data:image/gif' in cell  # an image the page holds
    assert 'href="data:' not in cell


def test_a_progress_bar_reads_as_text_not_as_an_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    cell = (
        "import sys\nfor i in range(0, 101, 20):\n"
        "    print(f'\\r{i:3}%|{\"#\" * (i // 10):10}|', end='', file=sys.stderr)\n"
        "print(file=sys.stderr)\nprint('a warning', file=sys.stderr)"
    )
    notebook([cell, "import sys\nprint('real trouble', file=sys.stderr)", "# TEST\nassert sys"])
    html = report_of(pytester, "nb.ipynb")
    first = cell_html(html, "nb-1-cell-1")
    assert "100%|##########|\na warning" in first  # its last state, once
    assert "application/vnd.jupyter.stderr" not in first
    assert "application/vnd.jupyter.stderr" in cell_html(html, "nb-1-cell-2")


def test_a_cells_error_shows_once(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["print('before')\n1 / 0", "# TEST\nassert True"])
    html = report_of(pytester, "nb.ipynb")
    cell = cell_html(html, "nb-1-cell-1")
    assert "before" in cell
    assert len(re.findall(r"ZeroDivisionError: division by zero", cell)) == 1


@needs_chromium
@pytest.mark.slow
def test_chromium_reads_the_figure_and_the_table(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            "import matplotlib.pyplot as plt\nplt.plot([1, 2]);",
            f"from IPython.display import HTML\nHTML({TABLE!r})",
            "# TEST\nassert plt",
        ]
    )
    report_in_a_process(pytester)
    dom = chromium(pytester.path / "report.html", pytester.path, "--dump-dom")
    assert re.search(r'<img src="data:image/png;base64,iVBOR[^"]+"', dom)
    assert re.search(r"<table><tbody><tr><th>a</th></tr><tr><td>1</td></tr></tbody></table>", dom)
