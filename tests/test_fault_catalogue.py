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
    fault = FAULTS[name].inject
    assert fault is not None
    return fault(ns, Seen())


def test_there_are_twelve_faults_in_the_issues_order() -> None:
    assert list(FAULTS) == [
        *("shape", "dtype", "device", "detached", "mode", "unregistered"),
        *("nan", "scale", "labels", "lr0", "stale_grad", "broadcast"),
    ]
    assert all(f.description and f.applies_to and f.suggestion for f in FAULTS.values())


def test_shape_swaps_dims_of_inputs_and_leaves_1d_tensors_to_broadcast() -> None:
    ns = namespace()
    assert inject("shape", ns) == ["X (6, 4) → (4, 6)"]
    assert ns["X"].shape == (4, 6) and ns["y"].shape == (6,)
    assert ns["_hidden"].shape == (6, 4)  # a private name is no input
    square = {"torch": torch, "A": torch.zeros(3, 3)}
    assert inject("shape", square) == ["A (3, 3) → (3,)"]


def test_dtype_casts_floating_inputs_only_and_leaves_the_model() -> None:
    ns = namespace()
    assert inject("dtype", ns) == ["X, weights float32 → float64"]
    assert ns["y"].dtype == torch.int64
    assert next(ns["model"].parameters()).dtype == torch.float32
    assert inject("dtype", {"torch": torch, "d": torch.zeros(2, dtype=torch.float64)}) == [
        "d float64 → float32"
    ]


def test_device_moves_inputs_off_the_models_device() -> None:
    ns = namespace()
    assert inject("device", ns) == ["X, y, weights cpu → meta"]
    assert ns["X"].device.type == "meta"


def test_device_moves_between_cuda_and_cpu_where_there_is_cuda() -> None:
    cpu, cuda, meta = (torch.device(d) for d in ("cpu", "cuda", "meta"))
    assert other_device(cpu, cuda_available=True) == cuda
    assert other_device(cuda, cuda_available=True) == cpu
    assert other_device(cpu, cuda_available=False) == meta
    assert other_device(meta, cuda_available=False) == cpu


def test_detached_cuts_the_graph() -> None:
    ns = namespace()
    assert inject("detached", ns) == ["model: 6 parameters → requires_grad=False"]
    assert not any(p.requires_grad for p in ns["model"].parameters())


def test_mode_flips_models_whose_mode_matters() -> None:
    ns = {**namespace(), "plain": nn.Linear(2, 2)}
    assert inject("mode", ns) == ["model eval → train"]
    assert ns["model"].training


def test_unregistered_hides_a_parameter_from_the_state_dict() -> None:
    ns = namespace()
    keys = set(ns["model"].state_dict())
    assert inject("unregistered", ns) == ["model.0.weight → a plain attribute"]
    assert keys - set(ns["model"].state_dict()) == {"0.weight"}
    assert ns["model"](torch.randn(2, 4)).shape == (2, 2)  # it still runs


def test_nan_puts_one_nan_in_each_floating_input() -> None:
    ns = namespace()
    x = ns["X"].clone()
    assert inject("nan", ns) == ["X[0, 0] → nan", "weights[0] → nan"]
    assert int(ns["X"].isnan().sum()) == 1 and torch.equal(ns["X"][1:], x[1:])
    assert x.isfinite().all()  # a new tensor: the old one is as it was


def test_scale_multiplies_trainable_parameters_once() -> None:
    ns = namespace()
    before = [p.detach().clone() for p in ns["model"].parameters()]
    ns["alias"] = ns["model"]
    assert inject("scale", ns) == ["model: 6 parameters ×1e4"]
    after = list(ns["model"].parameters())
    assert all(torch.allclose(b * 1e4, a) for b, a in zip(before, after, strict=True))


def test_labels_permutes_class_indices_without_random_draws() -> None:
    ns = namespace()
    state = torch.get_rng_state()
    assert inject("labels", ns) == ["y (6,) permuted (shifted by one)"]
    assert ns["y"].tolist() == [0, 0, 1, 1, 0, 1]
    assert torch.equal(torch.get_rng_state(), state)
    constant = {"torch": torch, "c": torch.zeros(5, dtype=torch.long)}
    with pytest.raises(NotApplicable, match="two classes or more"):
        inject("labels", constant)


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


def test_detached_makes_parameters_frozen_where_a_model_makes_them() -> None:
    with made_with("detached") as made:
        ns = namespace()
    assert not any(p.requires_grad for p in ns["model"].parameters())
    assert made.named(ns, nn.Module) == ["model: 6 parameters → requires_grad=False"]
    assert nn.Linear(2, 2).weight.requires_grad


def test_scale_multiplies_a_models_parameters_after_it_initialised_them_once() -> None:
    torch.manual_seed(0)
    clean = nn.Linear(4, 2)
    with made_with("scale") as made:
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        torch.optim.SGD(model.parameters(), lr=0.1)  # the first use: scaled
        model(torch.zeros(1, 4))  # not again
    assert torch.allclose(model.weight, clean.weight * 1e4)
    assert made.named({"model": model}, nn.Module) == ["model: 2 parameters ×1e4"]


def test_unregistered_unplugs_a_models_first_parameter_before_an_optimizer_sees_it() -> None:
    with made_with("unregistered") as made:
        model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert len(opt.param_groups[0]["params"]) == 3
    assert "0.weight" not in model.state_dict()
    assert made.named({"model": model}, nn.Module) == ["model.0.weight → a plain attribute"]


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


def test_data_faults_reach_tensors_in_datasets_loaders_dicts_and_tuples() -> None:
    from torch.utils.data import DataLoader, TensorDataset

    X, y = torch.randn(8, 3), torch.randn(8)
    ds = TensorDataset(X, y)
    ns = {"torch": torch, "X": X, "ds": ds, "loader": DataLoader(ds, batch_size=4)}
    ns.update(batch={"x": X}, pair=(X, y))
    assert inject("nan", ns) == [
        "X[0, 0], ds.tensors[0][0, 0], loader.dataset.tensors[0][0, 0], batch['x'][0, 0], "
        "pair[0][0, 0] → nan",
        "ds.tensors[1][0], loader.dataset.tensors[1][0], pair[1][0] → nan",
    ]
    first, _ = next(iter(ns["loader"]))
    assert first[0, 0].isnan() and ns["pair"][0] is ns["X"] is ns["ds"].tensors[0]


def test_broadcast_makes_1d_targets_a_column() -> None:
    ns = namespace()
    assert inject("broadcast", ns) == ["y, weights (6,) → (6, 1)"]
    with pytest.warns(UserWarning, match="broadcasting"):  # a warning, and a wrong loss
        assert nn.functional.mse_loss(torch.zeros(6), ns["weights"]).shape == ()


def test_each_fault_changes_an_object_once_and_then_what_is_new() -> None:
    ns, seen = namespace(), Seen()
    assert FAULTS["broadcast"].inject(ns, seen) == ["y, weights (6,) → (6, 1)"]
    ns["z"] = torch.ones(3)
    assert FAULTS["broadcast"].inject(ns, seen) == ["z (3,) → (3, 1)"]
    with pytest.raises(NotApplicable):
        FAULTS["broadcast"].inject(ns, seen)


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


def test_what_changed_reads_right_for_several_2d_tensors() -> None:
    ns = {"torch": torch, "X": torch.ones(4, 2), "X_train": torch.ones(3, 2), "y": torch.ones(4)}
    assert inject("nan", ns) == ["X[0, 0], X_train[0, 0] → nan", "y[0] → nan"]


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
