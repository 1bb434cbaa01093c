"""The pytest side of a generated module: its `device` fixture and the fixtures that run cells.

Every generated module imports these by name (`from ntdd.runtime.fixtures
import …`), so that the module holds the notebook's cells and its tests, not
a block of fixture code that is the same in every module. Each reads the
runtime of the module pytest collected it from (`request.module.__ntdd__`):
one set of functions serves every module.

A test that uses `device` runs once per device, each a test of its own
(`test_x[cpu]`, `test_x[cuda]`), but its device is no pytest parameter: the
device's run of the notebook is ntdd's (each device has its own kernel, as
`ntdd.runtime.kernel` holds it), so the item keeps it (`device_under_test`). Tools
that group a parametrized test under its function find that function by
cutting the node id at `.py` (VS Code's Python extension does), and a
notebook's node id has no `.py`: its device variants are plain tests to
them, and the tree they show holds every one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from ntdd.values import DEVICE

__all__ = ["_ntdd_cells", "_ntdd_notebook", "device", "pytest_generate_tests"]

_device_key = pytest.StashKey[str]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests that use `device` run once per device of --ntdd-devices."""
    metafunc.module.__ntdd__.parametrize_devices(metafunc)


@pytest.fixture(name="device")
def device(request: pytest.FixtureRequest) -> Any:
    """The device under test; the notebook runs once for each."""
    __tracebackhide__ = True
    return request.module.__ntdd__.device(request)


@pytest.fixture(scope="module", autouse=True)
def _ntdd_notebook(request: pytest.FixtureRequest) -> Iterator[None]:
    """Frees the notebook's state, and puts the process back, after its last test."""
    yield
    request.module.__ntdd__.release()


@pytest.fixture(autouse=True)
def _ntdd_cells(request: pytest.FixtureRequest) -> Iterator[None]:
    """Runs the notebook's cells up to each test's cell, in the notebook's folder."""
    __tracebackhide__ = True
    yield from request.module.__ntdd__.run_cells_up_to(request)


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
