"""`--ntdd-write-notebooks DIR` and `--ntdd-overwrite`: each notebook written as it ran.

As `nbmake --overwrite` and papermill do, the notebook is written with its
cells' fresh outputs and execution counts (its test cells' too), as a
kernel's Run All leaves them: the first device's run, counted in notebook
order. Only a run that completed is written (every cell it runs ran on that
device, and none of its tests failed or errored), unless
`--ntdd-write-incomplete` asks for what the run had. The cells the run ran
are the only ones changed; a cell it leaves out by design (`# NTDD: skip`,
a test marked to be skipped) keeps what it had.

Nothing is lost: a notebook changed since the run read it is not
overwritten, nor is a file in DIR that is not a copy ntdd wrote of that
notebook (a copy says which in its `ntdd` metadata); each file is written
atomically and validates with nbformat wherever its notebook did. A copy an
earlier run wrote of a notebook this run did not write is removed, so that
DIR never holds a copy that looks like this run's and is not. A copy of a
smoke run, or of a run with test-only parameters, says so in that metadata
too (`ran_as`); neither run writes over a notebook (`ntdd.settings.resolve`
refuses it).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ntdd.errors import NtddError
from ntdd.notebook.copies import written_from
from ntdd.notebook.files import node_kind, write_atomic
from ntdd.notebook.write import RanCell, with_outputs
from ntdd.plugin.results import files as results_files
from ntdd.plugin.results.ledger import NotebookRun, ledger
from ntdd.settings.typed import Settings, settings_of

OPTION = "--ntdd-write-notebooks"


def as_written(run: NotebookRun) -> dict[int, RanCell]:
    """The cells' outputs, execution counts and timing, counted in notebook order as Run
    All counts them; a cell of test functions defines them, which shows nothing."""
    runs = [run for _, run in sorted(run.ran().items())]
    return {
        run.index: (run.outputs, count, run.shortened, run.execution())
        if run.test != "functions"
        else ([], count, {}, run.execution())
        for count, run in enumerate(runs, start=1)
    }


class NotebookWriter:
    """Gathers each notebook's cells from the reports, and writes the notebooks at the end."""

    def __init__(
        self, config: pytest.Config, folder: Path | None, incomplete: bool, option: str = OPTION
    ) -> None:
        ledger(config, keep=True)  # which calls back with each notebook's run, complete
        self.config = config
        self.folder = folder  # None: in place
        self.incomplete = incomplete
        self.option = option  # the option the user gave: what an error names
        self.written: list[Path] = []
        self.left: list[tuple[Path, str]] = []  # not written, and why

    def pytest_ntdd_notebook_complete(self, session: pytest.Session, run: NotebookRun) -> None:
        target = self._target(run.path)
        why = run.incomplete()
        if run.path.suffix != ".ipynb":
            self.left.append((run.path, "a text notebook holds no outputs"))
            return
        if why and not self.incomplete:
            self.left.append((run.path, f"its run did not complete ({why})"))
            self._remove_earlier_copy(run.path, target)
            return
        try:
            self._write(run, target)
        except NtddError as e:  # refused, or the file system said no: the run is not OK
            results_files.failed(session, f"{self.option}: {e}")
        except OSError as e:  # the notebook gone, a folder where the copy goes
            reason = e.strerror or type(e).__name__
            results_files.failed(session, f"{self.option}: {e.filename or target}: {reason}")
        else:
            self.written.append(target)

    def _target(self, path: Path) -> Path:
        if self.folder is None:
            return path
        root = self.config.rootpath
        relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
        return self.folder / relative

    def _remove_earlier_copy(self, path: Path, target: Path) -> None:
        """A copy of *path* that an earlier run wrote into the folder would look like this
        run's: it goes (any other file stays)."""
        if target == path or not target.is_file():
            return
        try:
            if written_from(target.read_bytes()) == self._key(path):
                target.unlink()
                self.left.append((target, "an earlier run's copy, removed"))
        except OSError:
            return

    def _key(self, path: Path) -> str:
        """How a copy names the notebook it was written from: its path under the rootdir."""
        root = self.config.rootpath
        return (path.relative_to(root) if path.is_relative_to(root) else path).as_posix()

    def _write(self, run: NotebookRun, target: Path) -> None:
        path = run.path
        data = run.read_again()
        if run.read_digest is not None and hashlib.sha256(data).hexdigest() != run.read_digest:
            raise NtddError(f"{path}: changed since the run read it; not written")
        if target == path:
            write_atomic(target, with_outputs(path, as_written(run), data), was=data)
            return
        if target.resolve() == path.resolve():
            raise NtddError(f"{path}: {OPTION} would write over it; --ntdd-overwrite does that")
        key = self._key(path)
        kind = node_kind(target)
        if kind is not None:  # never read (a FIFO's read waits for a writer), nor written
            raise NtddError(f"{target}: is {kind}, not a copy ntdd wrote of {key}; not written")
        was = target.read_bytes() if target.exists() else None
        if was is not None and written_from(was) != key:
            raise NtddError(f"{target}: not a copy ntdd wrote of {key}; not overwritten")
        marker = {  # what a later run's copy, or its removal, goes by; and how the run ran
            "written_from": key,
            **ran_as(settings_of(self.config), path),
        }
        write_atomic(target, with_outputs(path, as_written(run), data, marker), was=was)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        where = "in place" if self.folder is None else f"to {self._shown(self.folder)}"
        if self.written:
            count = len(self.written)
            terminalreporter.write_line(
                f"ntdd: wrote {count} notebook{'s' * (count > 1)} as run, {where}"
            )
        for path, why in self.left:
            if why.endswith("removed"):
                terminalreporter.write_line(f"ntdd: {path}: {why}", yellow=True)
                continue
            hint = "; --ntdd-write-incomplete writes it" if "did not complete" in why else ""
            terminalreporter.write_line(f"ntdd: {path} not written: {why}{hint}", yellow=True)

    def _shown(self, path: Path) -> str:
        """*path* as the command line gave it: relative to where pytest was run."""
        here = self.config.invocation_params.dir
        return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def notebook_writer(config: pytest.Config) -> NotebookWriter:
    """The plugin for `--ntdd-write-notebooks` or `--ntdd-overwrite`: the settings say which
    (`ntdd.settings.resolve` refuses what they cannot mean together)."""
    writing = settings_of(config).writing
    assert writing is not None
    results_files.say_failures(config)
    return NotebookWriter(config, writing.folder, writing.incomplete, option=writing.option)


def ran_as(settings: Settings, notebook: Path) -> dict[str, Any]:
    """What a copy's `ntdd` metadata says of a run that was not the notebook's own: smoke
    mode's caps, and the test-only parameters it ran with (name: Python literal)."""
    said: dict[str, Any] = {}
    if settings.smoke is not None:
        said["smoke"] = settings.smoke.describe()
    parameters = settings.parameters.for_notebook(notebook)
    if parameters:
        said["parameters"] = dict(parameters)
    return said
