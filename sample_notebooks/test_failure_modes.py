# ntdd: generated — edit the notebook or use `ntdd sync`.
# ntdd-source: failure_modes.ipynb
# ntdd-version: 0.1.0
# ntdd-hash: sha256:50fc73ff5080f9693929924a810b54044002648209d617b57aa102f91e38d789
# ntdd-render: d8aae97c4f1e71ca
# ntdd-frame: ceb30081229c447d
# ruff: noqa  (the tests read the notebook's names, which linters cannot see)
"""Tests of the notebook failure_modes.ipynb, written by ntdd.

Setup cells run in notebook order, in this module's globals, before the
first test that needs them: once per device, never once per test. Every test
sees every setup cell, wherever its own cell sits in the notebook. The
working directory is the notebook's folder while setup and tests run.
"""

# Formatters would make the module differ from what ntdd writes:
# fmt: off
import pytest

from ntdd.runtime import NotebookRuntime

__ntdd__ = NotebookRuntime(globals(), notebook='failure_modes.ipynb', uses_device=True)

# %% ntdd setup: cell 1, id 9deae2d9
__ntdd__.setup(1, '9deae2d9', """\
import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")""", assigns_device=True)

# %% ntdd setup: cell 2, id a17002f7
__ntdd__.setup(2, 'a17002f7', '''\
class Scorer(nn.Module):
    """A small regression net with the layers whose mode matters."""

    def __init__(self, features: int = 8, hidden: int = 16):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.2)
        )
        self.head = nn.Linear(hidden, 1)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1) * self.scale


model = Scorer().to(device)
x = torch.randn(32, 8, device=device)
target = torch.randn(32, device=device)''')

# %% ntdd skipped: cell 3, id 95b5c0e3
# not run under test: # NTDD: skip

# %% ntdd setup: cell 4, id a9321616
__ntdd__.setup(4, 'a9321616', 'model.eval()  # ready for inference')


# %% ntdd fixtures
@pytest.fixture(name="device", scope="module", params=__ntdd__.devices)
def _ntdd_device(request: pytest.FixtureRequest):
    """The device under test; setup runs once for each."""
    return __ntdd__.device(request.param)


@pytest.fixture(scope="module", autouse=True)
def _ntdd_module():
    """Frees the notebook's state when the module's last test has run."""
    yield
    __ntdd__.release()


@pytest.fixture(autouse=True)
def _ntdd_test(request: pytest.FixtureRequest):
    """Runs each test in the notebook's folder, after the setup for its device."""
    yield from __ntdd__.test(request)


# %% ntdd test: cell 6, id 08192f61, sha 62353e7f2db6
def test_one_score_per_example():
    # TEST: one score per example
    assert model(x).shape == (32,)


# %% ntdd test: cell 7, id 03512658, sha c19026d953aa
def test_scores_are_float32():
    # TEST: scores are float32
    assert model(x).dtype == torch.float32


# %% ntdd test: cell 8, id ce48cea2, sha facd5b85b2f7
def test_the_loss_reaches_every_parameter():
    # TEST: the loss reaches every parameter
    loss = nn.functional.mse_loss(model(x), target)
    assert loss.grad_fn is not None
    model.zero_grad()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


# %% ntdd test: cell 9, id 7857a1cc, sha f84417ad8c51
def test_inference_is_deterministic():
    # TEST: inference is deterministic
    with torch.no_grad():
        assert torch.equal(model(x), model(x))


# %% ntdd test: cell 10, id 3889652f, sha 3d324783ddda
# TEST
def test_every_tensor_is_in_the_state_dict():
    """A tensor set as a plain attribute is lost by state_dict() and .to()."""
    for name, module in model.named_modules():
        loose = [k for k, v in vars(module).items() if isinstance(v, torch.Tensor)]
        assert not loose, f"{name or type(module).__name__}: unregistered tensors {loose}"


def test_model_and_inputs_share_a_device(device):
    """Setup built both on the device under test."""
    assert x.device.type == device.type
    assert model(x).device.type == device.type


# %% ntdd test: cell 11, id 1065cff6, sha f9d97b0f7058
def test_ready_for_inference_checked_with_ntdd_torch():
    # TEST: ready for inference, checked with ntdd.torch
    from ntdd.torch import assert_mode, assert_same_device, assert_shape, assert_state_complete

    assert_mode(model, train=False)
    assert_same_device(model, x, target, names=["x", "target"])
    assert_shape(model(x), ("batch",), name="scores")
    assert_state_complete(model)


# %% ntdd test: cell 12, id 5dc29480, sha 62cd723fb845
@pytest.mark.xfail(reason='detach() returns a tensor with no grad_fn: no gradient flows back through it')
def test_detach_cuts_the_graph():
    # TEST: detach cuts the graph @xfail("detach() returns a tensor with no grad_fn: no gradient flows back through it")
    loss = nn.functional.mse_loss(model(x).detach(), target)
    assert loss.grad_fn is not None


# %% ntdd test: cell 13, id d286c9d5, sha bad01c16612f
@pytest.mark.xfail(reason='(32,) minus (32, 1) broadcasts to (32, 32): a wrong loss, not an error')
def test_a_32_1_target_broadcasts():
    # TEST: a (32, 1) target broadcasts @xfail("(32,) minus (32, 1) broadcasts to (32, 32): a wrong loss, not an error")
    assert (model(x) - target.unsqueeze(1)).shape == (32,)


# %% ntdd test: cell 14, id afa93bc0, sha 4629a601568f
@pytest.mark.xfail(reason='mean() of an integer tensor raises: cast to float first')
def test_the_mean_of_integers():
    # TEST: the mean of integers @xfail("mean() of an integer tensor raises: cast to float first")
    assert torch.tensor([1, 2, 3]).mean() == 2
