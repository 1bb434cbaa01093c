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
