"""A smoke run in the process: DataLoaders cut to a few batches, the training seen, the notes.

While a notebook's test runs in smoke mode (`SmokeRun.running`), every
`torch.utils.data.DataLoader` yields at most the run's batches a pass, and its
`len()` says so, whoever made it: the notebook, a library or a helper module.
The run also counts the training work its cells do (DataLoader passes and
optimizer steps), which tells a loop capped by `ntdd.runtime.smoke` that its
body trains.

Patching a class is process-wide, so the patch acts only while a smoke run is
active (`ACTIVE`, set around each notebook test and nothing else), is made
once torch is imported (at once, or when a cell imports it), and is undone
when the run closes at the session's end. A forked child (`ntdd faults`)
inherits it with the rest of the process.

A pass is cut to its first batches and its last one (the short one, where
there is one), and only where the rest of it would take long enough to be
worth it, in the CPU time the process spent on its first batches (another
process's load does not move it): the first pass of each DataLoader decides for the test, so that
its `len()` agrees with every pass after it (a `len()` asked before its
first pass decides for the cut). What was cut, and what was
left alone, is noted by the notebook's cell and line, for the terminal's
summary and the report; so are the blocks of a cut loop's body that never
ran.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib.abc
import importlib.machinery
import sys
import time
import types
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ntdd.config import Smoke

LOADER_MODULE = "torch.utils.data.dataloader"
OPTIMIZER_MODULE = "torch.optim.optimizer"
LEFT_ALONE = "left alone: "  # a note of training smoke mode saw and did not cut
NEVER_RAN = "never ran in smoke mode: a block inside a loop smoke mode cut"


@dataclass(frozen=True)
class Pass:
    """The last pass over a Dataset, where smoke mode cut it: the examples it yielded."""

    examples: int | None  # None: its batches' sizes are unknown


class SmokeRun:
    """The caps of one session's smoke mode, the patch that holds them, and what they cut."""

    def __init__(self, caps: Smoke) -> None:
        self.caps = caps
        self.work = 0  # DataLoader passes and optimizer steps, while active
        self.notes: list[tuple[str, str]] = []  # (where, what was cut), until taken
        self.runtime: Any = None  # the notebook whose test runs: it names its cells
        self.loops: list[Any] = []  # the capped loops running now, outermost first
        self.watched: dict[str, str] = {}  # the blocks inside the loops cut: the block around
        self.reached: set[str] = set()  # the blocks inside capped loops that ran
        # Whether each DataLoader's passes are cut, and each loop's (by its place) where a
        # cut is worth its time: decided once a session, so the tests of a run agree.
        self._cuts: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()
        self.short: dict[str, bool] = {}
        self._passes: dict[int, tuple[Any, Pass]] = {}  # id(dataset): its last cut pass
        self._undo: list[Callable[[], None]] = []
        self._finder: _PatchOnImport | None = None
        self._hooked = False  # the optimizers' step hook is in

    # -- the patch's life --------------------------------------------------

    def open(self) -> None:
        """Patch DataLoader now if torch is imported, else as soon as it is."""
        if self._finder is not None:
            return
        self._finder = _PatchOnImport({LOADER_MODULE: self._patch, OPTIMIZER_MODULE: self._hook})
        sys.meta_path.insert(0, self._finder)
        loaded = sys.modules.get(LOADER_MODULE)
        if loaded is not None:
            self._patch(loaded)
        self._hook_optimizers()

    def close(self) -> None:
        """Undo the patch: after the session, DataLoader is torch's own again."""
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        self._finder = None
        while self._undo:
            self._undo.pop()()

    @contextlib.contextmanager
    def running(self, runtime: Any) -> Iterator[None]:
        """A notebook's test runs: the caps act, and name *runtime*'s cells in their notes."""
        self.open()
        token = ACTIVE.set(self)
        self.runtime = runtime
        try:
            yield
        finally:
            self.runtime = None
            self.loops.clear()
            self._passes.clear()
            ACTIVE.reset(token)

    def _patch(self, module: types.ModuleType) -> None:
        found = getattr(module, "DataLoader", None)
        if not isinstance(found, type) or getattr(found, "_ntdd_smoke", False):
            return
        loader: Any = found
        original_iter, original_len = loader.__iter__, loader.__len__

        @functools.wraps(original_iter)
        def __iter__(self: Any) -> Any:
            iterator = original_iter(self)
            active = ACTIVE.get()
            return iterator if active is None else active.batches(self, iterator, original_len)

        @functools.wraps(original_len)
        def __len__(self: Any) -> int:
            total: int = original_len(self)
            active = ACTIVE.get()
            if active is None or not active.cuts(self):
                return total
            return min(total, active.caps.batches)

        loader.__iter__, loader.__len__ = __iter__, __len__
        loader._ntdd_smoke = True
        self._undo.append(lambda: _restore(loader, original_iter, original_len))

    def _hook(self, _module: types.ModuleType) -> None:
        self._hook_optimizers()

    def _hook_optimizers(self) -> None:
        """Every optimizer's step counts as training work (torch's global step hook), and
        every optimizer made starts a training (in the loops that run now)."""
        optim = sys.modules.get(OPTIMIZER_MODULE)
        hook = getattr(optim, "register_optimizer_step_post_hook", None)
        optimizer = getattr(optim, "Optimizer", None)
        if hook is None or not isinstance(optimizer, type) or self._hooked:
            return
        self._hooked = True
        handle = hook(_stepped)
        made: Any = optimizer
        original_init = made.__init__

        @functools.wraps(original_init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            original_init(self, *args, **kwargs)
            active = ACTIVE.get()
            for running in active.loops if active is not None else ():
                running.made = True

        made.__init__ = __init__

        def unhook() -> None:
            handle.remove()
            made.__init__ = original_init
            self._hooked = False

        self._undo.append(unhook)

    # -- what the caps do while active ---------------------------------------

    def batches(self, loader: Any, iterator: Iterator[Any], length: Callable[[Any], int]) -> Any:
        """A DataLoader's pass: all of it, or its first batches and its last, with a note."""
        self.work += 1
        try:
            total: int | None = length(loader)
        except TypeError:  # an iterable dataset without a length
            total = None
        if total is not None and total <= self.caps.batches:
            return iterator
        if self._cuts.get(loader) is False:
            return iterator  # its first pass was too short to cut: so is this one
        return self._cut(loader, iterator, total)

    def cuts(self, loader: Any) -> bool:
        """Whether *loader*'s passes are cut, for its `len()`: as its first pass decided; a
        `len()` asked before that decides for the cut, so that every pass agrees with it
        (`for i in range(len(loader)): next(batches)`)."""
        return self._cuts.setdefault(loader, True)

    def _cut(self, loader: Any, iterator: Iterator[Any], total: int | None) -> Iterator[Any]:
        kept = max(self.caps.batches - 1, 1)
        started = time.process_time()
        examples: int | None = 0
        for _ in range(kept):
            try:
                batch = next(iterator)
            except StopIteration:
                return
            examples = _plus(examples, batch)
            yield batch
        where = self.place(sys._getframe(1))
        if total is not None and loader not in self._cuts:
            rest = (time.process_time() - started) / kept * (total - self.caps.batches)
            self._cuts[loader] = rest >= self.caps.min_seconds
            if not self._cuts[loader]:
                self.note(where, _short("a DataLoader's passes", rest, self.caps.min_seconds))
                yield from iterator
                return
        if self.caps.batches > 1:
            last = _last_batch(loader, iterator)
            if last is not _NONE:
                examples = _plus(examples, last)
                yield last
        of = f" of {total}" if total is not None else ""
        kept_last = " (its first and its last)" if self.caps.batches > 1 else ""
        self.note(where, f"a DataLoader's pass cut to {self.caps.batches}{of} batches{kept_last}")
        self.passed(getattr(loader, "dataset", None), examples)

    def passed(self, dataset: Any, examples: int | None) -> None:
        """A pass over *dataset* was cut: `len()` divided into its sum reads *examples*."""
        if dataset is not None:
            self._passes[id(dataset)] = (dataset, Pass(examples))

    def seen(self, dataset: Any) -> Pass | None:
        """The last pass over *dataset* this test, where smoke mode cut it; else None."""
        found = self._passes.get(id(dataset))
        return found[1] if found is not None and found[0] is dataset else None

    def watch(self, blocks: Sequence[tuple[str, str]]) -> None:
        """The blocks of a loop smoke mode cut, each with the block it lies in: each that
        never runs, inside one that ran, is named."""
        self.watched.update(blocks)

    def note(self, where: str, what: str) -> None:
        self.notes.append((where, what))

    def take(self) -> list[tuple[str, str]]:
        """The notes made since the last take, for one report, with the blocks of the
        loops cut that never ran."""
        never = [
            (where, NEVER_RAN)
            for where, within in self.watched.items()
            if where not in self.reached and (not within or within in self.reached)
        ]
        taken, self.notes = [*self.notes, *never], []
        self.watched, self.reached = {}, set()
        return taken

    def place(self, frame: types.FrameType | None) -> str:
        """The notebook's cell and line that *frame* runs for: its own, or its nearest caller's."""
        runtime = self.runtime
        while frame is not None and runtime is not None:
            code = frame.f_code
            if runtime.runs_code_of(code.co_filename):
                return str(runtime.place_of(code.co_filename, frame.f_lineno))
            frame = frame.f_back
        return "outside the notebook's cells"


ACTIVE: ContextVar[SmokeRun | None] = ContextVar("ntdd_smoke_run", default=None)


def _stepped(*_args: Any) -> None:
    """An optimizer stepped: training work, for the loop it runs in."""
    active = ACTIVE.get()
    if active is not None:
        active.work += 1


def _short(what: str, rest: float, least: float) -> str:
    return (
        f"{LEFT_ALONE}{what} would save about {rest:.2g} s if cut, under {least:g} s "
        "(--ntdd-smoke-min-seconds)"
    )


_NONE = object()


def _last_batch(loader: Any, iterator: Any) -> Any:
    """The last batch of the pass *iterator* makes, fetched without the ones between: its
    sampler's last indices, through the loader's dataset and collate function."""
    indices = getattr(iterator, "_sampler_iter", None)
    data = sys.modules.get("torch.utils.data")
    iterable = getattr(data, "IterableDataset", None)
    if indices is None or (isinstance(iterable, type) and isinstance(loader.dataset, iterable)):
        return _last_of(iterator)
    last = _last_of(indices)
    if last is _NONE:  # every index handed out already (to the workers): the batches left
        return _last_of(iterator)
    fetcher = getattr(iterator, "_dataset_fetcher", None)
    if fetcher is not None:
        return fetcher.fetch(last)
    dataset, collate = loader.dataset, loader.collate_fn
    if getattr(loader, "batch_sampler", None) is None:
        return collate(dataset[last])
    return collate([dataset[i] for i in last])


def _last_of(iterator: Iterator[Any]) -> Any:
    """What *iterator* yields last, the rest passed over; `_NONE` where it yields nothing."""
    found = collections.deque(iterator, maxlen=1)
    return found[0] if found else _NONE


def _plus(examples: int | None, batch: Any) -> int | None:
    size = _examples_in(batch)
    return None if examples is None or size is None else examples + size


def _examples_in(batch: Any) -> int | None:
    """How many examples a collated batch holds: its first tensor's first dimension."""
    shape = getattr(batch, "shape", None)
    if shape is not None:
        return int(shape[0]) if len(shape) else None
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, (list, tuple)) and batch:
        first = _examples_in(batch[0])
        return first if first is not None else len(batch)
    return None


def _restore(loader: Any, original_iter: Any, original_len: Any) -> None:
    loader.__iter__, loader.__len__ = original_iter, original_len
    with contextlib.suppress(AttributeError):
        del loader._ntdd_smoke


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches torch's modules as they are imported (by a cell's `import torch`)."""

    def __init__(self, patches: dict[str, Callable[[types.ModuleType], None]]) -> None:
        self.patches = patches

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = self.patches.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader, patch: Callable[[types.ModuleType], None]):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch(module)
