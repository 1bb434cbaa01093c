"""A shown value IPython need not load for: what `repr` runs is what a kernel's formatters run.

The rule (`ntdd.runtime.repr_only`) lets a run that records no outputs show a
cell's last expression with `repr` alone. It holds only if IPython's own
formatters would run the same `__repr__`s in the same order, raising what
they raise, and nothing else: these tests put IPython's formatters beside
`repr` on values built of tensors, classes and containers.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.formatters import DisplayFormatter
from IPython.lib.pretty import pretty

from ntdd.runtime.repr_only import formats_as_repr

CALLS: list[str] = []  # what the probes' methods ran, in order


class Shown:
    """A value of a library's class: its own `__repr__`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        CALLS.append(f"repr {self.name}")
        return self.name


class Raises(Shown):
    def __repr__(self) -> str:
        CALLS.append(f"raise {self.name}")
        raise ValueError(self.name)


class Html(Shown):
    def _repr_html_(self) -> str:
        CALLS.append(f"html {self.name}")
        return f"<b>{self.name}</b>"


class Pretty(Shown):
    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        CALLS.append(f"pretty {self.name}")
        p.text(self.name)


class Proxy(Shown):
    def __getattr__(self, name: str) -> Any:
        CALLS.append(f"getattr {name}")
        return lambda *args: None


class NoRepr:
    """`object`'s repr: IPython prints `<… at 0x…>` its own way."""


class Meta(type):
    def __repr__(cls) -> str:
        CALLS.append("meta repr")
        return "Meta"


class WithMeta(metaclass=Meta):
    pass


class IntKey(int):
    def __hash__(self) -> int:
        CALLS.append("hash")
        return 1


names = st.sampled_from("abc")
leaves = st.one_of(
    st.integers(-5, 5),
    st.text(max_size=3),
    st.none(),
    st.floats(allow_nan=False),
    names.map(Shown),
    names.map(Raises),
    names.map(Html),
    names.map(Pretty),
    names.map(Proxy),
    st.builds(NoRepr),
    st.sampled_from([Shown, NoRepr, WithMeta, int]),
    st.builds(IntKey, st.integers(0, 3)),
)
values = st.recursive(
    leaves,
    lambda items: st.one_of(
        st.lists(items, max_size=4),
        st.lists(items, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=2), items, max_size=3),
        st.dictionaries(st.integers(0, 3), items, max_size=3).map(OrderedDict),
        st.dictionaries(st.builds(IntKey, st.integers(0, 3)), items, max_size=2),
    ),
    max_leaves=8,
)


def _runs(show: Any, value: Any) -> tuple[list[str], type[BaseException] | None]:
    CALLS.clear()
    try:
        show(value)
    except Exception as error:
        return list(CALLS), type(error)
    return list(CALLS), None


def _formatted(value: Any) -> None:
    """What a kernel runs: IPython's pretty printer, then each formatter (they print the
    errors away, so the pretty printer alone tells what is raised)."""
    pretty(value)
    DisplayFormatter().format(value)


@given(values)
def test_where_the_rule_says_repr_repr_runs_what_a_kernel_s_formatters_run(value: Any) -> None:
    if not formats_as_repr(value):
        return
    calls, raised = _runs(pretty, value)
    assert _runs(repr, value) == (calls, raised)
    if raised is None:
        assert _runs(DisplayFormatter().format, value) == (calls, None)  # no other format ran


torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "value",
    [
        torch.ones(2),
        torch.ones(2, 3).shape,
        (torch.ones(1), torch.tensor(3.5).item(), 3),
        [("0.weight", torch.Size([8, 4])), ("0.bias", torch.Size([8]))],
        OrderedDict(weight=torch.ones(1)),
        (torch.nn.Parameter, torch.Tensor, int),
        (Shown("a"), [Shown("b")], {"c": Shown("c")}),
    ],
    ids=["tensor", "size", "tuple", "named shapes", "state dict", "classes", "a library's"],
)
def test_a_notebook_s_usual_values_are_shown_without_ipython(value: Any) -> None:
    assert formats_as_repr(value)


@pytest.mark.parametrize(
    "value",
    [Html("a"), Pretty("a"), Proxy("a"), NoRepr(), [NoRepr()], WithMeta, {IntKey(1): 1}],
    ids=["html", "pretty", "a proxy", "object's repr", "in a list", "a metaclass", "a key"],
)
def test_what_runs_other_code_is_left_to_ipython(value: Any) -> None:
    assert not formats_as_repr(value)


def test_more_items_than_ipython_prints_are_left_to_it() -> None:
    assert formats_as_repr([1] * 1000) and not formats_as_repr([Shown("a")] * 1001)
