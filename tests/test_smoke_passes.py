"""Smoke mode cuts a training's passes, meets what the full run meets, and costs no more.

Each test holds one rule on a notebook written the way real training
notebooks are, against the same notebook's full run: a loop over models is
not an epoch loop; a cut loop still runs its last epoch, a cut DataLoader
pass its last (short) batch; a mean over a cut pass stays a mean; the blocks
a cut loop never ran are named; and a training too short to be worth cutting
runs in full.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import requires_torch, run

pytestmark = requires_torch

SMOKE = ("--ntdd-smoke", "--ntdd-smoke-min-seconds", "0")  # every cut made, however short
DATA = (
    "import math, time\nimport torch\nfrom torch import nn\n"
    "from torch.utils.data import DataLoader, TensorDataset\n\n"
    "torch.manual_seed(0)\nX = torch.randn(250, 4)\ny = (X[:, 0] > 0).long()\n"
    "train_set = TensorDataset(X, y)\nloader = DataLoader(train_set, batch_size=16)"
)


def test_a_loop_over_models_is_not_cut_though_each_models_epochs_are(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A loop whose every pass makes an optimizer trains a model of its own each pass: the
    cells below read all of them, so all of them are made; their epochs are cut."""
    notebook(
        [
            DATA,
            "models, losses = [], []\nfor i in range(5):\n"
            "    model = nn.Linear(4, 2)\n"
            "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    for epoch in range(30):\n        opt.zero_grad()\n"
            "        loss = nn.functional.cross_entropy(model(X), y)\n"
            "        loss.backward()\n        opt.step()\n"
            "    models.append(model)\n    losses.append(loss.item())",
            "best = models[4]",
            "# TEST: every model trained and kept\nassert len(models) == 5 and best is models[-1]",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ntdd: smoke mode capped:",
            "  nb.ipynb (setup cell 2*), line 5: a training loop cut to 4 of 30 passes "
            "(its first and its last) (5 times)",
            "ntdd: smoke mode left alone, where it saw training:",
            "  nb.ipynb (setup cell 2*), line 2: each pass makes an optimizer, a training of "
            "its own (a loop over models or settings, not a training's passes)",
        ]
    )


TRAIN_AND_EVALUATE = (
    "model = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "evaluated = []\nfor epoch in range({epochs}):\n    for xb, yb in loader:\n"
    "        opt.zero_grad()\n        nn.functional.cross_entropy(model(xb), yb).backward()\n"
    "        opt.step()\n"
    "    if (epoch + 1) % 5 == 0:\n        evaluated.append(epoch)\n"
    "        assert model(X).shape == (250, {classes}), 'the evaluation is wrong'"
)


@pytest.mark.parametrize("epochs", ["20", "num_epochs"])
@pytest.mark.slow
def test_a_cut_epoch_loop_runs_its_last_epoch_so_a_bug_in_every_fifth_epoch_fails_as_in_full(
    notebook: Any, pytester: pytest.Pytester, epochs: str
) -> None:
    """`if (epoch + 1) % 5 == 0:` runs in the smoke run's last epoch, as in the full run's;
    also where the count is a smoke name (`num_epochs = 20`): the loop over it is cut, the
    name keeps its value, and an array it sizes holds every epoch the loop meets."""
    for name, classes in (("good.ipynb", 2), ("bug.ipynb", 3)):
        code = TRAIN_AND_EVALUATE.format(epochs=epochs, classes=classes)
        code = f"history = torch.zeros({epochs})\n{code}\n    history[epoch] = epoch"
        cells = [DATA + "\nnum_epochs = 20", code]
        notebook([*cells, "# TEST\nassert evaluated[-1] == 19 and history[19] == 19"], name)
    full = run(pytester, "--ntdd", "good.ipynb", "bug.ipynb")
    full.assert_outcomes(passed=1, errors=1)  # the setup cell raises
    smoke = run(pytester, "--ntdd", *SMOKE, "good.ipynb", "bug.ipynb")
    smoke.assert_outcomes(passed=1, errors=1)
    smoke.stdout.fnmatch_lines(["*AssertionError: the evaluation is wrong*"])
    smoke.stdout.fnmatch_lines(
        ["  good.ipynb (setup cell 2*), line 5: a training loop cut to 2 of 20 passes*"]
    )


def test_a_cut_dataloader_pass_ends_with_the_short_last_batch(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """250 examples in batches of 16: the last holds 10, and `xb.view(16, -1)` fails on it
    in the smoke run as in the full run; the sizes the smoke run saw say which batches."""
    notebook(
        [
            DATA,
            "sizes = []\nfor xb, yb in loader:\n    sizes.append(len(xb))\n"
            "    assert xb.view(16, -1).shape == (16, 4)",
            "# TEST\nassert sizes[-1] == 10",
        ],
        "bug.ipynb",
    )
    notebook(
        [DATA, "sizes = [len(xb) for xb, yb in loader]", "# TEST\nassert sizes == SIZES"],
        "sizes.ipynb",
    )
    pytester.makeconftest("import builtins\nbuiltins.SIZES = [16, 16, 16, 10]\n")
    run(pytester, "--ntdd", "bug.ipynb").assert_outcomes(errors=1)  # the setup cell raises
    result = run(pytester, "--ntdd", *SMOKE, "bug.ipynb", "sizes.ipynb")
    result.assert_outcomes(errors=1, passed=1)
    result.stdout.fnmatch_lines(["*RuntimeError: shape '[[]16, -1[]]' is invalid*"])
    result.stdout.fnmatch_lines(
        [
            "*sizes.ipynb (setup cell 2*), line 1: a DataLoader's pass cut to 4 of 16 batches "
            "(its first and its last)"
        ]
    )


MEAN_LOSS = (
    "model = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr={lr})\n"
    "losses = []\nfor epoch in range(30):\n    total = 0.0\n    for xb, yb in loader:\n"
    "        opt.zero_grad()\n        loss = nn.functional.cross_entropy(model(xb), yb)\n"
    "        loss.backward()\n        opt.step()\n        total += loss.item() * len(xb)\n"
    "    losses.append(total / len(loader.dataset))"
)


@pytest.mark.slow
def test_a_mean_over_a_cut_pass_stays_a_mean_so_a_model_that_learns_nothing_fails(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """`total / len(loader.dataset)` after a cut pass divides by the examples the pass
    yielded: the docs' first-steps test (the loss below a uniform guess's) fails on a
    learning rate of 0 in the smoke run as in the full run, and passes where it learns."""
    test = "# TEST: below a uniform guess's loss\nassert losses[-1] < math.log(2)"
    notebook([DATA, MEAN_LOSS.format(lr="0.5"), test], "learns.ipynb")
    notebook([DATA, MEAN_LOSS.format(lr="0.0"), test], "lr0.ipynb")
    run(pytester, "--ntdd", "learns.ipynb", "lr0.ipynb").assert_outcomes(passed=1, failed=1)
    result = run(pytester, "--ntdd", *SMOKE, "learns.ipynb", "lr0.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*lr0.ipynb (setup cell 2*), line 12: len(loader.dataset) read as the 58 examples "
            "of its cut pass, not 250*"
        ]
    )


def test_the_outermost_blocks_a_cut_loop_never_ran_are_named(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            DATA,
            "model = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for epoch in range(10):\n    for i, (xb, yb) in enumerate(loader):\n"
            "        opt.zero_grad()\n"
            "        nn.functional.cross_entropy(model(xb), yb).backward()\n"
            "        opt.step()\n"
            "        if i % 5 == 4:\n            print('batch', i)\n"
            "            if i > 100:\n                print('far')\n"
            "    if epoch == 9:\n        print('done')",
            "# TEST\nassert True",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "  nb.ipynb (setup cell 2*), line 9: never ran in smoke mode: a block inside a "
            "loop smoke mode cut"
        ]
    )
    said = result.stdout.str()
    assert "line 11: never ran" not in said  # inside the block named: not named again
    assert "line 13: never ran" not in said  # the last epoch's branch ran


SLOW_STEP = (
    "model = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "ran = 0\nfor epoch in range({epochs}):\n    for xb, yb in loader:\n"
    "        opt.zero_grad()\n        nn.functional.cross_entropy(model(xb), yb).backward()\n"
    "        opt.step()\n        busy = time.process_time()\n"
    "        while time.process_time() - busy < {pause}:\n            pass\n    ran += 1"
)


@pytest.mark.slow
def test_a_training_too_short_to_be_worth_cutting_runs_in_full_and_the_summary_says_so(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """By default a cut must save a second: a short training runs as in the full run (its
    DataLoader's `len()` too), a long one is cut, and the summary says which and why."""
    notebook(
        [
            DATA,
            SLOW_STEP.format(epochs=3, pause=0),
            "# TEST: all of it ran\nassert ran == 3 and len(loader) == 16",
        ],
        "short.ipynb",
    )
    notebook(
        [
            DATA,
            SLOW_STEP.format(epochs=40, pause=0.15),
            "# TEST: cut\nassert ran == 2 and len(loader) == 4",
        ],
        "long.ipynb",
    )
    result = run(pytester, "--ntdd", "--ntdd-smoke", "short.ipynb", "long.ipynb")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "ntdd: smoke mode capped:",
            "  long.ipynb (setup cell 2*), line 4: a training loop cut to 2 of 40 passes*",
            "  long.ipynb (setup cell 2*), line 5: a DataLoader's pass cut to 4 of 16 batches*",
            "ntdd: smoke mode left alone, where it saw training:",
            "  short.ipynb (setup cell 2*), line 4: the passes a cut would skip take about * s, "
            "under 1 s (--ntdd-smoke-min-seconds)",
            "  short.ipynb (setup cell 2*), line 5: a DataLoader's passes would save about * s "
            "if cut, under 1 s (--ntdd-smoke-min-seconds)",
        ]
    )
    nothing = run(pytester, "--ntdd", "--ntdd-smoke", "short.ipynb")
    nothing.stdout.fnmatch_lines(
        [
            "ntdd: smoke mode was on and capped nothing: *",
            "ntdd: smoke mode left alone, where it saw training:",
        ]
    )


def test_a_len_asked_before_the_first_pass_holds_for_every_pass(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Batches fetched by hand, as many as `len(loader)` said before the pass: however short
    the training, the pass yields as many as `len()` said."""
    notebook(
        [
            DATA,
            "model = nn.Linear(4, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "for epoch in range(3):\n    batches = iter(loader)\n"
            "    for i in range(len(loader)):\n        xb, yb = next(batches)\n"
            "        opt.zero_grad()\n"
            "        nn.functional.cross_entropy(model(xb), yb).backward()\n        opt.step()",
            "# TEST\nassert len(loader) == 4",
        ]
    )
    run(pytester, "--ntdd", "--ntdd-smoke", "nb.ipynb").assert_outcomes(passed=1)
