"""Smoke mode (`--ntdd-smoke`): long trainings cut short without an edit, under the same tests.

Each capping rule is held here on a notebook that trains the way real ones
do: a DataLoader made anywhere, a loop in a function, tqdm's loops, a loop a
test-only parameter pins, a notebook with nothing to cap; then the
`@full_run` mark, what the run says (header, summary, report), the settings,
and that nothing outlives the session. `benchmarks/smoke.py` measures it on
the real training notebooks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import export, requires_torch, run, sha

from ntdd.commands.cli import main as ntdd_main
from ntdd.config import Smoke
from ntdd.faults.command import Request
from ntdd.runtime import smoke

pytestmark = requires_torch

SETUP = (
    "import torch\nfrom torch import nn\n"
    "from torch.utils.data import DataLoader, TensorDataset\n\n"
    "torch.manual_seed(0)\nX = torch.randn(640, 2)\ny = (X[:, 0] > 0).long()\n"
    "loader = DataLoader(TensorDataset(X, y), batch_size=10)\n"
    "model = nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)"
)
SMOKE = ("--ntdd-smoke", "--ntdd-smoke-min-seconds", "0")  # every cut made, however short
STEP = "opt.zero_grad()\nnn.functional.cross_entropy(model(X), y).backward()\nopt.step()"


def indented(code: str, by: int) -> str:
    return "\n".join(" " * by + line for line in code.splitlines())


def test_a_dataloader_made_in_a_helper_module_yields_k_batches_and_its_len_agrees(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(
        helpers="from torch.utils.data import DataLoader, TensorDataset\n"
        "import torch\n\n"
        "def make_loader():\n"
        "    return DataLoader(TensorDataset(torch.arange(1000.0)), batch_size=10)\n"
    )
    notebook(
        [
            "from helpers import make_loader\nloader = make_loader()\n"
            "seen = [len(batch) for (batch,) in loader]",
            "# TEST: three batches of ten, as len() says\n"
            "assert seen == [10, 10, 10] and len(loader) == 3",
            "# TEST: a test's own pass is capped too\nassert sum(1 for _ in loader) == 3",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "--ntdd-smoke-batches", "3", "nb.ipynb")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb (setup cell 1*), line 3: a DataLoader's pass cut to 3 of 100 batches "
            "(its first and its last)"
        ]
    )
    full = run(pytester, "--ntdd", "nb.ipynb")
    full.assert_outcomes(failed=2)  # without the option: all 100 batches


def test_a_training_loop_in_a_function_the_cell_defines_and_calls_runs_e_times(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            SETUP,
            "def train(epochs_seen):\n"
            "    for epoch in range(500):\n"
            f"{indented(STEP, 8)}\n"
            "        epochs_seen.append(epoch)\n"
            "    return epochs_seen\n\n\n"
            "seen = train([])",
            "# TEST: the first epoch and the last\nassert seen == [0, 499]",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb (setup cell 2*), line 2: a training loop cut to 2 of 500 passes "
            "(its first and its last)"
        ]
    )


def test_tqdm_over_a_range_and_trange_run_e_times(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            SETUP,
            "from tqdm import tqdm, trange\nfirst, second = [], []\n"
            "for epoch in tqdm(range(300), desc='epochs'):\n"
            f"{indented(STEP, 4)}\n    first.append(epoch)\n"
            "for epoch in trange(10, 300, 10, leave=False):\n"
            f"{indented(STEP, 4)}\n    second.append(epoch)",
            "# TEST: two epochs and the last of each\n"
            "assert first == [0, 1, 299] and second == [10, 20, 290]",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "--ntdd-smoke-epochs", "3", "nb.ipynb")
    result.assert_outcomes(passed=1)


def test_a_loop_over_batches_inside_an_epoch_loop_runs_k_times(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            SETUP,
            "steps = 0\nfor epoch in range(100):\n    for start in range(0, 640, 10):\n"
            "        xb, yb = X[start:start + 10], y[start:start + 10]\n"
            "        opt.zero_grad()\n"
            "        nn.functional.cross_entropy(model(xb), yb).backward()\n"
            "        opt.step()\n        steps += 1",
            "# TEST: two epochs of four batches\nassert steps == 8",
        ]
    )
    run(pytester, "--ntdd", *SMOKE, "nb.ipynb").assert_outcomes(passed=1)


def test_a_loop_whose_body_trains_only_through_what_it_calls_is_capped_as_it_runs(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            SETUP,
            "def one_epoch():\n    for xb, yb in loader:\n        opt.zero_grad()\n"
            "        nn.functional.cross_entropy(model(xb), yb).backward()\n        opt.step()",
            "epochs = []\nfor epoch in range(50):\n    one_epoch()\n    epochs.append(epoch)\n"
            "evaluated = [i for i in range(5)]\nprinted = []\n"
            "for i in range(20):\n    printed.append(str(i))",
            "# TEST: the training loop is cut, the others run in full\n"
            "assert len(epochs) == 2 and len(evaluated) == 5 and len(printed) == 20",
        ]
    )
    run(pytester, "--ntdd", *SMOKE, "nb.ipynb").assert_outcomes(passed=1)


def test_a_loop_that_calls_backward_through_helpers_the_cell_defines_is_capped(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """No optimizer and no DataLoader: only the cell's code says the loop trains."""
    notebook(
        [
            "import torch\ntorch.manual_seed(0)\nX = torch.randn(64, 2)\n"
            "t = X @ torch.tensor([2.0, -1.0])\nw = torch.zeros(2, requires_grad=True)",
            "def loss_of():\n    return ((X @ w - t) ** 2).mean()\n\n\n"
            "def step():\n    loss_of().backward()\n    with torch.no_grad():\n"
            "        w.sub_(0.1 * w.grad)\n        w.grad = None\n\n\n"
            "def one_epoch():\n    step()\n\n\n"
            "steps = 0\nfor epoch in range(300):\n    one_epoch()\n    steps += 1",
            "# TEST: the steps\nassert steps == STEPS",
        ]
    )
    pytester.makeconftest("import builtins, os\nbuiltins.STEPS = int(os.environ['STEPS'])\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("STEPS", "2")
        result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            ["*nb.ipynb (setup cell 2*), line 17: a training loop cut to 2 of 300 passes*"]
        )
        patch.setenv("STEPS", "300")
        run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)


@pytest.mark.slow
def test_a_dataset_a_training_loop_iterates_itself_yields_the_smoke_examples_a_pass(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A Dataset (a Subset too) iterated by a loop that trains, not through a DataLoader,
    is cut to its first examples; the same Dataset anywhere else, and other iterables in
    a training loop, run whole."""
    notebook(
        [
            SETUP + "\nfrom torch.utils.data import Subset\ntrain_set = TensorDataset(X, y)",
            "def sgd(xb, yb):\n    opt.zero_grad()\n"
            "    nn.functional.cross_entropy(model(xb[None]), yb[None]).backward()\n"
            "    opt.step()\n\n\n"
            "seen, chunks = [], 0\nfor epoch in range(3):\n    for xb, yb in train_set:\n"
            "        sgd(xb, yb)\n        seen.append(epoch)\n"
            "    for xb, yb in [(X[:10], y[:10])] * 7:\n"
            "        model(xb).sum()\n        chunks += 1\n"
            "subset = 0\nfor xb, yb in Subset(train_set, range(100)):\n"
            "    sgd(xb, yb)\n    subset += 1\n"
            "whole = sum(1 for _ in train_set)",
            "# TEST: the counts\nassert (len(seen), chunks, subset, whole) == EXPECTED",
        ]
    )
    pytester.makeconftest(
        "import builtins, os\n"
        "builtins.EXPECTED = tuple(int(n) for n in os.environ['EXPECTED'].split(','))\n"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPECTED", "10,14,5,640")  # two epochs of 5 examples, the subset's 5
        result = run(pytester, "--ntdd", *SMOKE, "--ntdd-smoke-examples", "5", "nb.ipynb")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            [
                "ntdd: smoke mode capped:",
                "*(setup cell 2*), line 8: a training loop cut to 2 of 3 passes (its first and its "
                "last)",
                "*(setup cell 2*), line 9: a Dataset's pass cut to 5 of 640 examples (its first "
                "and its last) (2 times)",
                "*(setup cell 2*), line 16: a Dataset's pass cut to 5 of 100 examples (its first "
                "and its last)",
            ]
        )
        patch.setenv("EXPECTED", "6,14,3,640")
        pytester.makepyprojecttoml(
            "[tool.ntdd]\nsmoke = true\nsmoke_examples = 3\nsmoke_min_seconds = 0\n"
        )
        run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)
        patch.setenv("EXPECTED", "8,14,4,640")
        run(pytester, "--ntdd", "nb.ipynb", "-o", "ntdd_smoke_examples=4").assert_outcomes(passed=1)
        patch.setenv("EXPECTED", "1920,21,100,640")
        run(pytester, "--ntdd", "nb.ipynb", "-o", "ntdd_smoke=false").assert_outcomes(passed=1)
        bad = run(pytester, "--ntdd", "nb.ipynb", "--ntdd-smoke-examples", "none")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*smoke_examples must be a whole number >= 1, got 'none'"])


def test_epoch_counts_by_name_are_capped_and_a_test_only_parameter_pins_its_loop(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A smoke name the notebook's own loop runs over keeps its value: the loop is cut."""
    notebook(
        [
            SETUP,
            "class Trainer:\n    def __init__(self, max_epochs):\n"
            "        self.max_epochs = max_epochs\n\n\ntrainer = Trainer(max_epochs=30)\n"
            "num_epochs = 40\nmax_steps = 100\nsteps = 0\nfor epoch in range(num_epochs):\n"
            f"{indented(STEP, 4)}\n    steps += 1",
            "# TEST: the counts\n"
            "assert (trainer.max_epochs, num_epochs, steps, max_steps) == EXPECTED",
        ]
    )
    pytester.makeconftest(
        "import builtins, os\n"
        "builtins.EXPECTED = tuple(int(n) for n in os.environ['EXPECTED'].split(','))\n"
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EXPECTED", "2,40,2,2")
        result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            [
                "*(setup cell 2*), line 6: max_epochs=30 capped to 2",
                "*(setup cell 2*), line 8: max_steps=100 capped to 2",
                "*(setup cell 2*), line 10: a training loop cut to 2 of 40 passes*",
            ]
        )
        assert "num_epochs=40 capped" not in result.stdout.str()
        patch.setenv("EXPECTED", "2,5,5,2")  # the parameter wins, over the cap too
        pinned = ("--ntdd-param", "num_epochs=5")
        run(pytester, "--ntdd", *SMOKE, *pinned, "nb.ipynb").assert_outcomes(passed=1)
        patch.setenv("EXPECTED", "30,40,40,100")
        run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)


def test_a_notebook_with_nothing_to_cap_runs_as_without_the_option_and_no_file_changes(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    path = notebook(
        [
            SETUP.replace("batch_size=10", "batch_size=200"),  # four batches: none cut
            "total = 0\nfor i in range(10):\n    total += i\n"
            f"for epoch in range(2):\n    for xb, yb in loader:\n{indented(STEP, 8)}",
            "# TEST: everything ran\nassert total == 45 and len(loader) == 4",
        ]
    )
    before = sha(path)
    result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ntdd: smoke mode was on and capped nothing: *"])
    assert sha(path) == before
    caps = Smoke()
    for cell in ("total = 0\nfor i in range(10):\n    total += i", "for x in loader:\n    f(x)"):
        assert smoke.compile_cell(caps, cell, "nb.ipynb (setup cell 2)", 0, frozenset()) is None


def test_a_full_run_test_is_skipped_with_its_reason_in_smoke_mode_only(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            SETUP,
            f"for epoch in range(100):\n{indented(STEP, 4)}",
            "# TEST: it learned @full_run\nassert (model(X).argmax(1) == y).float().mean() > 0.99",
            "# TEST: a finite loss\nassert nn.functional.cross_entropy(model(X), y).isfinite()",
        ]
    )
    result = run(pytester, "--ntdd", *SMOKE, "nb.ipynb", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED*nb.ipynb*needs the full run: skipped in smoke mode (--ntdd-smoke)"]
    )
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=2)


def test_the_header_and_the_report_say_smoke_mode_ran_and_what_it_capped_where(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("nbconvert")
    notebook([SETUP, f"for epoch in range(100):\n{indented(STEP, 4)}", "# TEST\nassert True"])
    result = run(pytester, "--ntdd", *SMOKE, "--ntdd-report", "report.html", "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ntdd: smoke mode: a DataLoader yields at most 4 batch(es) a pass, its last among "
            "them, a training loop runs at most 2 time(s), its last among them, and so do "
            "epochs, *; each however short; tests marked @full_run are skipped",
            "*",
            "ntdd: smoke mode capped:",
            "  nb.ipynb (setup cell 2*), line 1: a training loop cut to 2 of 100 passes*",
        ]
    )
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "smoke mode capped" in page
    assert (
        "nb.ipynb (setup cell 2, id " in page and "line 1: a training loop cut to 2 of 100" in page
    )


@pytest.mark.parametrize("how", ["collected", "exported"])
def test_with_nothing_to_cap_the_header_still_says_smoke_mode_is_on_and_the_end_that_it_cut_nothing(
    notebook: Any, pytester: pytest.Pytester, how: str
) -> None:
    """An exported module under plain pytest wakes ntdd after the header: it says so then."""
    path = notebook(
        ["total = 0\nfor i in range(10):\n    total += i", "# TEST\nassert total == 45"]
    )
    target = "nb.ipynb"
    if how == "exported":
        assert export(path) == 0
        target = "test_nb.py"
    args = ("--ntdd",) if how == "collected" else ()
    result = run(pytester, *args, *SMOKE, target)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ntdd: smoke mode: a DataLoader yields at most 4 batch(es) a pass, *",
            "collected 1 item",
            "*",
            "ntdd: smoke mode was on and capped nothing: every loop and DataLoader ran in full",
        ]
    )
    assert result.stdout.str().count("ntdd: smoke mode: ") == 1
    plain = run(pytester, *args, target)
    plain.assert_outcomes(passed=1)
    assert "smoke mode" not in plain.stdout.str()


def test_smoke_mode_comes_from_the_ini_or_pyproject_and_a_bad_cap_is_a_usage_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([SETUP, "seen = sum(1 for _ in loader)", "# TEST\nassert seen == CAP"])
    pytester.makeconftest("import builtins, os\nbuiltins.CAP = int(os.environ.get('CAP', '64'))\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CAP", "5")
        pytester.makepyprojecttoml(
            "[tool.ntdd]\nsmoke = true\nsmoke_batches = 5\nsmoke_min_seconds = 0\n"
        )
        run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)
        patch.setenv("CAP", "6")
        run(pytester, "--ntdd", "nb.ipynb", "-o", "ntdd_smoke_batches=6").assert_outcomes(passed=1)
        patch.setenv("CAP", "64")
        run(pytester, "--ntdd", "nb.ipynb", "-o", "ntdd_smoke=false").assert_outcomes(passed=1)
    bad = run(pytester, "--ntdd", "nb.ipynb", "--ntdd-smoke-epochs", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*ntdd: --ntdd-smoke-epochs: smoke_epochs must be a whole number >= 1, got '0'"]
    )


def test_the_cap_never_outlives_the_session_nor_reaches_tests_that_are_not_a_notebooks(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    import torch.utils.data

    original = torch.utils.data.DataLoader.__iter__, torch.utils.data.DataLoader.__len__
    notebook([SETUP, "seen = sum(1 for _ in loader)", "# TEST\nassert seen == 4"])
    pytester.makepyfile(
        test_plain="from torch.utils.data import DataLoader\n\n"
        "def test_a_plain_loader_is_whole():\n"
        "    assert len(DataLoader(range(100), batch_size=10)) == 10\n"
        "    assert sum(1 for _ in DataLoader(range(100), batch_size=10)) == 10\n"
    )
    run(pytester, "--ntdd", *SMOKE, "nb.ipynb", "test_plain.py").assert_outcomes(passed=2)
    assert (torch.utils.data.DataLoader.__iter__, torch.utils.data.DataLoader.__len__) == original


@pytest.mark.slow
def test_under_xdist_each_worker_caps_and_the_controller_lists_the_caps(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    for name in ("a.ipynb", "b.ipynb"):
        notebook([SETUP, "seen = sum(1 for _ in loader)", "# TEST\nassert seen == 4"], name)
    result = run(pytester, "--ntdd", *SMOKE, "-n", "2", "a.ipynb", "b.ipynb", plugins=["xdist"])
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "  a.ipynb (setup cell 2*), line 1: a DataLoader's pass cut to 4 of 64 batches*",
            "  b.ipynb (setup cell 2*), line 1: a DataLoader's pass cut to 4 of 64 batches*",
        ]
    )


@pytest.mark.slow
def test_ntdd_faults_in_smoke_mode_still_catches_a_training_bug(
    notebook: Any, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    path = notebook(
        [
            SETUP,
            "start = nn.functional.cross_entropy(model(X), y).item()\n"
            "for epoch in range(1000):\n    for xb, yb in loader:\n"
            "        opt.zero_grad()\n"
            "        nn.functional.cross_entropy(model(xb), yb).backward()\n        opt.step()",
            "# TEST: the loss fell over the first steps\n"
            "assert nn.functional.cross_entropy(model(X), y) < start",
        ]
    )
    assert Request(("nb.ipynb",), smoke=True).pytest_args()[-1] == "--ntdd-smoke"
    pytester.makepyprojecttoml("[tool.ntdd]\nsmoke_min_seconds = 0\n")
    code = ntdd_main(["faults", str(path), "--smoke", "--faults", "lr0", "--json"])
    assert code == 0, capsys.readouterr()
    assert '"caught"' in capsys.readouterr().out


STALE_SETUP = (
    "import torch\nfrom torch import nn\n"
    "from torch.utils.data import DataLoader, TensorDataset\n\n"
    "torch.manual_seed(0)\nX = torch.randn(640, 2)\n"
    "y = X @ torch.tensor([[2.0], [-3.4]]) + 4.2\n"
    "loader = DataLoader(TensorDataset(X, y), batch_size=10)\n"
    "model = nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)"
)
STALE_TRAINING = (
    "losses = []\nfor epoch in range(20):\n    for xb, yb in loader:\n"
    "        opt.zero_grad()\n        loss = nn.functional.mse_loss(model(xb), yb)\n"
    "        loss.backward()\n        opt.step()\n        losses.append(loss.item())"
)
STALE_TEST = (
    "# TEST: the loss is finite and fell\nimport math\n"
    "assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]"
)


@pytest.mark.slow  # a full training of 1,280 steps, twice: a limit of smoke mode, not a feature
def test_a_bug_that_needs_more_steps_than_smoke_mode_runs_survives_it_as_written_in_does(
    notebook: Any, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Gradients that add up still lower a regression's loss over smoke mode's 8 steps, and
    blow it up over the full run's 1,280: `ntdd faults --smoke` says survived there, exactly
    as the missing `opt.zero_grad()` written into the notebook passes in smoke mode."""
    clean = notebook([STALE_SETUP, STALE_TRAINING, STALE_TEST])
    written = notebook(
        [STALE_SETUP, STALE_TRAINING.replace("opt.zero_grad()", "pass"), STALE_TEST], "bug.ipynb"
    )
    pytester.makepyprojecttoml("[tool.ntdd]\nsmoke_min_seconds = 0\n")
    verdicts = []
    for smoke_mode in ((), ("--smoke",)):
        ntdd_main(["faults", str(clean), *smoke_mode, "--faults", "stale_grad", "--json"])
        (fault,) = json.loads(capsys.readouterr().out)["notebooks"][0]["faults"]
        verdicts.append(fault["status"])
    assert verdicts == ["caught", "survived"]
    run(pytester, "--ntdd", written.name).assert_outcomes(failed=1)
    run(pytester, "--ntdd", *SMOKE, written.name).assert_outcomes(passed=1)
