"""Real training notebooks fetched for the oracle of `ntdd faults` after it was written.

Each is a `Case` of `fault_cases` (see its docstring): the tests a careful
user writes from the notebook's own text and printed outputs, added as
`# TEST` cells after the cells they check, and for every fault the same bug
written in by hand where a person would make it; a fault no person could write
into the notebook has no mutant and must be "not applicable". The notebooks
are in `tests/corpus/training/` (see its SOURCES.md); none of them is in
`fault_cases` or `unseen_cases`, and several do not seed themselves.
`tests/test_fresh_training_notebooks.py` checks every test passes in a full run.
"""

from __future__ import annotations

import random

from fault_cases import PERMUTED, UNPLUGGED, Case, Edit, after, model_mutants, moved


def iris_data(rows_per_class: int = 50) -> str:
    """Synthetic data of the UCI iris table's shape (four measurements in centimetres and
    the species, 50 rows of each of three, in order, no header), from a seeded generator:
    each species' measurements drawn around its real means, setosa's and versicolor's sepals
    apart, as the real ones are; the notebook downloads the table."""
    rng = random.Random(0)
    species = {
        "Iris-setosa": ((5.0, 0.3), (3.4, 0.3), (1.5, 0.17), (0.25, 0.1)),
        "Iris-versicolor": ((6.0, 0.4), (2.7, 0.3), (4.3, 0.47), (1.3, 0.2)),
        "Iris-virginica": ((6.6, 0.6), (3.0, 0.32), (5.6, 0.55), (2.0, 0.27)),
    }
    lines = []
    for name, measures in species.items():
        for _ in range(rows_per_class):
            values = [max(0.1, rng.gauss(mean, sd)) for mean, sd in measures]
            lines.append(",".join([*(f"{v:.1f}" for v in values), name]))
    return "\n".join(lines) + "\n"


def formats(indent: str = "") -> str:
    """IPython 9 has no `IPython.display.set_matplotlib_formats` (deprecated since 7.23): the
    function its deprecation warning points to, from matplotlib-inline."""
    return f"from matplotlib_inline.backend_inline import set_matplotlib_formats\n{indent}"


def in_numpy(*names: str, code: str) -> str:
    """*code* on each of the NumPy arrays *names* (`{0}` in it is the name)."""
    return "\n".join(code.format(name) for name in names)


def off_device() -> str:
    """Where the `device` fault moves a tensor made with `device=`: `meta` without CUDA."""
    import torch

    return "'cuda'" if torch.cuda.is_available() else "'meta'"


IRIS_URL = "'http://archive.ics.uci.edu/ml/machine-learning-databases/iris/iris.data'"
IRIS_SPLIT = "X_train, X_test = (X_train - mu) / std, (X_test - mu) / std"
LOGR_2 = "logr = LogisticRegression2(num_features=2)"
LOGR_3 = "model = LogisticRegression3(num_features=2).to(device)"
TRAIN_TENSOR = "X_train_tensor = torch.tensor(X_train, dtype=torch.float32, device=device)"
TEST_TENSOR = "X_test_tensor = torch.tensor(X_test, dtype=torch.float32, device=device)"
LOGISTIC = Case(  # Raschka's logistic regression three ways: by hand, autograd, nn.Module and SGD
    "deeplearning-models__logistic-regression",
    real="training/deeplearning-models__logistic-regression.ipynb",
    # the watermark extension is not installed here; the download reads a file beside the copy
    skip=("%load_ext watermark", "%watermark -iv"),
    offline=((f"ds = np.lib.DataSource()\nfp = ds.open({IRIS_URL})", "fp = open('iris.data')"),),
    files=(("iris.data", iris_data()),),
    # written for torch 1.0: torch 1.2 and later refuse `1 - bool tensor` in `custom_where` (the
    # first class casts the comparison to float, as the second does), and matplotlib no longer
    # plots a tensor that requires grad (the decision boundaries plot detached weights)
    changes=(
        (
            "labels = custom_where(probas >= .5, 1, 0)",
            "labels = custom_where((probas >= .5).float(), 1, 0)",
        ),
        ("w, b = logr.weights, logr.bias", "w, b = logr.weights.detach(), logr.bias.detach()"),
    ),
    tests=(
        (
            IRIS_SPLIT,
            "# TEST: 75 training and 25 test flowers of two classes, two standardised features\n"
            "assert X_train.shape == (75, 2) and X_test.shape == (25, 2)\n"
            "assert y_train.shape == (75,) and set(np.unique(y_train)) == {0.0, 1.0}\n"
            "assert np.allclose(X_train.mean(0), 0, atol=1e-6) and np.isfinite(X_test).all()",
        ),
        (
            "logr = LogisticRegression1(num_features=2)",
            "# TEST: gradient descent by hand separates the training flowers\n"
            "assert logr.evaluate(X_train_tensor, y_train_tensor) > 0.9",
        ),
        (
            LOGR_2,
            "# TEST: autograd's cost is finite and below that of zero weights (75 log 2)\n"
            "cost = logr._logit_cost(y_train_tensor, logr.forward(X_train_tensor))\n"
            "assert torch.isfinite(cost).all() and cost.item() < 0.5 * 75 * np.log(2)\n"
            "assert logr.evaluate(X_test_tensor, y_test_tensor) > 0.9",
        ),
        (
            "pred_probas = model(X_test_tensor)",
            "# TEST: the nn.Module model classifies the test flowers\nassert test_acc > 0.9",
        ),
        (
            "pred_probas = model(X_test_tensor)",
            "# TEST: its training cost fell below that of zero weights (75 log 2)\n"
            "with torch.no_grad():\n"
            "    cost = cost_fn(model(X_train_tensor), y_train_tensor.view(-1, 1))\n"
            "assert torch.isfinite(cost) and cost.item() < 0.5 * 75 * np.log(2)",
        ),
        (
            "pred_probas = model(X_test_tensor)",
            "# TEST: the loss reaches every parameter, and its state dict holds them\n"
            "from ntdd.torch import assert_grad_flow, assert_state_complete\n"
            "assert_grad_flow(model, cost_fn(model(X_train_tensor), y_train_tensor.view(-1, 1)))\n"
            "assert_state_complete(model)",
        ),
    ),
    mutants={
        "shape": [after(IRIS_SPLIT, "X_train, X_test = X_train.T, X_test.T")],
        "dtype": [
            (TRAIN_TENSOR, TRAIN_TENSOR.replace("float32", "float64")),
            (TEST_TENSOR, TEST_TENSOR.replace("float32", "float64")),
        ],
        "device": [
            (TRAIN_TENSOR, TRAIN_TENSOR.replace("device=device", f"device={off_device()}")),
            (TEST_TENSOR, TEST_TENSOR.replace("device=device", f"device={off_device()}")),
        ],
        "nan": [after(IRIS_SPLIT, in_numpy("X_train", "X_test", code="{0}[0, 0] = np.nan"))],
        # the classes are 0.0 and 1.0, floats, as BCELoss takes them
        "labels": [
            after(
                IRIS_SPLIT,
                "y_train = y_train[np.random.RandomState(0).permutation(len(y_train))]",
            )
        ],
        "broadcast": [
            after(IRIS_SPLIT, in_numpy("y_train", "y_test", code="{0} = {0}.reshape(-1, 1)"))
        ],
        # by hand (no autograd), with autograd, an nn.Module: all made with zero weights
        "detached": [
            after(LOGR_2, "logr.weights.requires_grad_(False)\nlogr.bias.requires_grad_(False)"),
            after(LOGR_3, "model.requires_grad_(False)"),
        ],
        "scale": [
            after(
                LOGR_2, "with torch.no_grad():\n    logr.weights.mul_(1e4)\n    logr.bias.mul_(1e4)"
            ),
            after(LOGR_3, "with torch.no_grad():\n    model.linear.weight.mul_(1e4)"),
        ],
        "unregistered": [after(LOGR_3, UNPLUGGED.format("model.linear"))],
        "lr0": [("learning_rate=0.1)", "learning_rate=0.0)"), ("lr=0.1)", "lr=0.0)")],
        "stale_grad": [
            ("            self.weights.grad.zero_()\n            self.bias.grad.zero_()\n", ""),
            ("    optimizer.zero_grad()\n", ""),
        ],
    },
)

SCRATCH_DATA = "labels += torch.zeros(size=labels.shape).normal_(std=0.01)"
SCRATCH_GRAD = "w.requires_grad_(True)\nb.requires_grad_(True)"
LINEAR_SCRATCH = Case(  # d2l's first PyTorch port: tensors by hand, a data_iter, SGD by hand
    "d2l-pytorch__Linear_Regression_Implementation_from_Scratch",
    real="training/d2l-pytorch__Linear_Regression_Implementation_from_Scratch.ipynb",
    offline=(
        (
            "display.set_matplotlib_formats('svg')",
            formats("    ") + "set_matplotlib_formats('svg')",
        ),
    ),
    tests=(
        (
            SCRATCH_DATA,
            "# TEST: 1,000 examples of two features\n"
            "assert features.shape == (1000, 2) and labels.shape == (1000,)\n"
            "assert features.dtype == labels.dtype == torch.float32",
        ),
        (
            "    print(X, y)\n    break",
            "# TEST: a batch of ten\nassert X.shape == (10, 2) and y.shape == (10,)",
        ),
        (
            "net = linreg  # Our fancy linear model",
            "# TEST: the training loss is finite and fell below half the labels' variance\n"
            "assert torch.isfinite(train_l).all() and train_l.mean() < labels.var() / 2",
        ),
        (
            "print('Error in estimating w', true_w - w.reshape(true_w.shape))",
            "# TEST: the estimates moved toward the truth\n"
            "assert (true_w - w.reshape(true_w.shape)).abs().max() < 2.5\n"
            "assert abs(true_b - b.item()) < 3",
        ),
        (
            "print('Error in estimating w', true_w - w.reshape(true_w.shape))",
            "# TEST: the loss reaches w and b\n"
            "w.grad = b.grad = None\nloss(net(features, w, b), labels).mean().backward()\n"
            "assert w.grad.abs().sum() > 0 and b.grad.abs().sum() > 0",
        ),
    ),
    mutants={
        "shape": [after(SCRATCH_DATA, "features = features.transpose(0, -1)")],
        "dtype": [after(SCRATCH_DATA, "features = features.double()")],
        "device": [after(SCRATCH_DATA, moved("features", "labels"))],
        "nan": [after(SCRATCH_DATA, "features[0, 0] = float('nan')")],
        "broadcast": [after(SCRATCH_DATA, "labels = labels.unsqueeze(-1)")],
        "detached": [(SCRATCH_GRAD, "w.requires_grad_(False)\nb.requires_grad_(False)")],
        "scale": [after(SCRATCH_GRAD, "with torch.no_grad():\n    w.mul_(1e4)\n    b.mul_(1e4)")],
        "lr0": [("lr = 0.03", "lr = 0.0")],
        # no optimizer: the hand-written `sgd` zeroes the gradients it used
        "stale_grad": [("        param.grad.data.zero_()", "        pass")],
    },
)

CONCISE_DATA = "features, labels = synthetic_data(true_w, true_b, 1000)"
CONCISE_INIT = "net.layer1.bias.data=torch.Tensor([0])"
LINEAR_CONCISE = Case(  # its concise sequel: a DataLoader, an nn.Module, torch's SGD on a sum loss
    "d2l-pytorch__Concise_Implementation_of_Linear_Regression",
    real="training/d2l-pytorch__Concise_Implementation_of_Linear_Regression.ipynb",
    skip=('SVG(filename="../img/singleneuron.svg")',),  # a figure of the book's, not here
    tests=(
        (
            CONCISE_DATA,
            "# TEST: 1,000 examples of two features, one label each\n"
            "assert features.shape == (1000, 2) and labels.shape == (1000, 1)\n"
            "assert features.dtype == labels.dtype == torch.float32",
        ),
        (
            "for X, y in data_iter:\n    print(X)",
            "# TEST: a batch of ten\nassert X.shape == (10, 2) and y.shape == (10, 1)",
        ),
        (
            "l_epoch = loss(net(features), labels)",
            "# TEST: the summed squared error over the 1,000 examples is finite and near the "
            "noise's (0.1)\nassert torch.isfinite(l_epoch) and l_epoch.item() < 1",
        ),
        (
            "print('Error in estimating b', true_b - b)",
            "# TEST: the estimates are close to the truth\n"
            "assert (true_w.reshape(w.shape) - w).abs().max() < 0.05\n"
            "assert abs(true_b - b.item()) < 0.05",
        ),
        (
            "print('Error in estimating b', true_b - b)",
            "# TEST: the loss reaches every parameter, and its state dict holds them\n"
            "from ntdd.torch import assert_grad_flow, assert_state_complete\n"
            "assert_grad_flow(net, loss(net(features), labels))\nassert_state_complete(net)",
        ),
    ),
    mutants={
        "shape": [after(CONCISE_DATA, "features = features.transpose(0, -1)")],
        "dtype": [after(CONCISE_DATA, "features = features.double()")],
        "device": [after(CONCISE_DATA, moved("features", "labels"))],
        "nan": [after(CONCISE_DATA, "features[0, 0] = float('nan')")],
        # the labels are made (N, 1) by `.reshape(-1,1)`: the bug is that reshape left out
        "broadcast": [
            ("y=torch.from_numpy( y).float().reshape(-1,1)", "y=torch.from_numpy( y).float()")
        ],
        **model_mutants(CONCISE_INIT, "net", "net.layer1"),
        "lr0": [("lr = 0.03", "lr = 0.0")],
        "stale_grad": [("        trainer.zero_grad() \n", "")],
    },
)

SEQ_DATA = "labels = x[embedding:]"
SEQ_INIT = "    net.apply(init_weights)"
SEQUENCE = Case(  # d2l's sequence models, ported: an autoregressive MLP, Adam, predictions after
    "d2l-pytorch__Sequence_Models",
    real="training/d2l-pytorch__Sequence_Models.ipynb",
    offline=(
        ("display.set_matplotlib_formats('svg')", formats() + "set_matplotlib_formats('svg')"),
    ),
    tests=(
        (
            "ntrain = 600",
            "# TEST: 996 windows of four points, 600 to train on\n"
            "assert features.shape == (996, 4) and labels.shape == (996,)\n"
            "assert len(train_data) == 600 and len(test_data) == 396",
        ),
        (
            "net = train_net(net, train_data, loss, 10, 0.01)",
            "# TEST: the test loss is finite and near the noise's variance (0.04)\n"
            "assert torch.isfinite(l) and l.item() < 0.15",
        ),
        (
            "net = train_net(net, train_data, loss, 10, 0.01)",
            "# TEST: the loss reaches every parameter, and its state dict holds them\n"
            "from ntdd.torch import assert_grad_flow, assert_state_complete\n"
            "assert_grad_flow(net, loss(net(features[:ntrain]), labels[:ntrain].reshape(-1, 1)))\n"
            "assert_state_complete(net)",
        ),
        (
            "estimates = net(features)",
            "# TEST: one finite estimate per window\n"
            "assert estimates.shape == (996, 1) and torch.isfinite(estimates).all()",
        ),
        (
            "predictions = torch.zeros_like(estimates)",
            # not bounded: fed its own outputs, the model drifts or settles as its weights go
            "# TEST: a finite multistep prediction for every window\n"
            "assert predictions.shape == (996, 1) and torch.isfinite(predictions).all()",
        ),
    ),
    mutants={
        "shape": [after(SEQ_DATA, "features = features.transpose(0, -1)")],
        "dtype": [after(SEQ_DATA, "features = features.double()")],
        "device": [after(SEQ_DATA, moved("features", "labels"))],
        "nan": [after(SEQ_DATA, "features[0, 0] = float('nan')")],
        "broadcast": [after(SEQ_DATA, "labels = labels.unsqueeze(-1)")],
        **model_mutants(SEQ_INIT, "net", "net.Linear_1"),
        "lr0": [("lr= learningrate)", "lr= 0.0)")],
        "stale_grad": [("            trainer.zero_grad()\n", "")],
    },
)

XOR_DATA = "        self.label = label"
XOR_MODEL = (
    "model = SimpleClassifier(num_inputs=2, num_hidden=4, num_outputs=1)\n"
    "# Printing a module shows all its submodules"
)
SEABORN = "def set(*args, **kwargs):\n    pass\n"
INTRODUCTION = Case(  # Lippe's introduction to PyTorch: a Dataset class, DataLoaders, save and load
    "uvadlc_notebooks__Introduction_to_PyTorch",
    real="training/uvadlc_notebooks__Introduction_to_PyTorch.ipynb",
    # the CPU-GPU timing needs CUDA; tensorboard is not installed here: its section's four cells
    skip=(
        "start = torch.cuda.Event(enable_timing=True)",
        "from torch.utils.tensorboard import SummaryWriter",
        "def train_model_with_logger(",
        "train_model_with_logger(model, optimizer, train_data_loader",
        "%tensorboard --logdir",
    ),
    changes=(
        (
            "from IPython.display import set_matplotlib_formats",
            "from matplotlib_inline.backend_inline import set_matplotlib_formats",
        ),
        # tqdm's notebook bar needs ipywidgets, not installed here: its console bar
        ("from tqdm.notebook import tqdm", "from tqdm import tqdm"),
    ),
    files=(("seaborn.py", SEABORN),),  # seaborn is not installed here: `sns.set()` only styles
    tests=(
        (
            "dataset = XORDataset(size=200)",
            "# TEST: 200 noisy points of two float features and their XOR class\n"
            "assert len(dataset) == 200 and dataset.data.shape == (200, 2)\n"
            "assert dataset.data.dtype == torch.float32 and set(dataset.label.tolist()) == {0, 1}",
        ),
        (
            'print("Data inputs", data_inputs.shape',
            "# TEST: a batch of eight\n"
            "assert data_inputs.shape == (8, 2) and data_labels.shape == (8,)",
        ),
        (
            "train_model(model, optimizer, train_data_loader, loss_module)",
            "# TEST: the trained model separates the XOR classes\n"
            "with torch.no_grad():\n"
            "    preds = (model(train_dataset.data).squeeze(1) >= 0).long()\n"
            "assert (preds == train_dataset.label).float().mean() > 0.95",
        ),
        (
            "train_model(model, optimizer, train_data_loader, loss_module)",
            "# TEST: the loss reaches every parameter\n"
            "from ntdd.torch import assert_grad_flow\n"
            "inputs, labels = next(iter(train_data_loader))\n"
            "assert_grad_flow(model, loss_module(model(inputs).squeeze(1), labels.float()))",
        ),
        (
            "new_model.load_state_dict(state_dict)",
            "# TEST: the model loaded from the file computes the same, its state dict is complete\n"
            "from ntdd.torch import assert_state_complete\n"
            "with torch.no_grad():\n"
            "    assert torch.equal(new_model(train_dataset.data), model(train_dataset.data))\n"
            "assert_state_complete(model)",
        ),
        (
            "eval_model(model, test_data_loader)",
            "# TEST: it classifies the 500 test points\n"
            "with torch.no_grad():\n"
            "    preds = (model(test_dataset.data).squeeze(1) >= 0).long()\n"
            "assert (preds == test_dataset.label).float().mean() > 0.95",
        ),
    ),
    mutants={
        "shape": [after(XOR_DATA, "self.data = self.data.transpose(0, -1)")],
        "dtype": [after(XOR_DATA, "self.data = self.data.double()")],
        "device": [after(XOR_DATA, moved("self.data", "self.label"))],
        "nan": [after(XOR_DATA, "self.data = self.data.clone()\nself.data[0, 0] = float('nan')")],
        "labels": [after(XOR_DATA, PERMUTED.format("self.label"))],
        "broadcast": [after(XOR_DATA, "self.label = self.label.unsqueeze(-1)")],
        **model_mutants(XOR_MODEL, "model", "model.linear1"),
        "lr0": [("lr=0.1)", "lr=0.0)")],
        "stale_grad": [("            optimizer.zero_grad()\n", "")],
    },
)

# torchvision is not installed here: a stand-in with the MNIST, Compose, ToTensor and Normalize
# that 06-convnet uses, its MNIST synthetic (each digit its fixed random pattern of strokes,
# with noise, uint8 28x28 images as torchvision's `data` and `targets`), a tenth of MNIST's
# size (6,000 training and 1,000 test images) to train in seconds on CPU
TORCHVISION = '''"""A stand-in for torchvision: synthetic MNIST and the transforms used."""

import torch


class _Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        for transform in self.transforms:
            image = transform(image)
        return image


class _ToTensor:
    def __call__(self, image):
        return image.unsqueeze(0).float().div(255)


class _Normalize:
    def __init__(self, mean, std):
        self.mean, self.std = mean, std

    def __call__(self, image):
        return (image - self.mean[0]) / self.std[0]


class transforms:
    Compose, ToTensor, Normalize = _Compose, _ToTensor, _Normalize


class _MNIST(torch.utils.data.Dataset):
    def __init__(self, root, train=True, download=False, transform=None):
        size = 6000 if train else 1000
        patterns = torch.rand(10, 28, 28, generator=torch.Generator().manual_seed(0)) < 0.2
        noise = torch.Generator().manual_seed(1 if train else 2)
        self.targets = torch.randint(0, 10, (size,), generator=noise)
        images = patterns[self.targets].float() * 255
        images += torch.randn(size, 28, 28, generator=noise) * 30
        self.data = images.clamp(0, 255).to(torch.uint8)
        self.transform = transform

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        image = self.data[index]
        if self.transform is not None:
            image = self.transform(image)
        return image, int(self.targets[index])


class datasets:
    MNIST = _MNIST
'''
TO_DEVICE = "        # send to device\n        data, target = data.to(device), target.to(device)\n"
LOOPS = (
    "    for batch_idx, (data, target) in enumerate(train_loader):\n" + TO_DEVICE,
    "    for data, target in test_loader:\n" + TO_DEVICE,
)


def in_loops(code: str) -> list[Edit]:
    """*code* written in the training and the test loops, just after each batch is sent to
    the device, where the notebook prepares its batches (it reads MNIST as torchvision gives it)."""
    indented = "".join(f"        {line}\n" for line in code.splitlines())
    return [(loop, loop + indented) for loop in LOOPS]


def both(*mutants: dict[str, list[Edit]]) -> dict[str, list[Edit]]:
    """Mutants of several models, each fault's edits together."""
    merged: dict[str, list[Edit]] = {}
    for each in mutants:
        for kind, edits in each.items():
            merged.setdefault(kind, []).extend(edits)
    return merged


CONVNET = Case(  # Canziani's convnet: an MLP and a CNN on MNIST, then on scrambled pixels
    "NYU-DLSP20__06-convnet",
    real="training/NYU-DLSP20__06-convnet.ipynb",
    beside=("res",),
    files=(("torchvision.py", TORCHVISION),),
    tests=(
        (
            "test_loader = torch.utils.data.DataLoader(",
            "# TEST: a batch is 64 normalised 1x28x28 images and their digits\n"
            "images, labels = next(iter(train_loader))\n"
            "assert images.shape == (64, 1, 28, 28) and images.dtype == torch.float32\n"
            "assert labels.shape == (64,) and labels.dtype == torch.int64\n"
            "assert 0 <= labels.min() and labels.max() <= 9",
        ),
        (
            "n_hidden = 8 # number of hidden units",
            "# TEST: the small fully connected net beats a guess by far\n"
            "assert accuracy_list[-1] > 50",
        ),
        (
            "    train(epoch, model_cnn)\n",
            # one epoch on the synthetic digits: 63% to 90% over seeds, a guess 10%
            "# TEST: the CNN classifies the test digits far better than a guess\n"
            "assert accuracy_list[-1] > 40",
        ),
        (
            "    train(epoch, model_cnn)\n",
            "# TEST: the CNN's outputs are log-probabilities of the ten digits\n"
            "images, labels = next(iter(test_loader))\n"
            "with torch.no_grad():\n    out = model_cnn(images)\n"
            "assert out.shape == (1000, 10)\n"
            "assert torch.allclose(out.exp().sum(1), torch.ones(1000))",
        ),
        (
            "    train(epoch, model_cnn)\n",
            "# TEST: the loss reaches every parameter, and its state dict holds them\n"
            "from ntdd.torch import assert_grad_flow, assert_state_complete\n"
            "images, labels = next(iter(train_loader))\n"
            "assert_grad_flow(model_cnn, F.nll_loss(model_cnn(images), labels))\n"
            "assert_state_complete(model_cnn)",
        ),
        (
            "plt.bar(('NN image', 'CNN image',",
            "# TEST: four accuracies, each far above a guess (10%)\n"
            "assert len(accuracy_list) == 4 and min(accuracy_list) > 30",
        ),
    ),
    mutants={
        "shape": in_loops("data = data.transpose(0, -1)"),
        "dtype": in_loops("data = data.double()"),
        "device": in_loops(moved("data", "target")),
        "nan": in_loops("data = data.clone()\ndata[0, 0] = float('nan')"),
        "labels": in_loops(PERMUTED.format("target")),
        "broadcast": in_loops("target = target.unsqueeze(-1)"),
        # each model is made twice (on images, then on scrambled pixels): the bug in both
        **both(
            model_mutants("model_fnn.to(device)", "model_fnn", "model_fnn.network[0]"),
            model_mutants("model_cnn.to(device)", "model_cnn", "model_cnn.conv1"),
        ),
        "lr0": [("lr=0.01, momentum=0.5", "lr=0.0, momentum=0.5")],
        "stale_grad": [("        optimizer.zero_grad()\n", "")],
    },
)

FRESH = {
    case.name: case
    for case in (LOGISTIC, LINEAR_SCRATCH, LINEAR_CONCISE, SEQUENCE, INTRODUCTION, CONVNET)
}
