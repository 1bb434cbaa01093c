"""`%ntdd`: the saved notebook under `pytest --ntdd`, in a child process.

Running the test functions again in the kernel would run them against the
namespace as the *end* of the notebook left it, and repeat what they do
(`total += 1` adds again): a test above a cell that rebinds a name it reads
sees another value than Run All gave it. So `%ntdd` runs what CI runs, the
notebook file as last saved, in a fresh process, with the project's own
settings; its report is streamed into the cell as it comes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

import pytest

# The child loads ntdd's plugin itself where no entry point does (LoadsPlugin).
_PYTEST = (
    "import sys, pytest\n"
    "from ntdd.defaults import LoadsPlugin\n"
    "sys.exit(pytest.main(sys.argv[1:], plugins=[LoadsPlugin()]))"
)
_SESSION_NAMES = ("__vsc_ipynb_file__", "__session__")  # what VS Code, JupyterLab tell


def notebook_file(namespace: Mapping[str, object], environ: Mapping[str, str]) -> Path | None:
    """The kernel's notebook file, where the front-end said which it is and it is saved.

    JupyterLab's `__session__` (from `JPY_SESSION_NAME`) may be relative to
    the server's root, while the kernel runs in the notebook's folder: so
    the name is also looked for there.
    """
    told = [namespace.get(key) for key in _SESSION_NAMES] + [environ.get("JPY_SESSION_NAME")]
    for name in told:
        if isinstance(name, str) and name:
            path = Path(name)
            for candidate in (path, Path.cwd() / path.name):
                if candidate.is_file():
                    return candidate
    return None


def told_name(namespace: Mapping[str, object], environ: Mapping[str, str]) -> str | None:
    """The notebook's name as the front-end told it, saved or not: for messages."""
    told = [namespace.get(key) for key in _SESSION_NAMES] + [environ.get("JPY_SESSION_NAME")]
    return next((name for name in told if isinstance(name, str) and name), None)


def run_saved(notebook: Path, options: list[str], out: TextIO) -> int:
    """`pytest --ntdd NOTEBOOK OPTIONS` in a child process; its report goes to *out*.

    The child is stopped if the kernel is interrupted.
    """
    command = [sys.executable, "-c", _PYTEST, "--ntdd", str(notebook), *options]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    ) as child:
        try:
            assert child.stdout is not None
            for line in child.stdout:
                out.write(line)
                out.flush()
            return child.wait()
        except BaseException:  # an interrupted kernel does not leave the run behind
            child.kill()
            raise


def failed(exit_code: int) -> bool:
    """Whether a `pytest` exit code is red: anything but passing, or finding no test."""
    return exit_code not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
