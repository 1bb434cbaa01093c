"""The oracle of `ntdd faults`: a fault is caught exactly when the same bug written in fails a test.

For each notebook, each fault's bug is written into the notebook's source by
hand, at the place the fault models (the data where it is made, a model where
it is built, an optimizer where it is made, the mode where it is set), and the
mutant's tests run; a fault with nothing to write into the notebook has no
mutant and must be "not applicable". `ntdd faults` must agree, kind by kind.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from conftest import CORPUS, SAMPLES

from ntdd.faults import FAULTS
from ntdd.faults.command import Request, run_notebook
from ntdd.faults.results import CAUGHT, CAUGHT_BY, NOT_APPLICABLE, SURVIVED
from ntdd.faults.runs import run_session

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

GOOD = CORPUS / "good"
Edit = tuple[str, str]  # (old, new) in the one cell that holds *old*


def after(line: str, code: str) -> Edit:
    """Write *code* on the lines after *line*, at its indentation."""
    indent = line[: len(line) - len(line.lstrip())]
    return line, line + "".join(f"\n{indent}{part}" for part in code.splitlines())


def moved(*names: str) -> str:
    """Inputs moved off the model's device, as the `device` fault moves them: to `meta`
    without CUDA, between `cuda` and `cpu` with it."""
    where = "'cpu' if {0}.is_cuda else 'cuda'" if torch.cuda.is_available() else "'meta'"
    return f"{', '.join(names)} = " + ", ".join(f"{n}.to({where.format(n)})" for n in names)


NO_ZERO_GRAD = "opt.zero_grad = lambda set_to_none=True: None"
SCALED = "with torch.no_grad():\n    for p in {0}.parameters():\n        p.mul_(1e4)"
UNPLUGGED = "_w = {0}._parameters.pop('weight')\n{0}.weight = _w.detach().clone().requires_grad_()"


@dataclass(frozen=True)
class Case:
    """A notebook and its hand-written mutants, by fault; no mutant: the fault does not apply."""

    name: str
    cells: tuple[str, ...] = ()  # code cells, or
    sample: str = ""  # a notebook of sample_notebooks/, or
    real: str = ""  # one of tests/corpus/good/, with
    tests: tuple[tuple[str, str], ...] = ()  # test cells, each after the cell that holds a text
    mutants: dict[str, list[Edit]] = field(default_factory=dict)

    def notebook(self, folder: Path, edits: list[Edit] = ()) -> Path:  # type: ignore[assignment]
        path = folder / f"{self.name}.ipynb"
        if self.sample or self.real:
            nb = nbformat.read(str(SAMPLES / self.sample if self.sample else GOOD / self.real), 4)
        else:
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in self.cells])
        for text, test in self.tests:
            (where,) = [i for i, c in enumerate(nb.cells) if text in c.source]
            nb.cells.insert(where + 1, nbformat.v4.new_code_cell(test))
        for old, new in edits:
            holders = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
            assert len(holders) == 1, f"{self.name}: {old!r} is in {len(holders)} cells"
            holders[0].source = holders[0].source.replace(old, new, 1)
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))
        return path


def xy_mutants(line: str) -> dict[str, list[Edit]]:
    """Every data bug, written just after *line*, of a notebook that made inputs `X`
    and class labels `y` there."""
    return data_mutants(
        line,
        shape="X = X.transpose(0, -1)",
        dtype="X = X.double()",
        device=moved("X", "y"),
        nan="X = X.clone()\nX[0, 0] = float('nan')",
        labels="y = torch.roll(y, 1)",
        broadcast="y = y.unsqueeze(-1)",
    )


def model_mutants(line: str, model: str, layer: str) -> dict[str, list[Edit]]:
    """Model bugs written just after *line*, where the notebook built *model*:
    frozen, its weights scaled, its first *layer*'s weight a plain tensor."""
    return {
        "detached": [after(line, f"{model}.requires_grad_(False)")],
        "scale": [after(line, SCALED.format(model))],
        "unregistered": [after(line, UNPLUGGED.format(layer))],
    }


def data_mutants(line: str, **bugs: str) -> dict[str, list[Edit]]:
    """Data bugs written just after *line*, where the notebook made its data."""
    return {kind: [after(line, code)] for kind, code in bugs.items()}


FOUR_CELLS = Case(
    "four_cells",
    cells=(
        "import torch\nfrom torch import nn\n\n"
        "torch.manual_seed(0)\nX = torch.randn(64, 2)\ny = (X[:, 0] > 0).long()",
        "# TEST: data\nassert X.shape == (64, 2)",
        "model = nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.5)\n"
        "for _ in range(50):\n    opt.zero_grad()\n"
        "    loss = nn.functional.cross_entropy(model(X), y)\n    loss.backward()\n    opt.step()",
        "# TEST: training learned the rule\nassert (model(X).argmax(1) == y).float().mean() > 0.9",
    ),
    mutants={
        **xy_mutants("y = (X[:, 0] > 0).long()"),
        **model_mutants("model = nn.Linear(2, 2)", "model", "model"),
        "lr0": [("lr=0.5", "lr=0.0")],
        "stale_grad": [after("opt = torch.optim.SGD(model.parameters(), lr=0.5)", NO_ZERO_GRAD)],
    },
)

IN_INIT = "        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, 2))"
TINY_CLASSIFIER = Case(
    "tiny_classifier",
    sample="tiny_classifier.ipynb",
    mutants={
        **xy_mutants("X, y = X.to(device), y.to(device)"),
        **model_mutants(IN_INIT, "self", "self.net[0]"),
        "lr0": [
            (
                "torch.optim.SGD(model.parameters(), lr=lr)",
                "torch.optim.SGD(model.parameters(), lr=0.0)",
            )
        ],
        "stale_grad": [after("    opt = torch.optim.SGD(model.parameters(), lr=lr)", NO_ZERO_GRAD)],
    },
)

BUILT = '        self.register_buffer("scale", torch.tensor(2.0))'
FAILURE_MODES = Case(
    "failure_modes",
    sample="failure_modes.ipynb",
    mutants={
        **data_mutants(
            "target = torch.randn(32, device=device)",
            shape="x = x.transpose(0, -1)",
            dtype="x, target = x.double(), target.double()",
            device=moved("x", "target"),
            nan="x, target = x.clone(), target.clone()\nx[0, 0] = target[0] = float('nan')",
            broadcast="target = target.unsqueeze(-1)",
        ),
        **model_mutants(BUILT, "self", "self.body[0]"),
        "mode": [("model.eval()  # ready for inference", "model.train()  # eval() forgotten")],
        "lr0": [("lr=0.01", "lr=0.0")],
        "stale_grad": [after("opt = torch.optim.SGD(model.parameters(), lr=0.01)", NO_ZERO_GRAD)],
    },
)

HAND_WRITTEN = Case(  # a lecture's MLP: tensors that require grad, a list of them, SGD on it
    "hand_written_mlp",
    cells=(
        "import torch\n\ntorch.manual_seed(0)\n"
        "X = torch.randn(200, 2)\ny = (X[:, 0] * X[:, 1] > 0).long()",
        "# TEST: the data\nassert X.shape == (200, 2) and y.shape == (200,)",
        "def layer(n_in, n_out):\n"
        "    W = (torch.randn(n_in, n_out) / n_in**0.5).requires_grad_()\n"
        "    b = torch.zeros(n_out, requires_grad=True)\n"
        "    return W, b\n\n\n"
        "W1, b1 = layer(2, 30)\nW2, b2 = layer(30, 20)\nW3, b3 = layer(20, 2)\n"
        "parameters = [W1, b1, W2, b2, W3, b3]\n\n\n"
        "def forward(x):\n    h = torch.relu(x @ W1 + b1)\n    h = torch.relu(h @ W2 + b2)\n"
        "    return h @ W3 + b3",
        "opt = torch.optim.SGD(parameters, lr=0.5)\nfor epoch in range(300):\n"
        "    loss = torch.nn.functional.cross_entropy(forward(X), y)\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()",
        "# TEST: it learned the quadrants\nassert (forward(X).argmax(1) == y).float().mean() > 0.9",
        "# TEST: a fresh step lowers the loss\n"
        "before = torch.nn.functional.cross_entropy(forward(X), y)\n"
        "opt.zero_grad()\nbefore.backward()\nopt.step()\n"
        "assert torch.nn.functional.cross_entropy(forward(X), y) <= before",
    ),
    mutants={
        **xy_mutants("y = (X[:, 0] * X[:, 1] > 0).long()"),
        "detached": [
            after(
                "parameters = [W1, b1, W2, b2, W3, b3]",
                "for p in parameters:\n    p.requires_grad_(False)",
            )
        ],
        "scale": [
            after(
                "parameters = [W1, b1, W2, b2, W3, b3]",
                "with torch.no_grad():\n    for p in parameters:\n        p.mul_(1e4)",
            )
        ],
        "lr0": [("lr=0.5", "lr=0.0")],
        "stale_grad": [after("opt = torch.optim.SGD(parameters, lr=0.5)", NO_ZERO_GRAD)],
    },
)

STEP = (
    "def step(lr):\n    with torch.no_grad():\n        for p in parameters:\n"
    "            p -= lr * p.grad\n            p.grad.zero_()"
)
HAND_WRITTEN_STEP = Case(  # the same MLP, trained by a hand-written update step, as lectures do
    "hand_written_step",
    cells=(
        *HAND_WRITTEN.cells[:3],
        f"{STEP}\n\n\nlr = 0.5\nfor epoch in range(300):\n"
        "    torch.nn.functional.cross_entropy(forward(X), y).backward()\n    step(lr)",
        HAND_WRITTEN.cells[4],
        "# TEST: a fresh step lowers the loss\n"
        "before = torch.nn.functional.cross_entropy(forward(X), y)\n"
        "before.backward()\nstep(lr)\n"
        "assert torch.nn.functional.cross_entropy(forward(X), y) <= before",
    ),
    mutants={
        **{k: v for k, v in HAND_WRITTEN.mutants.items() if k not in ("lr0", "stale_grad")},
        "lr0": [("lr = 0.5", "lr = 0.0")],
        "stale_grad": [("            p.grad.zero_()", "            pass  # p.grad.zero_()")],
    },
)

MADE = "model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))"
OPTIMIZER = "opt = torch.optim.Adam(model.parameters(), lr=0.05)"
THROUGH_A_LOADER = Case(  # the data travels in a DataLoader's TensorDataset, made with it
    "through_a_loader",
    cells=(
        "import torch\nfrom torch import nn\n"
        "from torch.utils.data import DataLoader, TensorDataset\n\n"
        "torch.manual_seed(0)\nX = torch.randn(256, 2)\ny = (X[:, 0] + X[:, 1] > 0).long()\n"
        "loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)",
        "# TEST: a batch\nxb, yb = next(iter(loader))\n"
        "assert xb.shape == (32, 2) and yb.shape == (32,)",
        f"{MADE}\n{OPTIMIZER}\nfor epoch in range(5):\n    for xb, yb in loader:\n"
        "        opt.zero_grad()\n        nn.functional.cross_entropy(model(xb), yb).backward()\n"
        "        opt.step()",
        "# TEST: it learned the rule\nassert (model(X).argmax(1) == y).float().mean() > 0.9",
    ),
    mutants={
        **xy_mutants("y = (X[:, 0] + X[:, 1] > 0).long()"),
        **model_mutants(MADE, "model", "model[0]"),
        "lr0": [("lr=0.05", "lr=0.0")],
        "stale_grad": [after(OPTIMIZER, NO_ZERO_GRAD)],
    },
)

FIRST_FORWARD = "X = torch.rand(size=(2, 4))\nnet(X).shape"
D2L_PARAMETERS = Case(  # d2l's "Parameter Management", as published; the tests check its outputs
    "d2l_parameters",
    real="d2l-pytorch-colab__parameters.ipynb",
    tests=(
        ("net(X).shape", "# TEST: one output per example\nassert net(X).shape == (2, 1)"),
        (
            "net[2].weight.grad == None",
            "# TEST: no gradient before a backward pass\nassert net[2].weight.grad is None",
        ),
        (
            "[(name, param.shape) for name, param in net.named_parameters()]",
            "# TEST: every parameter, by name and shape\n"
            "assert [(n, tuple(p.shape)) for n, p in net.named_parameters()] == [\n"
            "    ('0.weight', (8, 4)), ('0.bias', (8,)), ('2.weight', (1, 8)), ('2.bias', (1,))\n]",
        ),
        (
            "shared = nn.LazyLinear(8)",
            "# TEST: a shared layer's parameters are one object\n"
            "assert net[2].weight is net[4].weight and net[2].weight[0, 0] == 100",
        ),
    ),
    mutants={
        **data_mutants(
            "X = torch.rand(size=(2, 4))",
            shape="X = X.transpose(0, -1)",
            dtype="X = X.double()",
            device=moved("X"),
            nan="X = X.clone()\nX[0, 0] = float('nan')",
        ),
        # a lazy net's parameters are made by its first forward, `net(X).shape`: the bugs go there
        **model_mutants(FIRST_FORWARD, "net", "net[0]"),
    },
)

CASES = {
    case.name: case
    for case in (
        FOUR_CELLS,
        TINY_CLASSIFIER,
        FAILURE_MODES,
        HAND_WRITTEN,
        HAND_WRITTEN_STEP,
        THROUGH_A_LOADER,
        D2L_PARAMETERS,
    )
}
ARGS = Request(()).pytest_args()


def mutant_verdict(case: Case, kind: str, folder: Path, baseline: dict[str, str]) -> str:
    """Caught when a test that passed cleanly fails or errors with the bug written in."""
    if kind not in case.mutants:
        return NOT_APPLICABLE
    mutant = case.notebook(folder / kind, case.mutants[kind])
    outcomes = run_session(mutant, ARGS)
    passing = [t for t, outcome in baseline.items() if outcome == "passed"]
    return CAUGHT if any(outcomes.tests.get(t) in CAUGHT_BY for t in passing) else SURVIVED


def verdicts(case: Case, kinds: tuple[str, ...], folder: Path) -> dict[str, tuple[str, str]]:
    """Each fault's verdict from `ntdd faults`, and the written-in bug's."""
    notebook = case.notebook(folder / "clean")
    report = run_notebook(notebook, Request((str(notebook),), kinds))
    assert not report.failing_cleanly, report.baseline
    found = {r.name: r.status for r in report.results}
    return {k: (found[k], mutant_verdict(case, k, folder, report.baseline)) for k in kinds}


def disagreements(table: dict[str, tuple[str, str]]) -> list[str]:
    return [
        f"{k}: ntdd faults {ours}, the written-in bug {theirs}"
        for k, (ours, theirs) in table.items()
        if ours != theirs
    ]


def test_the_issues_four_cells_catch_what_the_written_in_bugs_catch(tmp_path: Path) -> None:
    """lr0, detached and scale fail the notebook written in; no zero_grad() still learns."""
    table = verdicts(FOUR_CELLS, ("lr0", "stale_grad", "detached", "scale"), tmp_path)
    assert disagreements(table) == []
    assert {k: ours for k, (ours, _) in table.items()} == {
        "lr0": CAUGHT, "stale_grad": SURVIVED, "detached": CAUGHT, "scale": CAUGHT,
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_every_fault_agrees_with_its_written_in_bug(name: str, tmp_path: Path) -> None:
    table = verdicts(CASES[name], tuple(FAULTS), tmp_path)
    print(f"\n{name}: " + ", ".join(f"{k} {ours}/{theirs}" for k, (ours, theirs) in table.items()))
    assert disagreements(table) == []
    # A case whose every fault is "not applicable" on both sides would agree and test nothing.
    assert {theirs for _, theirs in table.values()} >= {CAUGHT}, table
