"""ntdd: notebooks as test suites.

A code cell whose first line is `# TEST` (or `# TEST: a name`) is a test; the
other code cells are the setup it runs against. `ntdd export` writes a pytest
module per notebook and `pytest --ntdd` runs notebooks directly; in Jupyter,
`%load_ext ntdd` runs each `# TEST` cell as its test (`ntdd.kernel`).

Names are imported lazily: a generated module imports `ntdd.runtime.notebook_runtime` and
should not pay for Jinja or nbformat.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ntdd._version import __version__

if TYPE_CHECKING:
    from ntdd.errors import (
        CannotRunUnderTest,
        ConfigError,
        FileChangedError,
        FileWriteError,
        ForeignFileError,
        GeneratedModuleError,
        KernelDied,
        MarkRefused,
        ModuleEditedError,
        NotebookExit,
        NotebookInterrupt,
        NotebookReadError,
        NotebookTestFailure,
        NotebookWriteError,
        NotPythonError,
        NotUnderNtdd,
        NtddError,
        NtddTimeout,
        NtddWarning,
        ReadOnlyError,
        SetupError,
        StaleModuleWarning,
        SyncConflict,
        TemplateError,
        TextNotebookWriteError,
    )
    from ntdd.notebook.read import read_notebook
    from ntdd.pipeline.plan import make_plan
    from ntdd.pipeline.render import render_module
    from ntdd.values import Notebook, Plan

__all__ = [
    "CannotRunUnderTest",
    "ConfigError",
    "FileChangedError",
    "FileWriteError",
    "ForeignFileError",
    "GeneratedModuleError",
    "KernelDied",
    "MarkRefused",
    "ModuleEditedError",
    "NotPythonError",
    "NotUnderNtdd",
    "Notebook",
    "NotebookExit",
    "NotebookInterrupt",
    "NotebookReadError",
    "NotebookTestFailure",
    "NotebookWriteError",
    "NtddError",
    "NtddTimeout",
    "NtddWarning",
    "Plan",
    "ReadOnlyError",
    "SetupError",
    "StaleModuleWarning",
    "SyncConflict",
    "TemplateError",
    "TextNotebookWriteError",
    "__version__",
    "load_ipython_extension",
    "make_plan",
    "read_notebook",
    "render_module",
    "unload_ipython_extension",
]

_LAZY = {
    "CannotRunUnderTest": "ntdd.errors",
    "ConfigError": "ntdd.errors",
    "FileChangedError": "ntdd.errors",
    "FileWriteError": "ntdd.errors",
    "ForeignFileError": "ntdd.errors",
    "GeneratedModuleError": "ntdd.errors",
    "KernelDied": "ntdd.errors",
    "MarkRefused": "ntdd.errors",
    "ModuleEditedError": "ntdd.errors",
    "NotPythonError": "ntdd.errors",
    "NotUnderNtdd": "ntdd.errors",
    "NotebookExit": "ntdd.errors",
    "NotebookInterrupt": "ntdd.errors",
    "NotebookReadError": "ntdd.errors",
    "NotebookTestFailure": "ntdd.errors",
    "NotebookWriteError": "ntdd.errors",
    "NtddError": "ntdd.errors",
    "NtddTimeout": "ntdd.errors",
    "NtddWarning": "ntdd.errors",
    "ReadOnlyError": "ntdd.errors",
    "SetupError": "ntdd.errors",
    "StaleModuleWarning": "ntdd.errors",
    "SyncConflict": "ntdd.errors",
    "TemplateError": "ntdd.errors",
    "TextNotebookWriteError": "ntdd.errors",
    "Notebook": "ntdd.values",
    "Plan": "ntdd.values",
    "make_plan": "ntdd.pipeline.plan",
    "read_notebook": "ntdd.notebook.read",
    "render_module": "ntdd.pipeline.render",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext ntdd`: run `# TEST` cells as their pytest tests in this kernel."""
    from ntdd.kernel.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext ntdd`: `# TEST` cells run as plain code again."""
    from ntdd.kernel.extension import unload

    unload(ipython)
