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

What was cut is noted by the notebook's cell and line, for the terminal's
summary and the report.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from ntdd.config import Smoke

LOADER_MODULE = "torch.utils.data.dataloader"
OPTIMIZER_MODULE = "torch.optim.optimizer"


class SmokeRun:
    """The caps of one session's smoke mode, the patch that holds them, and what they cut."""

    def __init__(self, caps: Smoke) -> None:
        self.caps = caps
        self.work = 0  # DataLoader passes and optimizer steps, while active
        self.notes: list[tuple[str, str]] = []  # (where, what was cut), until taken
        self.runtime: Any = None  # the notebook whose test runs: it names its cells
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
            return total if active is None else min(total, active.caps.batches)

        loader.__iter__, loader.__len__ = __iter__, __len__
        loader._ntdd_smoke = True
        self._undo.append(lambda: _restore(loader, original_iter, original_len))

    def _hook(self, _module: types.ModuleType) -> None:
        self._hook_optimizers()

    def _hook_optimizers(self) -> None:
        """Every optimizer's step counts as training work (torch's global step hook)."""
        optim = sys.modules.get(OPTIMIZER_MODULE)
        hook = getattr(optim, "register_optimizer_step_post_hook", None)
        if hook is not None and not self._hooked:
            self._hooked = True
            handle = hook(_stepped)

            def unhook() -> None:
                handle.remove()
                self._hooked = False

            self._undo.append(unhook)

    # -- what the caps do while active ---------------------------------------

    def batches(self, loader: Any, iterator: Iterator[Any], length: Callable[[Any], int]) -> Any:
        """A DataLoader's pass: all of it, or its first batches, with a note of the cut."""
        self.work += 1
        try:
            total: int | None = length(loader)
        except TypeError:  # an iterable dataset without a length
            total = None
        if total is not None and total <= self.caps.batches:
            return iterator
        return self._cut(iterator, total)

    def _cut(self, iterator: Iterator[Any], total: int | None) -> Iterator[Any]:
        for _ in range(self.caps.batches):
            try:
                batch = next(iterator)
            except StopIteration:
                return
            yield batch
        of = f" of {total}" if total is not None else ""
        self.note(
            self.place(sys._getframe(1)),
            f"a DataLoader's pass cut to {self.caps.batches}{of} batches",
        )

    def note(self, where: str, what: str) -> None:
        self.notes.append((where, what))

    def take(self) -> list[tuple[str, str]]:
        """The notes made since the last take, for one report."""
        taken, self.notes = self.notes, []
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
