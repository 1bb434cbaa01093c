"""The page of `--ntdd-report`: the run's notebooks as one notebook, through nbconvert.

Each notebook is read again, its saved outputs left out: a code cell shows
what it printed in this run, and how long it took; a test cell carries its
verdicts in its metadata, which the template (`templates/report/`) turns
into marks. nbconvert's HTML exporter writes one self-contained file: styles
inline, no script, and a content security policy that lets nothing load and
applies no style sheet but its own (`styles`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ntdd.notebook.files import write_atomic
from ntdd.pipeline.templates import template_dir
from ntdd.plugin.report.markdown import clean_markdown_html, clean_output_html
from ntdd.plugin.report.places import failure_list, place_tests
from ntdd.plugin.report.styles import with_style_hashes
from ntdd.plugin.report.values import NotebookResults, RunResults, TestResult
from ntdd.runtime.cell_log import CellRun

# pytest's summary line: its order of words, and its colours.
ORDER = ("failed", "passed", "skipped", "deselected", "xfailed", "xpassed", "error")
WORST = ("error", "failed", "xpassed", "passed", "xfailed", "skipped")


def write_report(path: Path, run: RunResults) -> None:
    """Render *run* and write it to *path*, atomically; a lone surrogate (a file name
    a cell printed that is not UTF-8) is written as its escape."""
    write_atomic(path, render_report(run).encode("utf-8", "backslashreplace"))


def render_report(run: RunResults) -> str:
    import nbformat

    cells: list[dict[str, Any]] = []
    books = []
    for number, notebook in enumerate(run.notebooks, 1):
        book = _heading(notebook, f"nb-{number}")
        books.append(book)
        cells += _cells_of(notebook, book)
    nb = nbformat.from_dict(
        {
            "cells": cells,
            "metadata": {"language_info": {"name": "python"}},
            "nbformat": 4,
            "nbformat_minor": 5,
        }
    )
    resources = {"ntdd": _header(run, books), "metadata": {"name": "ntdd report"}}
    html, _ = _exporter().from_notebook_node(nb, resources=resources)
    return with_style_hashes(str(html))


def _exporter() -> Any:
    """nbconvert's HTML exporter with our template, made for a page of many notebooks.

    Validated once, not after each preprocessor; and without the exporter's last
    pass, which parses the whole page again to add `tabindex` and `alt`
    attributes (images a cell showed have no `alt` in a notebook either): for 200
    notebooks that pass took as long as the rendering.
    """
    from nbconvert import HTMLExporter
    from nbconvert.exporters import TemplateExporter

    class ReportExporter(HTMLExporter):
        def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> Any:
            self.register_filter("highlight_code", Highlight())  # type: ignore[no-untyped-call]
            self.register_filter("clean_html", clean_markdown_html)  # type: ignore[no-untyped-call]
            self.register_filter("clean_output_html", clean_output_html)  # type: ignore[no-untyped-call]
            resources = self._init_resources(resources)  # type: ignore[no-untyped-call]
            return TemplateExporter.from_notebook_node(self, nb, resources)

    return ReportExporter(  # type: ignore[no-untyped-call]
        template_name="report",
        extra_template_basedirs=[str(template_dir())],
        optimistic_validation=True,
        # A pull request's notebook writes its markdown into the page: cleaned of what
        # could redirect the reader or restyle the verdicts (<meta>, <style>, <form>, <base>).
        sanitize_html=True,
    )


class Highlight:
    """nbconvert's `highlight_code` filter, with its lexer and formatter made once:
    nbconvert's makes IPython's lexer anew for each cell, a third of the page's time."""

    def __init__(self) -> None:
        from IPython.lib.lexers import IPython3Lexer
        from pygments.formatters import HtmlFormatter

        self.lexer = IPython3Lexer()
        self.formatter = HtmlFormatter(cssclass=" highlight hl-ipython3")

    def __call__(self, source: str, language: str | None = None, metadata: Any = None) -> str:
        from pygments import highlight

        return str(highlight(source or " ", self.lexer, self.formatter))


def _header(run: RunResults, books: list[dict[str, Any]]) -> dict[str, Any]:
    totals, colour = run.totals or (_totals(run.counts), _colour(run.counts))
    return {
        "title": "ntdd report",
        "totals": f"{totals} in {run.seconds:.2f}s",
        "colour": colour if colour in ("red", "green", "yellow") else "yellow",
        "options": run.options,
        "notebooks": books,
        "failures": failure_list(run, books),
    }


def _heading(notebook: NotebookResults, anchor: str) -> dict[str, Any]:
    counts = Counter(test.outcome for test in notebook.tests)
    tests = [_test(test) for test in notebook.tests]
    return {
        "anchor": anchor,
        "path": _shown(notebook.path),
        "totals": _totals(counts),
        "colour": _colour(counts),
        "all": tests,
        "elsewhere": [],  # tests in no cell the page shows
        "anchors": {},  # each code cell's anchor, by its number
        "raised": {run.index: run.message for run in notebook.cells if run.message},
        "problem": "",
    }


def _cells_of(notebook: NotebookResults, book: dict[str, Any]) -> list[Any]:
    """The notebook's cells with this run's outputs, verdicts and times, opened by a heading."""
    opening = _cell_json("raw", book["anchor"], "", {"heading": book})
    read = notebook.read
    if read is None:
        book["problem"] = f"the notebook could not be read again for this page: {notebook.unread}"
        return [opening]
    book["anchors"] = {
        cell.index: f"{book['anchor']}-cell-{cell.index}"
        for cell in read.cells
        if cell.cell_type == "code"
    }
    placed = place_tests(book)
    book["elsewhere"] = placed.pop(None, [])
    runs = _runs_by_cell(notebook.cells)
    cells = [opening]
    for cell in read.cells:
        anchor = f"{book['anchor']}-cell-{cell.index}"
        if cell.cell_type != "code":
            kind = "markdown" if cell.cell_type == "markdown" else "raw"
            cells.append(_cell_json(kind, anchor, cell.source, {"anchor": anchor}))
            continue
        mine, ran = placed.get(cell.index, []), runs.get(cell.index, [])
        meta = _cell_meta(anchor, mine, ran, notebook.pinned.get(cell.index, ""))
        code = _cell_json("code", anchor, cell.source, meta)
        # The prompt is the cell's number, as every message names the cell ("cell 10").
        prompt = cell.index if mine or ran else None
        code.update(outputs=_outputs(mine, ran), execution_count=prompt)
        cells.append(code)
    return cells


def _cell_json(kind: str, anchor: str, source: str, ntdd: dict[str, Any]) -> dict[str, Any]:
    """A cell as nbformat's JSON has it: built as a dict, for nbformat's
    constructors validate each cell, which for thousands of cells takes seconds."""
    return {"id": anchor, "cell_type": kind, "source": source, "metadata": {"ntdd": ntdd}}


def _cell_meta(
    anchor: str, tests: list[dict[str, Any]], runs: list[CellRun], pinned: str
) -> dict[str, Any]:
    error = next((run.error for run in runs if run.error), "")
    outcomes = [t["outcome"] for t in tests] + (["error"] if error else [])
    own = [t for t in tests if not t["label"]]  # the cell's own tests, not one that ran it
    seconds = [t["seconds"] for t in own] or [run.seconds for run in runs[:1]]
    notes = [f"{run.device}: output capped" for run in runs if "… output capped:" in run.stdout]
    return {
        "anchor": anchor,
        "kind": "test" if own else "setup" if runs else "not-run",
        "outcome": _worst(outcomes),
        "tests": tests,
        "seconds": _seconds(sum(seconds)) if seconds else "",
        "error": error,
        "notes": notes,
        "pinned": pinned,
    }


def _outputs(tests: list[dict[str, Any]], runs: list[CellRun]) -> list[dict[str, Any]]:
    """The cell's output in this run: its first device's run's outputs, as a kernel
    recorded them (but its error, which the page shows its own way, and a progress bar
    on stderr shown as text, not as an error's output), a bare test cell's as its test
    ran it; a cell of test functions, each test's stdout and stderr."""
    own = [t for t in tests if not t["label"]]
    recorded = [run for run in runs if run.outputs and run.test != "functions"]
    if recorded:
        return _as_shown(recorded[0])
    outputs = []
    streams = [(t["stdout"], t["stderr"]) for t in own]
    streams = streams or [(run.stdout, run.stderr) for run in runs[:1]]
    for stdout, stderr in streams:
        for name, text in (("stdout", stdout), ("stderr", stderr)):
            if text:
                outputs.append({"output_type": "stream", "name": name, "text": text})
    return outputs


def _as_shown(run: CellRun) -> list[dict[str, Any]]:
    shown = []
    for n, output in enumerate(run.outputs):
        if output["output_type"] == "error":
            continue
        if n in run.progress:
            output = {**output, "name": "stdout"}
        shown.append(output)
    return shown


def _test(test: TestResult) -> dict[str, Any]:
    """A test as the page places it; a check of a cell's outputs is labelled so, beside
    the cell's own verdicts (the cell stays a setup cell)."""
    return {**asdict(test), "label": "outputs" if test.checks_outputs else "", "setup_anchor": ""}


def _runs_by_cell(runs: Iterable[CellRun]) -> dict[int, list[CellRun]]:
    """Each cell's runs, one a device (settled by the ledger), the first device's first."""
    found: dict[int, list[CellRun]] = {}
    for run in runs:
        found.setdefault(run.index, []).append(run)
    return found


def _worst(outcomes: list[str]) -> str:
    return next((o for o in WORST if o in outcomes), "")


def _totals(counts: Counter[str]) -> str:
    """As pytest's summary line words it: `1 failed, 2 passed, 1 skipped`."""
    parts = [f"{counts[word]} {_plural(word, counts[word])}" for word in ORDER if counts[word]]
    return ", ".join(parts) or "no tests ran"


def _plural(word: str, count: int) -> str:
    return f"{word}s" if word == "error" and count != 1 else word  # as pytest says it


def _colour(counts: Counter[str]) -> str:
    if counts["failed"] or counts["error"]:
        return "red"
    return "green" if counts["passed"] else "yellow"


def _seconds(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)
