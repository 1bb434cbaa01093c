"""What smoke mode's capped setup cells call as they run: loops cut, counts capped.

`ntdd.runtime.smoke` writes calls of `loop`, `trange`, `examples`, `value`,
`length` and `reached` into a setup cell where it caps something; each
checks its value as the cell runs and acts only where the loop trains, and
notes what it cut or left alone, at the cell and line, in the active smoke
run (`ntdd.runtime.smoke_run.ACTIVE`).

A loop is cut to its first passes and its last one, so that what a full
run meets at its end (`epoch == epochs - 1`, `(epoch + 1) % 5 == 0`) a
smoke run meets too; and only where its passes are passes of one training
(a pass that makes an optimizer starts a training of its own: a loop over
models or settings runs in full) and where the passes it would skip take
long enough to be worth it: the CPU time of its first passes tells, once a
session for each loop, so that the tests of a run agree.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ntdd.runtime.smoke_run import ACTIVE, LEFT_ALONE, SmokeRun

STOPPED = "a training loop cut to {kept} of {total} passes (its first and its last)"
STOPPED_ONE = "a training loop stopped after 1 of {total} passes"
CUT = "a Dataset's pass cut to {kept} of {total} examples (its first and its last)"
CUT_ONE = "a Dataset's pass cut to 1 of {total} examples"
TRAININGS = (
    f"{LEFT_ALONE}each pass makes an optimizer, a training of its own (a loop over models or "
    "settings, not a training's passes)"
)


Blocks = tuple[tuple[str, str], ...]  # a loop body's blocks: (place, the block around it)


@dataclass
class Loop:
    """A training loop's values: its first passes and its last, once its passes are seen
    to train one model and the rest would take long enough to be worth cutting."""

    values: Any  # a range, or a Dataset: indexable, with a length
    cap: int
    where: str
    sure: bool = False  # its body calls `.backward()` or `.step()`
    blocks: Blocks = ()  # its body's blocks, each named if it never runs
    cut: tuple[str, str] = (STOPPED, STOPPED_ONE)  # the note of the cut
    made: bool = field(default=False, init=False)  # a pass made an optimizer

    def __len__(self) -> int:
        return len(self.values)  # what `tqdm` shows as the total: the loop as written

    def __iter__(self) -> Iterator[Any]:
        run = ACTIVE.get()
        total = len(self.values)
        if run is None or total <= self.cap:
            yield from self.values
            return
        kept = max(self.cap - 1, 1)
        start, started = run.work, time.process_time()
        run.loops.append(self)
        try:
            for n in range(kept):
                yield self.values[n]
            spent = time.process_time() - started
            reason = self._left_alone(run, start, spent / kept * (total - self.cap))
            if reason is None:
                yield from self._cut(run, total)
                return
            if reason:
                run.note(self.where, reason)
            if isinstance(self.values, range):
                yield from self.values[kept:]  # at C speed: most loops run this way
            else:
                for n in range(kept, total):
                    yield self.values[n]
        finally:
            if self in run.loops:
                run.loops.remove(self)

    def _left_alone(self, run: SmokeRun, start: int, rest: float) -> str | None:
        """None: cut it. Else why not: "" where its body does not train."""
        if not (self.sure or run.work > start):
            return ""
        if self.made:
            return TRAININGS
        if run.short.setdefault(self.where, rest < run.caps.min_seconds):
            return (
                f"{LEFT_ALONE}the passes a cut would skip take about {rest:.2g} s, "
                f"under {run.caps.min_seconds:g} s (--ntdd-smoke-min-seconds)"
            )
        return None

    def _cut(self, run: SmokeRun, total: int) -> Iterator[Any]:
        many, one = self.cut
        if self.cap > 1:
            yield self.values[total - 1]
        run.note(self.where, (many if self.cap > 1 else one).format(kept=self.cap, total=total))
        run.watch(self.blocks)


def loop(values: Any, cap: int, where: str, sure: bool, blocks: Blocks) -> Any:
    """`for epoch in range(n)`, capped; anything but a range runs as written."""
    return Loop(values, cap, where, sure, blocks) if isinstance(values, range) else values


def trange(
    function: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    cap: int,
    where: str,
    sure: bool,
    blocks: Blocks,
) -> Any:
    """`trange(n, ...)`, capped: tqdm's own over a capped `range(n)`."""
    tqdm = getattr(sys.modules.get(getattr(function, "__module__", ""), None), "tqdm", None)
    if not callable(tqdm):
        return function(*args, **kwargs)  # a `trange` of the notebook's own
    return tqdm(loop(range(*args), cap, where, sure, blocks), **kwargs)


def examples(values: Any, cap: int, where: str, sure: bool, blocks: Blocks) -> Any:
    """`for x, y in train_set:`, capped where *values* is a torch Dataset of more than *cap*
    examples (a DataLoader is not one); anything else runs as written."""
    data = sys.modules.get("torch.utils.data")
    dataset = getattr(data, "Dataset", None)
    if not isinstance(dataset, type) or not isinstance(values, dataset):
        return values
    found: Any = values
    try:
        total = len(found)
    except TypeError:  # no length: an iterable dataset, left whole
        return values
    if total <= cap:
        return values
    return _Examples(values, cap, where, sure, blocks, cut=(CUT, CUT_ONE))


class _Examples(Loop):
    """A Dataset's pass a training loop makes itself: what it saw is what `len()` reads."""

    def _cut(self, run: SmokeRun, total: int) -> Iterator[Any]:
        yield from super()._cut(run, total)
        run.passed(self.values, min(self.cap, total))


def value(given: Any, cap: int, where: str, name: str) -> Any:
    """`max_epochs=10`, capped at *cap*; anything but an integer as written."""
    if isinstance(given, bool) or not isinstance(given, int) or given <= cap:
        return given
    run = ACTIVE.get()
    if run is not None:
        run.note(where, f"{name}={given} capped to {cap}")
    return cap


def length(values: Any, where: str, said: str) -> int:
    """`len(train_loader.dataset)` divided into a sum: where smoke mode cut the last pass
    over that Dataset, the examples that pass yielded, so a mean stays a mean."""
    whole = len(values)
    run = ACTIVE.get()
    seen = run.seen(values) if run is not None else None
    if run is None or seen is None:
        return whole
    if seen.examples is None:
        run.note(
            where,
            f"{said} divides a sum over a pass smoke mode cut by all {whole} examples: the "
            "quantity does not keep its meaning in smoke mode (its batches' sizes are unknown)",
        )
        return whole
    run.note(where, f"{said} read as the {seen.examples} examples of its cut pass, not {whole}")
    return seen.examples


def reached(where: str) -> None:
    """A block inside a capped loop ran."""
    run = ACTIVE.get()
    if run is not None:
        run.reached.add(where)
