"""Whether gradients reach every trainable parameter: `assert_grad_flow` and its report."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ntdd.torch.common import check_module, check_tensor, fail, import_torch, model_label
from ntdd.torch.tensors import shape_text

if TYPE_CHECKING:
    import torch
    from torch import nn


@dataclass(frozen=True)
class GradFlowRow:
    """One trainable parameter's gradient: None where it has no grad."""

    name: str
    grad_norm: float | None
    param_norm: float
    ratio: float | None  # grad_norm / param_norm: the relative size of one update step
    zero_rate: float | None  # the share of gradient entries that are exactly zero
    dead_rows: float | None = None  # the share of rows (output units) whose grad is all zero


@dataclass(frozen=True)
class GradFlowReport:
    """The gradients of a model's trainable parameters, one row each; `str()` is a table."""

    rows: tuple[GradFlowRow, ...]

    def __getitem__(self, name: str) -> GradFlowRow:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(name)

    def __str__(self) -> str:
        table = [["parameter", "grad norm", "param norm", "grad/param", "zero grads", "dead rows"]]
        for r in self.rows:
            norms = [_number_or_none(x, ".3g") for x in (r.grad_norm, r.param_norm, r.ratio)]
            table.append(
                [
                    r.name,
                    *norms,
                    _number_or_none(r.zero_rate, ".1%"),
                    _number_or_none(r.dead_rows, ".0%"),
                ]
            )
        widths = [max(map(len, column)) for column in zip(*table, strict=True)]
        lines = []
        for row in table:  # the name left-aligned, the numbers right-aligned
            cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
            lines.append("  ".join([row[0].ljust(widths[0]), *cells[1:]]))
        return "\n".join(lines)


def _number_or_none(x: float | None, spec: str) -> str:
    return "none" if x is None else format(x, spec)


def _grad_row(name: str, param: torch.Tensor) -> GradFlowRow:
    pnorm = float(param.detach().norm())
    if param.grad is None:
        return GradFlowRow(name, None, pnorm, None, None)
    grad = param.grad.detach()
    gnorm = float(grad.norm())
    ratio = gnorm / pnorm if pnorm else math.inf if gnorm else math.nan
    zero_rate = float((grad == 0).sum()) / grad.numel() if grad.numel() else 0.0
    dead_rows = 0.0
    if grad.numel():  # a row: one output unit's weights (one entry of a bias)
        by_row = grad.reshape(grad.shape[0], -1) if grad.ndim else grad.reshape(1, 1)
        dead_rows = float((by_row == 0).all(dim=1).sum()) / by_row.shape[0]
    return GradFlowRow(name, gnorm, pnorm, ratio, zero_rate, dead_rows)


def _backward(model: nn.Module, loss: torch.Tensor) -> None:
    """`loss.backward()` into freshly cleared grads, failing on a cut graph or a non-scalar."""
    if loss.grad_fn is None:
        fail(
            "the loss has no grad_fn: the graph is cut (a .detach(), torch.no_grad(), "
            "or parameters with requires_grad=False)"
        )
    if loss.numel() != 1:
        fail(f"the loss has shape {shape_text(tuple(loss.shape))}: reduce it to one number")
    model.zero_grad(set_to_none=True)
    loss.backward()  # type: ignore[no-untyped-call]


def assert_grad_flow(
    model: nn.Module,
    loss: torch.Tensor | None = None,
    *,
    max_dead_rows: float = 0.5,
    max_zero_rate: float | None = None,
) -> GradFlowReport:
    """Check that every trainable parameter gets a gradient, and not a dead one.

    With *loss*, its grads are recomputed (`zero_grad()`, then `loss.backward()`);
    without, the grads already there are read. A parameter without a grad is cut
    off from the loss. One whose grad is all zeros, or more than *max_dead_rows*
    of whose rows are (a row is an output unit's weights: all zero when the unit
    passed no gradient for any example, a ReLU off on the whole batch), sits
    behind a dead path. A healthy ReLU net has a few such units on a small batch,
    so single rows and single zeros pass; *max_zero_rate* also bounds the share
    of exactly zero entries. Returns the report for further checks.
    """
    __tracebackhide__ = True  # a failure shows the caller's line
    check_module(model)
    if loss is not None:
        check_tensor(loss, "loss")
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not params:
        total = len(list(model.parameters()))
        fail(f"{model_label(model)}: none of its {total} parameters has requires_grad=True")
    if loss is not None:
        _backward(model, loss)
    with import_torch().no_grad():
        report = GradFlowReport(tuple(_grad_row(n, p) for n, p in params))
    missing = [r.name for r in report.rows if r.zero_rate is None]
    problems = [f"no grad: {', '.join(missing)}"] if missing else []
    problems += _dead_grads(report, max_dead_rows, max_zero_rate)
    if problems:
        header = f"gradients do not reach every parameter of {model_label(model)}:"
        raise AssertionError("\n".join([header, *(f"  {p}" for p in problems), str(report)]))
    return report


def _dead_grads(
    report: GradFlowReport, max_dead_rows: float, max_zero_rate: float | None
) -> list[str]:
    """The parameters whose grads are dead: all zero, too many zero rows, too many zeros."""
    rows = [r for r in report.rows if r.zero_rate is not None]
    problems = []
    whole = [r.name for r in rows if r.zero_rate == 1.0]
    if whole:
        problems.append(f"all-zero grads: {', '.join(whole)}")
    dead_rows = [
        f"{r.name} ({r.dead_rows:.0%} of its rows)"
        for r in rows
        if r.zero_rate != 1.0 and r.dead_rows is not None and r.dead_rows > max_dead_rows
    ]
    if dead_rows:
        problems.append(
            f"more than {max_dead_rows:.0%} of the rows get all-zero grads (output units that "
            f"passed no gradient for any example: dead ReLUs, a zeroed path): "
            + ", ".join(dead_rows)
        )
    if max_zero_rate is not None:
        many = [
            f"{r.name} ({r.zero_rate:.0%} zero)"
            for r in rows
            if r.zero_rate is not None and r.zero_rate != 1.0 and r.zero_rate > max_zero_rate
        ]
        if many:
            problems.append(f"more than {max_zero_rate:.0%} zero grads: {', '.join(many)}")
    return problems
