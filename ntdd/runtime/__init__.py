"""What a generated module runs: the notebook, cell by cell, as a kernel would.

A generated module holds a `NotebookRuntime` as `__ntdd__`: a small facade
over composed parts. Its `CellMap` (`cell_map`) is what is fixed once the
module is imported: the setup cells and parameters it registers, the run's
steps, and the cell and file line of every line of its code. Each device
has a `Kernel` (`kernel`), which owns that device's run as a Jupyter kernel
would (its names, process state, event loop, warning filters, root logger,
random generators and cursor) and the behaviour that changes them: `fresh`,
`activate`, `put_aside`, `restart`, `advance_to`. The pytest side reads any
runtime through the `Runtime` protocol (`protocol`), which the kernel
extension's `KernelRuntime` answers too; generated modules import their
fixtures by name from `fixtures`. Around them: the shell and its magics,
containment of a notebook's misbehaviour (exits, hangs, chdir, sys.path),
timeouts. Generated modules import `NotebookRuntime` from here; that import
path is part of the module format.

May import: the shared modules, ntdd.settings (the run's settings, resolved), ntdd.cells,
ntdd.notebook, ntdd.format, pytest. torch only inside functions.
"""

from ntdd.runtime.notebook_runtime import NotebookRuntime

__all__ = ["NotebookRuntime"]
