"""`%load_ext ntdd`: `# TEST` cells run as their pytest tests, in the kernel.

An input transformer puts the cell magic `%%ntdd` in front of every cell
whose first line is `# TEST`, so the kernel hands the cell to ntdd instead of
running its code: the cell runs once, as the test `ntdd export` would write
for it. `%ntdd` runs the saved notebook under `pytest --ntdd`, in a new
process (`saved`); `%ntdd --live` runs every test cell run so far again, in
the kernel, as one pytest session.

A cell whose test fails, or does not run (a conftest deselects it, or
`pytest.exit` stops the run), raises `NotebookTestFailure`, so Jupyter shows
it failed and *Run All* stops there, as it would without the extension;
`%config NtddMagics.raise_on_failure = False` only shows the report.
"""

from __future__ import annotations

import io
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import MagicArgumentParser
from traitlets import Bool, List, Unicode

from ntdd.errors import NotebookTestFailure, NtddError
from ntdd.kernel.cells import KernelTests, RanCell
from ntdd.kernel.run import Outcome, defined_name, run_tests
from ntdd.kernel.run import failed as run_failed
from ntdd.kernel.saved import notebook_to_run, run_saved
from ntdd.notebook.markers import is_test_cell
from ntdd.values import Cell

MAGIC = "ntdd"
_RERUN_OPTIONS = MagicArgumentParser(prog="%ntdd", add_help=False)
_RERUN_OPTIONS.add_argument("notebook", nargs="?")
_RERUN_OPTIONS.add_argument("--live", action="store_true")
_RERUN_OPTIONS.add_argument("-k", dest="keyword", metavar="EXPR")
_RERUN_OPTIONS.add_argument("-x", dest="exitfirst", action="store_true")
_RERUN_OPTIONS.add_argument("-v", dest="verbose", action="store_true")


class MarkTestCells:
    """The input transformer: a `# TEST` cell becomes the body of the cell magic `%%ntdd`.

    It sees the cell before IPython's own transforms, so the test gets the
    cell exactly as written, magics and all, as `ntdd export` reads it.
    """

    has_side_effects = True  # IPython's completeness checks leave it out

    def __call__(self, lines: list[str]) -> list[str]:
        if lines and is_test_cell(Cell(0, "code", "".join(lines))):
            return [f"%%{MAGIC}\n", *lines]
        return lines


@magics_class
class NtddMagics(Magics):
    """`%%ntdd` (put in front of `# TEST` cells) and `%ntdd` (run them all again)."""

    raise_on_failure = Bool(
        True,
        help="A cell whose test fails raises NotebookTestFailure, so that Jupyter shows it "
        "failed and Run All stops there. False only shows pytest's report.",
    ).tag(config=True)
    addopts = List(
        Unicode(),
        ["--color=yes"],
        help="pytest options of every in-kernel run (the project's own addopts are left out).",
    ).tag(config=True)

    def __init__(self, shell: Any) -> None:
        super().__init__(shell=shell)
        self.transformer = MarkTestCells()
        self._cell_id: str | None = None
        self._tests: KernelTests | None = None

    def note_cell(self, info: Any) -> None:
        """`pre_run_cell`: the id of the cell about to run, where the front-end sends one."""
        cell_id = getattr(info, "cell_id", None)
        self._cell_id = cell_id if isinstance(cell_id, str) and cell_id else None

    @line_cell_magic
    def ntdd(self, line: str, cell: str | None = None) -> None:
        """%ntdd [NOTEBOOK] [--live] [-k EXPR] [-x] [-v]: run the notebook's tests.

        NOTEBOOK  the notebook file (default: the one the front-end names)
        --live    instead, run every `# TEST` cell run so far in this kernel
                  again, against the namespace as it is now
        -k EXPR   only the tests whose names match EXPR, as `pytest -k`
        -x        stop at the first failure
        -v        one line per test

        Without --live, the notebook as last saved runs under `pytest --ntdd`
        in a new process, as CI runs it. (`%%ntdd` is what the extension puts
        in front of each `# TEST` cell.)
        """
        if cell is not None:
            self._run_cell(line, cell)
            return
        try:
            args = _RERUN_OPTIONS.parse_args(shlex.split(line))
        except ValueError as e:  # unbalanced quotes
            raise UsageError(f"%ntdd {line}: {e}") from e
        options = [*(["-k", args.keyword] if args.keyword else [])]
        options += ["-x"] * args.exitfirst
        if args.live:
            if args.notebook:
                raise UsageError("%ntdd --live runs this kernel's test cells; it takes no file")
            self._run_again([*options, *["-vv"] * args.verbose], checked=not args.keyword)
        else:
            self._run_saved(args.notebook, [*options, "-v" if args.verbose else "-q"])

    @property
    def _shell(self) -> Any:
        """The kernel's shell (a `Magics` is made with one)."""
        assert self.shell is not None
        return self.shell

    # -- one cell ----------------------------------------------------------

    def _run_cell(self, line: str, cell: str) -> None:
        __tracebackhide__ = True
        if line.strip() or not is_test_cell(Cell(0, "code", cell)):
            raise UsageError(
                "%%ntdd runs a cell whose first line is `# TEST`, and takes no options; "
                "the extension puts it in front of such cells itself"
            )
        tests = self._kernel_tests()
        ran = tests.define(cell, self._cell_number(), self._cell_id)
        self._hide_ntdd_names()
        report = io.StringIO()
        with tests.runtime.magics_at_top_level():
            outcome = run_tests(tests.module([ran]), self._node_name(), list(self.addopts), report)
        trouble = outcome.failed or outcome.warnings or not_run(outcome, [ran])
        shown_green = bool(outcome.results) and not trouble
        if shown_green:
            show_output(outcome)
            print(summary_line(outcome))
        else:
            sys.stdout.write(report.getvalue())
        self._raise_if_failed(outcome, [ran])

    # -- every cell --------------------------------------------------------

    def _run_again(self, options: list[str], checked: bool) -> None:
        """`%ntdd --live`; *checked*: a test that did not run is an error (no -k chose it)."""
        tests = self._kernel_tests()
        cells = list(tests.cells.values())
        if not cells:
            print("ntdd: no `# TEST` cell has run in this kernel yet")
            return
        self._hide_ntdd_names()
        with tests.runtime.magics_at_top_level():
            outcome = run_tests(
                tests.module(cells), self._node_name(), [*self.addopts, *options], sys.stdout
            )
        self._raise_if_failed(outcome, cells, checked)

    # -- the saved notebook ------------------------------------------------

    def _run_saved(self, given: str | None, options: list[str]) -> None:
        __tracebackhide__ = True
        try:
            notebook = notebook_to_run(given, self._shell.user_ns, os.environ)
        except NtddError as e:
            raise UsageError(f"%ntdd{' ' + given if given else ''}: {e}") from e
        print(f"ntdd: pytest --ntdd {notebook} (the notebook as last saved)", flush=True)
        code = run_saved(notebook, [*self.addopts, *options], sys.stdout)
        if run_failed(code) and self.raise_on_failure:
            raise NotebookTestFailure(f"pytest --ntdd {notebook} failed (exit code {code})")

    # -- shared ------------------------------------------------------------

    def _kernel_tests(self) -> KernelTests:
        if self._tests is None:
            self._tests = KernelTests(self._shell.user_ns, self._node_name())
        return self._tests

    def _cell_number(self) -> int:
        """The running cell's number, as Jupyter shows it: `In [7]`.

        The shell's own counter moves on before the cell runs in some IPython
        versions and after it in others; the input history holds the running
        cell in either.
        """
        history = getattr(self._shell.history_manager, "input_hist_raw", None)
        return len(history) - 1 if history else int(self._shell.execution_count)

    def _node_name(self) -> str:
        """The notebook's file name where the front-end tells it (JupyterLab, VS Code)."""
        for key in ("__session__", "__vsc_ipynb_file__"):
            path = self._shell.user_ns.get(key)
            if isinstance(path, str) and path:
                return Path(path).name
        return "notebook"

    def _hide_ntdd_names(self) -> None:
        """`__ntdd__`, and the names pytest's assertion rewriter binds, stay out of `%who`.

        `__ntdd__` is put back on each run, so that `%reset` cannot take it away.
        """
        assert self._tests is not None
        user_ns, hidden = self._shell.user_ns, self._shell.user_ns_hidden
        user_ns["__ntdd__"] = self._tests.runtime
        hidden.update({k: v for k, v in user_ns.items() if k == "__ntdd__" or k.startswith("@")})

    def _raise_if_failed(
        self, outcome: Outcome, cells: list[RanCell], checked: bool = True
    ) -> None:
        """A failure raises, and so does a test that did not run (deselected, or the run
        stopped by `pytest.exit`): a cell whose test never ran is not green.

        *checked* False: tests left out on purpose (`-k`) are no error.
        """
        __tracebackhide__ = True
        if not self.raise_on_failure:
            return
        missing = not_run(outcome, cells) if checked else []
        if outcome.failed or missing:
            raise NotebookTestFailure(failure_message(outcome, cells, missing))


def show_output(outcome: Outcome) -> None:
    """What the passing tests printed, as the cell would have printed it without ntdd."""
    for result in outcome.results.values():
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)


def summary_line(outcome: Outcome) -> str:
    """What a cell whose tests all passed (or skipped, or xfailed) shows: one line."""
    parts = [
        f"{r.name} {r.category}" + (f" ({r.reason})" if r.reason else "")
        for r in outcome.results.values()
    ]
    return "ntdd: " + ", ".join(parts)


def not_run(outcome: Outcome, cells: list[RanCell]) -> list[str]:
    """The cells' tests that pytest did not run to a verdict: deselected, or stopped."""
    verdicts = {defined_name(name) for name, r in outcome.results.items() if r.category}
    return [name for cell in cells for name, _ in cell.tests if name not in verdicts]


def failure_message(outcome: Outcome, cells: list[RanCell], missing: Sequence[str] = ()) -> str:
    """The error a failing run raises: which tests failed, of how many, or did not run."""
    failed = [r.name for r in outcome.results.values() if r.category in ("failed", "error")]
    if not failed and missing:
        deselected = [name for name in missing if name in outcome.deselected]
        stopped = [name for name in missing if name not in outcome.deselected]
        parts = [f"{', '.join(deselected)} deselected"] * bool(deselected)
        parts += [f"{', '.join(stopped)} stopped before a verdict"] * bool(stopped)
        return f"did not run: {'; '.join(parts)}; pytest's report is above"
    if not failed:
        return f"pytest stopped with exit code {int(outcome.exit_code)}; its report is above"
    total = sum(len(c.tests) for c in cells)
    which = ", ".join(failed)
    return f"{len(failed)} of {total} tests failed: {which}" if total > 1 else f"{which} failed"


def load(shell: Any) -> None:
    """Register the magics, the transformer and the cell-id listener with *shell*."""
    magics = NtddMagics(shell)
    shell.register_magics(magics)
    shell.input_transformers_cleanup.insert(0, magics.transformer)
    shell.events.register("pre_run_cell", magics.note_cell)


def unload(shell: Any) -> None:
    """Take back all that `load` registered; the kernel runs `# TEST` cells as code again."""
    manager = shell.magics_manager
    magics = manager.registry.pop(NtddMagics.__name__, None)
    for kind in ("line", "cell"):
        manager.magics[kind].pop(MAGIC, None)
    if not isinstance(magics, NtddMagics):
        return
    shell.input_transformers_cleanup.remove(magics.transformer)
    shell.events.unregister("pre_run_cell", magics.note_cell)
    if magics in shell.configurables:
        shell.configurables.remove(magics)
    shell.user_ns.pop("__ntdd__", None)
