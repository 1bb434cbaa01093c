"""`--ntdd-report`'s page says what the run said: the cells by the numbers the messages
use, each test where it ran, each failure once, the run's own totals and devices."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from conftest import HAVE_TORCH, code, md, run
from report_page import Elements, chromium, needs_chromium, report_of

END = "nb.ipynb::test_notebook_runs_to_the_end"
PINNED = 'class="ntdd-pinned"'
MISSING = ["import ntdd_no_such_module", "x = 1", *(f"# TEST: t{n}\nassert x" for n in range(5))]


def cell_html(html: str, anchor: str) -> str:
    """The page's HTML of one cell, from its `div.ntdd-cell` to the next cell or heading."""
    start = html.index(f'id="{anchor}"')
    ends = [html.find(mark, start + 1) for mark in ('class="ntdd-cell ', '<h2 class="ntdd-')]
    return html[start : min((e for e in ends if e != -1), default=len(html))]


def prompt(html: str, anchor: str) -> str:
    found = re.search(r'jp-InputPrompt jp-InputArea-prompt">(.*?)</div>', cell_html(html, anchor))
    assert found is not None
    return unescape(found.group(1)).replace("\xa0", " ")


def failures_list(html: str) -> list[str]:
    """The entries of the header's list of failures, as text."""
    found = re.search(r'<ol class="ntdd-failures">(.*?)</ol>', html, re.S)
    items = re.findall(r"<li .*?</li>", found.group(1), re.S) if found else []
    return [unescape(re.sub(r"<[^>]+>", "", item)) for item in items]


def test_a_cells_prompt_is_its_number_as_the_messages_count_cells(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            md("# Title"),
            "x = 1",
            md("Some text"),
            "# TEST: ok\nassert x == 1",
            "# TEST: bad\nassert x == 2",
        ]
    )
    html = report_of(pytester, "nb.ipynb")
    assert prompt(html, "nb-1-cell-5") == "In [5]:"  # not the third code cell run
    assert "nb.ipynb, cell 5 (id " in cell_html(html, "nb-1-cell-5")  # as the traceback says
    assert [prompt(html, f"nb-1-cell-{n}") for n in (2, 4)] == ["In [2]:", "In [4]:"]


def test_a_cell_no_test_ran_has_no_number(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook([md("# Title"), "1 / 0", "x = 1", "# TEST: t\nassert x"])
    html = report_of(pytester, "nb.ipynb")
    assert prompt(html, "nb-1-cell-2") == "In [2]:"  # it ran, and raised
    assert prompt(html, "nb-1-cell-3") == "In [ ]:"


def test_a_markdown_cells_headings_paragraphs_and_tables_are_rendered_not_escaped(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            md("# Title\n\nSome *text*.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n---"),
            "x = 1",
            "# TEST: t\nassert x",
        ]
    )
    html = cell_html(report_of(pytester, "nb.ipynb"), "nb-1-cell-1")
    # The heading's id in the notebook's own space (not one of the page's ids).
    assert '<h1 id="user-content-Title">Title' in html and "<p>Some <em>text</em>.</p>" in html
    assert "<table>" in html and "<th>a</th>" in html and "<td>2</td>" in html and "<hr" in html
    assert "&lt;" not in html  # no tag of markdown's shown as its text


def test_the_test_of_the_cells_below_the_last_test_is_shown_on_the_cells_it_ran(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: t\nassert x == 1", "y = 2", "print('the end')"])
    html = report_of(pytester, "nb.ipynb")
    page = Elements(html)
    assert [b for b in page.badges() if b[0] == END] == [(END, "", "passed")] * 2
    for anchor in ("nb-1-cell-3", "nb-1-cell-4"):
        assert f'data-ntdd-test="{END}"' in cell_html(html, anchor)
        assert "passed · test_notebook_runs_to_the_end</span>" in cell_html(html, anchor)
    assert f'data-ntdd-test="{END}"' not in cell_html(html, "nb-1-cell-2")  # nor any other
    assert '<div class="ntdd-elsewhere">' not in html  # nothing under the notebook's title
    assert page.cells()["nb-1-cell-4"] == "passed"


def test_where_a_cell_below_the_last_test_raises_that_cell_carries_the_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: t\nassert x == 1", "y = 2", "assert y == 3", "z = 3"])
    html = report_of(pytester, "nb.ipynb")
    end = [
        (cell, b)
        for cell in (2, 3, 4, 5)
        for b in Elements(cell_html(html, f"nb-1-cell-{cell}")).badges()
        if b[0] == END
    ]
    assert end == [(3, (END, "", "passed")), (4, (END, "", "failed"))]  # cell 3 ran cleanly
    assert "AssertionError" in cell_html(html, "nb-1-cell-4")
    assert Elements(html).cells()["nb-1-cell-3"] == "passed"


def test_a_failures_message_is_shown_once_and_each_frame_once(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: bad\nassert x == 2, 'x is not two'"])
    html = unescape(cell_html(report_of(pytester, "nb.ipynb"), "nb-1-cell-2"))
    assert html.count("x is not two") == 3  # the cell's code, its frame's line, the error
    assert html.count("AssertionError: x is not two") == 1
    assert html.count(", line 2, in test_bad") == 1  # the test's function and its cell: one
    assert '<p class="ntdd-message">nb.ipynb::test_bad</p>' in html


def test_a_recursion_says_how_often_its_line_repeated(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["def down(n):\n    return 1 / n if n == 0 else down(n - 1)", "# TEST: t\ndown(4)"])
    html = unescape(cell_html(report_of(pytester, "nb.ipynb"), "nb-1-cell-2"))
    assert html.count("in down") == 1
    assert "[Previous line repeated 4 more times]" in html


def test_the_header_says_which_devices_ran(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["device = 'cpu'", "# TEST: on the device\nassert device in ('cpu', 'cuda')"])
    html = unescape(report_of(pytester, "nb.ipynb"))
    shown = re.search(r"<dt>devices</dt><dd>(.*?)</dd>", html)
    assert shown is not None
    if cuda_available():
        assert shown.group(1) == "cpu, cuda"
    else:
        assert shown.group(1).startswith("cpu; cuda skipped: "), shown.group(1)
        assert "cuda: cuda" not in shown.group(1)


def cuda_available() -> bool:
    if not HAVE_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


def test_a_header_without_device_tests_says_so(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["x = 1", "# TEST: t\nassert x"])
    html = report_of(pytester, "--ntdd-devices=cpu,cuda", "nb.ipynb")
    assert "<dt>devices</dt><dd>no test used a device (cpu, cuda asked for)</dd>" in html


@pytest.mark.slow
def test_a_setup_cell_whose_value_a_test_parameter_pinned_is_marked(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            code("epochs = 100", tags=["parameters"]),  # the defaults: never pinned
            "epochs = 50\nlr = 0.5",
            "batch = 8",
            "# TEST: one epoch\nassert epochs == 1",
        ]
    )
    html = unescape(report_of(pytester, "--ntdd-param=epochs=1", "nb.ipynb"))
    assert "pinned by a test parameter: epochs=1" in cell_html(html, "nb-1-cell-2")
    marked = [n for n in (1, 2, 3, 4) if PINNED in cell_html(html, f"nb-1-cell-{n}")]
    assert marked == [2]
    assert Elements(html).cells()["nb-1-cell-4"] == "passed"
    assert PINNED not in report_of(pytester, "nb.ipynb", name="plain.html")


def test_a_failing_setup_cell_is_one_entry_naming_the_tests_it_errored(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(MISSING)
    html = report_of(pytester, "nb.ipynb")
    [entry] = failures_list(html)
    assert entry.startswith("nb.ipynb, setup cell 1 (id ")
    assert "ModuleNotFoundError: No module named 'ntdd_no_such_module'" in entry
    assert "errored 5 tests: test_t0, test_t1, test_t2, test_t3, test_t4" in entry
    assert '<a href="#nb-1-cell-1">nb.ipynb, setup cell 1' in html
    assert "its traceback is under test_t0" not in html
    assert "its traceback is shown for the first test" not in html


@pytest.mark.slow
def test_the_list_keeps_one_entry_per_failure_beside_it(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: a\nassert x == 2", "# TEST: b\nassert x == 3"], name="a.ipynb")
    notebook(MISSING, name="b.ipynb")
    entries = failures_list(report_of(pytester, "a.ipynb", "b.ipynb"))
    assert [e.split(" ")[0] for e in entries] == ["a.ipynb::test_a", "a.ipynb::test_b", "b.ipynb,"]


def terminal_totals(result: pytest.RunResult) -> str:
    """pytest's summary line, less its time and its rule."""
    line = result.outlines[-1]
    found = re.fullmatch(r"=+ (.*) in [\d.]+s(?: \([\d:]+\))? =+", line)
    assert found is not None, line
    return found.group(1)


@pytest.mark.slow
def test_the_totals_are_the_runs_nbvals_cells_counted(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(MISSING)
    result = run(
        pytester, "--ntdd", "--nbval-lax", "--ntdd-report=r.html", "nb.ipynb", plugins=["nbval"]
    )
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    totals = re.search(r'<p class="ntdd-totals ntdd-red">(.*) in [\d.]+s</p>', html)
    assert totals is not None
    assert totals.group(1) == terminal_totals(result)
    assert "failed" in totals.group(1)  # nbval's cell, which ntdd's own counts leave out
    # nbval's failure is listed, linked to its cell.
    assert re.search(r'<a href="#nb-1-cell-1">nb\.ipynb::Cell 0</a>', html)


# -- in a real browser ---------------------------------------------------------

MEASURE = """
<script>
const wide = [...document.querySelectorAll("pre.ntdd-traceback, .ntdd-message")]
  .filter(e => e.scrollWidth > e.clientWidth + 1
          || e.getBoundingClientRect().right > document.documentElement.clientWidth);
document.body.setAttribute("data-wider-than-page", String(wide.length));
</script>
"""


def measurable(page: Path) -> Path:
    """A copy of *page* that measures itself: its policy allows no script, so the copy
    drops the policy and adds one that counts the failures' boxes wider than the page."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    copy = page.with_name("measured.html")
    copy.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    return copy


@pytest.mark.slow
@needs_chromium
def test_in_chromium_a_long_traceback_line_wraps_within_the_page(
    notebook: Any, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    notebook(["x = 1", "# TEST: long\nraise ValueError('word ' * 100 + 'x' * 300)"])
    report_of(pytester, "nb.ipynb")
    page = measurable(pytester.path / "report.html")
    dom = chromium(page, tmp_path, "--dump-dom", "--window-size=900,2000")
    found = re.search(r'data-wider-than-page="(\d+)"', dom)
    assert found is not None, "the measuring script did not run"
    assert found.group(1) == "0"
    assert "x" * 300 in dom  # wrapped, not cut
