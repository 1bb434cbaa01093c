# ntdd: generated — edit the notebook or use `ntdd sync`.
# ntdd-source: failure_modes.ipynb
# ntdd-version: 0.1.0
# ntdd-hash: sha256:bc317de070bc5a04a0b8060a81b7e6dd55586de882de83e514760ec847432d12
# ntdd-render: bf08c823e004d65c
# ntdd-markers: 19
# ntdd-frame: 2c5207e496958a42
# ruff: noqa  (the tests read the notebook's names, which linters cannot see)
"""Tests of the notebook failure_modes.ipynb, written by ntdd: each test sees
the notebook as Jupyter's Run All leaves it at the test's cell (see `ntdd.runtime`)."""

# Formatters would make the module differ from what ntdd writes:
# fmt: off
import pytest

from ntdd.runtime import NotebookRuntime

__ntdd__ = NotebookRuntime(globals(), notebook='failure_modes.ipynb', uses_device=True)


# %% ntdd fixtures
# `device`, and the fixtures that run the notebook's cells up to each test's cell:
from ntdd.runtime.fixtures import pytest_generate_tests, device as _ntdd_device, _ntdd_notebook, _ntdd_cells


# %% ntdd setup: cell 2, id 9deae2d9
__ntdd__.setup(2, '9deae2d9', """\
import torch
from torch import nn

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")""", assigns_device=True)


# %% ntdd setup: cell 3, id a17002f7
__ntdd__.setup(3, 'a17002f7', '''\
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


# %% ntdd skipped: cell 4, id 95b5c0e3
# not run under test: # NTDD: skip


# %% ntdd setup: cell 5, id a9321616
__ntdd__.setup(5, 'a9321616', 'model.eval()  # ready for inference')


# %% ntdd test: cell 7, id 08192f61, sha 62353e7f2db6
def test_one_score_per_example():
    # TEST: one score per example
    assert model(x).shape == (32,)


# %% ntdd test: cell 8, id 5b1e0c3a, sha 2a7e4cf200e7
def test_scores_and_targets_have_the_same_shape():
    # TEST: scores and targets have the same shape
    # (a (32,) and a (32, 1) broadcast to (32, 32) in the loss, silently)
    assert model(x).shape == target.shape


# %% ntdd test: cell 9, id 03512658, sha c19026d953aa
def test_scores_are_float32():
    # TEST: scores are float32
    assert model(x).dtype == torch.float32


# %% ntdd test: cell 10, id ce48cea2, sha e674d9403a71
def test_the_loss_reaches_every_parameter():
    global loss  # ntdd: the cell's assignments land in the notebook's namespace, as in a kernel
    # TEST: the loss reaches every parameter
    loss = nn.functional.mse_loss(model(x), target)
    assert loss.grad_fn is not None
    model.zero_grad()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


# %% ntdd test: cell 11, id 7857a1cc, sha f84417ad8c51
def test_inference_is_deterministic():
    # TEST: inference is deterministic
    with torch.no_grad():
        assert torch.equal(model(x), model(x))


# %% ntdd test: cell 12, id c4f1d2e7, sha 6fb2b968be9f
def test_scores_stay_in_a_sane_range():
    # TEST: scores stay in a sane range
    with torch.no_grad():
        assert model(x).abs().max() < 100, "exploding activations"


# %% ntdd test: cell 13, id 3889652f, sha 3d324783ddda
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


# %% ntdd test: cell 14, id 1065cff6, sha 2764ffb0b787
def test_ready_for_inference_checked_with_ntdd_torch():
    global assert_mode, assert_same_device, assert_shape, assert_state_complete  # ntdd: the cell's assignments land in the notebook's namespace, as in a kernel
    # TEST: ready for inference, checked with ntdd.torch
    from ntdd.torch import assert_mode, assert_same_device, assert_shape, assert_state_complete

    assert_mode(model, train=False)
    assert_same_device(model, x, target, names=["x", "target"])
    assert_shape(model(x), ("batch",), name="scores")
    assert_state_complete(model)


# %% ntdd setup: cell 16, id 7d3c5f90
__ntdd__.setup(16, '7d3c5f90', 'opt = torch.optim.SGD(model.parameters(), lr=0.01)')


# %% ntdd test: cell 17, id 91b6e4d2, sha 34e791616525
def test_each_step_starts_from_fresh_gradients():
    global grads, _  # ntdd: the cell's assignments land in the notebook's namespace, as in a kernel
    # TEST: each step starts from fresh gradients
    grads = []
    for _ in range(2):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), target).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*grads)), "opt.zero_grad() left gradients behind"


# %% ntdd test: cell 18, id 3f8a0b6d, sha 15d217b7f1bc
def test_a_training_step_lowers_the_loss():
    global loss  # ntdd: the cell's assignments land in the notebook's namespace, as in a kernel
    # TEST: a training step lowers the loss
    loss = nn.functional.mse_loss(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert nn.functional.mse_loss(model(x), target) < loss


# %% ntdd test: cell 19, id 5dc29480, sha 2b3130c41640
@pytest.mark.xfail(reason='detach() returns a tensor with no grad_fn: no gradient flows back through it')
def test_detach_cuts_the_graph():
    global loss  # ntdd: the cell's assignments land in the notebook's namespace, as in a kernel
    # TEST: detach cuts the graph @xfail("detach() returns a tensor with no grad_fn: no gradient flows back through it")
    loss = nn.functional.mse_loss(model(x).detach(), target)
    assert loss.grad_fn is not None


# %% ntdd test: cell 20, id d286c9d5, sha bad01c16612f
@pytest.mark.xfail(reason='(32,) minus (32, 1) broadcasts to (32, 32): a wrong loss, not an error')
def test_a_32_1_target_broadcasts():
    # TEST: a (32, 1) target broadcasts @xfail("(32,) minus (32, 1) broadcasts to (32, 32): a wrong loss, not an error")
    assert (model(x) - target.unsqueeze(1)).shape == (32,)


# %% ntdd test: cell 21, id afa93bc0, sha 4629a601568f
@pytest.mark.xfail(reason='mean() of an integer tensor raises: cast to float first')
def test_the_mean_of_integers():
    # TEST: the mean of integers @xfail("mean() of an integer tensor raises: cast to float first")
    assert torch.tensor([1, 2, 3]).mean() == 2
