"""IPython magics and shell escapes, run in-process where they can run.

IPython's input transformer turns `%env X=1` into
`get_ipython().run_line_magic('env', 'X=1')`; this module provides the
`get_ipython()` those calls reach. It runs what has a meaning under test
(`%env`, `%time`, `%%capture`, `%%writefile`, `!cmd`), does nothing for what
only affects a display (`%matplotlib inline`), and drops the rest with a
visible `NtddWarning`: installs (`%pip`), editor helpers, unknown magics.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any


class NtddWarning(UserWarning):
    """Something in a notebook that ntdd could not do as a kernel would."""


# Magics that only shape a front-end's display or an editing session.
DISPLAY_ONLY = frozenset(
    {
        "matplotlib", "pylab", "config", "load_ext", "reload_ext", "unload_ext",
        "autoreload", "aimport", "xmode", "precision", "pprint", "colors", "who",
        "whos", "who_ls", "history", "notebook", "html", "HTML", "javascript", "js",
        "markdown", "latex", "svg", "autosave", "qtconsole", "connect_info",
    }
)  # fmt: skip
# Magics that would change the environment under test; never run.
NEVER_RUN = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
LINE_MAGICS = frozenset({"env", "time", "timeit", "cd", "pwd", "system", "sx"})
CELL_MAGICS = frozenset({"time", "timeit", "capture", "writefile", "file", "bash", "sh", "script"})
RUNNABLE = LINE_MAGICS | CELL_MAGICS | DISPLAY_ONLY | {"getoutput"}


def unsupported(names: tuple[str, ...]) -> list[str]:
    """The magics among *names* that ntdd drops rather than runs."""
    return [n for n in names if n not in RUNNABLE]


class NotebookShell:
    """The `get_ipython()` of a notebook under test: runs magics in its namespace."""

    def __init__(self, namespace: dict[str, Any], where: Callable[[], str]) -> None:
        self.user_ns = namespace
        self._where = where  # names the notebook cell being run, for notes

    def run_line_magic(self, name: str, line: str, _stack_depth: int = 1) -> Any:
        handler = getattr(self, f"_line_{name}", None)
        if name in DISPLAY_ONLY:
            return None
        if handler is None:
            return self._drop(f"%{name} {line}".strip())
        return handler(line)

    def run_cell_magic(self, name: str, line: str, cell: str) -> Any:
        handler = getattr(self, f"_cell_{name}", None)
        if name in DISPLAY_ONLY:
            return None
        if handler is None:
            return self._drop(f"%%{name} {line}".strip())
        return handler(line, cell)

    def system(self, cmd: str) -> int:
        """`!cmd`: run in a shell; its output goes to this process's stdout."""
        done = subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        self.user_ns["_exit_code"] = done.returncode
        return done.returncode

    def getoutput(self, cmd: str, split: bool = True, depth: int = 0) -> Any:
        """`x = !cmd`: the command's output lines, as IPython's SList."""
        from IPython.utils.text import SList

        done = subprocess.run(cmd, shell=True, capture_output=True, text=True, check=False)
        lines = (done.stdout + done.stderr).splitlines()
        return SList(lines) if split else "\n".join(lines)

    def _drop(self, what: str) -> None:
        warnings.warn(
            f"{self._where()}: {what!r} dropped: ntdd does not run it under test",
            NtddWarning,
            stacklevel=3,
        )

    def _run(self, code: str, mode: str = "exec", first_line: int = 1) -> Any:
        """Run *code* in the notebook's namespace, numbered as lines of its cell."""
        compiled = compile("\n" * (first_line - 1) + code, self._where(), mode)
        return eval(compiled, self.user_ns) if mode == "eval" else exec(compiled, self.user_ns)

    def _line_env(self, line: str) -> Any:
        line = line.strip()
        if not line:
            return dict(os.environ)
        key, sep, value = line.partition("=") if "=" in line else line.partition(" ")
        if not sep:
            return os.environ.get(key)
        os.environ[key.strip()] = value.strip()
        return None

    def _line_time(self, line: str) -> Any:
        start = time.perf_counter()
        try:
            result = self._run(line, "eval")
        except SyntaxError:
            result = self._run(line)
        print(f"Wall time: {time.perf_counter() - start:.3g} s")
        return result

    def _line_timeit(self, line: str) -> Any:
        # Under test, a statement's value matters, not its speed: run it once.
        statement = " ".join(w for w in shlex.split(line, posix=False) if not w.startswith("-"))
        return self._line_time(statement)

    def _line_cd(self, line: str) -> None:
        os.chdir(Path(line.strip().strip("'\"")).expanduser())

    def _line_pwd(self, line: str) -> str:
        return os.getcwd()

    def _line_system(self, line: str) -> Any:
        return self.getoutput(line)

    _line_sx = _line_system

    def _cell_time(self, line: str, cell: str) -> None:
        start = time.perf_counter()
        self._run(cell, first_line=2)
        print(f"Wall time: {time.perf_counter() - start:.3g} s")

    def _cell_timeit(self, line: str, cell: str) -> None:
        if line.strip() and not line.startswith("-"):
            self._run(line)  # the setup statement of `%%timeit setup`
        self._run(cell, first_line=2)

    def _cell_capture(self, line: str, cell: str) -> None:
        from IPython.utils.capture import CapturedIO

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            self._run(cell, first_line=2)
        names = [w for w in line.split() if not w.startswith("-")]
        if names:
            self.user_ns[names[0]] = CapturedIO(out, err)

    def _cell_writefile(self, line: str, cell: str) -> None:
        words = shlex.split(line)
        append = "-a" in words or "--append" in words
        target = Path(next(w for w in words if not w.startswith("-")))
        with target.open("a" if append else "w", encoding="utf-8") as f:
            f.write(cell)

    _cell_file = _cell_writefile

    def _cell_bash(self, line: str, cell: str) -> None:
        done = subprocess.run(["bash"], input=cell, capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)

    _cell_sh = _cell_bash

    def _cell_script(self, line: str, cell: str) -> None:
        done = subprocess.run(shlex.split(line), input=cell, capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)


def display(*objs: Any, **kwargs: Any) -> Any:
    """The kernel's built-in `display`, outside a kernel: IPython prints the objects.

    With `display_id`, a kernel returns a handle to update the output later;
    outside one IPython returns None, so a handle is made here, as IPython's
    own, whose updates print again.
    """
    from IPython.display import DisplayHandle
    from IPython.display import display as ipython_display

    handle = ipython_display(*objs, **kwargs)
    display_id = kwargs.get("display_id")
    if handle is None and display_id:
        handle = DisplayHandle(display_id if isinstance(display_id, str) else None)
    return handle
