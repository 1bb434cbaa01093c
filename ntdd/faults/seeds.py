"""Each run of `ntdd faults` under a seed of its own, and whether the seed reached the notebook.

`seeded` makes a run's starting state: Python's `random`, numpy's global
generator and torch's, all from one seed (a DataLoader that shuffles draws
its order from torch's generator, so the seed reaches it too).

A notebook that seeds its generators itself (`torch.manual_seed(0)` in its
first cell) makes every run the same, whatever seed the run started from:
one run is the verdict, and more runs cost time and say nothing. `SeedWatch`
tells, in one run: it notes, at each of the notebook's seeding calls, whether
the generator had been drawn from since the run's seed was set, and after
each cell and test, which generators were drawn from. A notebook *seeds
itself* when every generator it drew from was seeded by its own code before
its first draw, and it made no generator from the operating system's
entropy (numpy's `default_rng()` with no seed).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import pickle
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ntdd.runtime.isolation import ProcessState

TORCH, NUMPY, RANDOM = "torch", "numpy", "random"


def seeded(baseline: ProcessState, seed: int) -> ProcessState:
    """*baseline* with every generator started from *seed*."""
    numpy = _numpy_random()
    torch: Any = sys.modules.get("torch")
    state = baseline.torch
    if state is not None and torch is not None:
        state = replace(state, rng=torch.Generator().manual_seed(seed).get_state())
    return replace(
        baseline,
        random_state=random.Random(seed).getstate(),
        numpy_state=numpy.RandomState(seed).get_state() if numpy is not None else None,
        torch=state,
        seed=seed,
    )


def _numpy_random() -> Any:
    """numpy.random, imported where numpy is (torch imports numpy): numpy imports it lazily,
    seeded from the system's entropy, where no seed could reach it."""
    if "numpy" not in sys.modules:
        return None
    with contextlib.suppress(ImportError):
        return importlib.import_module("numpy.random")
    return None


def _digests(seed: int) -> dict[str, bytes]:
    """Each generator's state right after *seed* set it: what an undrawn generator holds."""
    numpy = _numpy_random()
    torch: Any = sys.modules.get("torch")
    found = {RANDOM: _digest(random.Random(seed).getstate())}
    if numpy is not None:
        found[NUMPY] = _digest(numpy.RandomState(seed).get_state())
    if torch is not None and hasattr(torch, "Generator"):
        found[TORCH] = _digest(torch.Generator().manual_seed(seed).get_state())
    return found


def _current() -> dict[str, bytes]:
    numpy = sys.modules.get("numpy.random")
    torch: Any = sys.modules.get("torch")
    found = {RANDOM: _digest(random.getstate())}
    if numpy is not None:
        found[NUMPY] = _digest(numpy.get_state())
    if torch is not None and hasattr(torch, "get_rng_state"):
        found[TORCH] = _digest(torch.get_rng_state())
    return found


def _digest(state: Any) -> bytes:
    tensor = getattr(state, "numpy", None)
    data = tensor().tobytes() if callable(tensor) else pickle.dumps(state)
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass
class SeedWatch:
    """Whether a run's seed reached the notebook: see the module's docstring."""

    seed: int
    own: list[str] = field(default_factory=list)  # the seeding calls the notebook made first
    drawn: dict[str, str] = field(
        default_factory=dict
    )  # generator -> how the run's seed reached it
    _start: dict[str, bytes] = field(default_factory=dict)
    _undo: list[Callable[[], None]] = field(default_factory=list)

    @contextlib.contextmanager
    def watching(self) -> Iterator[SeedWatch]:
        self._start = _digests(self.seed)
        self._patch()
        try:
            yield self
        finally:
            for undo in reversed(self._undo):
                undo()
            self._undo.clear()

    @property
    def seeds_itself(self) -> bool:
        """Every generator drawn from was seeded by the notebook first (or none was drawn)."""
        return not self.drawn

    def check(self) -> None:
        """After a cell or a test: a generator the notebook has not seeded, drawn from since
        the run's seed set it, carries the run's seed into the notebook."""
        for name, digest in _current().items():
            if name in self._decided():
                continue
            if digest != self._start.get(name, digest):
                self.drawn[name] = f"{name} drawn from before the notebook seeded it"

    def _decided(self) -> set[str]:
        return set(self.drawn) | {call.split(".")[0] for call in self.own}

    def _patch(self) -> None:
        torch: Any = sys.modules.get("torch")
        numpy = sys.modules.get("numpy.random")
        if torch is not None and hasattr(torch, "manual_seed"):
            self._wrap(torch, "manual_seed", TORCH, "torch.manual_seed")
            self._wrap(torch.random, "manual_seed", TORCH, "torch.manual_seed")
            self._wrap(torch, "seed", TORCH, "torch.seed", entropy=True)
        if numpy is not None:
            self._wrap(numpy, "seed", NUMPY, "numpy.random.seed")
            self._wrap_default_rng(numpy)
        self._wrap(random, "seed", RANDOM, "random.seed")

    def _wrap(self, owner: Any, attr: str, name: str, call: str, entropy: bool = False) -> None:
        original = getattr(owner, attr)
        watch = self

        def seeding(*args: Any, **kwargs: Any) -> Any:
            watch._seeding(name, call, args, entropy)
            return original(*args, **kwargs)

        setattr(owner, attr, seeding)
        self._undo.append(lambda: setattr(owner, attr, original))

    def _seeding(self, name: str, call: str, args: tuple[Any, ...], entropy: bool) -> None:
        if name in self._decided():
            return
        if entropy or (name != TORCH and (not args or args[0] is None)):
            self.drawn[name] = f"{call}() seeds {name} from the system's entropy"
        elif _current().get(name) != self._start.get(name):
            self.drawn[name] = f"{name} drawn from before the notebook's {call}"
        else:
            self.own.append(f"{call}({args[0]!r})")

    def _wrap_default_rng(self, numpy: Any) -> None:
        original = numpy.default_rng
        watch = self

        def default_rng(seed: Any = None, *args: Any, **kwargs: Any) -> Any:
            if seed is None:
                watch.drawn.setdefault(
                    "numpy.default_rng", "numpy.random.default_rng() seeded from the system"
                )
            return original(seed, *args, **kwargs)

        numpy.default_rng = default_rng
        self._undo.append(lambda: setattr(numpy, "default_rng", original))
