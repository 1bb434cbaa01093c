"""What IPython's `%run` calls back on its shell, for a notebook run outside a kernel.

`%run` itself is IPython's (`ExecutionMagics.run`): it finds the script,
sets `sys.argv`, makes the script's module and merges its names into the
notebook's. The shell runs the script. A kernel shows what the script
raises as the cell's error, so here it propagates and fails the cell; an
exit with status 0 (or any exit under `%run -e`) is no error, as there.
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any


class RunsScripts:
    """The part of the notebook's shell that `%run` calls."""

    user_ns: dict[str, Any]
    scripts: dict[str, types.ModuleType]  # by path: their functions keep their globals

    @property
    def user_module(self) -> types.ModuleType:
        """The module whose namespace is the notebook's (`%run -i` runs as it)."""
        main = sys.modules.get("__main__")
        if main is not None and main.__dict__ is self.user_ns:
            return main
        return types.ModuleType("__main__")

    def new_main_mod(self, filename: str, modname: str) -> types.ModuleType:
        """The module a script `%run` runs in: kept while the run lasts, as IPython keeps
        it, so that the functions the script defines still see its globals."""
        path = os.path.abspath(filename)
        module = types.ModuleType(modname, doc="Module created for script run in IPython")
        module.__file__ = path
        self.scripts[path] = module
        return module

    def safe_execfile(
        self,
        fname: str,
        *where: dict[str, Any],
        exit_ignore: bool = False,
        raise_exceptions: bool = False,
        shell_futures: bool = False,
    ) -> None:
        """Run a script for `%run`. What it raises fails the cell: a kernel shows it as
        the cell's error; `sys.exit(0)`, and any exit under `%run -e`, does not."""
        __tracebackhide__ = True
        from IPython.utils.syspathcontext import prepended_to_syspath

        path = Path(fname).expanduser().resolve()
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        globals_ = where[0] if where else self.user_ns
        locals_ = where[1] if len(where) > 1 else globals_
        with prepended_to_syspath(str(path.parent)):
            try:
                exec(code, globals_, locals_)
            except SystemExit as status:
                if status.code and not exit_ignore:
                    raise

    def safe_run_module(self, mod_name: str, where: dict[str, Any]) -> None:
        """Run a module for `%run -m`, as IPython does, its errors failing the cell."""
        __tracebackhide__ = True
        import runpy

        try:
            where.update(runpy.run_module(str(mod_name), run_name="__main__", alter_sys=True))
        except SystemExit as status:
            if status.code:
                raise

    def safe_execfile_ipy(
        self, fname: str, shell_futures: bool = False, raise_exceptions: bool = False
    ) -> None:
        """Run a `.ipy` script or a notebook for `%run`, cell by cell, with IPython's own code."""
        __tracebackhide__ = True
        from IPython.core.interactiveshell import InteractiveShell

        InteractiveShell.safe_execfile_ipy(self, fname, raise_exceptions=True)  # type: ignore[arg-type]
