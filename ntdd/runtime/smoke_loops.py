"""What smoke mode's capped setup cells call as they run: loops cut, counts capped.

`ntdd.runtime.smoke` writes calls of `loop`, `trange`, `examples` and `value`
into a setup cell where it caps something; each checks its value as the cell
runs, cuts it only where it trains, and notes what it cut, at the cell and
line, in the active smoke run (`ntdd.runtime.smoke_run.ACTIVE`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ntdd.runtime.smoke_run import ACTIVE

STOPPED = "a training loop stopped after {cap} of {total}"
CUT = "a Dataset's pass cut to {cap} of {total} examples"


@dataclass
class Loop:
    """A training loop's values: at most *cap* of them once its body is seen to train."""

    values: Any  # a range, or a Dataset
    cap: int
    where: str
    sure: bool = False  # its body calls `.backward()` or `.step()`
    cut: str = STOPPED  # the note of the cut

    def __len__(self) -> int:
        return len(self.values)  # what `tqdm` shows as the total: the loop as written

    def __iter__(self) -> Iterator[Any]:
        run = ACTIVE.get()
        start = run.work if run is not None else 0
        for n, item in enumerate(self.values):
            if n >= self.cap and run is not None and (self.sure or run.work > start):
                run.note(self.where, self.cut.format(cap=self.cap, total=len(self)))
                return
            yield item


def loop(values: Any, cap: int, where: str, sure: bool = False) -> Any:
    """`for epoch in range(n)`, capped; anything but a range runs as written."""
    return Loop(values, cap, where, sure) if isinstance(values, range) else values


def trange(
    function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], cap: int, where: str, sure: bool
) -> Any:
    """`trange(n, ...)`, capped: tqdm's own over a capped `range(n)`."""
    tqdm = getattr(sys.modules.get(getattr(function, "__module__", ""), None), "tqdm", None)
    if not callable(tqdm):
        return function(*args, **kwargs)  # a `trange` of the notebook's own
    return tqdm(Loop(range(*args), cap, where, sure), **kwargs)


def examples(values: Any, cap: int, where: str, sure: bool = False) -> Any:
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
    return Loop(values, cap, where, sure, CUT) if total > cap else values


def value(given: Any, cap: int, where: str, name: str) -> Any:
    """`max_epochs=10`, capped at *cap*; anything but an integer as written."""
    if isinstance(given, bool) or not isinstance(given, int) or given <= cap:
        return given
    run = ACTIVE.get()
    if run is not None:
        run.note(where, f"{name}={given} capped to {cap}")
    return cap
