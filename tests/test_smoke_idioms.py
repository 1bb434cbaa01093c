"""The docs' recommended smoke-mode tests keep their power over the common loss idioms.

`docs/running.md` recommends, for smoke runs, tests of the first steps: the
data finite, the losses finite, the loss fallen, the training loss below a
uniform guess's. Each notebook here trains one classifier and records its
loss by one of the idioms training notebooks use: a sum divided by
`len(loader.dataset)`, by the batch count, a running mean, the last batch's
`loss.item()`. `ntdd faults --smoke` must catch what `ntdd faults` catches,
but for gradients that add up (`stale_grad`), which the docs say shows only
after many steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import requires_torch, write_notebook

from ntdd.commands.cli import main as ntdd_main

pytestmark = [requires_torch, pytest.mark.slow]  # sixteen fault runs of a small training

DATA = (
    "import math\nimport torch\nfrom torch import nn\n"
    "from torch.utils.data import DataLoader, TensorDataset\n\n"
    "torch.manual_seed(0)\nX = torch.randn(600, 8)\ny = X[:, :4].argmax(1)\n"
    "loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)\n"
    "model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.2)\nloss_fn = nn.CrossEntropyLoss()"
)
TRAINING = (
    "losses = []\nfor epoch in range(10):\n    model.train()\n{start}"
    "    for xb, yb in loader:\n        opt.zero_grad()\n"
    "        loss = loss_fn(model(xb), yb)\n        loss.backward()\n        opt.step()\n"
    "{add}    losses.append({loss})"
)
IDIOMS = {
    "a sum over the examples": (
        "    total = 0.0\n",
        "        total += loss.item() * len(xb)\n",
        "total / len(loader.dataset)",
    ),
    "a sum over the batches": (
        "    total = 0.0\n",
        "        total += loss.item()\n",
        "total / len(loader)",
    ),
    "a running mean": (
        "    mean, n = 0.0, 0\n",
        "        n += 1\n        mean += (loss.item() - mean) / n\n",
        "mean",
    ),
    "the last batch's": ("", "", "loss.item()"),
}
RECOMMENDED = [
    "# TEST: the data are finite\nassert torch.isfinite(X).all()",
    "# TEST: the losses are finite\nassert all(map(math.isfinite, losses))",
    "# TEST: the loss fell\nassert losses[-1] < losses[0]",
    "# TEST: below a uniform guess's loss\nassert losses[-1] < math.log(4)",
]
FAULTS = "lr0,scale,nan,labels,detached,shape,stale_grad"
NEEDS_MANY_STEPS = {"stale_grad"}


def caught(path: Path, capsys: pytest.CaptureFixture[str], *smoke: str) -> set[str]:
    capsys.readouterr()
    ntdd_main(["faults", str(path), *smoke, "--faults", FAULTS, "--json"])
    (notebook,) = json.loads(capsys.readouterr().out)["notebooks"]
    return {fault["name"] for fault in notebook["faults"] if fault["status"] == "caught"}


@pytest.mark.parametrize("idiom", list(IDIOMS))
def test_the_recommended_tests_catch_in_smoke_mode_what_they_catch_in_full(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], idiom: str
) -> None:
    start, add, loss = IDIOMS[idiom]
    training = TRAINING.format(start=start, add=add, loss=loss)
    path = write_notebook(pytester.path / "train.ipynb", [DATA, training, *RECOMMENDED])
    pytester.makepyprojecttoml("[tool.ntdd]\nsmoke_min_seconds = 0\n")  # a training of 0.2 s
    full = caught(path, capsys)
    assert {"lr0", "scale", "nan"} <= full
    assert caught(path, capsys, "--smoke") >= full - NEEDS_MANY_STEPS
