"""The oracle's notebooks, each with the bugs of every fault written in by hand.

`tests/test_faults_oracle.py` and `benchmarks/faults_oracle.py` run them: for
each fault, the same bug is written into a copy of the notebook where a
person would make it (the data where it is made, a model where it is built,
an optimizer where it is made, the mode where it is set, the training loop
where it zeroes gradients), and the copy's tests run; a fault with nothing
to write into the notebook has no mutant and must be "not applicable".

The real training notebooks are in `tests/corpus/training/` (see its
SOURCES.md); their tests, the ones a careful user writes, are added here as
`# TEST` cells after the cells they check.
"""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_notebooks"
CORPUS = ROOT / "tests" / "corpus"
GOOD = CORPUS / "good"
TRAINING = CORPUS / "training"
D2L = "d2l/torch.py"  # the training chapters' library, copied beside each copy of them
Edit = tuple[str, ...]  # (old, new) in the cells that hold *old*, or (file, old, new) beside it
PERMUTED = "{0} = {0}[torch.randperm(len({0}), generator=torch.Generator().manual_seed(0))]"


def after(line: str, code: str) -> Edit:
    """Write *code* on the lines after *line*, at its indentation."""
    indent = line[: len(line) - len(line.lstrip())]
    return line, line + "".join(f"\n{indent}{part}" for part in code.splitlines())


def moved(*names: str) -> str:
    """Inputs moved off the model's device, as the `device` fault moves them: to `meta`
    without CUDA, between `cuda` and `cpu` with it."""
    import torch

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
    real: str = ""  # one of tests/corpus/ (`good/...`, `training/...`), with
    tests: tuple[tuple[str, str], ...] = ()  # test cells, each after the cell that holds a text
    skip: tuple[str, ...] = ()  # cells tagged ntdd-skip, by a text each holds
    beside: tuple[str, ...] = ()  # folders of tests/corpus/training/ copied beside the copy
    files: tuple[tuple[str, str], ...] = ()  # files written beside it: (name, text)
    changes: tuple[Edit, ...] = ()  # (file, old, new) in the files beside every copy
    mutants: dict[str, list[Edit]] = field(default_factory=dict)
    heavy: bool = False  # left to the benchmark: the suite's oracle test runs the others
    offline: tuple[Edit, ...] = ()  # in every copy: a download replaced by a file beside it
    needs: tuple[str, ...] = ()  # modules the notebook imports beyond the test extra's

    def notebook(self, folder: Path, edits: list[Edit] = ()) -> Path:  # type: ignore[assignment]
        path = folder / f"{self.name}.ipynb"
        folder.mkdir(parents=True, exist_ok=True)
        if self.sample:
            nb = nbformat.read(str(SAMPLES / self.sample), 4)
        elif self.real:
            nb = nbformat.read(str(CORPUS / self.real), 4)
        else:
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in self.cells])
        for text in self.skip:
            (cell,) = [c for c in nb.cells if c.cell_type == "code" and text in c.source]
            cell.metadata.setdefault("tags", []).append("ntdd-skip")
        for text, test in self.tests:
            (where,) = [
                i for i, c in enumerate(nb.cells) if c.cell_type == "code" and text in c.source
            ]
            cell = nbformat.v4.new_code_cell(test)
            if (nb.nbformat, nb.nbformat_minor) < (4, 5):
                del cell["id"]  # cell ids came with nbformat 4.5
            nb.cells.insert(where + 1, cell)
        for name in self.beside:
            shutil.copytree(TRAINING / name, folder / name, dirs_exist_ok=True)
        for name, text in self.files:
            (folder / name).write_text(text, encoding="utf-8")
        for edit in (*self.offline, *self.changes, *edits):
            if len(edit) == 3:
                file, old, new = edit
                text = (folder / file).read_text(encoding="utf-8")
                assert old in text, f"{self.name}: {old!r} is not in {file}"
                (folder / file).write_text(text.replace(old, new), encoding="utf-8")
                continue
            old, new = edit
            holders = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
            assert holders, f"{self.name}: {old!r} is in no cell"
            for cell in holders:
                cell.source = cell.source.replace(old, new, 1)
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
        labels=PERMUTED.format("y"),
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
        "mode": [("model.eval()  # ready for inference", "pass  # eval() forgotten")],
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
    real="good/d2l-pytorch-colab__parameters.ipynb",
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

# -- real training notebooks (tests/corpus/training/) ---------------------------------


def datasets_bug(holders: str, x: str = "_X", y: str = "_y") -> str:
    """A data bug written into the TensorDatasets *holders* names: their inputs `_X` and
    targets `_y` become *x* and *y*."""
    return f"for _ds in ({holders}):\n    _X, _y = _ds.tensors\n    _ds.tensors = ({x}, {y})"


def lazy_scaled(model: str, example: str) -> str:
    """Weights ×1e4 once a lazy *model* made them: a forward in eval mode on *example*
    (no dropout, no random draw) makes them, then the bug."""
    return f"{model}.eval()\n{model}({example})\n{model}.train()\n{SCALED.format(model)}"


def lazy_unplugged(model: str, example: str, layer: str) -> str:
    return f"{model}.eval()\n{model}({example})\n{model}.train()\n{UNPLUGGED.format(layer)}"


LIBRARY_NO_ZERO_GRAD = (D2L, "            self.optim.zero_grad()\n", "")
LIBRARY_NO_EVAL = (D2L, "        self.model.eval()\n", "")
IMAGES = "torch.zeros(1, 1, 28, 28)"


def images_mutants(line: str, holders: str = "data.train, data.val") -> dict[str, list[Edit]]:
    """Every data bug of a d2l chapter whose FashionMNIST data is made at *line*."""
    nan = "_X.clone().index_put_((torch.tensor([0]),) * 4, torch.tensor(float('nan')))"
    return data_mutants(
        line,
        shape=datasets_bug(holders, x="_X.transpose(0, -1)"),
        dtype=datasets_bug(holders, x="_X.double()"),
        device=datasets_bug(holders, x="_X.to('meta')", y="_y.to('meta')"),
        nan=datasets_bug(holders, x=nan),
        labels=datasets_bug(holders, y=PERMUTED.format("_y").split(" = ", 1)[1]),
        broadcast=datasets_bug(holders, y="_y.unsqueeze(-1)"),
    )


D2L_TESTS_CLASSIFIER = (
    "# TEST: a batch of images and labels\n"
    "X, y = next(iter(data.train_dataloader()))\n"
    "assert X.shape[1:] == (1, 28, 28) and X.dtype == torch.float32 and y.shape == (len(X),)",
    "# TEST: the trained model is ready for inference\n"
    "from ntdd.torch import assert_mode\nassert_mode(model, train=False)",
    "# TEST: it learned the classes @full_run\n"
    "X, y = next(iter(data.val_dataloader()))\n"
    "with torch.no_grad():\n    assert model.accuracy(model(X), y) > 0.8",
    "# TEST: the loss reaches every parameter\n"
    "from ntdd.torch import assert_grad_flow\n"
    "X, y = next(iter(data.train_dataloader()))\n"
    "assert_grad_flow(model, model.loss(model(X), y))",
    "# TEST: the scores are finite\n"
    "X, _ = next(iter(data.val_dataloader()))\n"
    "with torch.no_grad():\n    assert torch.isfinite(model(X)).all()",
    "# TEST: its state dict holds every tensor it computes with\n"
    "from ntdd.torch import assert_state_complete\nassert_state_complete(model)",
    # the training batches' loss after the first two epochs, against a uniform guess's, log 10
    "# TEST: after two epochs the training loss beats a uniform guess\n"
    "import math\nlosses = [float(p.y) for p in model.board.data['train_loss']]\n"
    "assert losses[2 * model.plot_train_per_epoch - 1] < math.log(10)",
)

# Tests a careful user adds to a trained d2l model: the loss fell over the first steps (the
# training batches' loss, and the validation loss after each of the first two epochs, read on
# the same batches), and a copy made from its state dict (its hyperparameters, then its
# tensors) computes the same.
VAL_LOSS_FELL = (
    "# TEST: the validation loss is finite and fell over the first two epochs\n"
    "import math\nval = [float(p.y) for p in model.board.data['val_loss']]\n"
    "assert all(map(math.isfinite, val)) and val[1] < val[0]"
)
D2L_TESTS_TRAINING = (
    "# TEST: the training loss is finite and fell\n"
    "import math\nlosses = [float(p.y) for p in model.board.data['train_loss']]\n"
    "assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]",
    VAL_LOSS_FELL,
    "# TEST: a copy made from its state dict computes the same\n"
    "X, _ = next(iter(data.val_dataloader()))\n"
    "clone = type(model)(**model.hparams)\nclone.load_state_dict(model.state_dict())\n"
    "clone.eval()\nmodel.eval()\n"
    "with torch.no_grad():\n    assert torch.equal(clone(X), model(X))",
)

RASBT_MODEL = "model = NeuralNetwork(num_inputs=2, num_outputs=2)"
RASBT = Case(  # Raschka's "PyTorch in one hour": a custom Dataset, DataLoaders, save and reload
    "LLMs-from-scratch__code-part1",
    real="training/LLMs-from-scratch__code-part1.ipynb",
    tests=(
        (
            "y_train = torch.tensor([0, 0, 0, 1, 1])",
            "# TEST: the training set\n"
            "assert X_train.shape == (5, 2) and X_train.dtype == torch.float32\n"
            "assert y_train.tolist() == [0, 0, 0, 1, 1]",
        ),
        (
            "train_ds = ToyDataset(X_train, y_train)",
            "# TEST: an example is a row of features and its label\n"
            "x0, y0 = train_ds[0]\nassert x0.shape == (2,) and y0.ndim == 0",
        ),
        (
            "probas = torch.softmax(outputs, dim=1)",
            "# TEST: two finite scores per example\n"
            "assert outputs.shape == (5, 2) and torch.isfinite(outputs).all()",
        ),
        (
            "return (correct / total_examples).item()",
            "# TEST: the model classifies both sets\n"
            "assert compute_accuracy(model, train_loader) == 1.0\n"
            "assert compute_accuracy(model, test_loader) == 1.0",
        ),
        (
            "return (correct / total_examples).item()",
            "# TEST: the loss reaches every parameter\n"
            "from ntdd.torch import assert_grad_flow\n"
            "assert_grad_flow(model, F.cross_entropy(model(X_train), y_train))",
        ),
        (
            'model.load_state_dict(torch.load("model.pth", weights_only=True))',
            "# TEST: the reloaded model predicts the training labels\n"
            "with torch.no_grad():\n    assert torch.equal(model(X_train).argmax(1), y_train)",
        ),
        (
            'model.load_state_dict(torch.load("model.pth", weights_only=True))',
            "# TEST: a copy made from its state dict predicts the same\n"
            "clone = NeuralNetwork(2, 2)\nclone.load_state_dict(model.state_dict())\n"
            "with torch.no_grad():\n    assert torch.equal(clone(X_test), model(X_test))",
        ),
    ),
    mutants={
        **{
            kind: [
                after("y_train = torch.tensor([0, 0, 0, 1, 1])", train),
                after("y_test = torch.tensor([0, 1])", test),
            ]
            for kind, train, test in (
                ("shape", "X_train = X_train.transpose(0, -1)", "X_test = X_test.transpose(0, -1)"),
                ("dtype", "X_train = X_train.double()", "X_test = X_test.double()"),
                ("device", moved("X_train", "y_train"), moved("X_test", "y_test")),
                (
                    "nan",
                    "X_train = X_train.clone()\nX_train[0, 0] = float('nan')",
                    "X_test = X_test.clone()\nX_test[0, 0] = float('nan')",
                ),
                ("labels", PERMUTED.format("y_train"), PERMUTED.format("y_test")),
                ("broadcast", "y_train = y_train.unsqueeze(-1)", "y_test = y_test.unsqueeze(-1)"),
            )
        },
        **model_mutants(RASBT_MODEL, "model", "model.layers[0]"),
        "lr0": [("lr=0.5", "lr=0.0")],
        "stale_grad": [("        optimizer.zero_grad()\n", "")],
    },
)

BIGRAM_NAMES = random.Random(0)
BIGRAMS = Case(  # Karpathy's makemore, part 1: counts, then a one-layer net trained by hand
    "nn-zero-to-hero__makemore_part1_bigrams",
    real="training/nn-zero-to-hero__makemore_part1_bigrams.ipynb",
    skip=(
        "plt.figure(figsize=(16,16))",
        "plt.imshow(xenc)",
        "P.shape",
        "P.sum(1, keepdim=True).shape",
        "P.sum(1).shape",
    ),
    files=(
        (
            "names.txt",
            "".join(
                "".join(
                    BIGRAM_NAMES.choice("bcdfghjklmnpqrstvwxz") + BIGRAM_NAMES.choice("aeiouy")
                    for _ in range(BIGRAM_NAMES.randint(1, 3))
                )
                + "\n"
                for _ in range(400)
            ),
        ),
    ),
    tests=(
        (
            "P /= P.sum(1, keepdims=True)",
            "# TEST: each row of P is a distribution\nassert torch.allclose(P.sum(1), torch.ones(27))",
        ),
        (
            "print(f'{nll/n}')",
            "# TEST: the counts beat a uniform guess\nassert nll / n < torch.log(torch.tensor(27.0))",
        ),
        (
            "print('number of examples: ', num)",
            "# TEST: the training set\nassert xs.shape == ys.shape == (num,) and xs.dtype == torch.int64",
        ),
        (
            "W.data += -50 * W.grad",
            "# TEST: the gradient step lowered the loss\n"
            "probs = F.one_hot(xs, num_classes=27).float().matmul(W).softmax(1)\n"
            "after = -probs[torch.arange(num), ys].log().mean() + 0.01*(W**2).mean()\n"
            "assert after.item() < loss.item()",
        ),
        (
            "W.data += -50 * W.grad",
            "# TEST: the loss reaches W\n"
            "W.grad = None\n"
            "probs = F.one_hot(xs, num_classes=27).float().matmul(W).softmax(1)\n"
            "(-probs[torch.arange(num), ys].log().mean()).backward()\n"
            "assert W.grad is not None and W.grad.abs().sum() > 0",
        ),
        (
            "W.data += -50 * W.grad",
            "# TEST: the probabilities are finite\nassert torch.isfinite(probs).all()",
        ),
    ),
    mutants={
        "device": [after("ys = torch.tensor(ys)", moved("xs", "ys"))],
        "labels": [after("ys = torch.tensor(ys)", PERMUTED.format("ys"))],
        "broadcast": [after("ys = torch.tensor(ys)", "ys = ys.unsqueeze(-1)")],
        "detached": [
            after(
                "W = torch.randn((27, 27), generator=g, requires_grad=True)",
                "W.requires_grad_(False)",
            )
        ],
        "scale": [
            after(
                "W = torch.randn((27, 27), generator=g, requires_grad=True)",
                "with torch.no_grad():\n    W.mul_(1e4)",
            )
        ],
        "lr0": [
            ("W.data += -50 * W.grad", "W.data += -0.0 * W.grad"),
            ("W.data += -0.1 * W.grad", "W.data += -0.0 * W.grad"),
        ],
        "stale_grad": [
            ("W.grad = None # set to zero the gradient", "pass # W.grad = None forgotten")
        ],
    },
)


def beats_untrained(untrained: str) -> str:
    """A regression's loss fell over its first steps, read against a fresh model (made by
    *untrained*) on the validation data rather than its own first loss: weights that start
    far off (×1e4) still lower their own loss over the first steps."""
    return (
        "# TEST: training beat an untrained model on the validation data\n"
        "X, y = data.X[data.num_train:], data.y[data.num_train:]\n"
        f"untrained = {untrained}\n"
        "with torch.no_grad():\n"
        "    assert model.loss(model(X), y) < untrained.loss(untrained(X), y)"
    )


SCRATCH = "model = LinearRegressionScratch(2, lr=0.03)"
SYNTHETIC = "data = d2l.SyntheticRegressionData(w=torch.tensor([2, -3.4]), b=4.2)"
D2L_LINEAR_SCRATCH = Case(  # d2l's linear regression from scratch: tensors in a Module, SGD by hand
    "d2l-pytorch-colab__linear-regression-scratch",
    real="training/d2l-pytorch-colab__linear-regression-scratch.ipynb",
    beside=("d2l",),
    tests=(
        (
            "trainer.fit(model, data)",
            "# TEST: the data\nassert data.X.shape == (2000, 2) and data.y.shape == (2000, 1)\n"
            "assert torch.isfinite(data.X).all() and torch.isfinite(data.y).all()",
        ),
        (
            "trainer.fit(model, data)",
            "# TEST: the estimates are close to the truth @full_run\n"
            "assert (data.w - model.w.reshape(data.w.shape)).abs().max() < 0.5\n"
            "assert (data.b - model.b).abs().max() < 0.5",
        ),
        ("trainer.fit(model, data)", D2L_TESTS_TRAINING[0]),
        ("trainer.fit(model, data)", VAL_LOSS_FELL),
        (
            "trainer.fit(model, data)",
            "# TEST: a batch's loss is finite\n"
            "X, y = next(iter(data.val_dataloader()))\n"
            "assert torch.isfinite(model.loss(model(X), y))",
        ),
        (
            "trainer.fit(model, data)",
            "# TEST: the loss reaches w and b\n"
            "X, y = next(iter(data.val_dataloader()))\n"
            "model.w.grad = model.b.grad = None\nmodel.loss(model(X), y).backward()\n"
            "assert model.w.grad.abs().sum() > 0 and model.b.grad.abs().sum() > 0",
        ),
        ("trainer.fit(model, data)", beats_untrained("LinearRegressionScratch(2, lr=0.03)")),
    ),
    mutants={
        **data_mutants(
            SYNTHETIC,
            shape="data.X = data.X.transpose(0, -1)",
            dtype="data.X = data.X.double()",
            device=moved("data.X", "data.y"),
            nan="data.X[0, 0] = float('nan')",
        ),
        "detached": [
            after(SCRATCH, "model.w.requires_grad_(False)\nmodel.b.requires_grad_(False)")
        ],
        "scale": [
            after(SCRATCH, "with torch.no_grad():\n    model.w.mul_(1e4)\n    model.b.mul_(1e4)")
        ],
        "lr0": [("lr=0.03", "lr=0.0")],
        "stale_grad": [("                param.grad.zero_()", "                pass")],
    },
)

WD_DATA = "data = Data(num_train=20, num_val=100, num_inputs=200, batch_size=5)"
WD_SCRATCH = "    model = WeightDecayScratch(num_inputs=200, lambd=lambd, lr=0.01)"
WD_CONCISE = "model = WeightDecay(wd=3, lr=0.01)"
D2L_WEIGHT_DECAY = (
    Case(  # d2l's weight decay: a data object, models by hand and concise, four trainings
        "d2l-pytorch-colab__weight-decay",
        real="training/d2l-pytorch-colab__weight-decay.ipynb",
        beside=("d2l",),
        tests=(
            (
                WD_DATA,
                "# TEST: the data\nassert data.X.shape == (120, 200) and data.y.shape == (120, 1)",
            ),
            (
                WD_DATA,
                "# TEST: a batch\nX, y = next(iter(data.train_dataloader()))\n"
                "assert X.shape == (5, 200) and y.shape == (5, 1) and X.dtype == torch.float32",
            ),
            (
                # the penalty is 0.01 at the true weights, about 0.015 after the full run's 40
                # steps and 0.08-0.11 after smoke mode's 8, before the decay has pulled them in
                WD_CONCISE,
                "# TEST: weight decay keeps the weights small\n"
                "assert float(l2_penalty(model.get_w_b()[0])) < 1",
            ),
            (
                WD_CONCISE,
                "# TEST: training lowered the loss\n"
                "losses = [p.y for p in model.board.data['train_loss']]\n"
                "assert losses[-1] < losses[0]",
            ),
            (WD_CONCISE, VAL_LOSS_FELL),
            (
                WD_CONCISE,
                "# TEST: the validation loss is finite\n"
                "X, y = next(iter(data.val_dataloader()))\n"
                "assert torch.isfinite(model.loss(model(X), y))",
            ),
            (
                WD_CONCISE,
                "# TEST: the loss reaches every parameter\n"
                "from ntdd.torch import assert_grad_flow\n"
                "X, y = next(iter(data.train_dataloader()))\n"
                "assert_grad_flow(model, model.loss(model(X), y))",
            ),
            (
                WD_CONCISE,
                "# TEST: the model's state is complete\n"
                "from ntdd.torch import assert_state_complete\nassert_state_complete(model)",
            ),
        ),
        mutants={
            **data_mutants(
                WD_DATA,
                shape="data.X = data.X.transpose(0, -1)",
                dtype="data.X = data.X.double()",
                device=moved("data.X", "data.y"),
                nan="data.X[0, 0] = float('nan')",
            ),
            "detached": [
                after(WD_SCRATCH, "model.w.requires_grad_(False)\nmodel.b.requires_grad_(False)"),
                after(WD_CONCISE, "model.requires_grad_(False)"),
            ],
            "scale": [
                after(
                    WD_SCRATCH,
                    "with torch.no_grad():\n    model.w.mul_(1e4)\n    model.b.mul_(1e4)",
                ),
                after(WD_CONCISE, lazy_scaled("model", "data.X[:1]")),
            ],
            "unregistered": [after(WD_CONCISE, lazy_unplugged("model", "data.X[:1]", "model.net"))],
            "lr0": [("lr=0.01)", "lr=0.0)")],
            "stale_grad": [LIBRARY_NO_ZERO_GRAD],
        },
        heavy=True,
    )
)

DROPOUT_DATA = "data = d2l.FashionMNIST(batch_size=256)"
D2L_DROPOUT = Case(  # d2l's dropout: by hand (self.training) and nn.Dropout, lazy layers, a Trainer
    "d2l-pytorch-colab__dropout",
    real="training/d2l-pytorch-colab__dropout.ipynb",
    beside=("d2l",),
    tests=tuple(
        ("model = DropoutMLP(**hparams)", test)
        for test in D2L_TESTS_CLASSIFIER + D2L_TESTS_TRAINING
    )
    + (
        (
            "model = DropoutMLPScratch(**hparams)",
            "# TEST: dropout by hand is on in training mode only\n"
            "X, _ = next(iter(data.val_dataloader()))\n"
            "model.train()\nassert not torch.equal(model(X), model(X))\n"
            "model.eval()\nassert torch.equal(model(X), model(X))",
        ),
    ),
    mutants={
        **images_mutants(DROPOUT_DATA),
        "detached": [
            after("model = DropoutMLPScratch(**hparams)", "model.requires_grad_(False)"),
            after("model = DropoutMLP(**hparams)", "model.requires_grad_(False)"),
        ],
        "scale": [
            after("model = DropoutMLPScratch(**hparams)", lazy_scaled("model", IMAGES)),
            after("model = DropoutMLP(**hparams)", lazy_scaled("model", IMAGES)),
        ],
        "unregistered": [
            after(
                "model = DropoutMLPScratch(**hparams)",
                lazy_unplugged("model", IMAGES, "model.lin1"),
            ),
            after("model = DropoutMLP(**hparams)", lazy_unplugged("model", IMAGES, "model.net[1]")),
        ],
        "mode": [LIBRARY_NO_EVAL],
        "lr0": [("'lr':0.1", "'lr':0.0")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)

SOFTMAX_MODEL = "model = SoftmaxRegression(num_outputs=10, lr=0.1)"
D2L_SOFTMAX = Case(  # d2l's softmax regression, concise: nn.Flatten and a LazyLinear, a Trainer
    "d2l-pytorch-colab__softmax-regression-concise",
    real="training/d2l-pytorch-colab__softmax-regression-concise.ipynb",
    beside=("d2l",),
    tests=tuple(
        ("trainer.fit(model, data)", t)
        for t in D2L_TESTS_CLASSIFIER + D2L_TESTS_TRAINING
        if "assert_mode" not in t
    ),
    mutants={
        **images_mutants("data = d2l.FashionMNIST(batch_size=256)"),
        "detached": [after(SOFTMAX_MODEL, "model.requires_grad_(False)")],
        "scale": [after(SOFTMAX_MODEL, lazy_scaled("model", IMAGES))],
        "unregistered": [after(SOFTMAX_MODEL, lazy_unplugged("model", IMAGES, "model.net[1]"))],
        "lr0": [("lr=0.1)", "lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)

BN_INIT = "model.apply_init([next(iter(data.get_dataloader(True)))[0]], d2l.init_cnn)"
D2L_BATCH_NORM = Case(  # d2l's batch normalisation: by hand and nn.LazyBatchNorm, LeNet, a Trainer
    "d2l-pytorch-colab__batch-norm",
    real="training/d2l-pytorch-colab__batch-norm.ipynb",
    beside=("d2l",),
    tests=tuple(("model = BNLeNet(lr=0.1)", t) for t in D2L_TESTS_CLASSIFIER + D2L_TESTS_TRAINING),
    mutants={
        **images_mutants("data = d2l.FashionMNIST(batch_size=128)"),
        "detached": [after(BN_INIT, "model.requires_grad_(False)")],
        "scale": [after(BN_INIT, SCALED.format("model"))],
        "unregistered": [after(BN_INIT, UNPLUGGED.format("model.net[0]"))],
        "mode": [LIBRARY_NO_EVAL],
        "lr0": [("lr=0.1)", "lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)

CONCISE_MODEL = "model = LinearRegression(lr=0.03)"
D2L_LINEAR_CONCISE = Case(  # d2l's linear regression, concise: a LazyLinear, torch's SGD, a Trainer
    "d2l-pytorch-colab__linear-regression-concise",
    real="training/d2l-pytorch-colab__linear-regression-concise.ipynb",
    beside=("d2l",),
    tests=(
        (
            # the same data test as the scratch chapter's: smoke mode's few batches a pass meet
            # few of the rows, so the data's own test looks at all of them
            "trainer.fit(model, data)",
            "# TEST: the data\nassert data.X.shape == (2000, 2) and data.y.shape == (2000, 1)\n"
            "assert torch.isfinite(data.X).all() and torch.isfinite(data.y).all()",
        ),
        (
            "w, b = model.get_w_b()",
            "# TEST: the estimates are close to the truth @full_run\n"
            "assert (data.w - w.reshape(data.w.shape)).abs().max() < 0.5\n"
            "assert (data.b - b).abs().max() < 0.5",
        ),
        (
            "w, b = model.get_w_b()",
            "# TEST: the trained model is ready for inference\n"
            "from ntdd.torch import assert_mode\nassert_mode(model, train=False)",
        ),
        (
            "w, b = model.get_w_b()",
            "# TEST: the loss reaches every parameter\n"
            "from ntdd.torch import assert_grad_flow\n"
            "X, y = next(iter(data.train_dataloader()))\n"
            "assert_grad_flow(model, model.loss(model(X), y))",
        ),
        *(("w, b = model.get_w_b()", test) for test in D2L_TESTS_TRAINING),
        ("w, b = model.get_w_b()", beats_untrained("LinearRegression(lr=0.03)")),
    ),
    mutants={
        **data_mutants(
            SYNTHETIC,
            shape="data.X = data.X.transpose(0, -1)",
            dtype="data.X = data.X.double()",
            device=moved("data.X", "data.y"),
            nan="data.X[0, 0] = float('nan')",
        ),
        "detached": [after(SYNTHETIC, "model.requires_grad_(False)")],
        "scale": [after(SYNTHETIC, lazy_scaled("model", "data.X[:1]"))],
        "unregistered": [after(SYNTHETIC, lazy_unplugged("model", "data.X[:1]", "model.net"))],
        # no mode: no layer of its model acts apart in eval mode, so leaving the
        # Trainer's eval() out changes nothing it computes (an equivalent mutant)
        "lr0": [("LinearRegression(lr=0.03)", "LinearRegression(lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)

LENET_INIT = "model.apply_init([next(iter(data.get_dataloader(True)))[0]], init_cnn)"
D2L_LENET = Case(  # d2l's LeNet: lazy convolutions, sigmoid, average pooling, apply_init, a Trainer
    "d2l-pytorch-colab__lenet",
    real="training/d2l-pytorch-colab__lenet.ipynb",
    beside=("d2l",),
    tests=tuple(
        ("trainer.fit(model, data)", t)
        for t in D2L_TESTS_CLASSIFIER + D2L_TESTS_TRAINING
        # a sigmoid LeNet learns nothing in 40 steps here, nor beats a guess in its first 8
        if "it learned the classes" not in t and "beats a uniform guess" not in t
    ),
    mutants={
        **images_mutants("data = d2l.FashionMNIST(batch_size=128)"),
        "detached": [after(LENET_INIT, "model.requires_grad_(False)")],
        "scale": [after(LENET_INIT, SCALED.format("model"))],
        "unregistered": [after(LENET_INIT, UNPLUGGED.format("model.net[0]"))],
        # no mode: no layer of its model acts apart in eval mode, so leaving the
        # Trainer's eval() out changes nothing it computes (an equivalent mutant)
        "lr0": [("LeNet(lr=0.1)", "LeNet(lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)

MLP_SCRATCH = "model = MLPScratch(num_inputs=784, num_outputs=10, num_hiddens=256, lr=0.1)"
MLP_CONCISE = "model = MLP(num_outputs=10, num_hiddens=256, lr=0.1)"
MLP_DATA = "data = d2l.FashionMNIST(batch_size=256)"
D2L_MLP = Case(  # d2l's MLP: parameters by hand (nn.Parameter), then lazy layers, one Trainer
    "d2l-pytorch-colab__mlp-implementation",
    real="training/d2l-pytorch-colab__mlp-implementation.ipynb",
    beside=("d2l",),
    tests=(
        *((MLP_CONCISE, t) for t in D2L_TESTS_CLASSIFIER + D2L_TESTS_TRAINING),
        (
            "trainer = d2l.Trainer(max_epochs=10)",
            "# TEST: the model by hand has its four parameters\n"
            "assert [n for n, _ in model.named_parameters()] == ['W1', 'b1', 'W2', 'b2']",
        ),
    ),
    mutants={
        **images_mutants(MLP_DATA),
        "detached": [
            after(MLP_SCRATCH, "model.requires_grad_(False)"),
            after(MLP_CONCISE, "model.requires_grad_(False)"),
        ],
        "scale": [
            after(MLP_SCRATCH, SCALED.format("model")),
            after(MLP_CONCISE, lazy_scaled("model", IMAGES)),
        ],
        "unregistered": [
            after(
                MLP_SCRATCH,
                "_w = model._parameters.pop('W1')\nmodel.W1 = _w.detach().clone().requires_grad_()",
            ),
            after(MLP_CONCISE, lazy_unplugged("model", IMAGES, "model.net[1]")),
        ],
        # no mode: no layer of its model acts apart in eval mode, so leaving the
        # Trainer's eval() out changes nothing it computes (an equivalent mutant)
        "lr0": [("num_hiddens=256, lr=0.1)", "num_hiddens=256, lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
    heavy=True,
)


def cement_csv(rows: int = 998) -> str:
    """Synthetic data of the cement strength table's shape (eight features V1-V8, an ordered
    response 1-5, 998 rows): five classes cut from a noisy linear score, from a seeded
    generator; the notebook downloads the real table."""
    rng = random.Random(0)
    weights = [rng.uniform(-1, 1) for _ in range(8)]
    table = []
    for _ in range(rows):
        x = [rng.gauss(0, 1) * (10 ** (i % 3)) for i in range(8)]
        score = sum(w * v / 10 ** (i % 3) for i, (w, v) in enumerate(zip(weights, x, strict=True)))
        table.append((x, score + rng.gauss(0, 0.1)))
    cuts = sorted(score for _, score in table)
    cuts = [cuts[len(cuts) * k // 5] for k in range(1, 5)]
    lines = ["response,V1,V2,V3,V4,V5,V6,V7,V8"]
    for x, score in table:
        response = 1 + sum(score >= cut for cut in cuts)
        lines.append(",".join([str(response), *(f"{v:.4f}" for v in x)]))
    return "\n".join(lines) + "\n"


CEMENT_URL = "https://raw.githubusercontent.com/gagolews/ordinal_regression_data/master/"
CEMENT_MODEL = "model = MLP(in_features=8, num_classes=NUM_CLASSES)"
CEMENT_X = "        inputs = self.features[index]"
CEMENT_Y = "        label = self.labels[index]"


def cement_moved() -> str:
    """`torch.tensor(..., device=...)`: where the `device` fault moves an example."""
    import torch

    return "'cuda'" if torch.cuda.is_available() else "'meta'"


CEMENT = Case(  # Raschka's ordinal-regression baseline: a Dataset of NumPy rows, an MLP
    "deeplearning-models__baseline_cement",
    real="training/deeplearning-models__baseline_cement.ipynb",
    offline=((f'"{CEMENT_URL}cement_strength.csv"', '"cement_strength.csv"'),),
    files=(("cement_strength.csv", cement_csv()),),
    needs=("pandas", "sklearn"),
    tests=(
        (
            'data_features = data_df.loc[:, ["V1"',
            "# TEST: eight features and five ordered classes, 0 to 4\n"
            "assert data_features.shape[1] == 8\n"
            "assert np.unique(data_labels.values).tolist() == [0, 1, 2, 3, 4]",
        ),
        (
            "test_dataset = MyDataset(X_test_std, y_test)",
            "# TEST: a batch is 128 rows of eight finite float32 features, and their classes\n"
            "inputs, labels = next(iter(train_loader))\n"
            "assert inputs.shape == (128, 8) and inputs.dtype == torch.float32\n"
            "assert torch.isfinite(inputs).all() and labels.shape == (128,)",
        ),
        (
            "print(f'Mean absolute error (train/test)",
            "# TEST: it orders the test set's classes well @full_run\nassert test_mae < 0.5",
        ),
        (
            # the error after any training, read against the best constant guess, the training
            # set's median class (1.2 on this test set): 8 smoke steps give 0.54, the full run's
            # 0.20. Not against an untrained model's error: the notebook measures it in train
            # mode, dropout on, so a model left as made beats its own untrained copy or not by
            # its dropout draws; nor does a model that learned only the classes' shares beat
            # the median guess, as it beats an untrained one.
            "print(f'Mean absolute error (train/test)",
            "# TEST: training ordered the test set's classes better than guessing the median "
            "class\n"
            "assert test_mae < np.abs(y_test - np.median(y_train)).mean()",
        ),
        (
            "print(f'Mean absolute error (train/test)",
            "# TEST: the loss reaches every parameter, and its state dict holds them\n"
            "from ntdd.torch import assert_grad_flow, assert_state_complete\n"
            "features, class_labels = next(iter(test_loader))\n"
            "assert_grad_flow(model, torch.nn.functional.cross_entropy(model(features), "
            "class_labels))\n"
            "assert_state_complete(model)",
        ),
    ),
    mutants={
        "shape": [(CEMENT_X, CEMENT_X + "[0]")],
        "dtype": [(CEMENT_X, CEMENT_X + ".astype(np.float64)")],
        "device": [
            (
                CEMENT_X,
                f"        inputs = torch.tensor(self.features[index], device={cement_moved()})",
            ),
            (
                CEMENT_Y,
                f"        label = torch.tensor(self.labels[index], device={cement_moved()})",
            ),
        ],
        "nan": [after(CEMENT_X, "inputs = inputs.copy()\ninputs[0] = np.nan")],
        "labels": [
            (
                CEMENT_Y,
                "        label = self.labels[int(torch.randperm(len(self.labels), "
                "generator=torch.Generator().manual_seed(0))[index])]",
            )
        ],
        "broadcast": [(CEMENT_Y, "        label = self.labels[index : index + 1]")],
        **model_mutants(CEMENT_MODEL, "model", "model.my_network[0]"),
        "lr0": [("learning_rate = 0.001", "learning_rate = 0.0")],
        "stale_grad": [("        optimizer.zero_grad()\n", "")],
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
        RASBT,
        CEMENT,
        BIGRAMS,
        D2L_LINEAR_SCRATCH,
        D2L_WEIGHT_DECAY,
        D2L_DROPOUT,
        D2L_SOFTMAX,
        D2L_BATCH_NORM,
        D2L_LINEAR_CONCISE,
        D2L_LENET,
        D2L_MLP,
    )
}
REAL_TRAINING = tuple(name for name, case in CASES.items() if case.real.startswith("training/"))

# Two of the chapters as their authors run them: FashionMNIST's real size (60,000 training and
# 10,000 validation images, synthetic as in every copy) and the chapter's own ten epochs. A full
# run takes minutes: for `benchmarks/smoke.py`'s cost table only, never the suite.
REAL_SIZE = (D2L, "num_train=512, num_val=256", "num_train=60000, num_val=10000")
LONG = {
    case.name: case
    for case in (
        replace(D2L_MLP, name="d2l-pytorch-colab__mlp-implementation__60000", changes=(REAL_SIZE,)),
        replace(D2L_LENET, name="d2l-pytorch-colab__lenet__60000", changes=(REAL_SIZE,)),
    )
}
