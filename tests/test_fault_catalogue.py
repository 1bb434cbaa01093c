"""The twelve faults of `ntdd faults`, each on a namespace: what it changes and says."""

from __future__ import annotations

import gc
import subprocess
import sys
from typing import Any

import pytest

from ntdd.faults import FAULTS, NotApplicable, Seen
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
    return FAULTS[name].inject(ns, Seen())


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


def test_lr0_zeroes_every_learning_rate_and_its_schedule() -> None:
    ns = namespace()
    assert inject("lr0", ns) == ["opt lr 0.1 → 0"]
    ns["opt"].step()
    ns["sched"].step()  # LambdaLR would put base_lr * 1.0 back
    assert [g["lr"] for g in ns["opt"].param_groups] == [0.0]


def test_stale_grad_makes_zero_grad_a_no_op() -> None:
    ns = namespace()
    assert inject("stale_grad", ns) == ["opt.zero_grad() → a no-op"]
    ns["model"](ns["X"]).sum().backward()
    ns["opt"].zero_grad()
    assert all(p.grad is not None for p in ns["model"].parameters())


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


@pytest.mark.parametrize("name", list(FAULTS))
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
