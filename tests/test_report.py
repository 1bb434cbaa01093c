"""`--ntdd-report FILE.html`: the run as its notebooks, each test cell marked with its verdict.

The page is read the way tools read it (the `data-ntdd-outcome` attributes),
and, where Chromium is installed, the way a person opens it: in a browser,
offline, with nothing fetched from the network.
"""

from __future__ import annotations

import re
import shutil
import sys
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, code, export, md, raw, run
from nbformat.v4 import new_output
from report_page import CLOSED_NETWORK, Elements, chromium, needs_chromium, report_of, requests_in

from ntdd.format.paths import module_path

CELLS = [
    md("# A notebook\nIts *markdown* is rendered."),
    "x = 1\nlr = 0.1\nprint('set up in this run')",
    "# TEST: passes\nprint('the test printed this')\nassert x == 1",
    "# TEST: fails\ndef helper():\n    assert x == 2, 'x is not two'\nhelper()",
    "# TEST: skipped @skip('not today')\nassert False",
    "# TEST: expected @xfail\nassert False",
    "# TEST: unexpected @xfail\nassert True",
]
VERDICTS = ["passed", "failed", "skipped", "xfailed", "xpassed"]  # CELLS' tests, cells 3 to 7
SETUP_FAILS = ["y = lr = 1", "1 / 0", "# TEST: first\nassert True", "# TEST: second\nassert True"]


def test_each_test_cell_is_marked_with_its_verdict(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(CELLS)
    page = Elements(report_of(pytester, "nb.ipynb"))
    cells = page.cells()
    assert [cells[f"nb-1-cell-{i}"] for i in range(3, 8)] == VERDICTS
    assert cells["nb-1-cell-2"] == ""  # a setup cell that ran: no verdict of its own
    assert ("nb.ipynb::test_fails", "", "failed") in page.badges()


def test_a_failure_shows_its_message_and_the_notebooks_part_of_its_traceback(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(CELLS)
    html = report_of(pytester, "nb.ipynb")
    failure = re.search(
        r'<div class="ntdd-failure" data-ntdd-outcome="failed".*?</div>', html, re.S
    )
    assert failure is not None
    text = unescape(failure.group(0))
    assert '<p class="ntdd-message">nb.ipynb::test_fails</p>' in failure.group(0)
    assert text.count("AssertionError: x is not two") == 1  # at the traceback's end, once
    # The frames are the cell's, by cell and line; none of pytest's or ntdd's.
    assert "nb.ipynb, cell 4 (id " in text and ", line 4, in test_fails" in text
    assert ", line 3, in helper" in text and "assert x == 2, 'x is not two'" in text
    assert "_pytest" not in text and "ntdd/runtime/" not in text.replace("\\", "/")
    assert "not today" in html  # a skip's reason, under its cell


def test_a_setup_cell_that_raised_is_marked_and_the_tests_it_errored_say_so(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(SETUP_FAILS, name="setup.ipynb")
    html = unescape(report_of(pytester, "setup.ipynb"))
    cells = Elements(html).cells()
    assert cells == {
        "nb-1-cell-1": "",
        "nb-1-cell-2": "error",
        "nb-1-cell-3": "error",
        "nb-1-cell-4": "error",
    }
    assert "setup cell 2, id" in html and "ZeroDivisionError: division by zero" in html
    # Under each test, a link to the cell, which shows the traceback.
    for name in ("test_first", "test_second"):
        assert (
            f'setup.ipynb::test_{name[5:]}: <a href="#nb-1-cell-2">setup cell 2 raised '
            "ZeroDivisionError</a>; its traceback is under that cell"
        ) in html
    assert "its traceback is under test_first" not in html


def test_cells_show_this_runs_output_and_time_not_their_saved_outputs(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    setup = code("print('printed now')")
    setup.outputs = [new_output("stream", name="stdout", text="SAVED LONG AGO\n")]
    notebook([setup, "import sys\nprint('to stderr', file=sys.stderr)", "# TEST: t\nassert True"])
    html = report_of(pytester, "nb.ipynb")
    assert "printed now" in html and "to stderr" in html
    assert "SAVED LONG AGO" not in html
    assert re.search(r'<span class="ntdd-seconds">\d+ ms</span>', html)


def test_a_cell_sees_the_same_streams_with_a_report_as_without(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The copy of a setup cell's output changes nothing the cell can see."""
    notebook(
        [
            "import sys\nstreams = [(s.encoding, s.isatty(), s.errors) for s in (sys.stdout, sys.stderr)]",  # noqa: E501
            "# TEST: the streams are the usual ones\nassert all(e for e, _, _ in streams), streams",
            "# TEST: both ways alike\nprint(streams)",
        ]
    )
    without = run(pytester, "--ntdd", "-s", "nb.ipynb")
    html = report_of(pytester, "-s", "nb.ipynb")
    without.assert_outcomes(passed=2)
    assert Elements(html).cells()["nb-1-cell-2"] == "passed"


def test_a_cells_output_is_capped_with_a_note(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["print('y' * 50_000)", "# TEST: t\nassert True"])
    html = report_of(pytester, "nb.ipynb")
    assert "y" * 20_000 in html and "y" * 20_001 not in html
    assert "output capped: 30,001 more characters not shown" in html


def test_the_header_has_the_totals_the_options_and_a_table_of_contents(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(CELLS, name="a.ipynb")
    notebook(SETUP_FAILS, name="b.ipynb")
    html = report_of(pytester, "--ntdd-devices=cpu", "--ntdd-param=lr=0.5", "b.ipynb", "a.ipynb")
    assert re.search(
        r"1 failed, 1 passed, 1 skipped, 1 xfailed, 1 xpassed, 2 errors in [\d.]+s", html
    )
    assert "<dt>devices</dt><dd>no test used a device (cpu asked for)</dd>" in html
    assert "<dt>parameters</dt><dd>lr=0.5</dd>" in html
    # The notebooks in collection order, and a link to each failure's cell.
    assert html.index('href="#nb-1">b.ipynb') < html.index('href="#nb-2">a.ipynb')
    assert '<a href="#nb-2-cell-4">a.ipynb::test_fails</a>' in html
    assert '<a href="#nb-1-cell-2">b.ipynb, setup cell 2 (id ' in html  # what errored both
    assert 'id="nb-2-cell-4"' in html


def test_an_exported_module_run_by_plain_pytest_reports_its_notebook(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    path = notebook(CELLS)
    assert export(path) == 0
    run(pytester, str(module_path(path)), "--ntdd-report=r.html")
    cells = Elements((pytester.path / "r.html").read_text()).cells()
    assert cells["nb-1-cell-3"] == "passed" and cells["nb-1-cell-4"] == "failed"


def test_tool_ntdd_report_writes_it_too(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(CELLS[:3])
    pytester.makepyprojecttoml('[tool.ntdd]\nreport = "out/run.html"\n')
    run(pytester, "--ntdd", "nb.ipynb")
    assert "data-ntdd-outcome" in (pytester.path / "out" / "run.html").read_text()


def test_without_nbconvert_the_option_is_a_usage_error(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    notebook(CELLS[:3])
    monkeypatch.setitem(sys.modules, "nbconvert", None)  # as if it were not installed
    result = run(pytester, "--ntdd", "--ntdd-report=r.html", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = (
        "ntdd: --ntdd-report r.html: the report is rendered with nbconvert, which is not installed"
    )
    assert error in result.stderr.str() and "pip install 'ntdd[nbconvert]'" in result.stderr.str()


@pytest.mark.slow
def test_under_xdist_the_controller_writes_every_workers_results(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(CELLS, name="a.ipynb")
    notebook(SETUP_FAILS, name="b.ipynb")
    run(
        pytester,
        "--ntdd",
        "-n",
        "2",
        "--ntdd-report=r.html",
        "--ntdd-summary=s.md",
        "a.ipynb",
        "b.ipynb",
        plugins=["xdist"],
        subprocess=True,
    )
    html = (pytester.path / "r.html").read_text()
    cells = Elements(html).cells()
    assert cells["nb-1-cell-4"] == "failed" and cells["nb-2-cell-2"] == "error"
    assert "set up in this run" in html  # a worker's setup cell output reached the page
    # What errored b's tests reached the controller: one entry, at the cell that raised.
    entry = re.search(r'<a href="#nb-2-cell-2">b\.ipynb, setup cell 2 \(id .*?</li>', html)
    assert entry is not None and "errored 2 tests: " in entry.group(0)
    assert {"test_first", "test_second"} <= set(re.findall(r"test_\w+", entry.group(0)))
    assert (pytester.path / "s.md").read_text().startswith("### ❌ ntdd")


@pytest.mark.slow
def test_each_shard_writes_its_own_report(notebook: Any, pytester: pytest.Pytester) -> None:
    for name in ("a.ipynb", "b.ipynb"):
        notebook(CELLS[:3], name=name)
    pages = [report_of(pytester, f"--ntdd-shard={k}/2", ".", name=f"r{k}.html") for k in (1, 2)]
    shown = [re.findall(r'href="#nb-\d+">(\w)\.ipynb', page) for page in pages]
    assert sorted(shown) == [["a"], ["b"]]
    assert all(
        f"<dt>shard</dt><dd>{k}/2</dd>" in page for k, page in zip((1, 2), pages, strict=True)
    )


def test_the_page_loads_nothing_from_the_network(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook([md("$e^x$ math, as Jupyter renders it"), *CELLS])
    html = report_of(pytester, "nb.ipynb")
    assert Elements(html).resources == []
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html)
    assert "default-src 'none'" in html  # and a browser is told to fetch nothing


# -- in a real browser ---------------------------------------------------------


@pytest.mark.slow
@needs_chromium
def test_in_chromium_offline_the_dom_has_every_verdict_and_message(
    notebook: Any, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    notebook(CELLS, name="a.ipynb")
    notebook(SETUP_FAILS, name="b.ipynb")
    report_of(pytester, "a.ipynb", "b.ipynb")
    net_log = tmp_path / "net.json"
    dom = chromium(
        pytester.path / "report.html",
        tmp_path,
        "--dump-dom",
        *CLOSED_NETWORK,
        f"--log-net-log={net_log}",
    )
    cells = Elements(dom).cells()
    assert [cells[f"nb-1-cell-{i}"] for i in range(3, 8)] == VERDICTS
    assert cells["nb-2-cell-2"] == "error"
    assert "a.ipynb::test_fails" in dom and "AssertionError: x is not two" in dom
    assert "ZeroDivisionError: division by zero" in dom
    assert requests_in(net_log) == []


@needs_chromium
@pytest.mark.slow
def test_in_chromium_the_samples_report_renders_and_takes_a_screenshot(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    for sample in SAMPLES.glob("*.ipynb"):
        shutil.copy(sample, pytester.path)
    shutil.copytree(SAMPLES / "data", pytester.path / "data")
    html = report_of(pytester, *sorted(p.name for p in pytester.path.glob("*.ipynb")))
    page = Elements(html)
    assert {"passed", "xfailed"} <= set(page.cells().values())
    assert {"passed", "xfailed", "skipped"} <= {outcome for _, _, outcome in page.badges()}
    shot = tmp_path / "report.png"
    chromium(
        pytester.path / "report.html", tmp_path, f"--screenshot={shot}", "--window-size=1280,2000"
    )
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


class Body(HTMLParser):
    """The tags of the page's body: what a notebook's cells put there."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self._in_body = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in_body = self._in_body or tag == "body"
        if self._in_body:
            self.tags.append((tag, {name: value or "" for name, value in attrs}))


HOSTILE_MARKDOWN = (
    '<meta http-equiv="refresh" content="0; url=https://example.com/">\n\n'
    "<style>.ntdd-badge { display: none }</style>\n\n"
    '<form action="https://example.com/"><input name="token"></form>\n\n'
    '<base href="https://example.com/">\n\n'
    "Some **bold** words stay."
)


def test_a_notebooks_markdown_and_raw_cells_cannot_redirect_or_restyle_the_page(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """The page's CSP blocks scripts, not a meta refresh, a style sheet, a form or a base."""
    notebook(
        [
            md(HOSTILE_MARKDOWN),
            raw("<b>raw</b><style>body { color: green }</style>"),
            "# TEST: fails\nassert False",
        ]
    )
    page = report_of(pytester)
    tags = {tag for tag, _ in Body(page).tags}
    assert not tags & {"meta", "style", "form", "input", "base"}, tags
    assert "<strong>bold</strong>" in page  # markdown is still rendered
    assert "&lt;b&gt;raw&lt;/b&gt;" in page  # a raw cell shows as its text
    assert "base-uri 'none'; form-action 'none'" in page
