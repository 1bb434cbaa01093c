"""Names a setup cell may not rebind: the device under test, and test-only parameters.

A training notebook seldom has a `parameters` cell; it says `epochs = 100`
where it trains. A parameter given for the run (`--ntdd-param epochs=1`,
`[tool.ntdd.parameters]`) therefore pins its name: a top-level assignment of
it in a setup cell below the point where the parameters go in keeps the
pinned value, and the rest of the cell runs. A name no setup cell assigns
with `=` (as papermill's parameters are assigned) is a typo until shown
otherwise, even where a loop binds it (`for epoch in range(epochs)`): an
error naming the closest names that are.
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from ntdd.cells.cell_code import to_python
from ntdd.cells.cell_names import assigned_names, bound_names
from ntdd.values import DEVICE


class PinnedNames(MutableMapping[str, Any]):
    """Module-level names of a setup cell, with some of them pinned.

    `device` is moved to the device under test, so that the usual
    `device = torch.device("cuda" if ... else "cpu")` builds the model on the
    device the test runs for; a pinned parameter keeps its value. Every other
    name goes straight to the module's globals, so that functions defined in
    the cell see them.
    """

    def __init__(
        self, namespace: dict[str, Any], device: str | None, pinned: frozenset[str] = frozenset()
    ) -> None:
        self._ns = namespace
        self._device = device
        self._pinned = pinned

    def __getitem__(self, key: str) -> Any:
        return self._ns[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self._pinned:
            return  # the parameter's value stays; the cell's right-hand side has run
        if key == DEVICE and self._device is not None:
            value = pin_device(value, self._device)
        self._ns[key] = value

    def __delitem__(self, key: str) -> None:
        del self._ns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ns)

    def __len__(self) -> int:
        return len(self._ns)


def pin_device(value: Any, device: str) -> Any:
    """*value* moved to *device* if it names a device (a string or `torch.device`)."""
    if isinstance(value, str):
        return device
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.device):
        return torch.device(device)
    return value


@functools.lru_cache(maxsize=4096)
def bound(code: str) -> frozenset[str]:
    """The names a setup cell's top level binds (none, for a cell that does not parse)."""
    try:
        return frozenset(bound_names(to_python(code).tree))
    except SyntaxError:
        return frozenset()


@functools.lru_cache(maxsize=4096)
def assigned(code: str) -> frozenset[str]:
    """The names a setup cell's top level assigns with `=`: the parameters it has."""
    try:
        return frozenset(assigned_names(to_python(code).tree))
    except SyntaxError:
        return frozenset()


def pins(cells: Iterable[tuple[int, str]], names: Iterable[str]) -> dict[int, frozenset[str]]:
    """For each setup cell (index, code) that binds one of *names*: those it binds."""
    wanted = frozenset(names)
    found = {index: bound(code) & wanted for index, code in cells}
    return {index: pinned for index, pinned in found.items() if pinned}


def unassigned(
    names: Iterable[str], cells: Iterable[tuple[int, str]], shared: frozenset[str] = frozenset()
) -> str:
    """Why the given parameters cannot be right ("" when every one is assigned somewhere).

    `--ntdd-param epoch=1`, where the notebook says `epochs = 100`, would
    otherwise be accepted without a word, and the training would run in full.
    A name of *shared* was given for every notebook: one that lacks it says
    how to give it to some notebooks only.
    """
    parameters = frozenset().union(*(assigned(code) for _, code in cells))
    problems = [
        _unassigned(name, parameters, name in shared) for name in names if name not in parameters
    ]
    return "; ".join(problems)


def _unassigned(name: str, parameters: frozenset[str], shared: bool) -> str:
    close = difflib.get_close_matches(name, sorted(parameters), n=3)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    if shared:
        hint += (
            " (given for every notebook: one that only some notebooks assign goes in "
            'their own tables, [tool.ntdd.parameters."NOTEBOOK"] in pyproject.toml)'
        )
    return f"test parameter {name!r}: no setup cell of the notebook assigns it{hint}"
