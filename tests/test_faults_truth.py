"""`ntdd faults` on what a training notebook does: each fault where the written-in bug sits.

One case per disagreement found on ordinary training notebooks: a fault must
act on the object the bug written into the notebook would change, where the
notebook makes or switches it, and nowhere else; timing decides no verdict;
the advice reads the notebook. The whole oracle is `test_faults_oracle.py`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import write_notebook
from fault_cases import CASES

from ntdd.commands.cli import main
from ntdd.faults.command import Request, _checked, _test_cells, run_notebook
from ntdd.faults.report import advice
from ntdd.faults.results import (
    CAUGHT,
    NOT_APPLICABLE,
    SURVIVED,
    TIMED_OUT,
    FaultResult,
    NotebookReport,
)
from ntdd.notebook.read import read_notebook

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

MLP = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "X = torch.randn(256, 2)\ny = (X[:, 0] * X[:, 1] > 0).long()\n"
    "class MLP(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.net = nn.Sequential(\n"
    "            nn.Linear(2, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2)\n"
    "        )\n"
    "    def forward(self, x):\n"
    "        return self.net(x)"
)
TRAIN = (
    "model = MLP()\nopt = torch.optim.Adam(model.parameters(), lr=0.05)\n"
    "for _ in range(150):\n"
    "    model.train()\n"
    "    opt.zero_grad()\n"
    "    nn.functional.cross_entropy(model(X), y).backward()\n"
    "    opt.step()\n"
    "model.eval()"
)
ROUND_TRIP = (
    "# TEST: the state dict round-trips\n"
    "clone = MLP()\nclone.load_state_dict(model.state_dict())\nclone.eval()\n"
    "with torch.no_grad():\n    assert torch.equal(clone(X), model(X))"
)
ACCURATE = (
    "# TEST: it learned the quadrants\n"
    "with torch.no_grad():\n    assert (model(X).argmax(1) == y).float().mean() > 0.9"
)
IN_EVAL = (
    "# TEST: ready for inference\nfrom ntdd.torch import assert_mode\n"
    "assert_mode(model, train=False)"
)


def faults(tmp_path: Path, cells: list[str], *kinds: str, **options: str) -> NotebookReport:
    notebook = write_notebook(tmp_path / "nb.ipynb", cells)
    return run_notebook(notebook, Request((str(notebook),), kinds, **options))  # type: ignore[arg-type]


def cells_and_tests(notebook: Path) -> list[tuple[object, tuple[str, ...]]]:
    return _test_cells(read_notebook(notebook))  # type: ignore[return-value]


def verdicts(report: NotebookReport) -> dict[str, str]:
    return {r.name: r.status for r in report.results}


@pytest.mark.slow
def test_scale_leaves_a_clone_that_a_test_builds_alone(tmp_path: Path) -> None:
    """Weights ×1e4 right after `model = MLP()` pass a round-trip test: the clone loads the
    same (scaled) state. The fault used to scale the test's clone at its first forward."""
    report = faults(tmp_path, [MLP, TRAIN, ROUND_TRIP], "scale", "unregistered", "detached")
    assert verdicts(report)["scale"] == SURVIVED
    assert report.results[0].applied == ("model: 4 parameters ×1e4",)  # the clone's are not


@pytest.mark.slow
def test_mode_leaves_out_the_notebooks_eval_which_its_own_train_calls_do_not_undo(
    tmp_path: Path,
) -> None:
    """Leaving out `model.eval()` fails the notebook's own assert_mode; the fault used to flip
    the model once, and the notebook's train()/eval() calls undid it."""
    report = faults(tmp_path, [MLP, TRAIN, IN_EVAL, ACCURATE], "mode")
    (result,) = report.results
    assert (result.status, result.applied) == (CAUGHT, ("model.eval() → left out",))
    assert result.caught_by == ("test_ready_for_inference",)


@pytest.mark.slow
def test_mode_reaches_batch_norm_models_held_in_a_list(tmp_path: Path) -> None:
    held = (
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "models = [nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4))]\n"
        "models[0](torch.randn(8, 2))\nfor m in models:\n    m.eval()"
    )
    check = "# TEST: in eval mode\nassert not models[0].training"
    (result,) = faults(tmp_path, [held, check], "mode").results
    assert result.status == CAUGHT
    assert result.applied == ("m.eval() → left out",)  # the loop's name for it


@pytest.mark.slow
def test_labels_are_shuffled_whatever_their_order(tmp_path: Path) -> None:
    """Class-sorted labels: a shift by one changed 2 of 256 and no test noticed; a seeded
    permutation moves about half of them, as shuffled labels do."""
    sorted_data = MLP.replace(
        "y = (X[:, 0] * X[:, 1] > 0).long()",
        "y = (X[:, 0] * X[:, 1] > 0).long()\nX, y = X[y.argsort()], y[y.argsort()]",
    )
    (result,) = faults(tmp_path, [sorted_data, TRAIN, ACCURATE], "labels").results
    assert result.status == CAUGHT
    (changed,) = result.applied
    moved = int(changed.split("(")[2].split(" of")[0])
    assert changed.startswith("y (256,) shuffled") and moved > 100


@pytest.mark.slow
def test_data_faults_act_on_the_data_the_training_reads_not_on_a_demo_tensor(
    tmp_path: Path,
) -> None:
    """A demo tensor and the last batch of a loop an earlier cell left are not the data."""
    demo = "import torch\nfrom torch import nn\ntensor2d = torch.tensor([[1.0, 2.0], [3.0, 4.0]])"
    data = (
        "from torch.utils.data import DataLoader, TensorDataset\ntorch.manual_seed(0)\n"
        "X_train = torch.randn(64, 2)\ny_train = (X_train[:, 0] > 0).long()\n"
        "loader = DataLoader(TensorDataset(X_train, y_train), batch_size=16)\n"
        "for X_batch, y_batch in loader:\n    pass"
    )
    train = (
        "model = nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.5)\n"
        "for _ in range(20):\n    for xb, yb in loader:\n        opt.zero_grad()\n"
        "        nn.functional.cross_entropy(model(xb), yb).backward()\n        opt.step()"
    )
    test = "# TEST: it learned\nassert (model(X_train).argmax(1) == y_train).float().mean() > 0.9"
    report = faults(tmp_path, [demo, data, train, test], "shape", "nan")
    applied = {r.name: r.applied for r in report.results}
    assert applied["shape"] == ("X_train (64, 2) → (2, 64)",)
    assert applied["nan"] == ("X_train[0, 0] → nan",)
    assert verdicts(report) == {"shape": CAUGHT, "nan": CAUGHT}


@pytest.mark.slow
def test_a_hand_written_model_with_a_manual_update_is_a_model(tmp_path: Path) -> None:
    """`W.data -= lr * W.grad` and `W.grad = None`, as lectures write them: lr0, stale_grad,
    detached and scale apply, and the written-in bug of each is caught."""
    setup = (
        "import torch\ntorch.manual_seed(0)\nX = torch.randn(128, 2)\ny = (X[:, 0] > 0).long()\n"
        "W = torch.randn(2, 2, requires_grad=True)"
    )
    train = (
        "for _ in range(100):\n"
        "    loss = torch.nn.functional.cross_entropy(X @ W, y)\n"
        "    W.grad = None\n    loss.backward()\n    W.data -= 1.0 * W.grad"
    )
    tests = [
        "# TEST: it learned\nassert ((X @ W).argmax(1) == y).float().mean() > 0.9",
        "# TEST: the loss reaches W\nW.grad = None\n"
        "torch.nn.functional.cross_entropy(X @ W, y).backward()\nassert W.grad.abs().sum() > 0",
    ]
    report = faults(tmp_path, [setup, train, *tests], "lr0", "stale_grad", "detached", "scale")
    assert {r.name: r.status != NOT_APPLICABLE for r in report.results} == dict.fromkeys(
        ("lr0", "stale_grad", "detached", "scale"), True
    )
    assert verdicts(report)["lr0"] == CAUGHT and verdicts(report)["detached"] == CAUGHT


LAZY = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "X = torch.randn(256, 2)\ny = (X[:, 0] > 0).long()\n"
    "model = nn.Sequential(nn.LazyLinear(16), nn.ReLU(), nn.LazyLinear(2))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.5)  # before the first forward\n"
    "for _ in range(100):\n    opt.zero_grad()\n"
    "    nn.functional.cross_entropy(model(X), y).backward()\n    opt.step()"
)


@pytest.mark.slow
def test_lazy_layers_are_frozen_and_unplugged_where_their_first_forward_makes_them(
    tmp_path: Path,
) -> None:
    """Frozen lazy layers error the training as `model.requires_grad_(False)` does; a lazy
    weight is unplugged where its first forward made it, not left in place."""
    first = (
        "# TEST: its state is whole\n"
        "from ntdd.torch import assert_state_complete\nassert_state_complete(model)"
    )
    report = faults(tmp_path, [LAZY, ACCURATE, first], "detached", "unregistered")
    detached, unregistered = report.results
    assert detached.status == CAUGHT and detached.by_setup == detached.caught_by
    assert unregistered.applied == ("model.0.weight → a plain attribute",)
    assert unregistered.status == CAUGHT


@pytest.mark.slow
def test_the_report_never_counts_a_negative_number_of_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """d2l's weight decay chapter: a lazy layer and hand-written models beside it were
    counted as "-1 parameters of other models"."""
    notebook = CASES["d2l-pytorch-colab__weight-decay"].notebook(tmp_path)
    monkeypatch.chdir(tmp_path)
    main(["faults", notebook.name, "--faults", "detached,scale", "--json"])
    applied = [
        a
        for f in json.loads(capsys.readouterr().out)["notebooks"][0]["faults"]
        for a in f["applied"]
    ]
    assert applied and not any(re.search(r"-\d+ (parameter|tensor)", a) for a in applied)
    assert "2 parameters of other models → requires_grad=False" in applied, applied


@pytest.mark.slow
def test_a_fault_whose_run_only_times_out_is_timed_out_never_caught(tmp_path: Path) -> None:
    """Training until the loss is low never ends with lr 0: the tests time out, which says
    nothing about the tests."""
    until = LAZY.replace(
        "for _ in range(100):\n    opt.zero_grad()",
        "loss = torch.tensor(1.0)\nwhile loss > 0.3:\n    opt.zero_grad()",
    ).replace(
        "    nn.functional.cross_entropy(model(X), y).backward()",
        "    loss = nn.functional.cross_entropy(model(X), y)\n    loss.backward()",
    )
    (result,) = faults(tmp_path, [until, ACCURATE], "lr0", timeout="3").results
    assert result.status == TIMED_OUT, result
    assert result.caught_by == () and "ran past its timeout" in result.reason


@pytest.mark.slow
def test_every_run_computes_with_the_clean_runs_thread_settings(tmp_path: Path) -> None:
    """A chaotic training flips with the thread count: the runs a verdict compares count as
    many threads, forked or not, and the notebook's `set_num_threads` changes nothing. The
    notebook seeds itself: each run at 1 thread, then at 2, the other count checked."""
    log = tmp_path / "threads.txt"
    cell = (
        f"import torch\ntorch.set_num_threads(3)\n"
        f"with open({str(log)!r}, 'a') as f:\n    f.write(f'{{torch.get_num_threads()}}\\n')\n"
        "torch.manual_seed(0)\nX = torch.randn(32, 2)\ny = (X[:, 0] > 0).long()\n"
        "model = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "torch.nn.functional.cross_entropy(model(X), y).backward()"
    )
    forked = faults(tmp_path, [cell, ACCURATE], "lr0", "nan")
    apart = faults(tmp_path, [cell, ACCURATE], "lr0", "nan", fork=False)  # type: ignore[arg-type]
    counts = log.read_text().split()
    assert sorted(counts) == ["1"] * 6 + ["2"] * 6, counts  # 3 runs at each count, each way
    assert verdicts(forked) == verdicts(apart)


@pytest.mark.slow
def test_the_advice_reads_the_notebook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A check the notebook makes already is not suggested again: the report says the check
    is there and why it missed (here: the test switches the model to eval mode itself)."""
    own = "# TEST: eval mode\nmodel.eval()\nfrom ntdd.torch import assert_mode\nassert_mode(model)"
    monkeypatch.chdir(tmp_path)
    write_notebook(tmp_path / "nb.ipynb", [MLP, TRAIN, own])
    assert main(["faults", "nb.ipynb", "--faults", "mode"]) == 1
    out = capsys.readouterr().out
    assert "NOT CAUGHT. The check it needs is made (test cell 3 (assert_mode))" in out, out
    assert "missed the fault: the test calls eval() itself before it checks the mode" in out
    assert "Try:" not in out


def test_the_advice_says_a_check_that_fails_without_any_fault_can_catch_none(
    tmp_path: Path,
) -> None:
    """The check is there, in a test that fails cleanly: that, not the check, is what to fix."""
    notebook = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "import torch\nx = torch.ones(3)",
            "# TEST: finite\nfrom ntdd.torch import assert_finite\nassert_finite(x)\n"
            "assert len(x) == 4",
            "# TEST: three\nassert len(x) == 3",
        ],
    )
    cells = cells_and_tests(notebook)
    baseline = {"test_finite": "failed", "test_three": "passed"}
    missed = _checked(FaultResult("nan", SURVIVED, ("x[0] → nan",)), cells, baseline)
    assert missed.checked == "cell 2 (assert_finite)"
    assert "it does not pass without any fault" in advice(missed)
    assert "Try:" not in advice(missed)


COMPUTED = (  # a Dataset that builds each example from a row: no data tensor held
    "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, Dataset\n"
    "torch.manual_seed(0)\n"
    "ROWS = [(x1, x2, int(x1 * x2 > 0)) for x1, x2 in torch.randn(256, 2).tolist()]\n"
    "class Rows(Dataset):\n"
    "    def __len__(self):\n        return len(ROWS)\n"
    "    def __getitem__(self, i):\n"
    "        x1, x2, label = ROWS[i]\n"
    "        return torch.tensor([x1, x2]), torch.tensor(label)\n"
    "loader = DataLoader(Rows(), batch_size=64, shuffle=True)\n"
    "model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 2))\n"
    "opt = torch.optim.Adam(model.parameters(), lr=0.05)\n"
    "for _ in range(30):\n"
    "    for xb, yb in loader:\n"
    "        opt.zero_grad()\n"
    "        nn.functional.cross_entropy(model(xb), yb).backward()\n"
    "        opt.step()"
)
COMPUTED_CHECKS = (
    "# TEST: an example is two float features and a class\n"
    "x0, y0 = Rows()[0]\nassert x0.shape == (2,) and x0.dtype == torch.float32\n"
    "assert torch.isfinite(x0).all() and y0.ndim == 0",
    "# TEST: it learned the quadrants\n"
    "X = torch.stack([Rows()[i][0] for i in range(len(ROWS))])\n"
    "y = torch.tensor([label for *_, label in ROWS])\n"
    "with torch.no_grad():\n    assert (model(X).argmax(1) == y).float().mean() > 0.9",
)


# Five fault runs of a training: the quick run faults a Dataset's computed examples in
# test_a_librarys_dataset_is_faulted_where_a_setup_cell_makes_it_not_where_the_library_does.
@pytest.mark.slow
def test_data_faults_reach_the_examples_a_dataset_computes_in_getitem(tmp_path: Path) -> None:
    """A Dataset that builds each example from a row holds no tensor to change: each data
    fault acts on what its `__getitem__` returns, through the loader and direct indexing."""
    kinds = ("shape", "dtype", "nan", "labels", "broadcast")
    report = faults(tmp_path, [COMPUTED, *COMPUTED_CHECKS], *kinds)
    assert verdicts(report) == dict.fromkeys(kinds, CAUGHT)
    applied = {r.name: r.applied for r in report.results}
    assert applied["dtype"] == ("Rows.__getitem__ input float32 → float64",)
    assert applied["labels"] == (
        "Rows.__getitem__ labels shuffled (item i takes item perm[i]'s, of 256)",
    )


@pytest.mark.slow
def test_a_librarys_dataset_is_faulted_where_a_setup_cell_makes_it_not_where_the_library_does(
    tmp_path: Path,
) -> None:
    """The same Dataset class, in a module beside the notebook: the dataset a setup cell makes
    of it computes faulty examples; the one the module's own function makes does not."""
    module = COMPUTED.split("loader = DataLoader")[0] + "def make():\n    return Rows()\n"
    (tmp_path / "rows.py").write_text(module, encoding="utf-8")
    setup = "import torch\nimport rows\nmine, theirs = rows.Rows(), rows.make()"
    checks = [
        f"# TEST: {name}'s examples are float32\nassert {name}[0][0].dtype == torch.float32"
        for name in ("mine", "theirs")
    ]
    (result,) = faults(tmp_path, [setup, *checks], "dtype").results
    assert (result.status, result.applied) == (
        CAUGHT,
        ("Rows.__getitem__ input float32 → float64",),
    )
    assert result.caught_by == ("test_mine_s_examples_are_float32",)


SERIES = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "x = torch.sin(0.01 * torch.arange(400.0)) + 0.1 * torch.randn(400)\n"
    "tau = 4\nfeatures = torch.stack([x[i : 400 - tau + i] for i in range(tau)], 1)\n"
    "labels = x[tau:].reshape(-1, 1)  # a column of targets: a view of the series"
)
SERIES_TRAINING = (
    "model = nn.Linear(tau, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for _ in range(200):\n    opt.zero_grad()\n"
    "    loss = nn.functional.mse_loss(model(features), labels)\n"
    "    loss.backward()\n    opt.step()"
)
SERIES_CHECK = "# TEST: it predicts the next value\nassert loss.item() < 0.05"


@pytest.mark.slow
def test_targets_viewed_from_a_1d_series_as_a_column_are_no_1d_targets(tmp_path: Path) -> None:
    """`labels = x[tau:].reshape(-1, 1)`: the loss gets (N, 1) targets, so no 1-D target bug
    can be written in. The fault used to reshape the series they view, `x`, to (400, 1) (and
    the column to (396, 1, 1)), which the loss broadcast: a kill no written-in bug makes."""
    (result,) = faults(tmp_path, [SERIES, SERIES_TRAINING, SERIES_CHECK], "broadcast").results
    assert (result.status, result.applied) == (NOT_APPLICABLE, ())
    assert "no 1-D target tensor" in result.reason


LINE = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "X = torch.arange(0, 1, 0.02).unsqueeze(1)\ny = 0.7 * X + 0.3\n"
    "class Line(nn.Module):  # elementwise: float64 inputs promote, nothing raises\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.w = nn.Parameter(torch.randn(1))\n        self.b = nn.Parameter(torch.randn(1))\n"
    "    def forward(self, x):\n        return self.w * x + self.b"
)
LOOK_THEN_TRAIN = (
    "model = Line()\nwith torch.inference_mode():  # a look before training, as tutorials do\n"
    "    untrained = model(X)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor _ in range(300):\n"
    "    opt.zero_grad()\n    loss = ((model(X) - y) ** 2).mean()\n"
    "    loss.backward()\n    opt.step()"
)
LEARNED_THE_LINE = "# TEST: it learned the line\nassert loss.item() < 0.01"


@pytest.mark.slow
def test_data_first_used_under_inference_mode_is_changed_as_the_notebook_made_it(
    tmp_path: Path,
) -> None:
    """float64 data trains an elementwise model as well: the written-in bug survives. The
    fault cast the data at its first use, inside `torch.inference_mode()`, into inference
    tensors, which training cannot save for backward: a RuntimeError no written-in bug makes."""
    (result,) = faults(tmp_path, [LINE, LOOK_THEN_TRAIN, LEARNED_THE_LINE], "dtype").results
    assert (result.status, result.applied) == (SURVIVED, ("X, y float32 → float64",))


@pytest.mark.slow
@pytest.mark.parametrize("layer", ["nn.LazyLinear(1)", "nn.Linear(3, 1)"])
def test_unregistered_leaves_the_plain_tensor_to_an_optimizer_that_took_the_attribute(
    tmp_path: Path, layer: str
) -> None:
    """An optimizer made on `[model[0].weight, model[0].bias]` before the first forward: with
    the weight a plain tensor where the model is made (the written-in bug), the attribute is
    the plain tensor, which it trains, and the training passes. The fault unplugged the weight
    at the first forward and left the optimizer updating the parameter the model no longer
    reads: the weight never trained, a catch no written-in bug makes."""
    setup = (
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "X = torch.randn(200, 3)\ny = X @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3\n"
        f"model = nn.Sequential({layer})\n"
        "opt = torch.optim.SGD([model[0].weight, model[0].bias], lr=0.1)\n"
        "for _ in range(200):\n    opt.zero_grad()\n"
        "    loss = nn.functional.mse_loss(model(X), y)\n    loss.backward()\n    opt.step()"
    )
    check = "# TEST: it learned the plane\nassert loss.item() < 0.01"
    (result,) = faults(tmp_path, [setup, check], "unregistered").results
    assert (result.status, result.applied) == (SURVIVED, ("model.0.weight → a plain attribute",))
