"""`ntdd faults`: injected faults, and which of a notebook's tests catch them."""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from pathlib import Path

import pytest
from conftest import SAMPLES, write_notebook

from ntdd.cli import main
from ntdd.faults import FAULTS, NotApplicable

torch = pytest.importorskip("torch")
nn = torch.nn

SETUP = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\n"
    "x = torch.randn(16, 4)\ny = torch.randn(16, 1)"
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def shape_only(tmp_path: Path) -> Path:
    """Tests that notice broken inputs and nothing else."""
    return write_notebook(
        tmp_path / "nb.ipynb",
        [SETUP, "# TEST: output shape\nassert model(x).shape == (16, 1)"],
    )


def run_json(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict]:
    code = main(["faults", str(path), "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def test_it_reports_exactly_the_faults_that_tests_catch_and_miss(
    shape_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = run_json(shape_only, capsys)
    by_name = {f["name"]: f for f in report["faults"]}
    assert {n for n, f in by_name.items() if f["caught"]} == {"shape", "dtype", "device"}
    assert {n for n, f in by_name.items() if f["applicable"] and not f["caught"]} == {
        "detached",
        "unregistered",
    }
    assert by_name["mode"]["applicable"] is False
    assert "Dropout" in by_name["mode"]["not_applicable"]
    assert by_name["shape"]["caught_by"] == ["test_output_shape"]
    assert report["kill_rate"] == 3 / 5
    assert code == 1


def test_the_table_names_faults_tests_and_the_kill_rate(
    shape_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["faults", str(shape_only), "--faults", "dtype,detached,mode"]) == 1
    out = capsys.readouterr().out
    assert "dtype         test_output_shape" in out
    assert "detached      NOT CAUGHT: no test failed" in out
    assert "mode          not applicable: no model with Dropout or normalisation layers" in out
    assert "kill rate: 1/2 applicable faults caught (50%)" in out


def test_when_every_applicable_fault_is_caught_it_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb",
        [
            SETUP,
            "# TEST: shape\nassert model(x).shape == (16, 1)",
            "# TEST: gradients\nfrom ntdd.torch import assert_grad_flow\n"
            "assert_grad_flow(model, nn.functional.mse_loss(model(x), y))",
            "# TEST: state\nfrom ntdd.torch import assert_state_complete\n"
            "assert_state_complete(model)",
        ],
    )
    code, report = run_json(path, capsys)
    assert report["all_caught"] is True
    assert code == 0


def test_the_failure_modes_sample_catches_every_applicable_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = tmp_path / "failure_modes.ipynb"
    notebook.write_bytes((SAMPLES / "failure_modes.ipynb").read_bytes())
    code, report = run_json(notebook, capsys)
    assert [f["name"] for f in report["faults"] if f["applicable"]] == list(FAULTS)
    assert report["kill_rate"] == 1.0
    assert code == 0


def test_a_run_leaves_no_state_behind_and_changes_no_file(
    shape_only: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: sha(p) for p in shape_only.parent.iterdir()}
    cwd = os.getcwd()
    main(["faults", str(shape_only)])
    assert {p: sha(p) for p in shape_only.parent.iterdir()} == before
    assert os.getcwd() == cwd


def test_a_notebook_without_torch_has_no_applicable_faults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb", ["values = [1, 2]", "# TEST\nassert sum(values) == 3"]
    )
    code, report = run_json(path, capsys, "--faults", "shape,detached")
    assert [f["applicable"] for f in report["faults"]] == [False, False]
    assert code == 0


def test_bad_requests_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = write_notebook(tmp_path / "plain.ipynb", ["x = 1"])
    assert main(["faults", str(plain)]) == 2
    assert "no test cells" in capsys.readouterr().err
    assert main(["faults", str(plain), "--faults", "nope"]) == 2
    assert "unknown fault(s): nope" in capsys.readouterr().err


# -- the faults themselves -----------------------------------------------------


def namespace() -> dict[str, object]:
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.1), nn.Linear(8, 1))
    model.eval()
    return {"model": model, "x": torch.randn(6, 4), "labels": torch.arange(6), "torch": torch}


def test_shape_fault_reshapes_every_input() -> None:
    ns = namespace()
    FAULTS["shape"].inject(ns, weakref.WeakSet())
    assert ns["x"].shape == (4, 6)
    assert ns["labels"].shape == (6, 1)


def test_dtype_fault_casts_floating_inputs_only() -> None:
    ns = namespace()
    FAULTS["dtype"].inject(ns, weakref.WeakSet())
    assert ns["x"].dtype == torch.float64
    assert ns["labels"].dtype == torch.int64
    assert next(ns["model"].parameters()).dtype == torch.float32


def test_device_fault_moves_inputs_off_the_models_device() -> None:
    ns = namespace()
    FAULTS["device"].inject(ns, weakref.WeakSet())
    assert ns["x"].device.type == "meta"


def test_detached_fault_cuts_the_graph() -> None:
    ns = namespace()
    FAULTS["detached"].inject(ns, weakref.WeakSet())
    assert not any(p.requires_grad for p in ns["model"].parameters())


def test_mode_fault_flips_the_mode() -> None:
    ns = namespace()
    FAULTS["mode"].inject(ns, weakref.WeakSet())
    assert ns["model"].training


def test_unregistered_fault_hides_a_parameter_from_the_state_dict() -> None:
    ns = namespace()
    keys = set(ns["model"].state_dict())
    FAULTS["unregistered"].inject(ns, weakref.WeakSet())
    assert keys - set(ns["model"].state_dict()) == {"0.weight"}
    assert isinstance(ns["model"][0].weight, torch.Tensor)
    assert ns["model"](torch.randn(2, 4)).shape == (2, 1)  # it still runs


def test_faults_with_nothing_to_change_say_why() -> None:
    for name in FAULTS:
        with pytest.raises(NotApplicable):
            FAULTS[name].inject({"torch": torch, "n": 3}, weakref.WeakSet())


def test_each_fault_starts_from_a_clean_state_even_in_a_helper_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fault that changes a model living in an imported module must not reach the next run."""
    (tmp_path / "helpers.py").write_text(
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1)).eval()\n"
    )
    path = write_notebook(
        tmp_path / "nb.ipynb",
        [
            "import torch\nfrom helpers import model\nx = torch.randn(16, 4)",
            "# TEST: still in eval mode\nassert not model.training",
        ],
    )
    code, report = run_json(path, capsys, "--faults", "mode,detached")
    verdicts = {f["name"]: f["caught"] for f in report["faults"]}
    assert verdicts == {"mode": True, "detached": False}
    assert code == 1
