"""The process state a notebook changes, captured and put back.

A kernel gives each notebook a process of its own; ntdd runs many notebooks
in one. So that a notebook's results never depend on the notebooks that ran
before it, each notebook starts from the state the session started with, and
what it changes is put back when it stops: the environment (`%env`), the
working directory, `sys.path`, the recursion limit, warning filters, the
random generators, torch's global switches, and the modules it imported from
its own folder (two notebooks with a `helpers.py` each get their own).
"""

from __future__ import annotations

import os
import random
import sys
import types
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class TorchState:
    """torch's process-wide switches that notebooks flip."""

    default_dtype: Any
    grad_enabled: bool
    default_device: Any
    deterministic: bool
    deterministic_warn_only: bool
    rng: Any  # torch.get_rng_state()

    @classmethod
    def capture(cls, torch: Any) -> TorchState:
        return cls(
            torch.get_default_dtype(),
            torch.is_grad_enabled(),
            torch.get_default_device(),
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
            torch.get_rng_state(),
        )

    @classmethod
    def fresh(cls, torch: Any, seed: int) -> TorchState:
        """torch as a new process imports it, its generator seeded with *seed*."""
        generator = torch.Generator().manual_seed(seed)
        return cls(torch.float32, True, torch.device("cpu"), False, False, generator.get_state())

    def apply(self, torch: Any) -> None:
        if torch.get_default_dtype() != self.default_dtype:
            torch.set_default_dtype(self.default_dtype)
        torch.set_grad_enabled(self.grad_enabled)
        if torch.get_default_device() != self.default_device:
            torch.set_default_device(self.default_device)
        deterministic = (self.deterministic, self.deterministic_warn_only)
        if deterministic != (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ):  # the switch itself imports much of torch: only when it changes
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
        torch.set_rng_state(self.rng)


@dataclass(frozen=True)
class ProcessState:
    """One snapshot of what a notebook may change in the process."""

    cwd: str
    environ: dict[str, str]
    path: tuple[str, ...]
    recursion_limit: int
    warning_filters: tuple[Any, ...]
    random_state: Any
    numpy_state: Any = None  # numpy's global generator, when numpy is imported
    torch: TorchState | None = None  # when torch is imported
    seed: int = 0  # seeds the generators a state has none of (imported after the capture)

    @classmethod
    def capture(cls) -> ProcessState:
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        return cls(
            cwd=_cwd(),
            environ=dict(os.environ),
            path=tuple(sys.path),
            recursion_limit=sys.getrecursionlimit(),
            warning_filters=tuple(warnings.filters),
            random_state=random.getstate(),
            numpy_state=_numpy_state(numpy),
            torch=TorchState.capture(torch) if _usable(torch) else None,
            seed=random.SystemRandom().getrandbits(32),
        )

    def for_notebook(self, folder: Path) -> ProcessState:
        """This state as a notebook in *folder* starts: its folder is cwd and first on the path."""
        return replace(self, cwd=str(folder), path=(str(folder), *self.path))

    def apply(self) -> None:
        """Make this the process's state. Parts not captured are left as they are."""
        if _cwd() != self.cwd:
            os.chdir(self.cwd)
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.path[:] = self.path
        sys.setrecursionlimit(self.recursion_limit)
        if tuple(warnings.filters) != self.warning_filters:
            warnings.filters[:] = self.warning_filters  # type: ignore[index]
            _filters_mutated()
        random.setstate(self.random_state)
        numpy: Any = sys.modules.get("numpy")
        if _numpy_state(numpy) is not None:
            if self.numpy_state is not None:
                numpy.random.set_state(self.numpy_state)
            else:
                numpy.random.seed(self.seed)
        torch = sys.modules.get("torch")
        if _usable(torch):
            (self.torch or TorchState.fresh(torch, self.seed)).apply(torch)


def own_modules(folder: Path, names: set[str]) -> dict[str, types.ModuleType]:
    """Of the modules *names*, those a notebook in *folder* imported from that folder."""
    owned: dict[str, types.ModuleType] = {}
    for name in names:
        module = sys.modules.get(name)
        if module is not None and _imported_from(module, folder):
            owned[name] = module
    return owned


def forget(modules: dict[str, types.ModuleType]) -> None:
    """Take a notebook's own modules out of `sys.modules`, so the next import is fresh."""
    for name, module in modules.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]


def _imported_from(module: types.ModuleType, folder: Path) -> bool:
    """Whether *module* (or the package it is part of) was found in *folder*."""
    top = module.__name__.partition(".")[0]
    root = sys.modules.get(top, module)
    locations = list(getattr(root, "__path__", ()) or ())
    file = getattr(root, "__file__", None)
    if file:
        locations.append(file)
    for location in locations:
        where = Path(location)
        if where.name == "__init__.py":
            where = where.parent
        if where.parent == folder:
            return True
    return False


def _filters_mutated() -> None:
    """Tell `warnings` its filters changed, as `catch_warnings` does on exit."""
    mutated = getattr(warnings, "_filters_mutated", None) or getattr(
        warnings, "_filters_mutated_lock_held", None
    )
    if mutated is not None:
        mutated()


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # a cell deleted the folder it was in
        return "/"


def _usable(torch: Any) -> bool:
    """torch is imported completely (not a module half-way through its import)."""
    return torch is not None and hasattr(torch, "get_rng_state")


def _numpy_state(numpy: Any) -> Any:
    random_module = getattr(numpy, "random", None)
    get_state = getattr(random_module, "get_state", None)
    return get_state() if get_state is not None else None
