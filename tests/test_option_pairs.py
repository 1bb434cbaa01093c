"""Every pair of ntdd's run options, on the kinds of notebook users have: the verdicts are the
plain run's, or the pair is refused by name.

Four notebooks: a torch training loop, a numpy/matplotlib analysis with a
figure, one with outputs a kernel shows without complaint but JSON has no
plain form for (a lone surrogate, numpy scalars in a JSON display), and one
whose test fails. Their saved outputs are those a run writes back, so that
the output checks have something true to compare with. The runs are a
pairwise covering of the options (every allowed pair in at least one run,
most runs holding several), each checked against the same invariants: the
verdicts and exit status of the plain run, no INTERNALERROR, every file
asked for written and saying what ran, no file written that was not asked
for, and no notebook changed unless asked.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import plugin_env, run

pytest.importorskip("torch")
pytest.importorskip("xdist")
pytest.importorskip("nbval")
pytest.importorskip("pytest_cov")
pytestmark = pytest.mark.slow  # a dozen runs of four notebooks, torch imported in each


@dataclass(frozen=True)
class Option:
    args: tuple[str, ...]
    writes: tuple[str, ...] = ()  # the files or folders it asks for
    plugins: tuple[str, ...] = ()


# Where the tests run: each covering run runs in both, so that every pair is seen where
# reports cross xdist's execnet to the controller and where they do not.
PLACES = {"serial": Option(()), "xdist": Option(("-n", "2"), plugins=("xdist",))}
OPTIONS: dict[str, Option] = {
    "report": Option(("--ntdd-report", "report.html"), ("report.html",)),
    "summary": Option(("--ntdd-summary", "summary.md"), ("summary.md",)),
    "write": Option(("--ntdd-write-notebooks", "out"), ("out",)),
    "overwrite": Option(("--ntdd-overwrite",)),
    "outputs": Option(("--ntdd-outputs",)),
    "outputs-lax": Option(("--ntdd-outputs-lax",)),
    "smoke": Option(("--ntdd-smoke", "--ntdd-smoke-min-seconds", "0")),  # every cut made
    "untested": Option(("--ntdd-run-untested",)),
    "timeout": Option(("--ntdd-timeout", "300")),
    "notebook-timeout": Option(("--ntdd-notebook-timeout", "600")),
    "threads": Option(("--ntdd-threads", "1")),
    "slow-cells": Option(("--ntdd-slow-cells", "3")),
    "durations": Option(("--ntdd-store-durations", "durations.json"), ("durations.json",)),
    "cov": Option(("--cov=.", "--cov-report="), (".coverage",), ("pytest_cov",)),
    "junit": Option(("--junit-xml", "junit.xml"), ("junit.xml",)),
    "nbval": Option(("--nbval-lax",), plugins=("nbval",)),
    "reuse": Option(("--ntdd-reuse", "store"), ("store",)),  # a first run: nothing to reuse
}

# Pairs refused by name: each would change what a file says, or check a cell twice.
REFUSED: dict[frozenset[str], tuple[str, str]] = {
    frozenset({"write", "overwrite"}): ("--ntdd-write-notebooks", "--ntdd-overwrite"),
    frozenset({"outputs", "outputs-lax"}): ("--ntdd-outputs", "--ntdd-outputs-lax"),
    frozenset({"outputs", "nbval"}): ("--ntdd-outputs", "--nbval-lax"),
    frozenset({"outputs-lax", "nbval"}): ("--ntdd-outputs-lax", "--nbval-lax"),
    frozenset({"smoke", "overwrite"}): ("--ntdd-smoke", "--ntdd-overwrite"),
    frozenset({"smoke", "outputs"}): ("--ntdd-smoke", "--ntdd-outputs"),
    frozenset({"smoke", "outputs-lax"}): ("--ntdd-smoke", "--ntdd-outputs-lax"),
    frozenset({"reuse", "write"}): ("--ntdd-reuse", "--ntdd-write-notebooks"),
    frozenset({"reuse", "overwrite"}): ("--ntdd-reuse", "--ntdd-overwrite"),
}


def covering_runs() -> list[tuple[str, ...]]:
    """Runs that hold every allowed pair of options at least once, none a refused pair:
    greedily, each run taking the option that covers the most pairs still uncovered."""
    names = list(OPTIONS)
    left = {frozenset(p) for p in itertools.combinations(names, 2)} - set(REFUSED)
    runs: list[tuple[str, ...]] = []
    while left:
        first = min(left, key=lambda pair: sorted(pair))
        chosen = sorted(first)
        while True:
            allowed = [
                n
                for n in names
                if n not in chosen and all(frozenset({n, c}) not in REFUSED for c in chosen)
            ]
            gain = {n: sum(frozenset({n, c}) in left for c in chosen) for n in allowed}
            best = max(allowed, key=lambda n: (gain[n], -names.index(n)), default=None)
            if best is None or gain[best] == 0:
                break
            chosen.append(best)
        runs.append(tuple(sorted(chosen, key=names.index)))
        left -= {frozenset(p) for p in itertools.combinations(chosen, 2)}
    return runs


TRAIN = [
    "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
    "torch.manual_seed(0)\n"
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    "X = torch.randn(256, 4)\ny = (X.sum(1) > 0).long()\n"
    "loader = DataLoader(TensorDataset(X, y), batch_size=32)\n"
    "model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.5)",
    "losses = []\nfor epoch in range(6):\n    total = 0.0\n    for xb, yb in loader:\n"
    "        xb, yb = xb.to(device), yb.to(device)\n        opt.zero_grad()\n"
    "        loss = nn.functional.cross_entropy(model(xb), yb)\n"
    "        loss.backward()\n        opt.step()\n        total += loss.item()\n"
    "    losses.append(total)\nprint('trained')",
    "# TEST: the loss went down\nassert losses[-1] < losses[0]",
    "# TEST\ndef test_one_logit_per_class(device):\n"
    "    assert model.to(device)(X.to(device)).shape == (256, 2)",
]
ANALYSIS = [
    "%matplotlib inline\nimport numpy as np\nimport matplotlib.pyplot as plt",
    "# NBVAL_CHECK_OUTPUT\nx = np.linspace(0, 1, 50)\ny = 2 * x + 1\n"
    "print(f'mean {y.mean():.3f}')\ny[:3].round(2)",
    "plt.plot(x, y)\nplt.title('a line');",
    "# TEST: the slope is two\nassert np.isclose(np.polyfit(x, y, 1)[0], 2)",
]
UNUSUAL = [
    "# NBVAL_CHECK_OUTPUT\nimport numpy as np\nfrom IPython.display import JSON, display\n"
    "print('caf\\udce9.csv')\n"
    "display(JSON({'acc': np.float64(0.91), 'n': np.int64(3)}))",
    "# TEST: numpy's scalars compare\nassert np.float32(0.5) == 0.5",
]
FAILING = ["x = 1", "# TEST: x is two\nassert x == 2"]
NOTEBOOKS = {"train": TRAIN, "analysis": ANALYSIS, "unusual": UNUSUAL, "failing": FAILING}

# The plain run's verdicts: what every run of the pairs must give too.
PLAIN = {
    "analysis.ipynb::test_the_slope_is_two": "passed",
    "failing.ipynb::test_x_is_two": "failed",
    "train.ipynb::test_one_logit_per_class[cpu]": "passed",
    "train.ipynb::test_one_logit_per_class[cuda]": "skipped",
    "train.ipynb::test_the_loss_went_down": "passed",
    "unusual.ipynb::test_numpy_s_scalars_compare": "passed",
}

# Each report's verdict, where reports come together (xdist's controller too).
VERDICTS = """
import json
def pytest_runtest_logreport(report):
    if report.failed or report.when == "call" or (report.skipped and report.when == "setup"):
        outcome = "failed" if report.failed else report.outcome
        with open("verdicts.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps([report.nodeid, outcome]) + "\\n")
        if report.failed and "::outputs_of_cell_" in report.nodeid:  # why, for the assert
            with open("differences.txt", "a", encoding="utf-8") as f:
                f.write(report.longreprtext + "\\n")
"""
COVERAGE = '[tool.coverage.run]\nplugins = ["ntdd.coverage"]\n'
HARNESS = {"conftest.py", "pyproject.toml", "verdicts.jsonl", "differences.txt", "__pycache__"}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The four notebooks, the clean ones saved with the outputs a run writes back."""
    folder = tmp_path_factory.mktemp("notebooks")
    for name, sources in NOTEBOOKS.items():
        cells = [nbformat.v4.new_code_cell(source) for source in sources]
        nbformat.write(nbformat.v4.new_notebook(cells=cells), str(folder / f"{name}.ipynb"))
    clean = [f"{name}.ipynb" for name in NOTEBOOKS if name != "failing"]
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--ntdd"]
    subprocess.run(
        [*command, "--ntdd-overwrite", *clean],
        cwd=folder,
        env={**os.environ, **plugin_env(), "MPLCONFIGDIR": str(folder / ".matplotlib")},
        check=True,
        capture_output=True,
    )
    return folder


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("*.ipynb")}


def _verdicts(folder: Path) -> dict[str, str]:
    lines = (folder / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    found: dict[str, str] = {}
    for nodeid, outcome in map(json.loads, lines):
        if found.get(nodeid) != "failed":
            found[nodeid] = outcome
    return found


@pytest.fixture
def sandbox(pytester: pytest.Pytester, saved: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The notebooks in a folder of their own, where the runs run: pytester keeps its own
    files (the runs' captured output, their HOME's caches) beside it."""
    folder = pytester.path / "work"
    folder.mkdir()
    for notebook in saved.glob("*.ipynb"):
        shutil.copy(notebook, folder / notebook.name)
    (folder / "conftest.py").write_text(VERDICTS)
    (folder / "pyproject.toml").write_text(COVERAGE)
    monkeypatch.chdir(folder)
    # matplotlib's font cache as the saved run had it: a fresh HOME would say it builds one
    monkeypatch.setenv("MPLCONFIGDIR", str(saved / ".matplotlib"))
    return folder


def _run(pytester: pytest.Pytester, names: tuple[str, ...], place: str = "serial") -> Any:
    chosen = [PLACES[place], *(OPTIONS[name] for name in names)]
    args = [a for option in chosen for a in option.args]
    plugins = [p for option in chosen for p in option.plugins]
    return run(pytester, "--ntdd", *args, ".", plugins=plugins, subprocess=True)


def test_the_plain_run_gives_the_verdicts_the_pairs_are_held_to(
    pytester: pytest.Pytester, sandbox: Path
) -> None:
    before = _digests(sandbox)
    result = _run(pytester, ())
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert _verdicts(sandbox) == PLAIN
    assert _digests(sandbox) == before
    assert {p.name for p in sandbox.iterdir()} - HARNESS == set(before)


def test_the_pairs_are_covered() -> None:
    runs = covering_runs()
    covered = {frozenset(p) for run in runs for p in itertools.combinations(run, 2)}
    allowed = {frozenset(p) for p in itertools.combinations(OPTIONS, 2)} - set(REFUSED)
    assert covered == allowed
    assert not any(pair in covered for pair in REFUSED)
    assert len(runs) <= 12  # pairwise, not the product: within the suite's budget


def _in_order(names: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(names, key=list(OPTIONS).index))


@pytest.mark.parametrize(
    "pair", sorted(REFUSED, key=_in_order), ids=lambda p: "+".join(_in_order(p))
)
def test_each_refused_pair_is_refused_naming_both_options(
    pytester: pytest.Pytester, sandbox: Path, pair: frozenset[str]
) -> None:
    before = _digests(sandbox)
    result = _run(pytester, _in_order(pair))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert all(option in said for option in REFUSED[pair]), said
    assert "INTERNALERROR" not in said + result.stdout.str()
    assert _digests(sandbox) == before
    assert {p.name for p in sandbox.iterdir()} - HARNESS == set(before)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("names", covering_runs(), ids="+".join)
def test_options_together_keep_the_plain_runs_verdicts(
    pytester: pytest.Pytester, sandbox: Path, names: tuple[str, ...], place: str
) -> None:
    before = _digests(sandbox)
    result = _run(pytester, names, place)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    verdicts = _verdicts(sandbox)
    assert {nodeid: verdicts.get(nodeid) for nodeid in PLAIN} == PLAIN
    if "slow-cells" in names:  # on the controller too: the workers' cells, named
        assert "ntdd: slowest 3 notebook cells" in output and ".ipynb cell " in output
    _assert_asked_for_files_say_what_ran(sandbox, names, verdicts)
    asked = {w for name in names for w in OPTIONS[name].writes}
    written = {p.name for p in sandbox.iterdir()} - HARNESS - set(before)
    assert {w for w in written if not w.startswith(".coverage")} == {
        w for w in asked if not w.startswith(".coverage")
    }
    changed = {name for name, digest in _digests(sandbox).items() if before[name] != digest}
    assert changed <= (
        {"train.ipynb", "analysis.ipynb", "unusual.ipynb"} if "overwrite" in names else set()
    )
    _assert_other_items_judged(names, verdicts)


def _assert_asked_for_files_say_what_ran(
    folder: Path, names: tuple[str, ...], verdicts: dict[str, str]
) -> None:
    failed = sum(outcome == "failed" for outcome in verdicts.values())
    if "report" in names:
        page = (folder / "report.html").read_text(encoding="utf-8")
        assert all(f"{n}.ipynb" in page for n in NOTEBOOKS) and "test_x_is_two" in page
    if "summary" in names:
        summary = (folder / "summary.md").read_text(encoding="utf-8")
        assert f"{failed} failed" in summary and "test_x_is_two" in summary
    if "junit" in names:
        suite = ET.parse(folder / "junit.xml").getroot().find("testsuite")
        assert suite is not None
        assert int(suite.get("failures", "0")) + int(suite.get("errors", "0")) == failed
        assert int(suite.get("tests", "0")) >= len(PLAIN)
    if "durations" in names:
        durations = json.loads((folder / "durations.json").read_text(encoding="utf-8"))
        assert set(durations) >= {f"{n}.ipynb" for n in NOTEBOOKS}
    if "write" in names:
        written = {p.name for p in (folder / "out").iterdir()}
        assert written == {"train.ipynb", "analysis.ipynb", "unusual.ipynb"}
        for path in (folder / "out").iterdir():
            nbformat.validate(nbformat.read(str(path), as_version=4))
    if "cov" in names:
        assert any(p.name.startswith(".coverage") for p in folder.iterdir())


def _assert_other_items_judged(names: tuple[str, ...], verdicts: dict[str, str]) -> None:
    """The items an option adds pass, where the notebooks did not change: the output checks
    (the saved outputs are a run's), nbval's cells but the failing notebook's test."""
    others = {nodeid: outcome for nodeid, outcome in verdicts.items() if nodeid not in PLAIN}
    checks = {n: o for n, o in others.items() if "::outputs_of_cell_" in n}
    if "outputs" in names or "outputs-lax" in names:
        differences = Path("differences.txt")
        said = differences.read_text(encoding="utf-8") if differences.exists() else ""
        assert checks and all(o in ("passed", "skipped") for o in checks.values()), said
    nbval = {n: o for n, o in others.items() if "::Cell " in n}
    if "nbval" in names:
        assert nbval and all(
            o in ("passed", "skipped") or n.startswith("failing.ipynb") for n, o in nbval.items()
        ), nbval


def test_each_covering_run_names_options_that_exist(pytester: pytest.Pytester) -> None:
    """The harness's options are ntdd's and its neighbours' real flags."""
    help_text = run(
        pytester, "--help", plugins=["xdist", "nbval", "pytest_cov"], subprocess=True
    ).stdout.str()
    every = [*PLACES.values(), *OPTIONS.values()]
    flags = {a.split("=")[0] for option in every for a in option.args if a.startswith("-")}
    assert {flag for flag in flags if flag not in help_text} == set()
