"""The fault set of `ntdd faults`: the field's common PyTorch mistakes, injected.

Each fault acts where the bug it models would sit, and says what it changed;
a fault with nothing to change in a notebook says why it does not apply:

- *made*: where torch makes the object (`creation`): optimizers made with
  lr 0, parameters made frozen; the run is patched from before its first cell;
- `DATA`: on the data the notebook first makes, once, after the first setup
  cell that binds tensors it can change (and inside the datasets, loaders,
  dicts and lists that hold them);
- `CELL`: on the models each setup cell made (hand-written ones too);
- `TEST`: as each test reaches its cell (a model's mode at inference).

A fault changes each object once: *seen* holds what it already changed (or
made). Nothing here touches a file or imports pytest; torch is only used
when the notebook itself has imported it.

Each fault also carries the check that would have caught it, for the report
to suggest when no test did.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ntdd.faults import creation, data, training
from ntdd.faults.finding import Namespace, NotApplicable, Seen

DATA, CELL, TEST = "data", "cell", "test"  # when a fault's `inject` acts on the namespace

__all__ = ["FAULTS", "Fault", "NotApplicable", "Seen"]


@dataclass(frozen=True)
class Fault:
    """One injected mistake: what it does, when it applies, what check would catch it."""

    name: str
    description: str  # what it does, in a few words
    applies_to: str  # what the notebook must have for it to apply
    suggestion: str  # a check that would catch it (Markdown): an ntdd.torch helper or an idiom
    inject: Callable[[Namespace, Seen], list[str]] | None  # what it changed; NotApplicable
    at: str = CELL  # when `inject` acts: DATA, CELL or TEST
    creation: Callable[[Any, creation.Made], list[creation.Undo]] | None = None  # torch patches


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "shape",
            "swap the first and last dims of input tensors (or drop the first)",
            "an input tensor with two or more dims",
            "assert the shapes in and out: `assert_shape(model(X), (len(X), n_out))`",
            data.shape,
            DATA,
        ),
        Fault(
            "dtype",
            "cast floating-point inputs to float64 (float64 ones to float32), not the model",
            "a floating-point input tensor",
            "`assert_dtype(X, 'float32')`, or `assert model(X).dtype == torch.float32`",
            data.dtype,
            DATA,
        ),
        Fault(
            "device",
            "move inputs off the model's device: between cuda and cpu, or to meta without CUDA",
            "an input tensor",
            "`assert_same_device(model, X, y)`",
            data.device,
            DATA,
        ),
        Fault(
            "detached",
            "cut the graph: parameters made with requires_grad=False",
            "a model with trainable parameters",
            "`assert_grad_flow(model, loss)`: every trainable parameter gets a gradient",
            training.detached,
            CELL,
            creation.detached,
        ),
        Fault(
            "mode",
            "flip models between train and eval mode",
            "a model with Dropout, normalisation or other mode-dependent layers",
            "`assert_mode(model, train=False)` before inference",
            training.mode,
            TEST,
        ),
        Fault(
            "unregistered",
            "turn a parameter into a plain tensor attribute that state_dict() drops",
            "a model with parameters",
            "`assert_state_complete(model)`, or load `model.state_dict()` into a fresh model",
            training.unregistered,
            CELL,
            creation.unregistered,
        ),
        Fault(
            "nan",
            "set one element of each floating-point input to NaN",
            "a floating-point input tensor",
            "`assert_finite(model(X))`, and on the loss and the gradients",
            data.nan,
            DATA,
        ),
        Fault(
            "scale",
            "initialise every trainable parameter ×1e4: activations and gradients explode",
            "a model with trainable parameters",
            "bound the outputs (`assert model(X).abs().max() < 100`) or the grad/param "
            "ratios of `assert_grad_flow(model, loss)`",
            training.scale,
            CELL,
            creation.scale,
        ),
        Fault(
            "labels",
            "permute the class indices of 1-D integer targets",
            "a 1-D integer tensor of class indices",
            "assert the accuracy beats chance: `(model(X).argmax(1) == y).float().mean() > 0.9`",
            data.labels,
            DATA,
        ),
        Fault(
            "lr0",
            "make every optimizer with learning rate 0: training no longer changes the model",
            "an optimizer",
            "assert one optimizer step lowers the loss (or changes the parameters)",
            None,
            CELL,
            creation.lr0,
        ),
        Fault(
            "stale_grad",
            "make optimizer.zero_grad() a no-op: gradients accumulate across steps",
            "an optimizer",
            "assert two steps on one batch get equal gradients, each after `opt.zero_grad()`",
            None,
            CELL,
            creation.stale_grad,
        ),
        Fault(
            "broadcast",
            "reshape 1-D targets (N,) to (N, 1), which a loss broadcasts to (N, N)",
            "a 1-D tensor (targets)",
            "assert the loss's inputs agree: `assert model(X).shape == y.shape`",
            data.broadcast,
            DATA,
        ),
    )
}
