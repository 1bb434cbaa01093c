"""The fault set of `ntdd faults`: the field's common PyTorch mistakes, injected.

Each fault acts where the bug it models would sit, and says what it changed;
a fault with nothing to change in a notebook says why it does not apply:

- *creation*: where torch makes the object, or where the notebook calls it
  (`creation`, `models`): optimizers made with lr 0, models made frozen or
  ×1e4, `model.eval()` left out; the run is patched from before its first cell;
- *data*: on the notebook's data, where its setup code first uses it (`uses`,
  with the changes of `data`);
- *inject*: on the hand-written models each setup cell made (`training`).

What a test's own code makes or calls is left alone: no bug in the notebook
touches it. A fault changes each object once: *seen* holds what it already
changed (or made). Nothing here touches a file or imports pytest; torch is
only used when the notebook itself has imported it.

Each fault also carries the check that would have caught it, for the report
to suggest when no test did, and the names that make that check, for the
report to say so when the notebook makes it already.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ntdd.faults import creation, training
from ntdd.faults.data import CHANGES, Change
from ntdd.faults.finding import Namespace, NotApplicable, Seen

__all__ = ["FAULTS", "Fault", "NotApplicable", "Seen"]


@dataclass(frozen=True)
class Fault:
    """One injected mistake: what it does, when it applies, what check would catch it."""

    name: str
    description: str  # what it does, in a few words
    applies_to: str  # what the notebook must have for it to apply
    suggestion: str  # a check that would catch it (Markdown): an ntdd.torch helper or an idiom
    inject: Callable[[Namespace, Seen], list[str]] | None  # after each setup cell; NotApplicable
    creation: Callable[[Any, creation.Made], list[creation.Undo]] | None = None  # torch patches
    data: Change | None = None  # a data fault: on the data where it is first used
    checks: tuple[str, ...] = ()  # names in a test cell that make the suggested check
    missing: str = ""  # why it does not apply, where "no <applies_to> was made" says it badly


FAULTS: dict[str, Fault] = {
    f.name: f
    for f in (
        Fault(
            "shape",
            "swap the first and last dims of input tensors (or drop the first)",
            "an input tensor with two or more dims",
            "assert the shapes in and out: `assert_shape(model(X), (len(X), n_out))`",
            None,
            data=CHANGES["shape"],
            checks=("assert_shape",),
        ),
        Fault(
            "dtype",
            "cast floating-point inputs to float64 (float64 ones to float32), not the model",
            "a floating-point input tensor",
            "`assert_dtype(X, 'float32')`, or `assert model(X).dtype == torch.float32`",
            None,
            data=CHANGES["dtype"],
            checks=("assert_dtype", ".dtype"),
        ),
        Fault(
            "device",
            "move inputs off the model's device: between cuda and cpu, or to meta without CUDA",
            "an input tensor",
            "`assert_same_device(model, X, y)`",
            None,
            data=CHANGES["device"],
            checks=("assert_same_device",),
        ),
        Fault(
            "detached",
            "cut the graph: parameters made with requires_grad=False",
            "a model with trainable parameters",
            "`assert_grad_flow(model, loss)`: every trainable parameter gets a gradient",
            training.detached,
            creation.detached,
            checks=("assert_grad_flow", ".grad"),
        ),
        Fault(
            "mode",
            "leave out the notebook's model.eval() calls",
            "a model with Dropout, normalisation or other mode-dependent layers "
            "that the notebook switches to eval mode",
            "`assert_mode(model, train=False)` before inference",
            None,
            creation.mode,
            checks=("assert_mode", ".training"),
            missing="the notebook never calls eval() on a model with Dropout, normalisation "
            "or other mode-dependent layers",
        ),
        Fault(
            "unregistered",
            "turn a parameter into a plain tensor attribute that state_dict() drops",
            "a model with parameters",
            "`assert_state_complete(model)`, or load `model.state_dict()` into a fresh model",
            None,
            creation.unregistered,
            checks=("assert_state_complete", "state_dict"),
        ),
        Fault(
            "nan",
            "set one element of each floating-point input to NaN",
            "a floating-point input tensor",
            "`assert_finite(model(X))`, and on the loss and the gradients",
            None,
            data=CHANGES["nan"],
            checks=("assert_finite", "isfinite", "isnan"),
        ),
        Fault(
            "scale",
            "initialise every trainable parameter ×1e4: activations and gradients explode",
            "a model with trainable parameters",
            "bound the outputs (`assert model(X).abs().max() < 100`) or the grad/param "
            "ratios of `assert_grad_flow(model, loss)`",
            training.scale,
            creation.scale,
            checks=(".abs().max()", "assert_grad_flow"),
        ),
        Fault(
            "labels",
            "shuffle the class indices of 1-D integer targets (a seeded permutation)",
            "a 1-D integer tensor of class indices",
            "assert the accuracy beats chance: `(model(X).argmax(1) == y).float().mean() > 0.9`",
            None,
            data=CHANGES["labels"],
            checks=("accuracy", "argmax"),
        ),
        Fault(
            "lr0",
            "make every optimizer with learning rate 0: training no longer changes the model",
            "an optimizer",
            "assert one optimizer step lowers the loss (or changes the parameters)",
            None,
            creation.lr0,
            checks=(".step()",),
        ),
        Fault(
            "stale_grad",
            "make optimizer.zero_grad() a no-op: gradients accumulate across steps",
            "an optimizer",
            "assert two steps on one batch get equal gradients, each after `opt.zero_grad()`",
            None,
            creation.stale_grad,
            checks=(".grad",),
        ),
        Fault(
            "broadcast",
            "reshape 1-D targets (N,) to (N, 1), which a loss broadcasts to (N, N)",
            "a 1-D tensor (targets)",
            "assert the loss's inputs agree: `assert model(X).shape == y.shape`",
            None,
            data=CHANGES["broadcast"],
            checks=("assert_shape",),
        ),
    )
}
