"""The pytest side of a generated module: its `device` fixture and the fixtures that run cells.

Every generated module binds these from its runtime in one line, so that the
module holds the notebook's cells and its tests, not a block of fixture code
that is the same in every module.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ntdd.runtime.notebook_runtime import NotebookRuntime


def module_fixtures(runtime: NotebookRuntime) -> tuple[Callable[..., Any], ...]:
    """`pytest_generate_tests` and the fixtures of *runtime*'s module, in that order."""

    def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
        """Tests that use `device` run once per device of --ntdd-devices."""
        runtime.parametrize_devices(metafunc)

    @pytest.fixture(name="device", scope="module")
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
