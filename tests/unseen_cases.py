"""Real training notebooks smoke mode was not tuned on, with the tests a careful user writes.

Each case also has the bugs of every fault written in by hand where a person
would make them (`mutants`, as in `fault_cases`), for the cases whose full
run is short (not those of seq_classification and makemore's MLP and batch
norm, which take minutes): the oracle's `verdicts` (`tests/test_faults_oracle.py`)
sets `ntdd faults`' verdicts beside theirs.

`benchmarks/smoke_unseen.py` measures smoke mode on them (its cost, the tests
it turns red, the cells it makes raise, the faults it still catches), and
`tests/test_unseen_notebooks.py` checks that every test here passes in a full
run. The notebooks are in `tests/corpus/training/` (see its SOURCES.md); the
tests were written from each notebook's own text and printed outputs, and
checked against full runs only, never against smoke mode: they are what a
user has before adopting it.
"""

from __future__ import annotations

from fault_cases import (
    LIBRARY_NO_ZERO_GRAD,
    SCALED,
    TRAINING,
    UNPLUGGED,
    Case,
    Edit,
    after,
    data_mutants,
    images_mutants,
    lazy_scaled,
    lazy_unplugged,
    moved,
    xy_mutants,
)

NAMES = (TRAINING / "makemore" / "names.txt").read_text(encoding="utf-8")
# graphviz is not installed here: a stand-in whose Digraph keeps the nodes and edges, draws nothing
GRAPHVIZ = """class Digraph:
    def __init__(self, *args, **kwargs):
        self.nodes, self.edges = [], []

    def node(self, name, label=None, **kwargs):
        self.nodes.append((name, label))

    def edge(self, tail, head, **kwargs):
        self.edges.append((tail, head))
"""


def below(text: str, code: str, indent: str = "") -> Edit:
    """Write *code* on the lines after *text* (which may end mid-statement's lines), at
    *indent*: where `after` cannot read the indentation from the text's first line."""
    return text, text + "".join(f"\n{indent}{part}" for part in code.splitlines())


def built(
    lines: tuple[str, ...], model: str, layer: str, indent: str = ""
) -> dict[str, list[Edit]]:
    """Model bugs written after each of *lines*, where the notebook finished building a
    model (*model*, its first layer with a `weight` *layer*), at *indent*."""
    return {
        "detached": [below(line, f"{model}.requires_grad_(False)", indent) for line in lines],
        "scale": [below(line, SCALED.format(model), indent) for line in lines],
        "unregistered": [below(line, UNPLUGGED.format(layer), indent) for line in lines],
    }


NO_SIX = (  # res/sequential_tasks.py imports six for one `isinstance(value, six.string_types)`
    ("res/sequential_tasks.py", "import six\n", ""),
    ("res/sequential_tasks.py", "six.string_types", "str"),
)

WORKFLOW_V1 = "requires_grad=True) # <- can we update this value with gradient descent?))"
WORKFLOW_V2 = "                                      out_features=1)"
WORKFLOW = Case(  # Bourke's PyTorch workflow: a line learned by hand-written loops, saved, reloaded
    "pytorch-deep-learning__01_pytorch_workflow",
    real="training/pytorch-deep-learning__01_pytorch_workflow.ipynb",
    tests=(
        (
            "train_split = int(0.8 * len(X)) # 80%",
            "# TEST: 50 points split 40/10\n"
            "assert X_train.shape == y_train.shape == (40, 1)\n"
            "assert X_test.shape == y_test.shape == (10, 1)",
        ),
        (
            "epochs = 100\n",
            "# TEST: model_0's losses are finite and fell\n"
            "import math\nlosses = [float(v) for v in train_loss_values + test_loss_values]\n"
            "assert all(map(math.isfinite, losses))\n"
            "assert train_loss_values[-1] < train_loss_values[0]\n"
            "assert test_loss_values[-1] < test_loss_values[0]",
        ),
        (
            "epochs = 100\n",
            "# TEST: after 100 epochs model_0 is nearer the true weight than at the start\n"
            "assert abs(model_0.weights.item() - weight) < 0.2",
        ),
        (
            "y_preds == loaded_model_preds",
            "# TEST: the reloaded model_0 predicts the same\n"
            "assert torch.equal(y_preds, loaded_model_preds)",
        ),
        (
            "epochs = 1000",
            "# TEST: model_1 learned the line y = 0.7 x + 0.3\n"
            "assert abs(model_1.linear_layer.weight.item() - weight) < 0.01\n"
            "assert abs(model_1.linear_layer.bias.item() - bias) < 0.01",
        ),
        (
            "epochs = 1000",
            "# TEST: model_1's test loss is small\nassert test_loss.item() < 0.02",
        ),
        (
            "loaded_model_1_preds = loaded_model_1(X_test)",
            "# TEST: the reloaded model_1 predicts the same\n"
            "assert torch.equal(y_preds, loaded_model_1_preds)",
        ),
    ),
    mutants={
        # the data is made twice, for model_0 and again for model_1: the bug in both
        **data_mutants(
            "y = weight * X + bias",
            shape="X = X.transpose(0, -1)",
            dtype="X, y = X.double(), y.double()",
            device=moved("X", "y"),
            nan="X, y = X.clone(), y.clone()\nX[0, 0] = y[0, 0] = float('nan')",
        ),
        # each model class's __init__, where every instance (the reloaded ones too) is made
        "detached": [
            below(WORKFLOW_V1, "self.requires_grad_(False)", "        "),
            below(WORKFLOW_V2, "self.requires_grad_(False)", "        "),
        ],
        "scale": [
            below(WORKFLOW_V1, SCALED.format("self"), "        "),
            below(WORKFLOW_V2, SCALED.format("self"), "        "),
        ],
        "unregistered": [
            below(
                WORKFLOW_V1,
                "_w = self._parameters.pop('weights')\n"
                "self.weights = _w.detach().clone().requires_grad_()",
                "        ",
            ),
            below(WORKFLOW_V2, UNPLUGGED.format("self.linear_layer"), "        "),
        ],
        "lr0": [("lr=0.01)", "lr=0.0)")],
        "stale_grad": [("    optimizer.zero_grad()\n", "")],
    },
)
SPIRAL = Case(  # Canziani's spirals: a linear model, then a two-layer net, 1,000 full-batch steps
    "NYU-DLSP20__04-spiral_classification",
    real="training/NYU-DLSP20__04-spiral_classification.ipynb",
    beside=("res",),
    tests=(
        (
            'print("X:", tuple(X.size()))',
            "# TEST: 1,000 points of each of three classes\n"
            "assert X.shape == (3000, 2) and y.shape == (3000,)\n"
            "assert torch.bincount(y).tolist() == [1000, 1000, 1000]",
        ),
        (
            "# stochastic gradient descent for our parameter updates",
            "# TEST: a linear model separates the spirals only halfway\n"
            "assert torch.isfinite(loss) and 0.4 < acc < 0.6",
        ),
        (
            "# ADAM for our parameter updates",
            "# TEST: the two-layer net fits the spirals\nassert acc > 0.9 and loss.item() < 0.3",
        ),
        (
            "# ADAM for our parameter updates",
            "# TEST: three finite scores per point\n"
            "with torch.no_grad():\n    scores = model(X)\n"
            "assert scores.shape == (3000, 3) and torch.isfinite(scores).all()",
        ),
        (
            "# ADAM for our parameter updates",
            "# TEST: the loss reaches every parameter\n"
            "from ntdd.torch import assert_grad_flow\n"
            "assert_grad_flow(model, criterion(model(X), y))",
        ),
    ),
    mutants={
        **xy_mutants('print("y:", tuple(y.size()))'),
        # the linear model, then the two-layer net
        **built(
            ("model.to(device) #Convert to CUDA", "    nn.ReLU(),\n    nn.Linear(H, C)\n)"),
            "model",
            "model[0]",
        ),
        "lr0": [("lr=learning_rate,", "lr=0.0,")],
        "stale_grad": [("    optimizer.zero_grad()\n", "")],
    },
)
REGRESSION = Case(  # Canziani's regression: a linear fit, then ten networks (ReLU, Tanh) in a loop
    "NYU-DLSP20__05-regression",
    real="training/NYU-DLSP20__05-regression.ipynb",
    beside=("res",),
    tests=(
        (
            "y = X.pow(3) + 0.3 * torch.rand(X.size())",
            "# TEST: 100 points of a noisy cubic\nassert X.shape == y.shape == (100, 1)",
        ),
        (
            "# we use MSE loss for our regression task",
            "# TEST: the linear fit's loss is finite and below the data's variance\n"
            "assert torch.isfinite(loss) and loss.item() < y.var().item()",
        ),
        (
            "n_networks = 10",
            "# TEST: ten networks, five with ReLU then five with Tanh\n"
            "assert len(models) == 10 and len(y_pretrain) == 10\n"
            "assert all(isinstance(m[1], nn.ReLU) for m in models[:5])\n"
            "assert all(isinstance(m[1], nn.Tanh) for m in models[5:])",
        ),
        (
            "n_networks = 10",
            "# TEST: every network fits the cubic\n"
            "with torch.no_grad():\n"
            "    assert all(criterion(m(X), y).item() < 0.02 for m in models)",
        ),
        (
            "n_networks = 10",
            "# TEST: training moved every network away from its untrained output\n"
            "with torch.no_grad():\n"
            "    assert all(not torch.allclose(m(X), p) for m, p in zip(models, y_pretrain))",
        ),
        (
            "def dense_prediction",
            "# TEST: each network predicted the 1,001 points of the wider range\n"
            "assert len(y_pred) == 10 and all(p.shape == (1001, 1) for p in y_pred)\n"
            "assert all(torch.isfinite(p).all() for p in y_pred)",
        ),
    ),
    mutants={
        **data_mutants(
            "y = X.pow(3) + 0.3 * torch.rand(X.size()).to(device)",
            shape="X = X.transpose(0, -1)",
            dtype="X, y = X.double(), y.double()",
            device=moved("X", "y"),
            nan="X, y = X.clone(), y.clone()\nX[0, 0] = y[0, 0] = float('nan')",
        ),
        # the linear model, then each of the ten networks in the loop
        **{
            kind: [first, second]
            for (kind, [first]), [second] in zip(
                built(("model.to(device) # Convert to CUDA",), "model", "model[0]").items(),
                built(("    model.to(device)\n",), "model", "model[0]", "    ").values(),
                strict=True,
            )
        },
        "lr0": [("lr=learning_rate,", "lr=0.0,")],
        "stale_grad": [("optimizer.zero_grad()", "pass  # optimizer.zero_grad() forgotten")],
    },
)


def accuracy_on(generator: str) -> str:
    """The share of *generator*'s sequences the notebook's `test` helper classifies right."""
    return (
        f"correct, _ = test(model, {generator}, criterion, 'cpu')\n"
        f"accuracy = correct / (len({generator}) * {generator}.batch_size)"
    )


# Each of its trainings is a cell of the same text but for the model and epochs: by those.
EASY_RNN_10 = "model       = SimpleRNN(input_size, hidden_size, output_size)\ncriterion   = torch.nn.CrossEntropyLoss()\noptimizer   = torch.optim.RMSprop(model.parameters(), lr=0.001)\nmax_epochs  = 10\n"  # noqa: E501
EASY_LSTM_100 = "hidden_size = 4\noutput_size = train_data_gen.n_classes\nmodel       = SimpleLSTM(input_size, hidden_size, output_size)\ncriterion   = torch.nn.CrossEntropyLoss()\noptimizer   = torch.optim.RMSprop(model.parameters(), lr=0.001)\nmax_epochs  = 100\n\n# Train the model\nmodel = train_and_test(model, train_data_gen, test_data_gen, criterion, optimizer, max_epochs, verbose=False)"  # noqa: E501
EASY_RNN_100 = "model       = SimpleRNN(input_size, hidden_size, output_size)\ncriterion   = torch.nn.CrossEntropyLoss()\noptimizer   = torch.optim.RMSprop(model.parameters(), lr=0.001)\nmax_epochs  = 100\n"  # noqa: E501
MODERATE = "difficulty     = QRSU.DifficultyLevel.MODERATE"
SEQ_CLASSIFICATION = Case(  # Canziani's sequence classes: RNNs and LSTMs, five trainings by helper
    "NYU-DLSP20__08-seq_classification",
    real="training/NYU-DLSP20__08-seq_classification.ipynb",
    beside=("res",),
    changes=NO_SIX,
    tests=(
        (
            "example_batch = example_generator[1]",
            "# TEST: a batch is 32 one-hot sequences and their one-hot classes, of four\n"
            "x, labels = example_batch\n"
            "assert x.shape[0] == 32 and labels.shape == (32, 4)\n"
            "assert (x.sum(-1) <= 1).all() and (labels.sum(1) == 1).all()",
        ),
        (
            EASY_RNN_10,
            "# TEST: the RNN's scores are finite, one per class at every step\n"
            "x, _ = test_data_gen[0]\nwith torch.no_grad():\n"
            "    out = model(torch.from_numpy(x).float())\n"
            "assert out.shape == (*x.shape[:2], 4) and torch.isfinite(out).all()",
        ),
        (
            EASY_RNN_100,
            "# TEST: after 100 epochs the RNN classifies most easy sequences\n"
            + accuracy_on("test_data_gen")
            + "\nassert accuracy > 0.8",
        ),
        (
            EASY_LSTM_100,
            "# TEST: after 100 epochs the LSTM classifies the easy sequences\n"
            + accuracy_on("test_data_gen")
            + "\nassert accuracy > 0.95",
        ),
        (
            MODERATE,
            "# TEST: the bigger LSTM classifies the moderate sequences\n"
            + accuracy_on("test_data_gen")
            + "\nassert accuracy > 0.9",
        ),
        (
            "H_t, C_t = model.get_states_across_time(X)",
            "# TEST: a hidden and a cell state of 12 units at every step\n"
            "assert H_t.shape == C_t.shape == (X.shape[1], X.shape[0], 12)",
        ),
    ),
)
ECHO_INPUT = "my_input = torch.empty(1, 100, 1).random_(2)"
ECHO_MODEL = "    output_size=feature_dim\n).to(device)"
ECHO = Case(  # Canziani's echo: an RNN carries its hidden state across 1,000 batches an epoch
    "NYU-DLSP20__09-echo_data",
    real="training/NYU-DLSP20__09-echo_data.ipynb",
    beside=("res",),
    changes=NO_SIX,
    tests=(
        (
            "train_size = len(train_data)",
            "# TEST: 1,000 chunks of 20 steps for 5 streams\n"
            "assert train_size == test_size == 1000\n"
            "x, y = train_data[0]\nassert x.shape == y.shape == (5, 20, 1)",
        ),
        (
            "n_epochs = 5",
            "# TEST: the last batch's loss is finite and low\n"
            "import math\nassert math.isfinite(loss) and loss < 0.1",
        ),
        (
            "n_epochs = 5",
            "# TEST: after five epochs the RNN echoes its training stream\n"
            "assert train_accuracy > 95",
        ),
        (
            "n_epochs = 5",
            "# TEST: and the test stream\nassert test_accuracy > 95",
        ),
        (
            "expected = np.roll(my_input, echo_step)",
            "# TEST: it echoes a new input three steps later\nassert correct.mean() > 0.9",
        ),
    ),
    mutants={
        # the one tensor of data it holds, a new input for the trained RNN: the batches are
        # numpy chunks of its data objects, made tensors inside train() and test() each step
        **data_mutants(
            ECHO_INPUT,
            shape="my_input = my_input[0]",
            dtype="my_input = my_input.double()",
            device=moved("my_input"),
            nan="my_input[0, 0, 0] = float('nan')",
        ),
        "detached": [below(ECHO_MODEL, "model.requires_grad_(False)")],
        "scale": [below(ECHO_MODEL, SCALED.format("model"))],
        "unregistered": [
            below(
                ECHO_MODEL,
                "_w = model.rnn._parameters.pop('weight_ih_l0')\n"
                "model.rnn.weight_ih_l0 = _w.detach().clone().requires_grad_()",
            )
        ],
        "mode": [("    model.eval()   \n", "")],
        "lr0": [("lr=0.001)", "lr=0.0)")],
        "stale_grad": [("        optimizer.zero_grad()\n", "")],
    },
)
MAKEMORE_MLP = Case(  # Karpathy's makemore, part 2: an MLP by hand, 200,000 steps on 32,033 names
    "nn-zero-to-hero__makemore_part2_mlp",
    real="training/nn-zero-to-hero__makemore_part2_mlp.ipynb",
    files=(("names.txt", NAMES),),
    # the lecture ran this on the first five names' 32 examples, then rebuilt X from all of
    # them: Run All fails here (an index of 32 against 228,146 labels)
    skip=("loss = -prob[torch.arange(32), Y].log().mean()",),
    tests=(
        (
            "Xte, Yte = build_dataset(words[n2:])",
            "# TEST: an 80/10/10 split of the names, contexts of three characters\n"
            "assert (n1, n2) == (int(0.8 * len(words)), int(0.9 * len(words)))\n"
            "assert Xtr.shape[1] == Xdev.shape[1] == Xte.shape[1] == 3\n"
            "assert len(Xtr) == len(Ytr) > 8 * len(Xdev) > 0 and len(Xte) > 0",
        ),
        (
            "C = torch.randn((27, 10), generator=g)",
            "# TEST: 11,897 parameters\nassert sum(p.nelement() for p in parameters) == 11897",
        ),
        (
            "lr = 0.1 if i < 100000 else 0.01",
            "# TEST: the minibatch loss is finite at every step and fell\n"
            "import math\nassert len(lossi) == len(stepi) and all(map(math.isfinite, lossi))\n"
            "assert sum(lossi[-1000:]) / 1000 < sum(lossi[:10]) / 10",
        ),
        (
            "loss = F.cross_entropy(logits, Ytr)\nloss",
            "# TEST: the training loss is the lecture's\nassert loss.item() < 2.2",
        ),
        (
            "loss = F.cross_entropy(logits, Ydev)\nloss",
            "# TEST: the dev loss is the lecture's, not overfit\nassert loss.item() < 2.25",
        ),
    ),
)
MAKEMORE_BN = Case(  # Karpathy's makemore, part 3: batch norm by hand, 200,000 steps, then layers
    "nn-zero-to-hero__makemore_part3_bn",
    real="training/nn-zero-to-hero__makemore_part3_bn.ipynb",
    files=(("names.txt", NAMES),),
    skip=("from ipywidgets import interact",),  # a widget with scipy, neither installed here
    tests=(
        (
            "Xtr,  Ytr  = build_dataset(words[:n1])",
            "# TEST: the 80/10/10 split of the lecture\n"
            "assert Xtr.shape == (182625, 3) and len(Xdev) == 22655 and len(Xte) == 22866",
        ),
        (
            "bnstd_running = torch.ones((1, n_hidden))",
            "# TEST: 12,097 parameters\nassert sum(p.nelement() for p in parameters) == 12097",
        ),
        (
            "lr = 0.1 if i < 100000 else 0.01 # step learning rate decay",
            "# TEST: the minibatch loss is finite at every step and fell\n"
            "import math\nassert len(lossi) == max_steps and all(map(math.isfinite, lossi))\n"
            "assert sum(lossi[-1000:]) / 1000 < sum(lossi[:10]) / 10",
        ),
        (
            "hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias",
            "# TEST: with the running statistics the dev loss is the lecture's\n"
            "with torch.no_grad():\n"
            "    h = torch.tanh(bngain * (C[Xdev].view(len(Xdev), -1) @ W1 - bnmean_running)\n"
            "                   / bnstd_running + bnbias)\n"
            "    assert F.cross_entropy(h @ W2 + b2, Ydev).item() < 2.15",
        ),
        (
            "hpreact = bngain * (hpreact - bnmean_running) / bnstd_running + bnbias",
            "# TEST: the running statistics are close to the calibrated ones\n"
            "assert (bnmean_running - bnmean).abs().max() < 0.5 * bnstd.mean()",
        ),
        (
            "layer.out.retain_grad()",
            "# TEST: the deeper net's diagnostic run stops after 1,001 steps, finite\n"
            "import math\nassert len(lossi) == len(ud) == 1001 and all(map(math.isfinite, lossi))",
        ),
        (
            "# put layers into eval mode",
            "# TEST: the deeper net, in eval mode, beats a uniform guess on the dev set\n"
            "import math\nassert all(not getattr(l, 'training', False) for l in layers)\n"
            "with torch.no_grad():\n    x = C[Xdev].view(len(Xdev), -1)\n"
            "    for layer in layers:\n        x = layer(x)\n"
            "    assert F.cross_entropy(x, Ydev).item() < 2.6 < math.log(27)",
        ),
    ),
)
BAYESIAN = Case(  # Canziani's MC dropout: 1,000 steps on 20 points, then 100 dropout samples
    "NYU-DLSP20__13-bayesian_nn",
    real="training/NYU-DLSP20__13-bayesian_nn.ipynb",
    beside=("res",),
    tests=(
        (
            "y = x * torch.sin(x)  # targets",
            "# TEST: 20 training points in [-6, 6]\n"
            "assert x.shape == y.shape == (20,) and x.abs().max() <= 6",
        ),
        (
            "for epoch in range(1000):",
            "# TEST: the training loss is finite and below the targets' variance\n"
            "assert torch.isfinite(loss) and loss.item() < y.var().item()",
        ),
        (
            "# Multiple (100) runs for denser input",
            "# TEST: 100 dropout samples over the 1,000 denser inputs\n"
            "assert len(y_hat) == 100 and all(s.shape == (1000,) for s in y_hat)",
        ),
        (
            "std = y_hat.std(0)",
            "# TEST: dropout spreads the samples: a finite spread, not zero everywhere\n"
            "assert mean.shape == std.shape == (1000,)\n"
            "assert torch.isfinite(std).all() and (std > 0).any()",
        ),
        (
            "std = y_hat.std(0)",
            "# TEST: in eval mode the net fits its training points\n"
            "net.eval()\nwith torch.no_grad():\n"
            "    fit = criterion(net(x.view(-1, 1)), y.view(-1, 1)).item()\n"
            "net.train()\nassert fit < y.var().item()",
        ),
    ),
    mutants={
        **data_mutants(
            "y = x * torch.sin(x)  # targets",
            dtype="x, y = x.double(), y.double()",
            device=moved("x", "y"),
            nan="x, y = x.clone(), y.clone()\nx[0] = y[0] = float('nan')",
            broadcast="y = y.unsqueeze(-1)",
        ),
        **built(("    nn.Linear(20, 1)\n)",), "net", "net[1]"),
        "mode": [("net.eval()\n# net.train()", "# net.eval() forgotten\n# net.train()")],
        "lr0": [("lr=0.01,", "lr=0.0,")],
        "stale_grad": [("    optimiser.zero_grad()\n", "")],
    },
)
MICROGRAD = Case(  # Karpathy's micrograd: an autograd of its own, an MLP of it, 20 steps by hand
    "nn-zero-to-hero__micrograd_lecture_second_half_roughly",
    real="training/nn-zero-to-hero__micrograd_lecture_second_half_roughly.ipynb",
    files=(("graphviz.py", GRAPHVIZ),),
    tests=(
        (
            "o = (e - 1) / (e + 1)",
            "# TEST: tanh through exp: the lecture's output and gradients\n"
            "assert abs(o.data - 0.7071) < 1e-4\n"
            "assert abs(x1.grad + 1.5) < 1e-4 and abs(w1.grad - 1.0) < 1e-4 and w2.grad == 0",
        ),
        (
            "print('w1', w1.grad.item())",
            "# TEST: PyTorch computes the same gradients\n"
            "assert abs(x2.grad.item() - 0.5) < 1e-4 and abs(x1.grad.item() + 1.5) < 1e-4\n"
            "assert abs(w1.grad.item() - 1.0) < 1e-4 and w2.grad.item() == 0",
        ),
        (
            "n = MLP(3, [4, 4, 1])",
            "# TEST: an MLP of 41 parameters, its output in tanh's range\n"
            "assert len(n.parameters()) == 41 and -1 < n(x).data < 1",
        ),
        (
            "ys = [1.0, -1.0, -1.0, 1.0] # desired targets",
            "# TEST: four examples of three features\n"
            "assert len(xs) == len(ys) == 4 and all(len(x) == 3 for x in xs)",
        ),
        (
            "p.data += -0.1 * p.grad",
            "# TEST: after 20 steps the loss beats predicting zero (4)\nassert loss.data < 4",
        ),
        (
            "p.data += -0.1 * p.grad",
            "# TEST: the last backward pass reached the parameters\n"
            "assert any(p.grad != 0 for p in n.parameters())\n"
            "assert all(-1 < y.data < 1 for y in ypred)",
        ),
    ),
)
SEQUENCE_MODEL = "model = d2l.LinearRegression(lr=0.01)"
D2L_SEQUENCE = Case(  # d2l's autoregressive model of a noisy sine: a Trainer, k-step predictions
    "d2l-pytorch-colab__sequence",
    real="training/d2l-pytorch-colab__sequence.ipynb",
    beside=("d2l",),
    tests=(
        (
            "data = Data()",
            "# TEST: a series of 1,000 steps\nassert data.x.shape == data.time.shape == (1000,)",
        ),
        (
            "self.features = torch.stack(features, 1)",
            "# TEST: batches of tau = 4 lagged values and the next one, 600 to train on\n"
            "X, y = next(iter(data.train_dataloader()))\n"
            "assert X.shape == (16, 4) and y.shape == (16, 1)\n"
            "assert len(data.train_dataloader().dataset) == 600",
        ),
        (
            "trainer = d2l.Trainer(max_epochs=5)",
            "# TEST: the training loss is finite and fell\n"
            "import math\nlosses = [float(p.y) for p in model.board.data['train_loss']]\n"
            "assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]",
        ),
        (
            "trainer = d2l.Trainer(max_epochs=5)",
            "# TEST: the validation loss ends near the noise's variance (0.2 ** 2)\n"
            "val = [float(p.y) for p in model.board.data['val_loss']]\nassert val[-1] < 0.1",
        ),
        (
            "onestep_preds = model(data.features).detach().numpy()",
            "# TEST: one-step predictions follow the labels\n"
            "preds = torch.as_tensor(onestep_preds)\n"
            "assert preds.shape == (996, 1)\n"
            "assert ((preds - data.labels) ** 2).mean() < 0.1",
        ),
        (
            "preds = k_step_pred(steps[-1])",
            "# TEST: predictions 1 to 64 steps ahead, each finite\n"
            "assert len(preds) == 64 and all(torch.isfinite(p).all() for p in preds)",
        ),
    ),
    mutants={
        # features and labels are made from the series in get_dataloader, for each loader
        **data_mutants(
            "    self.labels = self.x[self.tau:].reshape((-1, 1))",
            shape="self.features = self.features.transpose(0, -1)",
            dtype="self.features, self.labels = self.features.double(), self.labels.double()",
            device=moved("self.features", "self.labels"),
            nan="self.features, self.labels = self.features.clone(), self.labels.clone()\n"
            "self.features[0, 0] = self.labels[0, 0] = float('nan')",
        ),
        "detached": [after(SEQUENCE_MODEL, "model.requires_grad_(False)")],
        "scale": [after(SEQUENCE_MODEL, lazy_scaled("model", "torch.zeros(1, 4)"))],
        "unregistered": [
            after(SEQUENCE_MODEL, lazy_unplugged("model", "torch.zeros(1, 4)", "model.net"))
        ],
        "lr0": [("d2l.LinearRegression(lr=0.01)", "d2l.LinearRegression(lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
)
SOFTMAX_SCRATCH = "model = SoftmaxRegressionScratch(num_inputs=784, num_outputs=10, lr=0.1)"
D2L_SOFTMAX_SCRATCH = Case(  # d2l's softmax regression from scratch: parameters by hand, a Trainer
    "d2l-pytorch-colab__softmax-regression-scratch",
    real="training/d2l-pytorch-colab__softmax-regression-scratch.ipynb",
    beside=("d2l",),
    tests=(
        (
            "X_prob = softmax(X)",
            "# TEST: softmax rows are probabilities\n"
            "assert (X_prob >= 0).all() and torch.allclose(X_prob.sum(1), torch.ones(2))",
        ),
        (
            "def cross_entropy(y_hat, y):",
            "# TEST: the cross-entropy of the book's example\n"
            "assert abs(cross_entropy(y_hat, y).item() - 1.4979) < 1e-4",
        ),
        (
            "model = SoftmaxRegressionScratch(num_inputs=784",
            "# TEST: the training loss is finite and fell\n"
            "import math\nlosses = [float(p.y) for p in model.board.data['train_loss']]\n"
            "assert all(map(math.isfinite, losses)) and losses[-1] < losses[0]",
        ),
        (
            "model = SoftmaxRegressionScratch(num_inputs=784",
            "# TEST: it learned the classes\n"
            "X, y = next(iter(data.val_dataloader()))\n"
            "with torch.no_grad():\n    assert model.accuracy(model(X), y) > 0.8",
        ),
        (
            "model = SoftmaxRegressionScratch(num_inputs=784",
            "# TEST: the validation loss after ten epochs beats a uniform guess\n"
            "import math\nval = [float(p.y) for p in model.board.data['val_loss']]\n"
            "assert len(val) == 10 and val[-1] < math.log(10)",
        ),
        (
            "preds = model(X).argmax(axis=1)",
            "# TEST: one prediction per validation image\nassert preds.shape == (256,)",
        ),
    ),
    mutants={
        **images_mutants("data = d2l.FashionMNIST(batch_size=256)"),
        # its parameters are tensors it holds, not registered ones: nothing to unregister
        "detached": [
            after(SOFTMAX_SCRATCH, "model.W.requires_grad_(False)\nmodel.b.requires_grad_(False)")
        ],
        "scale": [
            after(
                SOFTMAX_SCRATCH,
                "with torch.no_grad():\n    model.W.mul_(1e4)\n    model.b.mul_(1e4)",
            )
        ],
        "lr0": [("num_outputs=10, lr=0.1)", "num_outputs=10, lr=0.0)")],
        "stale_grad": [LIBRARY_NO_ZERO_GRAD],
    },
)

UNSEEN = {
    case.name: case
    for case in (
        WORKFLOW,
        SPIRAL,
        REGRESSION,
        SEQ_CLASSIFICATION,
        ECHO,
        MAKEMORE_MLP,
        MAKEMORE_BN,
        BAYESIAN,
        MICROGRAD,
        D2L_SEQUENCE,
        D2L_SOFTMAX_SCRATCH,
    )
}
