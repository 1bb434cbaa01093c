"""The exceptions and warnings ntdd raises: one base class, one subclass per domain.

Every message says what went wrong and where (file, cell), in one line, so
that the CLI can print it as is and pytest can show it as a collection error.
"""

from __future__ import annotations


class NtddError(Exception):
    """Base class of every error ntdd reports to a user."""


class NotebookReadError(NtddError):
    """A file could not be read as a Jupyter notebook."""


class NotPythonError(NotebookReadError):
    """A notebook in another language (R, Julia): its cells are not Python.

    *has_tests* says whether it has `# TEST` cells; one without them has
    nothing for ntdd to run, and pytest passes it over.
    """

    def __init__(self, message: str, language: str, has_tests: bool) -> None:
        super().__init__(message)
        self.language = language
        self.has_tests = has_tests


class TemplateError(NtddError):
    """A template failed to render valid Python, or lacks what ntdd needs."""


class ForeignFileError(NtddError):
    """A file at an output path was not written by ntdd, or not for this notebook."""


class ModuleEditedError(ForeignFileError):
    """A generated module was edited by hand; rewriting it would lose the edits."""


class ConfigError(NtddError):
    """A setting in pyproject.toml or on the command line is not valid."""


class GeneratedModuleError(NtddError):
    """A file claims to be an ntdd module but its header or regions are broken."""


class ReadOnlyError(NtddError):
    """A file ntdd would write is read-only."""


class FileWriteError(NtddError):
    """A file ntdd would write cannot be written: the disk, the folder or the name."""


class FileChangedError(NtddError):
    """A file changed on disk since it was read: writing would undo that change."""


class TextNotebookWriteError(NtddError):
    """A text notebook that jupytext would not write back as it is."""


class NotebookWriteError(NtddError):
    """A notebook that ntdd cannot update without changing bytes it should keep."""


class SyncConflict(NtddError):
    """Both the notebook and the module changed since the last export, or an edit
    cannot be written back exactly."""


class MarkRefused(NtddError):
    """A notebook that would not read back as itself with the `# TEST` lines added."""


class SetupError(NtddError):
    """A setup cell raised: the tests below it error, the first with the cell's traceback.

    It carries the cell and the class of what it raised, so that reports and
    `ntdd faults` read them and never its message. *where* is "" for the test
    that ran the cell (the error's cause is the cell's own exception); for each
    test below, it names that test ("test_x"), under which the traceback is.
    """

    def __init__(
        self,
        message: str,
        index: int = 0,
        cell_id: str | None = None,
        raised: type[BaseException] | None = None,
        where: str = "",
    ) -> None:
        super().__init__(message)  # the message alone, as `str(error)` and a pickle read it
        self.index = index
        self.cell_id = cell_id
        self.raised = raised
        self.where = where

    @property
    def first(self) -> bool:
        """Whether this is the error of the test that ran the cell, not of one below it."""
        return not self.where


class StaleModuleWarning(UserWarning):
    """A generated module no longer matches its notebook: its tests run the old cells.

    Strict runs make it an error: `pytest -W error::ntdd.StaleModuleWarning`,
    or `filterwarnings = ["error::ntdd.StaleModuleWarning"]` in pytest's settings.
    """


class NtddWarning(UserWarning):
    """Something in a notebook that ntdd could not do as a kernel would.

    A note, never a cell's error (see `ntdd.runtime.notes`); silenced by
    `pytest -W ignore::ntdd.NtddWarning`.
    """


# What notebook code meets as it runs under test: exceptions a test fails with.


class NtddTimeout(BaseException):
    """A test, or the cells it needed, ran past its deadline."""


class NotebookOutOfTime(NtddTimeout):
    """A test of a notebook whose time budget an earlier test spent: it ran no cell."""


class KernelDied(BaseException):
    """Notebook code called `os._exit`: a kernel would die here.

    A `BaseException`, so that `except Exception` in a cell, and a cell
    tagged `raises-exception`, do not take it for an error a kernel survives.
    """

    def __init__(self, message: str, call: str) -> None:
        super().__init__(message)
        self.call = call  # `os._exit(0)`


class NotebookInterrupt(Exception):
    """Notebook code raised KeyboardInterrupt itself; nobody pressed Ctrl-C."""


class NotebookExit(Exception):
    """Notebook code called `pytest.exit()`: in a kernel, an ordinary exception."""


class NotebookTestFailure(Exception):
    """A test run in a kernel (`%load_ext ntdd`) failed: the cell errors, pytest's report above."""

    def _render_traceback_(self) -> list[str]:
        """One line: pytest's report, printed above, is the traceback worth reading."""
        return [f"{type(self).__name__}: {self}"]


class CannotRunUnderTest(Exception):
    """A magic in a test's code that ntdd cannot run: the code did not run, the test fails."""


class NotUnderNtdd(AttributeError):
    """A part of a kernel's shell that a notebook under test has no stand-in for."""
