"""nbval as the oracle of `--ntdd-outputs`: nbval's own test notebooks, each cell judged both ways.

`--ntdd-outputs` promises nbval's verdicts without a kernel, so nbval itself
judges it: its own test notebooks (`../shared/clients/nbval-notebooks/`, kept
unchanged) run under `pytest --nbval` in a kernel and under `pytest
--ntdd-outputs`, and every cell ntdd checks must get nbval's verdict (passed,
failed, skipped), save the documented differences of `DIFFERENCES` and the
bugs of `KNOWN_BUGS` (the test is an xfail naming them while they show).
Which cells ntdd checks must be those nbval checks, by nbval's own marker
reading.
nbval's `Cell K` is its K-th code cell from 0; ntdd's `outputs_of_cell_N`
counts every cell from 1 (`cell_numbers` maps one to the other).

Each run is in a child process, as in `test_beside_nbval.py`: nbval's
kernels leave a file to the garbage collector, and ntdd's runs import sympy
and matplotlib, which an in-process run would import again each time.
`benchmarks/outputs_check.py` reads verdicts with the helpers here.
"""

from __future__ import annotations

import re
import shutil
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import ROOT, run

NBVAL_NOTEBOOKS = ROOT.parent / "shared" / "clients" / "nbval-notebooks"
SAMPLES = "ipynb-test-samples"  # test-*-pass-* must pass under --nbval, test-*-fail-* fail
SANITIZE = "sanitize_defaults.cfg"  # nbval's suite runs the notebooks beside SAMPLES with it

pytestmark = [
    pytest.mark.slow,  # nbval starts a kernel per notebook
    pytest.mark.skipif(not NBVAL_NOTEBOOKS.is_dir(), reason=f"{NBVAL_NOTEBOOKS} is not here"),
]
nbval_plugin = pytest.importorskip("nbval.plugin")

NEVER_RUN = "was saved without having been run"  # ntdd's reason for skipping such a check
NTDD_ITEM = re.compile(r"outputs_of_cell_(\d+)")
NBVAL_ITEM = re.compile(r"Cell (\d+)")
_ESCAPES = re.compile(r"(?:\x1b|#x1B)\[[0-9;]*m")  # colours, as junitxml escapes them


@dataclass(frozen=True)
class Verdict:
    """One item's outcome ("passed", "failed", "error", "skipped", "xfailed") and its message."""

    outcome: str
    message: str = ""


@dataclass(frozen=True)
class Difference:
    """Where the verdicts on one cell differ: both verdicts, what ntdd says differs, and why."""

    ntdd: str
    nbval: str
    fields: frozenset[str]  # what ntdd's message says differs: the documented cause, alone
    why: str


# Where ntdd's verdict on a cell it checks may differ from nbval's, each a difference
# docs/outputs.md ("Where ntdd's verdict differs from nbval's") documents; keyed by the
# notebook (relative to NBVAL_NOTEBOOKS) and the cell as ntdd counts cells. An entry
# for a cell ntdd checks must be observed as written: a stale entry fails too.
FIGURES = "figures: nbval leaves image/png out, ntdd compares it; the fresh one has another size"
PNG = frozenset({"image/png"})
DIFFERENCES: dict[tuple[str, int], Difference] = {
    # sympy's PNG of x**2 + y**3 was saved at 70x26 px; today's sympy and matplotlib
    # render it at 70x25: the text/latex and text/plain agree, so nbval passes it.
    (f"{SAMPLES}/test-latex-pass-correctouput.ipynb", 2): Difference(
        "failed", "passed", PNG, FIGURES
    ),
    # x**2: saved at 23x22 px, rendered at 23x20 px.
    ("latex-example.ipynb", 4): Difference("failed", "passed", PNG, FIGURES),
    # The legend's figure, saved at 396x278 px, is 576x453 px today; the cell's result
    # (`<matplotlib.legend.Legend at ...>`, after a `%matplotlib inline` above) agrees.
    ("sample_notebook.ipynb", 13): Difference("failed", "passed", PNG, FIGURES),
}

# Where ntdd's verdict differs from nbval's for a cause that is a bug of ntdd's, not a
# documented difference: the test is marked xfail while one shows, naming it. An entry
# is held to its verdicts and fields as DIFFERENCES are: once the bug is fixed, the
# entry no longer matches and the test fails until it moves (or goes) from here.
KNOWN_BUGS: dict[tuple[str, int], Difference] = {}


# -- reading verdicts: also used by benchmarks/outputs_check.py ----------------------


def junit_verdicts(xml: Path, notebooks: Iterable[str]) -> dict[tuple[str, str], Verdict]:
    """Each item's verdict in a junitxml file, by (notebook, item name); *notebooks* are
    the notebooks' paths relative to the run's root, which junit writes with dots."""
    by_class = {name.replace("/", "."): name for name in notebooks}
    found: dict[tuple[str, str], Verdict] = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        notebook = by_class.get(case.get("classname", ""))
        if notebook is None:
            continue
        found[(notebook, case.get("name", ""))] = _verdict(case)
    return found


def _verdict(case: ET.Element) -> Verdict:
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        element = case.find(tag)
        if element is not None:
            if tag == "skipped" and element.get("type") == "pytest.xfail":
                outcome = "xfailed"
            text = element.text or element.get("message") or ""
            return Verdict(outcome, _ESCAPES.sub("", text).strip())
    return Verdict("passed")


def fields_differing(message: str) -> frozenset[str]:
    """The fields an ntdd check's failure says differ (`stdout differs:`, `image/png (figure
    1 of 1): ...`); nothing for a message that is not a difference of outputs."""
    head, *lines = message.splitlines() or [""]
    if not head.endswith("its outputs differ from those saved in the notebook"):
        return frozenset()
    return frozenset(line.split()[0].rstrip(":") for line in lines if line[:1].strip())


def cell_numbers(path: Path) -> list[int]:
    """Each code cell's number as ntdd counts cells (all of them, from 1), in order: the
    K-th entry is nbval's `Cell K`."""
    return [n for n, cell in enumerate(_cells(path), 1) if cell.cell_type == "code"]


def _cells(path: Path) -> list[Any]:
    """A notebook's cells as nbval reads them; nbformat's warnings (no cell ids in an
    older notebook) are its business, not a verdict."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(nbformat.read(str(path), as_version=4).cells)


def by_cell(
    verdicts: Mapping[tuple[str, str], Verdict], notebook: str, numbers: Sequence[int]
) -> tuple[dict[int, Verdict], dict[int, Verdict]]:
    """ntdd's and nbval's verdicts on *notebook*'s cells, each keyed by ntdd's cell number;
    *numbers* are its code cells' numbers (`cell_numbers`)."""
    ntdd: dict[int, Verdict] = {}
    nbval: dict[int, Verdict] = {}
    for (name, item), verdict in verdicts.items():
        if name != notebook:
            continue
        if mine := NTDD_ITEM.fullmatch(item):
            ntdd[int(mine.group(1))] = verdict
        elif theirs := NBVAL_ITEM.fullmatch(item):
            nbval[numbers[int(theirs.group(1))]] = verdict
    return ntdd, nbval


def nbval_checks(path: Path, strict: bool) -> set[int]:
    """The cells whose outputs nbval compares (by ntdd's numbering), read with nbval's own
    marker functions as its collector reads them: comments over tags, then the mode."""
    checked = set()
    for n, cell in enumerate(_cells(path), 1):
        if cell.cell_type != "code":
            continue
        with warnings.catch_warnings():  # conflicting markers: nbval warns, and so does ntdd
            warnings.simplefilter("ignore")
            options = dict(nbval_plugin.find_metadata_tags(cell.metadata))
            options.update(dict(nbval_plugin.find_comment_markers(cell.source)))
        if options.get("check", strict):
            checked.add(n)
    return checked


@dataclass(frozen=True)
class Row:
    """One checked cell, both verdicts."""

    notebook: str
    cell: int
    ntdd: Verdict
    nbval: Verdict | None  # None: nbval has no item for the cell

    @property
    def agrees(self) -> bool:
        if self.nbval is None:
            return False
        seen = (self.ntdd.outcome, self.nbval.outcome)
        # A cell saved without having been run: nbval runs it and compares nothing (a pass),
        # ntdd skips its check saying so; docs/outputs.md documents it.
        return seen[0] == seen[1] or (
            seen == ("skipped", "passed") and NEVER_RUN in self.ntdd.message
        )


def rows(
    ntdd: Mapping[tuple[str, str], Verdict],
    nbval: Mapping[tuple[str, str], Verdict],
    notebooks: Mapping[str, Path],
) -> list[Row]:
    """Every cell ntdd checked in *notebooks* (name: path), with nbval's verdict beside."""
    found = []
    for name, path in notebooks.items():
        numbers = cell_numbers(path)
        mine, _ = by_cell(ntdd, name, numbers)
        _, theirs = by_cell(nbval, name, numbers)
        found += [Row(name, n, mine[n], theirs.get(n)) for n in sorted(mine)]
    return found


# -- the runs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Notebooks nbval's suite runs one way, and the ntdd runs that must agree with it."""

    notebooks: str  # a glob under NBVAL_NOTEBOOKS
    nbval: tuple[str, ...]
    ntdd: tuple[tuple[str, ...], ...]  # each a way of asking for the same check
    strict: bool = True


CASES = {
    "samples": Case(f"{SAMPLES}/*.ipynb", ("--nbval",), (("--ntdd-outputs",),)),
    "sanitized": Case(
        "*.ipynb",
        ("--nbval", "--nbval-sanitize-with", SANITIZE),
        (
            ("--ntdd-outputs", "--ntdd-outputs-sanitize-with", SANITIZE),
            ("--ntdd-outputs", "--nbval-sanitize-with", SANITIZE),  # nbval's option, read
        ),
    ),
    "lax": Case(
        "*.ipynb",
        ("--nbval-lax", "--nbval-sanitize-with", SANITIZE),
        (("--ntdd-outputs-lax", "--ntdd-outputs-sanitize-with", SANITIZE),),
        strict=False,
    ),
}


def copied(pytester: pytest.Pytester) -> Path:
    """nbval's notebooks and sanitize file, copied into pytester's folder."""
    shutil.copytree(NBVAL_NOTEBOOKS, pytester.path, dirs_exist_ok=True)
    return pytester.path


def judged(
    pytester: pytest.Pytester, args: Sequence[str], names: Sequence[str], xml: str
) -> dict[tuple[str, str], Verdict]:
    """Each item's verdict in a run of *args* on the notebooks *names*.

    Warnings are left on in ntdd's runs: ntdd shows a cell's warnings under it as a
    kernel does, and `-W ignore` would hide them; nbval's kernel is another process."""
    nbval = any(a.startswith("--nbval") for a in args)
    kernel = "--nbval" in args or "--nbval-lax" in args
    extra = ("--nbval-current-env", "-W", "ignore") if kernel else ()
    result = run(
        pytester,
        *args,
        *extra,
        *names,
        "--color=no",
        f"--junitxml={xml}",
        plugins=["nbval"] if nbval else [],
        subprocess=True,
    )
    assert result.ret in (0, 1), result.stdout.str()[-3000:] + result.stderr.str()[-3000:]
    return junit_verdicts(pytester.path / xml, names)


@pytest.mark.parametrize("case", list(CASES))
def test_each_cell_ntdd_checks_gets_nbvals_verdict(pytester: pytest.Pytester, case: str) -> None:
    chosen = CASES[case]
    root = copied(pytester)
    paths = {p.relative_to(root).as_posix(): p for p in sorted(root.glob(chosen.notebooks))}
    names = list(paths)
    theirs = judged(pytester, chosen.nbval, names, "nbval.xml")
    bugs: set[str] = set()
    for n, way in enumerate(chosen.ntdd):
        mine = judged(pytester, way, names, f"ntdd{n}.xml")
        found = rows(mine, theirs, paths)
        for name, path in paths.items():  # the cells checked are nbval's
            checked = {row.cell for row in found if row.notebook == name}
            assert checked == nbval_checks(path, chosen.strict), (way, name)
        unexplained = []
        for row in found:
            key = (row.notebook, row.cell)
            known = DIFFERENCES.get(key) or KNOWN_BUGS.get(key)
            seen = (row.ntdd.outcome, row.nbval.outcome if row.nbval else None)
            if known is not None:  # observed as written, for the reason written
                assert seen == (known.ntdd, known.nbval), (way, row)
                assert fields_differing(row.ntdd.message) == known.fields, (way, row)
                if key in KNOWN_BUGS:
                    bugs.add(f"{row.notebook} cell {row.cell}: {known.why}")
            elif not row.agrees:
                unexplained.append(row)
        assert not unexplained, (way, unexplained)
        assert found, way  # nothing checked would agree with anything
    if bugs:
        pytest.xfail(f"known bug(s) of ntdd: {'; '.join(sorted(bugs))}")


def test_each_pass_sample_passes_and_each_fail_sample_fails(pytester: pytest.Pytester) -> None:
    """What nbval's suite requires of its samples, required of ntdd: a `-pass-` notebook has
    no failed check (but for a documented difference), a `-fail-` notebook one at least."""
    root = copied(pytester)
    paths = {p.relative_to(root).as_posix(): p for p in sorted(root.glob(f"{SAMPLES}/*.ipynb"))}
    mine = judged(pytester, ("--ntdd-outputs",), list(paths), "ntdd.xml")
    found = rows(mine, {}, paths)
    for name in paths:
        failed = [r for r in found if r.notebook == name and r.ntdd.outcome in ("failed", "error")]
        documented = [r for r in failed if _documented(r)]
        if "-pass-" in name:
            assert failed == documented, (name, failed)
        else:
            assert "-fail-" in name
            assert len(failed) > len(documented), (name, failed)
    assert any("-pass-" in name for name in paths) and any("-fail-" in n for n in paths)


def _documented(row: Row) -> bool:
    """Whether *row*'s failure is a documented difference, failing for its documented cause."""
    known = DIFFERENCES.get((row.notebook, row.cell))
    return known is not None and fields_differing(row.ntdd.message) == known.fields
