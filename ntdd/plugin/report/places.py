"""Where `--ntdd-report` shows each verdict, and the list of failures at the page's top.

A test sits at its own cell. The test of the cells below the last test
(`test_notebook_runs_to_the_end`) has no cell of its own: it sits on the
cells it ran, named, its failure at the cell that raised. A setup cell that
raised errors every test below it; the list says so once, at that cell,
naming the tests, not once per test.
"""

from __future__ import annotations

from typing import Any

from ntdd.plugin.report.values import RunResults

Test = dict[str, Any]  # a TestResult as the template reads it
PROBLEMS = ("failed", "error")


def place_tests(book: dict[str, Any]) -> dict[int | None, list[Test]]:
    """The notebook's tests by the cell that shows them; None: a test no cell shows."""
    anchors: dict[int, str] = book["anchors"]
    placed: dict[int | None, list[Test]] = {}
    for test in book["all"]:
        setup = test["setup_cell"]
        if setup is not None and setup["index"] in anchors:  # its traceback is at that cell
            test["message"] = f"setup cell {setup['index']} raised {setup['raised']}"
            test["setup_anchor"] = anchors[setup["index"]]
        cells = _cells_showing(test, anchors)
        test["anchor"] = anchors[cells[-1]] if cells else book["anchor"]
        if test["cell"] in anchors or not cells:
            placed.setdefault(cells[0] if cells else None, []).append(test)
            continue
        for cell in cells:
            placed.setdefault(cell, []).append(_ran_here(test, cell == cells[-1]))
    return placed


def _cells_showing(test: Test, anchors: dict[int, str]) -> list[int]:
    """Its own cell; else the cells it ran, up to the one that raised, or the cell
    that raised where it ran none."""
    if test["cell"] in anchors:
        return [test["cell"]]
    ran = [cell for cell in test["ran"] if cell in anchors]
    setup = test["setup_cell"]
    if setup is not None and setup["index"] in anchors:
        raised = setup["index"]
        return [*(cell for cell in ran if cell < raised), raised]
    return ran


def _ran_here(test: Test, last: bool) -> Test:
    """*test*'s badge at a cell it ran: named, and passed at each cell it went past
    (each ran without raising); its verdict and failure at the *last*."""
    name = test["nodeid"].rpartition("::")[2]
    if last:
        return {**test, "label": name}
    outcome = "passed" if test["outcome"] in PROBLEMS else test["outcome"]
    return {**test, "label": name, "outcome": outcome, "message": "", "traceback": ""}


def failure_list(run: RunResults, books: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The page's list of failures: each test's, one per setup cell that raised (the
    tests it errored named), other plugins' (nbval's cells), collection errors."""
    entries: list[dict[str, Any]] = []
    by_cell: dict[tuple[str, int], dict[str, Any]] = {}
    for book in books:
        for test in book["all"]:
            if test["outcome"] not in PROBLEMS:
                continue
            setup = test["setup_cell"]
            if setup is None:
                entries.append({**test, "anchor": test.get("anchor", book["anchor"]), "tests": []})
                continue
            key = (book["anchor"], setup["index"])
            if key not in by_cell:
                by_cell[key] = _setup_entry(book, setup)
                entries.append(by_cell[key])
            by_cell[key]["tests"].append(test["nodeid"].partition("::")[2])
    shown = {book["path"]: book for book in books}
    for other in run.others:
        home = shown.get(other.notebook)
        anchor = home["anchors"].get(other.cell, home["anchor"]) if home else ""
        entries.append(
            {
                "nodeid": other.nodeid,
                "outcome": other.outcome,
                "message": other.message,
                "anchor": anchor,
                "tests": [],
            }
        )
    entries += [
        {"nodeid": nodeid, "outcome": "error", "message": message, "anchor": "", "tests": []}
        for nodeid, message in run.collection_errors
    ]
    return entries


def _setup_entry(book: dict[str, Any], setup: dict[str, Any]) -> dict[str, Any]:
    index = setup["index"]
    cell_id = f" (id {setup['cell_id']})" if setup["cell_id"] else ""
    return {
        "nodeid": f"{book['path']}, setup cell {index}{cell_id}",
        "outcome": "error",
        "message": book["raised"].get(index) or f"raised {setup['raised']}",
        "anchor": book["anchors"].get(index, book["anchor"]),
        "tests": [],
    }
