"""ntdd.torch: each helper passes a sound model or tensor and names the offender in a broken one."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from ntdd.torch import (  # noqa: E402
    GradFlowReport,
    assert_close,
    assert_dtype,
    assert_finite,
    assert_grad_flow,
    assert_mode,
    assert_same_device,
    assert_shape,
    assert_state_complete,
    assert_step_order,
    check_step_order,
)


def small_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.1))


class Scaled(nn.Module):
    """A layer whose output is multiplied by a factor; zero cuts the gradient upstream."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.factor


# --- assert_shape ------------------------------------------------------------------------


def test_assert_shape_accepts_ints_none_names_and_ellipsis() -> None:
    x = torch.zeros(32, 3, 8, 10)
    assert_shape(x, (32, None, "h", 10))
    assert_shape(x, ("batch", ..., 10))
    assert_shape(x, (..., 8, 10))
    assert_shape(x, (32, 3, 8, 10, ...))
    assert_shape(torch.zeros(()), ())


def test_assert_shape_names_the_dim_that_differs() -> None:
    logits = torch.zeros(32, 12)
    expected = (
        r"^tensor 'logits': expected shape \(batch=32, 10\), got \(32, 12\): "
        r"dim 1 is 12, expected 10$"
    )
    with pytest.raises(AssertionError, match=expected):
        assert_shape(logits, ("batch", 10), name="logits")


def test_assert_shape_reports_a_wrong_number_of_dims() -> None:
    with pytest.raises(
        AssertionError,
        match=r"'x': expected shape \(any, 4\) \(2 dims\), got \(2, 4, 1\) \(3 dims\)",
    ):
        assert_shape(torch.zeros(2, 4, 1), (None, 4), name="x")
    with pytest.raises(AssertionError, match=r"at least 3 dims\), got \(5,\) \(1 dim\)"):
        assert_shape(torch.zeros(5), (1, ..., 2, 3), name="x")


def test_assert_shape_counts_dims_after_the_ellipsis_from_the_end() -> None:
    with pytest.raises(AssertionError, match=r"dim 3 is 7, expected 6$"):
        assert_shape(torch.zeros(1, 2, 5, 7), (..., 5, 6))


def test_assert_shape_binds_a_name_to_one_size_within_a_call() -> None:
    assert_shape(torch.zeros(3, 3), ("n", "n"))
    with pytest.raises(AssertionError, match=r"dim 1 is 4, expected n=3 \(from dim 0\)"):
        assert_shape(torch.zeros(3, 4), ("n", "n"), name="square")


def test_assert_shape_binds_names_across_calls_through_dims() -> None:
    dims: dict[str, int] = {}
    assert_shape(torch.zeros(16, 4), ("batch", "features"), name="x", dims=dims)
    assert dims == {"batch": 16, "features": 4}
    assert_shape(torch.zeros(16), ("batch",), name="y", dims=dims)
    with pytest.raises(
        AssertionError, match=r"'y': .*dim 0 is 8, expected batch=16 \(from an earlier call\)"
    ):
        assert_shape(torch.zeros(8), ("batch",), name="y", dims=dims)


def test_assert_shape_rejects_a_malformed_expectation() -> None:
    with pytest.raises(ValueError, match="at most one"):
        assert_shape(torch.zeros(2), (..., ...))
    with pytest.raises(TypeError, match=r"2\.5"):
        assert_shape(torch.zeros(2), (2.5,))  # type: ignore[arg-type]


# --- assert_dtype ------------------------------------------------------------------------


def test_assert_dtype_passes_matching_tensors_and_models() -> None:
    assert_dtype(torch.zeros(2), torch.float32)
    assert_dtype(torch.zeros(2, dtype=torch.int64), "int64")
    assert_dtype(small_model(), "torch.float32")  # BatchNorm's int64 counter is not float


def test_assert_dtype_names_a_float64_input() -> None:
    x = torch.zeros(2, 4, dtype=torch.float64)
    with pytest.raises(
        AssertionError, match=r"^tensor 'x' has dtype torch.float64; expected torch.float32$"
    ):
        assert_dtype(x, "float32", name="x")


def test_assert_dtype_lists_each_parameter_and_buffer_of_another_dtype() -> None:
    model = small_model()
    model[1].double()
    with pytest.raises(AssertionError) as info:
        assert_dtype(model, torch.float32)
    message = str(info.value)
    assert message.startswith(
        "model (Sequential) has floating-point tensors that are not torch.float32:"
    )
    assert "parameter 1.weight is torch.float64" in message
    assert "buffer 1.running_mean is torch.float64" in message
    assert "0.weight" not in message and "num_batches_tracked" not in message


def test_assert_dtype_rejects_a_name_that_is_not_a_dtype() -> None:
    with pytest.raises(ValueError, match="'floaty' is not a torch dtype"):
        assert_dtype(torch.zeros(1), "floaty")


# --- assert_same_device ------------------------------------------------------------------


def test_assert_same_device_passes_a_model_and_inputs_on_one_device() -> None:
    model = small_model()
    assert_same_device(model, torch.zeros(2, 4), torch.zeros(2))
    assert_same_device(model.to("meta"), torch.empty(2, 4, device="meta"))
    assert_same_device(None)


def test_assert_same_device_names_inputs_on_another_device() -> None:
    x = torch.empty(2, 4, device="meta")
    with pytest.raises(AssertionError) as info:
        assert_same_device(small_model(), x, torch.zeros(2), names=["x", "y"])
    assert str(info.value) == (
        "model (Sequential) is on cpu (by its parameter 0.weight), but:\n  tensor 'x' is on meta"
    )


def test_assert_same_device_names_model_state_split_across_devices() -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2).to("meta"))
    with pytest.raises(
        AssertionError, match=r"parameter 1.weight is on meta\n  parameter 1.bias is on meta"
    ):
        assert_same_device(model)


def test_assert_same_device_compares_tensors_alone_without_a_model() -> None:
    expected = r"^tensors\[0\] is on cpu, but:\n  tensors\[1\] is on meta$"
    with pytest.raises(AssertionError, match=expected):
        assert_same_device(None, torch.zeros(1), torch.empty(1, device="meta"))
    with pytest.raises(AssertionError, match=expected):  # a model without state
        assert_same_device(nn.ReLU(), torch.zeros(1), torch.empty(1, device="meta"))


# --- assert_finite -----------------------------------------------------------------------


def test_assert_finite_passes_finite_tensors_models_and_collections() -> None:
    model = small_model()
    model(torch.randn(4, 4)).sum().backward()
    assert_finite(model)
    assert_finite([torch.zeros(2), {"a": torch.ones(3), "n": torch.arange(3)}], name="batch")
    assert_finite(torch.empty(2, device="meta"))


def test_assert_finite_counts_nan_and_inf_in_a_tensor() -> None:
    x = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    with pytest.raises(AssertionError, match=r"^tensor 'x' has 1 NaN and 2 Inf among 4 entries$"):
        assert_finite(x, name="x")


def test_assert_finite_names_a_parameter_holding_nan() -> None:
    model = small_model()
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    expected = (
        r"^non-finite values in model \(Sequential\):\n"
        r"  0\.weight has 1 NaN and 0 Inf among 32 entries$"
    )
    with pytest.raises(AssertionError, match=expected):
        assert_finite(model)


def test_assert_finite_checks_gradients_where_set() -> None:
    model = small_model()
    model[0].weight.grad = torch.full_like(model[0].weight, float("inf"))
    with pytest.raises(AssertionError, match=r"0.weight.grad has 0 NaN and 32 Inf"):
        assert_finite(model)


def test_assert_finite_names_entries_of_a_collection() -> None:
    outputs = {"loss": torch.tensor(float("nan")), "acc": torch.tensor(0.5)}
    expected = r"in 'outputs':\n  outputs\['loss'\] has 1 NaN and 0 Inf among 1 entry$"
    with pytest.raises(AssertionError, match=expected):
        assert_finite(outputs, name="outputs")


def test_assert_finite_checks_a_list_of_floats_naming_it_as_the_call_wrote_it() -> None:
    """A training loop's `losses.append(loss.item())`, the most common thing to check."""
    losses = [0.9, 0.5, float("nan"), float("inf")]
    assert_finite([0.9, 0.5, 0.1])
    expected = r"^non-finite values in 'losses':\n  losses\[2\] is nan\n  losses\[3\] is inf$"
    with pytest.raises(AssertionError, match=expected):
        assert_finite(losses)


def test_assert_finite_checks_a_number() -> None:
    loss = float("nan")
    assert_finite(0.5)
    with pytest.raises(AssertionError, match=r"^loss is nan$"):
        assert_finite(loss)


def test_the_helpers_name_a_tensor_as_the_call_wrote_it() -> None:
    logits, batch = torch.zeros(4, 3), {"x": torch.zeros(2, dtype=torch.float64)}
    with pytest.raises(AssertionError, match=r"^tensor 'logits': expected shape \(4, 2\)"):
        assert_shape(logits, (4, 2))
    with pytest.raises(AssertionError, match=r"^tensor 'batch\[\"x\"\]' has dtype torch.float64"):
        assert_dtype(batch["x"], "float32")
    with pytest.raises(AssertionError, match=r"^tensor: expected shape"):  # an expression
        assert_shape(torch.zeros(1), (2,))
    with pytest.raises(AssertionError, match=r"^tensor 'y' has 12 NaN"):  # the name given wins
        assert_finite(logits / 0 * 0, name="y")


# --- assert_close ------------------------------------------------------------------------


def test_assert_close_is_torch_testing_assert_close() -> None:
    assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-9]))
    with pytest.raises(AssertionError, match="Tensor-likes are not close"):
        assert_close(torch.tensor([1.0]), torch.tensor([1.1]))


# --- assert_grad_flow --------------------------------------------------------------------


def test_assert_grad_flow_reports_every_trainable_parameter() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    loss = model(torch.randn(16, 4)).pow(2).mean()
    report = assert_grad_flow(model, loss)
    assert isinstance(report, GradFlowReport)
    assert [row.name for row in report.rows] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    row = report["2.weight"]
    assert row.grad_norm is not None and row.ratio == pytest.approx(row.grad_norm / row.param_norm)
    assert row.zero_rate == 0.0
    with pytest.raises(KeyError):
        report["1.weight"]  # Tanh has no parameters
    table = str(report).splitlines()
    assert table[0].split() == [
        "parameter",
        "grad",
        "norm",
        "param",
        "norm",
        "grad/param",
        "zero",
        "grads",
        "dead",
        "rows",
    ]
    assert len(table) == 5 and len({len(line) for line in table}) == 1


def test_assert_grad_flow_reads_existing_gradients_without_a_loss() -> None:
    model = nn.Linear(3, 1)
    model(torch.randn(5, 3)).sum().backward()
    assert assert_grad_flow(model)["weight"].grad_norm == pytest.approx(
        float(model.weight.grad.norm())
    )


def test_assert_grad_flow_fails_on_a_detached_loss() -> None:
    model = nn.Linear(3, 1)
    loss = model(torch.randn(5, 3)).mean().detach()
    with pytest.raises(
        AssertionError, match=r"^the loss has no grad_fn: the graph is cut \(a \.detach\(\)"
    ):
        assert_grad_flow(model, loss)


def test_assert_grad_flow_fails_when_no_parameter_requires_grad() -> None:
    model = nn.Linear(3, 1).requires_grad_(False)
    with pytest.raises(
        AssertionError, match=r"model \(Linear\): none of its 2 parameters has requires_grad=True"
    ):
        assert_grad_flow(model, model(torch.randn(5, 3)).mean())


def test_assert_grad_flow_names_parameters_upstream_of_a_zeroed_output() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), Scaled(0.0), nn.Linear(4, 1))
    loss = model(torch.randn(8, 4)).pow(2).mean()
    with pytest.raises(AssertionError) as info:
        assert_grad_flow(model, loss)
    message = str(info.value)
    assert "all-zero grads: 0.weight, 0.bias, 2.weight" in message  # 2's input is all zeros
    assert "2.bias" not in message.split("\n", 2)[1]
    assert "parameter" in message and "grad/param" in message  # the table comes along


def trained_relu_mlp() -> tuple[Any, Any, Any]:
    """A 2-30-20-2 ReLU net trained on the quadrants, as in a book chapter."""
    torch.manual_seed(0)
    X = torch.randn(200, 2)
    y = (X[:, 0] * X[:, 1] > 0).long()
    model = nn.Sequential(
        nn.Linear(2, 30), nn.ReLU(), nn.Linear(30, 20), nn.ReLU(), nn.Linear(20, 2)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(500):
        opt.zero_grad()
        nn.functional.cross_entropy(model(X), y).backward()
        opt.step()
    assert (model(X).argmax(1) == y).float().mean() > 0.95
    return model, X, y


def test_assert_grad_flow_passes_a_healthy_trained_relu_net_on_a_small_batch() -> None:
    """A few ReLUs are off for every example of 8: their rows are zero, and that is healthy."""
    model, X, y = trained_relu_mlp()
    loss = nn.functional.cross_entropy(model(X[:8]), y[:8])
    report = assert_grad_flow(model, loss)
    assert 0 < report["0.weight"].dead_rows < 0.5  # type: ignore[operator]
    with pytest.raises(AssertionError, match=r"more than 5% zero grads: 0\.weight \(10% zero\)"):
        assert_grad_flow(
            model, nn.functional.cross_entropy(model(X[:8]), y[:8]), max_zero_rate=0.05
        )  # the per-entry rate, asked for


def test_assert_grad_flow_names_a_layer_most_of_whose_units_are_dead() -> None:
    model, X, y = trained_relu_mlp()
    with torch.no_grad():
        model[0].bias[:20] = -100.0  # 20 of 30 ReLUs never fire
    loss = nn.functional.cross_entropy(model(X[:8]), y[:8])
    with pytest.raises(AssertionError) as info:
        assert_grad_flow(model, loss)
    message = str(info.value)
    assert "more than 50% of the rows get all-zero grads (output units that passed no" in message
    assert (
        "dead ReLUs" in message
        and "0.weight (67% of its rows), 0.bias (67% of its rows)" in message
    )


def test_assert_grad_flow_names_parameters_the_loss_never_reaches() -> None:
    model = nn.ModuleDict({"used": nn.Linear(2, 1), "unused": nn.Linear(2, 1)})
    loss = model["used"](torch.randn(3, 2)).mean()
    with pytest.raises(AssertionError, match=r"no grad: unused.weight, unused.bias"):
        assert_grad_flow(model, loss)


def test_assert_grad_flow_fails_on_a_loss_that_is_not_one_number() -> None:
    model = nn.Linear(3, 2)
    with pytest.raises(AssertionError, match=r"the loss has shape \(5, 2\)"):
        assert_grad_flow(model, model(torch.randn(5, 3)))


# --- assert_state_complete ---------------------------------------------------------------


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.mask = torch.ones(4)  # not a buffer: state_dict() and .to() miss it
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.mask * self.scale


class PlainList(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 4), nn.Linear(4, 4)]  # not an nn.ModuleList

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def test_assert_state_complete_passes_registered_state() -> None:
    model = nn.Sequential(nn.LSTM(4, 4), nn.ModuleList([nn.Linear(4, 4)]), small_model())
    model[0].register_buffer("mask", torch.ones(4))
    model[2].derived = model[2][0].weight * 2  # computed from a parameter: not state
    assert_state_complete(model)


def test_assert_state_complete_names_an_unregistered_tensor() -> None:
    model = nn.Sequential(nn.Linear(4, 4), Masked())
    expected = (
        r"keeps state that state_dict\(\) and \.to\(\) miss:\n"
        r"  1\.mask: a tensor; use register_buffer\(\)"
    )
    with pytest.raises(AssertionError, match=expected):
        assert_state_complete(model)
    assert_state_complete(model, ignore={"1.mask"})


def test_assert_state_complete_names_a_plain_list_of_layers() -> None:
    with pytest.raises(
        AssertionError,
        match=r"^model \(PlainList\) .*\n  layers: a plain list of 2 modules; use nn.ModuleList$",
    ):
        assert_state_complete(PlainList())


def test_assert_state_complete_names_a_plain_dict_of_tensors() -> None:
    model = nn.Linear(2, 2)
    model.stats = {"mean": torch.zeros(2), "count": 3}
    with pytest.raises(
        AssertionError, match=r"stats: a plain dict of 1 tensor; use nn.ParameterDict or buffers"
    ):
        assert_state_complete(model)


# --- assert_mode -------------------------------------------------------------------------


def test_assert_mode_passes_a_model_in_the_expected_mode() -> None:
    model = small_model()
    assert_mode(model, train=True)
    assert_mode(model.eval())


def test_assert_mode_names_only_the_modules_whose_mode_matters() -> None:
    model = nn.Sequential(
        nn.Linear(4, 8), nn.Sequential(nn.BatchNorm1d(8), nn.Dropout(0.5)), nn.ReLU()
    ).eval()
    model[1].train()
    with pytest.raises(AssertionError) as info:
        assert_mode(model, train=False)
    assert str(info.value).splitlines() == [
        "2 of 2 mode-dependent modules of model (Sequential) are not in eval mode "
        "(call model.eval()):",
        "  1.0 (BatchNorm1d) is in training mode; expected eval",
        "  1.1 (Dropout) is in training mode; expected eval",
    ]


def test_assert_mode_ignores_layers_that_compute_the_same_in_either_mode() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.LayerNorm(8)).train()
    model.add_module("stats_free", nn.BatchNorm1d(8, track_running_stats=False))
    assert_mode(model, train=False)


class Noisy(nn.Module):
    """Adds noise while training: its forward reads self.training."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.randn_like(x) if self.training else x


class Frozen(nn.Module):
    """Overrides train() to keep a submodule in eval mode."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(2, 2)

    def train(self, mode: bool = True) -> Frozen:
        super().train(mode)
        self.body.eval()
        return self


def test_assert_mode_names_modules_that_read_training_or_override_train() -> None:
    model = nn.Sequential(Noisy(), Frozen(), nn.LSTM(2, 2, num_layers=2, dropout=0.1))
    with pytest.raises(AssertionError) as info:
        assert_mode(model, train=False)
    assert str(info.value).splitlines()[1:] == [
        "  0 (Noisy) is in training mode; expected eval",
        "  1 (Frozen) is in training mode; expected eval",
        "  2 (LSTM) is in training mode; expected eval",
    ]


def test_assert_mode_names_the_model_itself_and_lists_at_most_ten() -> None:
    with pytest.raises(
        AssertionError, match=r"the model \(Noisy\) is in eval mode; expected training"
    ):
        assert_mode(Noisy().eval(), train=True)
    model = nn.Sequential(*[nn.Dropout() for _ in range(12)]).eval()
    with pytest.raises(AssertionError, match="12 of 12 mode-dependent") as info:
        assert_mode(model, train=True)
    assert str(info.value).endswith("  ... and 2 more")


# --- check_step_order --------------------------------------------------------------------


def optimizer_and_scheduler() -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    optimizer = torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)
    return optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)


def test_check_step_order_passes_the_optimizer_stepping_first() -> None:
    optimizer, scheduler = optimizer_and_scheduler()
    with check_step_order(optimizer, scheduler):
        for _ in range(2):
            optimizer.step()
            scheduler.step()
    assert scheduler.get_last_lr() == [pytest.approx(0.001)]


def test_check_step_order_names_a_scheduler_stepped_first() -> None:
    optimizer, scheduler = optimizer_and_scheduler()
    expected = r"^StepLR.step\(\) was called before optimizer.step\(\) \(SGD\)"
    with pytest.raises(AssertionError, match=expected), check_step_order(optimizer, scheduler):
        scheduler.step()
        optimizer.step()
    assert scheduler.last_epoch == 0  # it failed before the scheduler stepped


def test_check_step_order_restores_step_afterwards_also_on_error() -> None:
    optimizer, scheduler = optimizer_and_scheduler()
    tracked = vars(optimizer)["step"]  # the scheduler's own wrapper, put there by PyTorch
    with pytest.raises(RuntimeError, match="boom"), check_step_order(optimizer, scheduler):
        assert vars(optimizer)["step"] is not tracked
        raise RuntimeError("boom")
    assert vars(optimizer)["step"] is tracked
    assert "step" not in vars(scheduler)


def test_assert_step_order_runs_one_training_step() -> None:
    optimizer, scheduler = optimizer_and_scheduler()

    def good() -> str:
        optimizer.step()
        scheduler.step()
        return "done"

    def bad() -> None:
        scheduler.step()

    assert assert_step_order(optimizer, scheduler, good) == "done"
    with pytest.raises(AssertionError, match=r"StepLR\.step"):
        assert_step_order(optimizer, scheduler, bad)


def test_check_step_order_rejects_a_scheduler_of_another_optimizer() -> None:
    optimizer, _ = optimizer_and_scheduler()
    _, scheduler = optimizer_and_scheduler()
    with (
        pytest.raises(ValueError, match="StepLR schedules another optimizer"),
        check_step_order(optimizer, scheduler),
    ):
        pass


# --- without torch -----------------------------------------------------------------------


def test_the_module_imports_without_torch_and_every_helper_says_how_to_install_it() -> None:
    code = textwrap.dedent(
        """
        import inspect, sys
        sys.modules["torch"] = None
        import ntdd.torch as t
        for name in t.__all__:
            helper = getattr(t, name)
            if inspect.isclass(helper):
                continue
            required = [
                p for p in inspect.signature(helper).parameters.values()
                if p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
            ]
            try:
                helper(*[object()] * len(required))
            except ImportError as exc:
                print(name, exc)
            else:
                print(name, "raised nothing")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    import ntdd.torch

    helpers = [n for n in ntdd.torch.__all__ if not n.startswith("GradFlow")]
    message = "ntdd.torch needs PyTorch: pip install 'ntdd[torch]'"
    assert result.stdout.splitlines() == [f"{name} {message}" for name in helpers]


def _sgd() -> torch.optim.Optimizer:
    return torch.optim.SGD(nn.Linear(2, 1).parameters(), lr=0.1)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: assert_shape([1, 2], (2,)), "t must be a torch.Tensor, got list"),
        (lambda: assert_dtype([1.0], "float32"), "obj must be a torch.Tensor or an nn.Module"),
        (lambda: assert_dtype(torch.zeros(1), 32), "dtype must be a torch.dtype or its name"),
        (lambda: assert_same_device("cpu"), "model must be an nn.Module, got str"),
        (
            lambda: assert_same_device(None, torch.zeros(1), [0.0]),
            r"tensors\[1\] must be a torch.Tensor, got list",
        ),
        (lambda: assert_finite("3.0"), "obj must be a torch.Tensor, an nn.Module or a number"),
        (lambda: assert_finite({"a": "b"}), r"tensor\['a'\] must be a torch.Tensor"),
        (lambda: assert_grad_flow(torch.zeros(1)), "model must be an nn.Module, got Tensor"),
        (lambda: assert_grad_flow(nn.Linear(1, 1), 0.5), "loss must be a torch.Tensor, got float"),
        (lambda: assert_state_complete({}), "model must be an nn.Module, got dict"),
        (lambda: assert_mode(None), "model must be an nn.Module, got NoneType"),
        (lambda: check_step_order(nn.Linear(1, 1)), "optimizer must be a torch.optim.Optimizer"),
        (lambda: check_step_order(_sgd(), 0.1), r"schedulers\[0\] must be a learning-rate"),
        (lambda: assert_step_order(_sgd(), None, print), r"schedulers\[0\] must be"),
        (
            lambda: assert_step_order(*optimizer_and_scheduler(), None),  # type: ignore[misc]
            "train_step must be a function, got NoneType",
        ),
    ],
)
def test_a_wrong_argument_is_a_type_error_that_names_it(call: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        call()  # type: ignore[operator]
