"""What a generated module runs: the notebook, cell by cell, as a kernel would.

`NotebookRuntime` advances the notebook's namespace to each test's position,
runs magics with IPython's implementations, keeps a notebook's misbehaviour
(exits, hangs, chdir, sys.path) inside the test that caused it, and maps a
failure back to its cell. Generated modules import `NotebookRuntime` from
here; that import path is part of the module format.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format, pytest. torch only
inside functions.
"""

from ntdd.runtime.notebook_runtime import NotebookRuntime

__all__ = ["NotebookRuntime"]
