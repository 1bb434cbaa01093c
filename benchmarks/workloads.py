"""The notebooks the benchmarks run on, built fresh in a scratch folder."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_notebooks"
CORPUS_GOOD = ROOT / "tests" / "corpus" / "good"

# Appended to the corpus notebooks, which have no `# TEST` cells of their own.
STATE_TEST = (
    "# TEST: the notebook built its state\n"
    "assert [name for name in globals() if not name.startswith('_')]"
)


def code_cell(source: str) -> dict[str, Any]:
    """A code cell of nbformat 4, as the JSON a notebook file holds."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def _notebook(cells: list[str]) -> dict[str, Any]:
    return {
        "cells": [code_cell(c) for c in cells],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def write_notebook(path: Path, cells: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_notebook(cells), indent=1) + "\n", encoding="utf-8")
    return path


def real_notebooks(folder: Path) -> list[Path]:
    """Workload corpus: the sample notebooks, and the runnable corpus with a test cell added."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SAMPLES / "data", folder / "data", dirs_exist_ok=True)
    paths = []
    for source in sorted(SAMPLES.glob("*.ipynb")):
        shutil.copy(source, folder / source.name)
        paths.append(folder / source.name)
    for source in sorted(CORPUS_GOOD.glob("*.ipynb")):
        notebook = json.loads(source.read_text(encoding="utf-8"))
        if not any("# TEST" in "".join(c.get("source", "")) for c in notebook["cells"]):
            notebook["cells"].append(code_cell(STATE_TEST))
        target = folder / source.name
        target.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
        paths.append(target)
    return paths


SMALL = [
    "import math\nvalues = [math.sqrt(i) for i in range(100)]",
    "total = sum(values)\nlargest = max(values)",
    "# TEST: the total is positive\nassert total > 0",
    "# TEST\ndef test_values():\n    '''A hundred square roots.'''\n"
    "    assert len(values) == 100 and largest < 10",
]


def many_notebooks(folder: Path, count: int) -> Path:
    """Workloads collection and export: *count* small plain-Python notebooks, two tests each."""
    for i in range(count):
        write_notebook(folder / f"nb_{i:04d}.ipynb", SMALL)
    return folder


def many_tests(folder: Path, count: int) -> Path:
    """Workload tests: one notebook with *count* test cells; setup counts its runs."""
    setup = "with open('setup_runs.txt', 'a') as f:\n    f.write('x')\nitems = list(range(50))"
    tests = [f"# TEST: item {i}\nassert items[{i % 50}] == {i % 50}" for i in range(count)]
    return write_notebook(folder / f"tests_{count}.ipynb", [setup, *tests])


def chatty_training(folder: Path, lines: int) -> Path:
    """Workload prints: a loop that prints a line a step, *lines* of them, as training
    loops print their loss, and a test below it."""
    setup = (
        f"losses = []\nfor step in range({lines}):\n"
        "    losses.append(1 / (step + 1))\n"
        "    print(f'step {step}: loss={losses[-1]:.6f}')"
    )
    test = "# TEST: the loss went down\nassert losses[-1] < losses[0]"
    return write_notebook(folder / f"chatty_{lines}.ipynb", [setup, test])


def heavy_notebooks(folder: Path, count: int, megabytes: int = 50, fail: bool = False) -> Path:
    """Workload memory: *count* notebooks whose setup each holds a *megabytes* object.

    With *fail*, each notebook's test fails while a local of the test holds
    the object: the failure's traceback keeps that frame, and the object,
    alive until the cyclic collector runs.
    """
    setup = f"blob = bytes([7]) * ({megabytes} * 1024 * 1024)"
    if fail:
        test = "# TEST: the blob ends in 8 (it does not)\nkept = blob\nassert kept[-1] == 8"
    else:
        test = "# TEST: the blob is there\nassert blob[-1] == 7"
    for i in range(count):
        write_notebook(folder / f"heavy_{i:03d}.ipynb", [setup, test])
    return folder


def heavy_notebook(folder: Path) -> Path:
    """Workload heavy: tiny_classifier alone, where the notebook's own work is most of the time."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(SAMPLES / "data", folder / "data", dirs_exist_ok=True)
    return Path(shutil.copy(SAMPLES / "tiny_classifier.ipynb", folder / "tiny_classifier.ipynb"))


def plain_suite(folder: Path, modules: int = 20, tests: int = 10) -> Path:
    """Workload unused: a small pytest suite of plain test functions, no notebook in sight."""
    folder.mkdir(parents=True, exist_ok=True)
    for m in range(modules):
        body = [f"def test_{t}():\n    assert {t} + 1 == {t + 1}\n" for t in range(tests)]
        (folder / f"test_plain_{m:02d}.py").write_text("\n\n".join(body), encoding="utf-8")
    return folder


def skewed_notebooks(folder: Path, count: int, seconds: float, seed: int = 14) -> dict[str, float]:
    """Workload shards: *count* notebooks whose setup sleeps a skewed share of *seconds*.

    Durations are log-normal (a few notebooks take most of the time, as
    training notebooks do in a course); test counts, 1 to 12, are drawn
    independently, so a count says little about a notebook's time. Returns
    each notebook's planned seconds.
    """
    rng = random.Random(seed)
    draws = [rng.lognormvariate(0.0, 1.2) for _ in range(count)]
    planned = {f"nb_{i:04d}.ipynb": seconds * d / sum(draws) for i, d in enumerate(draws)}
    for name, sleep in planned.items():
        tests = [f"# TEST: check {j}\nassert waited" for j in range(rng.randint(1, 12))]
        write_notebook(
            folder / name, [f"import time\ntime.sleep({sleep:.4f})\nwaited = True", *tests]
        )
    return planned


# -- real notebooks, and the same cells as a hand-written pytest module -----------------

REAL_TEST_EVERY = 4  # a state check after every fourth code cell, and one at the end


def real_chapters(folder: Path) -> list[Path]:
    """Workload real: the d2l chapters of tests/corpus/good/ (torch), with state checks.

    The chapters have no `# TEST` cells of their own; a check goes in after
    every fourth code cell, as a reader's tests would sit between the steps.
    """
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for source in sorted(CORPUS_GOOD.glob("d2l-*.ipynb")):
        notebook = json.loads(source.read_text(encoding="utf-8"))
        cells, seen = [], 0
        for cell in notebook["cells"]:
            cells.append(cell)
            if cell["cell_type"] == "code":
                seen += 1
                if seen % REAL_TEST_EVERY == 0:
                    cells.append(
                        code_cell(STATE_TEST.replace("state", f"state to code cell {seen}"))
                    )
        cells.append(code_cell(STATE_TEST))
        notebook["cells"] = cells
        target = folder / source.name
        target.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
        paths.append(target)
    return paths


CORPUS_PLOTS = ROOT / "tests" / "corpus" / "plots"


def plot_chapters(folder: Path) -> list[Path]:
    """Workload plots: the plot-heavy chapters of tests/corpus/plots/ (matplotlib's figures
    at cells' ends, `plt.show()` mid-cell, a figure as a cell's last value, d2l's SVG),
    with the state checks `real_chapters` adds, as `.ipynb` (the MyST chapter read by
    jupytext), and the d2l helpers they import beside them."""
    import jupytext

    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(CORPUS_PLOTS / "d2l", folder / "d2l", dirs_exist_ok=True)
    paths = []
    for source in sorted([*CORPUS_PLOTS.glob("*.ipynb"), *CORPUS_PLOTS.glob("*.md")]):
        if source.name == "SOURCES.md":
            continue
        notebook = json.loads(jupytext.writes(jupytext.read(source), fmt="ipynb"))
        notebook["cells"] = _with_state_checks(notebook["cells"])
        target = folder / f"{source.stem}.ipynb"
        target.write_text(json.dumps(notebook, indent=1) + "\n", encoding="utf-8")
        paths.append(target)
    return paths


def _with_state_checks(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A state check after every `REAL_TEST_EVERY`th code cell, and one at the end."""
    checked, seen = [], 0
    for cell in cells:
        checked.append(cell)
        if cell["cell_type"] == "code":
            seen += 1
            if seen % REAL_TEST_EVERY == 0:
                checked.append(code_cell(STATE_TEST.replace("state", f"state to code cell {seen}")))
    checked.append(code_cell(STATE_TEST))
    return checked


SHELL = '''
class _Shell:
    """Just enough get_ipython() for the chapters' magics: they are dropped."""
    def run_line_magic(self, name, line): return None
    def run_cell_magic(self, name, line, cell): exec(cell, globals())


def get_ipython():
    return _SHELL


_SHELL = _Shell()
'''


def pytest_floor_module(notebook: Path, folder: Path) -> Path:
    """The floor for a pytest plugin: a notebook's cells as a hand-written pytest module.

    Setup cells at module level, in order (IPython syntax transformed, as a
    person would write it out); each `# TEST` cell a test function. The same
    pytest then collects and runs it, without any notebook plugin.
    """
    from IPython.core.inputtransformer2 import TransformerManager

    transform = TransformerManager().transform_cell
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    parts = [SHELL]
    for number, cell in enumerate(cells):
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] != "code" or not source.strip():
            continue
        code = transform(source)
        if source.startswith("# TEST"):
            body = "".join(f"    {line}\n" for line in code.splitlines())
            parts.append(f"def test_cell_{number}():\n{body}")
        else:
            parts.append(code)
    target = folder / f"test_{notebook.stem.replace('-', '_').replace('.', '_')}.py"
    target.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return target


TRAINING = [
    "import torch\nfrom torch import nn\n\ntorch.manual_seed(0)",
    "X = torch.randn(512, 20)\ny = (X[:, :5].sum(dim=1) > 0).long()",
    "model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))\n"
    "loss_fn = nn.CrossEntropyLoss()",
    "# TEST: one logit per class\nassert model(X).shape == (512, 2)",
    "num_epochs = {epochs}\nlr = 0.05\nopt = torch.optim.SGD(model.parameters(), lr=lr)\n"
    "for epoch in range(num_epochs):\n    for i in range(0, len(X), 16):\n"
    "        opt.zero_grad()\n        loss = loss_fn(model(X[i : i + 16]), y[i : i + 16])\n"
    "        loss.backward()\n        opt.step()",
    "# TEST: training ran and the loss is finite\nassert torch.isfinite(loss)",
    "# TEST: predictions are class indices\nassert set(model(X).argmax(1).tolist()) <= {{0, 1}}",
]


def training_notebooks(folder: Path, count: int, epochs: int = 100) -> list[Path]:
    """Workload pinned: notebooks that train where they set `num_epochs`, with no
    `parameters` cell, as the real training notebooks tried have none."""
    cells = [c.format(epochs=epochs) for c in TRAINING]
    return [write_notebook(folder / f"train_{i}.ipynb", cells) for i in range(count)]
