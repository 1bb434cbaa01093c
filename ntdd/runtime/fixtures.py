"""The pytest side of a generated module: its `device` fixture and the fixtures that run cells.

Every generated module binds these from its runtime in one line, so that the
module holds the notebook's cells and its tests, not a block of fixture code
that is the same in every module.

A test that uses `device` runs once per device, each a test of its own
(`test_x[cpu]`, `test_x[cuda]`), but its device is no pytest parameter: the
device's run of the notebook is ntdd's (each device has its own kernel, as
`device_runs` holds it), so the item keeps it (`device_under_test`). Tools
that group a parametrized test under its function find that function by
cutting the node id at `.py` (VS Code's Python extension does), and a
notebook's node id has no `.py`: its device variants are plain tests to
them, and the tree they show holds every one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ntdd.values import DEVICE

if TYPE_CHECKING:
    from ntdd.runtime.notebook_runtime import NotebookRuntime

_device_key = pytest.StashKey[str]()


def module_fixtures(runtime: NotebookRuntime) -> tuple[Callable[..., Any], ...]:
    """`pytest_generate_tests` and the fixtures of *runtime*'s module, in that order."""

    def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
        """Tests that use `device` run once per device of --ntdd-devices."""
        runtime.parametrize_devices(metafunc)

    @pytest.fixture(name="device")
    def device(request: pytest.FixtureRequest) -> Any:
        """The device under test; the notebook runs once for each."""
        __tracebackhide__ = True
        return runtime.device(request)

    @pytest.fixture(name="_ntdd_notebook", scope="module", autouse=True)
    def notebook() -> Iterator[None]:
        """Frees the notebook's state, and puts the process back, after its last test."""
        yield
        runtime.release()

    @pytest.fixture(name="_ntdd_cells", autouse=True)
    def cells(request: pytest.FixtureRequest) -> Iterator[None]:
        """Runs the notebook's cells up to each test's cell, in the notebook's folder."""
        __tracebackhide__ = True
        yield from runtime.test(request)

    return pytest_generate_tests, device, notebook, cells


def device_under_test(item: object) -> str | None:
    """The device *item* runs on, for a test that uses `device`; None for the others."""
    stash = getattr(item, "stash", None)
    return stash.get(_device_key, None) if stash is not None else None


def take_device(item: pytest.Function) -> None:
    """*item*'s device, from pytest's parameters (which named the test) to the item's own.

    Any other parameter of the test (its cell's `@parametrize`) stays pytest's.
    """
    callspec = getattr(item, "callspec", None)
    if callspec is None or DEVICE not in callspec.params:
        return
    item.stash[_device_key] = str(callspec.params[DEVICE])
    rest = {k: v for k, v in callspec.params.items() if k != DEVICE}
    if not rest:
        del item.callspec
        return
    item.callspec = dataclasses.replace(
        callspec,
        params=rest,
        indices={k: v for k, v in callspec.indices.items() if k != DEVICE},
        _arg2scope={k: v for k, v in callspec._arg2scope.items() if k != DEVICE},
    )
