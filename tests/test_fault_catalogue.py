"""The twelve faults of `ntdd faults`, each on a namespace: what it changes and says."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from ntdd.faults import FAULTS, NotApplicable, Seen
from ntdd.faults.creation import Made, patched
from ntdd.faults.data import other_device
from ntdd.faults.uses import DataUses

torch = pytest.importorskip("torch")
nn = torch.nn


def namespace() -> dict[str, Any]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.1), nn.Linear(8, 2))
    model.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return {
        "torch": torch,
        "model": model,
        "opt": opt,
        "sched": torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1.0),
        "X": torch.randn(6, 4),
        "y": torch.tensor([0, 1, 1, 0, 1, 0]),
        "weights": torch.ones(6),
        "_hidden": torch.randn(6, 4),
    }


def inject(name: str, ns: dict[str, Any]) -> list[str]:
    """A fault that acts on the hand-written models a setup cell made, after that cell."""
    fault = FAULTS[name].inject
    assert fault is not None
    return fault(ns, Seen())


SETUP = "nb.ipynb (setup cell 1)"  # a setup cell's code, as the runtime names it


@contextlib.contextmanager
def data_fault(name: str) -> Iterator[DataUses]:
    """torch watched for data fault *name*'s uses, as in a run with it."""
    change = FAULTS[name].data
    assert change is not None
    uses = DataUses(torch, Made(Seen()), change)
    with patched(uses.patches()):
        yield uses


def run_cell(ns: dict[str, Any], code: str, uses: DataUses | None = None) -> None:
    """*code* run as a setup cell of *ns*, as the runtime runs one."""
    exec(compile(code, SETUP, "exec"), ns)
    if uses is not None:
        uses.cell_ran(ns)


def data_run(name: str, *cells: str) -> tuple[dict[str, Any], list[str]]:
    """*cells* run as setup cells with data fault *name*: the namespace, and what changed."""
    ns: dict[str, Any] = {"torch": torch, "nn": nn}
    with data_fault(name) as uses:
        for code in cells:
            run_cell(ns, code, uses)
    return ns, uses.applied


DATA = "torch.manual_seed(0)\nX = torch.randn(6, 4)\ny = torch.tensor([0, 1, 1, 0, 1, 0])"
MODEL = "model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))"
TRAIN = "loss = nn.functional.cross_entropy(model(X), y)"


def test_there_are_twelve_faults_in_the_issues_order() -> None:
    assert list(FAULTS) == [
        *("shape", "dtype", "device", "detached", "mode", "unregistered"),
        *("nan", "scale", "labels", "lr0", "stale_grad", "broadcast"),
    ]
    assert all(f.description and f.applies_to and f.suggestion for f in FAULTS.values())


def test_shape_swaps_dims_of_the_data_a_model_reads_and_leaves_1d_targets() -> None:
    ns, changed = data_run("shape", DATA, MODEL)
    assert changed == [] and ns["X"].shape == (6, 4)  # not used yet: not data yet
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):  # as with the bug
        data_run("shape", DATA, MODEL, "demo = torch.zeros(2, 3)", "x = model(X)")
    loader = "from torch.utils.data import TensorDataset\nds = TensorDataset(X)"
    ns, changed = data_run("shape", DATA, "demo = torch.zeros(2, 3)", loader)
    assert changed == ["X (6, 4) → (4, 6)"] and ns["ds"].tensors[0] is ns["X"]
    assert ns["demo"].shape == (2, 3) and ns["y"].shape == (6,)  # a demo tensor is no data


def test_dtype_casts_the_data_and_leaves_the_model() -> None:
    ns, changed = data_run(
        "dtype", DATA, MODEL, "w = torch.ones(6)", TRAIN.replace("model(X)", "X")
    )
    assert changed == ["X float32 → float64"]
    assert ns["y"].dtype == torch.int64 and ns["w"].dtype == torch.float32


def test_device_moves_the_data_off_the_models_device() -> None:
    ns, changed = data_run(
        "device", DATA, "from torch.utils.data import TensorDataset\nds = TensorDataset(X, y)"
    )
    assert changed == ["X, y cpu → meta"]
    assert ns["X"].device.type == "meta" and ns["ds"].tensors[0] is ns["X"]


def test_device_moves_between_cuda_and_cpu_where_there_is_cuda() -> None:
    cpu, cuda, meta = (torch.device(d) for d in ("cpu", "cuda", "meta"))
    assert other_device(cpu, cuda_available=True) == cuda
    assert other_device(cuda, cuda_available=True) == cpu
    assert other_device(cpu, cuda_available=False) == meta
    assert other_device(meta, cuda_available=False) == cpu


def test_detached_cuts_the_graph_of_a_hand_written_model() -> None:
    ns = {"torch": torch, "W": torch.randn(3, 3, requires_grad=True), "s": torch.ones(1)}
    assert inject("detached", ns) == ["W: 1 tensor → requires_grad=False"]
    assert not ns["W"].requires_grad


def test_mode_leaves_out_the_notebooks_eval_of_models_whose_mode_matters() -> None:
    with made_with("mode") as made:
        ns = {"model": nn.Sequential(nn.Linear(2, 2), nn.Dropout()), "plain": nn.Linear(2, 2)}
        ns["held"] = [nn.BatchNorm1d(2)]
        run_cell(ns, "model.eval()\nplain.eval()\nheld[0].eval()")
        assert ns["model"].training and ns["held"][0].training and not ns["plain"].training
        run_cell(ns, "model.train()")
        made.testing = True  # a test's own eval() is the test's
        ns["model"].eval()
        assert not ns["model"].training
    assert made.named(ns, nn.Module) == ["model.eval() → left out"]
    assert made.unnamed() == ["BatchNorm1d.eval() → left out (not bound to a name)"]


def test_unregistered_hides_a_parameter_from_the_state_dict() -> None:
    with made_with("unregistered") as made:
        ns = {"torch": torch, "nn": nn}
        run_cell(ns, MODEL)
        opt = torch.optim.SGD(ns["model"].parameters(), lr=0.1)  # its first use
    assert made.named(ns, nn.Module) == ["model.0.weight → a plain attribute"]
    assert set(ns["model"].state_dict()) == {"0.bias", "1.weight", "1.bias"}
    assert len(opt.param_groups[0]["params"]) == 3
    assert ns["model"](torch.randn(2, 4)).shape == (2, 2)  # it still runs


def test_nan_puts_one_nan_in_each_floating_data_tensor() -> None:
    ns, changed = data_run("nan", DATA, MODEL, "x = X", "out = model(x)")
    assert changed == ["X[0, 0], x[0, 0] → nan"]
    assert int(ns["X"].isnan().sum()) == 1 and ns["x"] is ns["X"]


def test_scale_multiplies_a_models_parameters_where_it_is_made_once() -> None:
    torch.manual_seed(0)
    clean = nn.Linear(4, 2)
    with made_with("scale") as made:
        ns = {"torch": torch, "nn": nn}
        run_cell(ns, "torch.manual_seed(0)\nmodel = nn.Linear(4, 2)\nalias = model")
        ns["model"](torch.zeros(1, 4))
    assert torch.allclose(ns["model"].weight, clean.weight * 1e4)
    assert made.named(ns, nn.Module) == ["model: 2 parameters ×1e4"]


def test_labels_shuffles_class_indices_whatever_their_order_without_random_draws() -> None:
    state = torch.get_rng_state()
    ns, changed = data_run(
        "labels",
        "y = torch.tensor([0] * 128 + [1] * 128)",
        "nn.functional.cross_entropy(torch.zeros(256, 2), y)",
    )
    assert torch.equal(torch.get_rng_state(), state)
    moved = int((ns["y"] != torch.tensor([0] * 128 + [1] * 128)).sum())
    assert changed == [f"y (256,) shuffled ({moved} of 256 labels changed)"] and moved > 100
    generator = torch.Generator().manual_seed(0)
    assert torch.equal(
        ns["y"], torch.tensor([0] * 128 + [1] * 128)[torch.randperm(256, generator=generator)]
    )


@contextlib.contextmanager
def made_with(name: str) -> Iterator[Made]:
    """torch patched for fault *name*, as in a run with it; what the patches made."""
    fault = FAULTS[name]
    assert fault.creation is not None
    made = Made(Seen())
    with patched(fault.creation(torch, made)):
        yield made


def test_lr0_makes_every_optimizer_with_lr_0_and_its_schedule_from_0() -> None:
    with made_with("lr0") as made:
        ns = namespace()
        ns["adam"] = torch.optim.Adam(ns["model"].parameters(), lr=torch.tensor(0.01))
    assert made.named(ns, nn.Module) == ["opt lr 0.1 → 0", "adam lr 0.01 → 0"]
    ns["opt"].step()
    ns["sched"].step()  # LambdaLR would put base_lr * 1.0 back
    assert [g["lr"] for g in ns["opt"].param_groups] == [0.0]
    assert float(ns["adam"].param_groups[0]["lr"]) == 0.0  # a tensor lr stays a tensor
    assert torch.optim.SGD(ns["model"].parameters(), lr=0.1).param_groups[0]["lr"] == 0.1


def test_stale_grad_makes_zero_grad_a_no_op_for_optimizers_made_inside_functions_too() -> None:
    with made_with("stale_grad") as made:
        ns = namespace()
        ns["model"](ns["X"]).sum().backward()
        ns["opt"].zero_grad()
        assert all(p.grad is not None for p in ns["model"].parameters())
        (lambda: torch.optim.Adam(ns["model"].parameters()))()
    assert made.named(ns, nn.Module) == ["opt.zero_grad() → a no-op"]
    assert made.unnamed() == ["Adam.zero_grad() → a no-op (not bound to a name)"]
    ns["opt"].zero_grad()
    assert all(p.grad is None for p in ns["model"].parameters())


def test_hand_written_models_are_models_for_detached_and_scale() -> None:
    w = torch.ones(2, 2, requires_grad=True)
    ns = {"torch": torch, "params": [w, torch.zeros(2, requires_grad=True)], "x": torch.ones(2)}
    assert inject("scale", ns) == ["params: 2 tensors ×1e4"]
    assert w[0, 0].item() == 1e4 and ns["x"].tolist() == [1.0, 1.0]
    ns["more"] = {"b": torch.zeros(3, requires_grad=True)}
    assert inject("detached", ns) == [
        "params: 2 tensors → requires_grad=False",
        "more: 1 tensor → requires_grad=False",
    ]
    assert not w.requires_grad


@pytest.mark.parametrize("name", [n for n, f in FAULTS.items() if f.inject is not None])
def test_a_fault_with_nothing_to_change_says_why(name: str) -> None:
    with pytest.raises(NotApplicable) as info:
        FAULTS[name].inject({"torch": torch, "n": 3, "s": torch.tensor(1.0)}, Seen())
    assert str(info.value).startswith("no ")


def test_seen_compares_identities_and_keeps_nothing_alive() -> None:
    """A WeakSet compares tensors with ==, elementwise: that raised for equal-hash tensors."""
    seen = Seen()
    a, b = torch.zeros(3), torch.zeros(3)
    seen.add(a)
    assert a in seen and b not in seen
    del a
    gc.collect()
    assert len(seen) == 0


def test_the_catalogue_and_the_reports_import_neither_pytest_nor_torch() -> None:
    """As ntdd/faults/__init__.py says: only the runs import pytest; torch is the notebook's."""
    code = (
        "import sys; import ntdd.commands.cli, ntdd.faults.command, ntdd.faults.report;"
        "ntdd.commands.cli._parser();"
        "print(sorted(m for m in ('pytest', 'torch', 'nbformat') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_lr0_and_stale_grad_reach_a_hand_written_update_step() -> None:
    w, x = torch.ones(2, requires_grad=True), torch.ones(2)
    with made_with("lr0") as made:
        (w * 3).sum().backward()
        with torch.no_grad():
            w -= 0.5 * w.grad
        x -= 1  # data: changed as written
    assert w.tolist() == [1.0, 1.0] and x.tolist() == [0.0, 0.0]
    assert made.unnamed() == ["hand-written updates (W -= lr * W.grad) → no-ops, as with lr 0"]
    with made_with("stale_grad") as made, torch.no_grad():
        w -= 0.5 * w.grad
        w.grad.zero_()
    assert w.tolist() == [-0.5, -0.5] and w.grad.tolist() == [3.0, 3.0]
    assert made.unnamed() == ["hand-written W.grad.zero_() → a no-op"]
