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

from ntdd.defaults import PLUGIN
from ntdd.errors import NtddError
from ntdd.notebook.files import is_notebook_file, path_argument

# The child loads ntdd's plugin itself where no entry point does, as
# `ntdd.defaults.LoadsPlugin` does; but it imports nothing of ntdd before pytest
# has installed its assertion rewriter, as under `pytest --ntdd`. An import of
# `ntdd` before then is "Module already imported so cannot be rewritten; ntdd",
# a PytestAssertRewriteWarning that a project's `filterwarnings = ["error"]`
# makes a failed run.
_PYTEST = f"""\
import sys, pytest
class LoadsPlugin:
    def pytest_load_initial_conftests(self, early_config):
        manager = early_config.pluginmanager
        if not (manager.has_plugin("ntdd") or manager.has_plugin({PLUGIN!r})):
            manager.import_plugin({PLUGIN!r})
sys.exit(pytest.main(sys.argv[1:], plugins=[LoadsPlugin()]))
"""
_SESSION_NAMES = ("__vsc_ipynb_file__", "__session__")  # what VS Code, JupyterLab tell
# Set in the child's environment: a kernel started inside it (nbval's, with
# `--nbval-lax` in the project's addopts) must not start the run again.
NESTED = "NTDD_SAVED_RUN"


def notebook_to_run(
    given: str | None, namespace: Mapping[str, object], environ: Mapping[str, str]
) -> Path:
    """The notebook file `%ntdd` runs: *given*, else the one the front-end named.

    Raises `NtddError` saying what to do where there is none, and inside a
    run that `%ntdd` started.
    """
    if environ.get(NESTED):
        raise NtddError(
            f"this kernel runs inside the run of {environ[NESTED]} that %ntdd started; "
            "it does not start another"
        )
    if given:
        path = Path(given).expanduser()
        if not path.is_file():
            raise NtddError("no such notebook file")
        if not is_notebook_file(path, given=True):
            raise NtddError(
                "not a notebook: give a .ipynb, or a text notebook with jupytext's header"
            )
        return path
    told = [namespace.get(key) for key in _SESSION_NAMES] + [environ.get("JPY_SESSION_NAME")]
    names = [name for name in told if isinstance(name, str) and name]
    found = _saved(names)
    if found is not None:
        return found
    where = (
        f"{names[0]} is not saved where this kernel runs; save it, or give its path"
        if names
        else "this kernel was not told which notebook it runs; give its path"
    )
    raise NtddError(
        f"{where} (`%ntdd path/to/notebook.ipynb`), or run the test cells run so far "
        "again in this kernel (`%ntdd --live`)"
    )


def _saved(names: list[str]) -> Path | None:
    """The first of *names* that is a saved file.

    JupyterLab's `__session__` (from `JPY_SESSION_NAME`) may be relative to
    the server's root, while the kernel runs in the notebook's folder: so
    each name is also looked for there.
    """
    for name in names:
        path = Path(name)
        for candidate in (path, Path.cwd() / path.name):
            if candidate.is_file():
                return candidate
    return None


def run_saved(notebook: Path, options: list[str], out: TextIO) -> int:
    """`pytest --ntdd NOTEBOOK OPTIONS` in a child process; its report goes to *out*.

    The child is stopped if the kernel is interrupted.
    """
    command = [sys.executable, "-c", _PYTEST, "--ntdd", path_argument(notebook), *options]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", NESTED: str(notebook)}
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
