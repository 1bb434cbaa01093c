"""The process state a notebook changes, captured and put back.

A kernel gives each notebook a process of its own; ntdd runs many notebooks
in one. So that a notebook's results never depend on the notebooks that ran
before it, each notebook starts from the state the session started with, and
what it changes is put back when it stops: the environment (`%env`), the
working directory, `sys.path`, `sys.argv` (a kernel's while it runs), the
recursion limit, warning filters, the random generators, torch's global
switches, and the modules it imported from its own folder (two notebooks with
a `helpers.py` each get their own).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import itertools
import os
import random
import sys
import tempfile
import types
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest


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

    cwd: str | None  # None: the state leaves the working directory as it is
    environ: dict[Any, Any]  # os.environ's own (encoded) store, pytest's variable left out
    path: tuple[str, ...]
    recursion_limit: int
    warning_filters: tuple[Any, ...] | None  # None: left as they are (see NotebookFilters)
    random_state: Any
    numpy_state: Any = None  # numpy's global generator, when numpy.random is imported
    torch: TorchState | None = None  # when torch is imported
    seed: int = 0  # seeds the generators a state has none of (imported after the capture)
    argv: tuple[str, ...] = ()  # sys.argv; () where it is not put back

    @classmethod
    def baseline(cls) -> ProcessState:
        """The session's starting state, with a seed for generators imported later.

        The seed is drawn from a copy of `random`'s state: a run whose `random`
        was seeded (pytest-randomly's `--randomly-seed=N`) seeds numpy and torch
        alike each time; any other run, as random as a new kernel. numpy's
        generator is seeded where `numpy.random` has been imported (pytest-randomly
        imports it); before that there is none to seed, and its import seeds it
        as a new kernel's.
        """
        draw = random.Random()
        draw.setstate(random.getstate())
        return cls.capture(seed=draw.getrandbits(32))

    @classmethod
    def capture(cls, seed: int = 0) -> ProcessState:
        torch = sys.modules.get("torch")
        numpy = sys.modules.get("numpy")
        return cls(
            cwd=_cwd(),
            environ=_environ(),
            path=tuple(sys.path),
            recursion_limit=sys.getrecursionlimit(),
            warning_filters=tuple(warnings.filters),
            random_state=random.getstate(),
            numpy_state=_numpy_state(numpy),
            torch=TorchState.capture(torch) if _usable(torch) else None,
            seed=seed,
            argv=tuple(sys.argv),
        )

    def for_notebook(self, folder: Path) -> ProcessState:
        """This state as a notebook in *folder* starts: the cwd (`""`, as a kernel has
        it) first on the path, so that after `os.chdir` imports look there, a
        kernel's `sys.argv`, and its `MPLBACKEND` (matplotlib's inline backend).

        Its working directory is not part of it: the runtime makes the folder
        the cwd only while the notebook's cells run (`in_its_folder`), so that
        pytest and other plugins always run in the session's.
        """
        environ = dict(self.environ)
        environ.setdefault(_encode("MPLBACKEND"), _encode(MPLBACKEND))  # as ipykernel sets it
        return replace(
            self,
            cwd=None,
            environ=environ,
            path=("", *self.path),
            warning_filters=None,
            argv=kernel_argv(),
        )

    def apply(self) -> None:
        """Make this the process's state. Parts not captured are left as they are."""
        if self.cwd is not None and _cwd() != self.cwd:
            os.chdir(self.cwd)
        _set_environ(self.environ)
        sys.path[:] = self.path
        sys.setrecursionlimit(self.recursion_limit)
        if self.warning_filters is not None:
            set_filters(self.warning_filters)
        if self.argv and tuple(sys.argv) != self.argv:
            sys.argv[:] = self.argv
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


@dataclass(frozen=True)
class Generators:
    """The random generators' states: `random`, numpy's and torch's global ones.

    A notebook's draws follow one another as in *Run All*; a plugin that reseeds
    them before each test phase (`reseeds_per_test`) must not break the sequence.
    """

    random_state: Any
    numpy_state: Any
    torch_state: Any

    @classmethod
    def capture(cls) -> Generators:
        torch: Any = sys.modules.get("torch")
        return cls(
            random.getstate(),
            _numpy_state(sys.modules.get("numpy")),
            torch.get_rng_state() if _usable(torch) else None,
        )

    def apply(self) -> None:
        """Put the states back; a generator imported since the capture is left as it is."""
        random.setstate(self.random_state)
        numpy: Any = sys.modules.get("numpy")
        if self.numpy_state is not None and _numpy_state(numpy) is not None:
            numpy.random.set_state(self.numpy_state)
        torch: Any = sys.modules.get("torch")
        if self.torch_state is not None and _usable(torch):
            torch.set_rng_state(self.torch_state)


def reseeds_per_test(config: pytest.Config) -> bool:
    """Whether a plugin reseeds the generators before each test phase: pytest-randomly,
    unless `--randomly-dont-reset-seed`. Only then are they kept between a notebook's
    cells, which costs half a millisecond a test (numpy's state is slow to read)."""
    randomly = config.pluginmanager.has_plugin("randomly")
    return randomly and bool(config.getoption("randomly_reset_seed", True))


@dataclass(frozen=True)
class NotebookFilters:
    """The warning filters a notebook's cells set, to be set again for the cells below.

    pytest puts the filters back after each test; a kernel keeps what a cell
    set. What the cells put in front of the filters a test started with is
    kept as *front*; a cell that took filters away (`resetwarnings()`) leaves
    its whole list, *whole*, which replaces the next test's.
    """

    front: tuple[Any, ...] = ()
    whole: tuple[Any, ...] | None = None

    @classmethod
    def between(cls, start: tuple[Any, ...], end: tuple[Any, ...]) -> NotebookFilters:
        """What the cells run between *start* and *end* made of the filters."""
        added = len(end) - len(start)
        if added >= 0 and end[added:] == start:
            return cls(front=end[:added])
        return cls(whole=end)

    def apply(self, under: tuple[Any, ...]) -> None:
        """Set these filters over *under*, the filters pytest set for a test."""
        if self.whole is not None:
            set_filters(self.whole)
        elif under[: len(self.front)] != self.front:  # still there without pytest's warnings plugin
            set_filters((*self.front, *under))


def set_filters(wanted: tuple[Any, ...]) -> None:
    """Make *wanted* the warning filters, telling `warnings` when they change."""
    if wanted != tuple(warnings.filters):
        warnings.filters[:] = wanted  # type: ignore[index]
        _filters_mutated()


@functools.cache
def kernel_argv() -> tuple[str, ...]:
    """`sys.argv` as a Jupyter kernel has it: its launcher, and its connection file."""
    spec = importlib.util.find_spec("ipykernel_launcher")
    launcher = spec.origin if spec is not None and spec.origin else "ipykernel_launcher.py"
    return (launcher, "-f", os.path.join(tempfile.gettempdir(), "kernel-ntdd.json"))


def modules_mark() -> tuple[int, str]:
    """Where `sys.modules` stands: imports add at its end, so this tells what came after."""
    return len(sys.modules), next(reversed(sys.modules), "")


def modules_since(mark: tuple[int, str]) -> set[str]:
    """The modules imported since *mark* (a few more, if the marked one was removed)."""
    if modules_mark() == mark:
        return set()
    last = mark[1]
    return set(itertools.takewhile(lambda name: name != last, reversed(sys.modules)))


def own_modules(folder: Path, names: set[str]) -> dict[str, types.ModuleType]:
    """Of the modules *names*, those a notebook in *folder* imported from that folder."""
    tops = {name.partition(".")[0] for name in names}
    own = {top for top in tops if _found_in(sys.modules.get(top), folder)}
    return {
        name: module
        for name in names
        if name.partition(".")[0] in own and (module := sys.modules.get(name)) is not None
    }


def forget(modules: dict[str, types.ModuleType]) -> None:
    """Take a notebook's own modules out of `sys.modules`, so the next import is fresh."""
    for name, module in modules.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]


def _found_in(root: types.ModuleType | None, folder: Path) -> bool:
    """Whether the top-level module or package *root* was found in *folder*."""
    if root is None:
        return False
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


_PYTEST_OWN = "PYTEST_CURRENT_TEST"  # pytest's, set for each test: never the notebook's
MPLBACKEND = "module://matplotlib_inline.backend_inline"  # a kernel's, unless set already


def _environ() -> dict[Any, Any]:
    """The environment as os.environ keeps it: encoded, so copying it is cheap."""
    encoded = _encoded()
    copied: dict[Any, Any] = dict(encoded) if encoded is not None else dict(os.environ)
    copied.pop(_encode(_PYTEST_OWN), None)
    return copied


def _set_environ(wanted: dict[Any, Any]) -> None:
    """Change only the variables that differ from *wanted* (each change is a putenv)."""
    current = _environ()
    if current == wanted:
        return
    for key in current.keys() - wanted.keys():
        del os.environ[_decode(key)]
    for key, value in wanted.items():
        if current.get(key) != value:
            os.environ[_decode(key)] = _decode(value)


def _encoded() -> dict[Any, Any] | None:
    """os.environ's own store of encoded names and values, where it has one (CPython)."""
    data = getattr(os.environ, "_data", None)
    return data if isinstance(data, dict) else None


def _encode(text: str) -> Any:
    return os.fsencode(text) if _encoded() is not None else text


def _decode(value: Any) -> str:
    return os.fsdecode(value) if isinstance(value, bytes) else str(value)


def _filters_mutated() -> None:
    """Tell `warnings` its filters changed, as `catch_warnings` does on exit."""
    mutated = getattr(warnings, "_filters_mutated", None) or getattr(
        warnings, "_filters_mutated_lock_held", None
    )
    if mutated is not None:
        mutated()


def current_cwd() -> str:
    """The working directory, or "/" when a cell deleted it."""
    return _cwd()


def change_cwd(folder: str) -> None:
    """Make *folder* the working directory, unless it is already (or is gone)."""
    if folder and _cwd() != folder:
        with contextlib.suppress(OSError):  # a cell deleted it: stay where the process is
            os.chdir(folder)


def _cwd() -> str:
    try:
        return os.getcwd()
    except FileNotFoundError:  # a cell deleted the folder it was in
        return "/"


def _usable(torch: Any) -> bool:
    """torch is imported completely (not a module half-way through its import)."""
    return torch is not None and hasattr(torch, "get_rng_state")


def _numpy_state(numpy: Any) -> Any:
    """numpy's global generator's state; None where numpy or `numpy.random` is not
    imported. `numpy.random` loads on first use (numpy's own lazy `__getattr__`):
    asking the module for it would import it, 10 ms a run, for a generator that
    nothing has drawn from yet, and whose import seeds it afresh, as in a new kernel."""
    if numpy is None or "numpy.random" not in sys.modules:
        return None
    random_module = getattr(numpy, "random", None)
    get_state = getattr(random_module, "get_state", None)
    return get_state() if get_state is not None else None


#: The process state the session started with: every notebook starts from it.
BASELINE = pytest.StashKey[ProcessState]()
