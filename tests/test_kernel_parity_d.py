"""Kernel parity, round 4: a kernel's running event loop, IPython's own traceback
formatting on `get_ipython()`, and library classes a notebook patched.

Each case once gave a verdict a kernel's Run All does not: a cell's loop that said it was
not running (so `loop.run_until_complete` ran where a kernel refuses it), IPython's
`VerboseTB().text(...)` failing on the shell's missing `hooks`, and an attribute a notebook
set on a library class still set for the notebooks after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import make_notebook, run
from oracle import assert_ntdd_agrees_with_a_kernel, kernel_verdicts, ntdd_run_by_notebook

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")

A_RUNNING_LOOP = [
    "import asyncio\nloop = asyncio.get_running_loop()",
    "# TEST: it runs\nassert loop.is_running()",
    "# TEST: so run_until_complete is refused\nc = asyncio.sleep(0)\n"
    "try:\n    loop.run_until_complete(c)\nexcept RuntimeError as e:\n"
    "    assert 'already running' in str(e)\nelse:\n    raise AssertionError('ran')\n"
    "finally:\n    c.close()",
    "# TEST: and asyncio.run\nc = asyncio.sleep(0)\ntry:\n    asyncio.run(c)\n"
    "except RuntimeError as e:\n    assert 'running event loop' in str(e)\n"
    "else:\n    raise AssertionError('ran')\nfinally:\n    c.close()",
    "# TEST: a cell runs in a task\nassert asyncio.current_task() is not None",
    "# TEST: awaits on the same loop\nawait asyncio.sleep(0)\n"
    "assert asyncio.get_running_loop() is loop and loop.is_running()",
    "# TEST: still running after the await\nassert loop.is_running()\n"
    "assert asyncio.current_task() is not None",
]
NESTED = [  # nest_asyncio patches asyncio's classes: run in a process of its own
    *A_RUNNING_LOOP[:2],
    "# TEST: nest_asyncio nests\nimport nest_asyncio2\nnest_asyncio2.apply(loop)\n"
    "assert loop.run_until_complete(asyncio.sleep(0, result=5)) == 5",
    "# TEST: and the loop goes on running\nassert loop.is_running()",
]

IPYTHONS_TRACEBACKS = [  # as execnb's shell formats a cell's error
    "from IPython.core.ultratb import VerboseTB\ndef fails():\n    return 1 / 0\n"
    "try:\n    fails()\nexcept ZeroDivisionError as e:\n    error = e",
    "# TEST: VerboseTB formats a caught error\n"
    "text = VerboseTB().text(type(error), error, error.__traceback__)\n"
    "assert 'ZeroDivisionError' in text and 'fails' in text",
    "# TEST: so does the shell's own\nshell = get_ipython()\n"
    "text = shell.InteractiveTB.text(type(error), error, error.__traceback__)\n"
    "assert 'ZeroDivisionError' in text",
    "# TEST: a hook set on the shell is called\nseen = []\n"
    "shell.set_hook('synchronize_with_editor', lambda self, f, line, c: seen.append(line))\n"
    "VerboseTB().text(type(error), error, error.__traceback__)\nassert seen",
    "# TEST: the error alone\ntry:\n    fails()\nexcept ZeroDivisionError:\n"
    "    only = shell.get_exception_only()\nassert only.startswith('ZeroDivisionError: ')",
    "# TEST: the inspector\ninfo = shell.inspector.info(fails, 'fails')\n"
    "assert info['type_name'] == 'function'",
    "# TEST: the debugger's class\nassert shell.debugger_cls.__name__.endswith('Pdb')",
]

CASES: dict[str, list[Any]] = {
    "a_running_loop_runs": A_RUNNING_LOOP,
    "ipythons_tracebacks_on_the_shell": IPYTHONS_TRACEBACKS,
}


def _write(folder: Path, cells: list[Any], name: str = "nb.ipynb") -> Path:
    path = folder / name
    nbformat.write(make_notebook(cells), str(path))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_ntdd_and_a_kernel_agree(case: str, pytester: pytest.Pytester) -> None:
    assert_ntdd_agrees_with_a_kernel(pytester, _write(pytester.path, CASES[case]))


# -- a kernel's loop runs while a cell runs -----------------------------------------------


def test_a_cell_runs_inside_a_running_loop(pytester: pytest.Pytester) -> None:
    """`is_running()` was False in a cell that did not await, and `run_until_complete`
    ran there, where a kernel refuses both it and `asyncio.run`."""
    path = _write(pytester.path, A_RUNNING_LOOP)
    result = run(pytester, "--ntdd", str(path), "-p", "no:asyncio")
    result.assert_outcomes(passed=6)


def test_nest_asyncio_nests_in_the_running_loop(pytester: pytest.Pytester) -> None:
    pytest.importorskip("nest_asyncio2")
    path = _write(pytester.path, NESTED)
    result = run(pytester, "--ntdd", str(path), "-p", "no:asyncio", subprocess=True)
    result.assert_outcomes(passed=3)


# -- what IPython's own code reads from the shell --------------------------------------------


def test_ipythons_traceback_formatting_works_on_the_shell(pytester: pytest.Pytester) -> None:
    """`VerboseTB().text(...)` raised `'get_ipython()' has no attribute 'hooks'`."""
    path = _write(pytester.path, IPYTHONS_TRACEBACKS)
    result = run(pytester, "--ntdd", str(path))
    result.assert_outcomes(passed=6)


# -- what a notebook set on library classes and modules ends with it ---------------------------

PATCHES = [  # a notebook that sets its own function and plain data on a library's class and module
    "from pathlib import Path\nimport logging",
    "def _hello(self):\n    return 'hello ' + self.name\nPath.hello = _hello\n"
    "logging.raiseExceptions = False\nlogging.ntdd_flag = 'set'",
    "# TEST: its patch works\nassert Path('x').hello() == 'hello x'\n"
    "assert logging.raiseExceptions is False",
]
FRESH = [  # one that expects the library as a fresh process has it
    "from pathlib import Path\nimport logging",
    "# TEST: no hello on Path\nassert not hasattr(Path, 'hello')",
    "# TEST: logging as imported\nassert logging.raiseExceptions is True\n"
    "assert not hasattr(logging, 'ntdd_flag')",
]


@pytest.mark.slow
def test_what_a_notebook_set_on_a_library_is_undone_for_the_next(
    pytester: pytest.Pytester,
) -> None:
    """`Path.hello = _hello` in one notebook was still set in every notebook after it."""
    folder = pytester.path / "notebooks"
    folder.mkdir()
    paths = [_write(folder, PATCHES, "a_patches.ipynb"), _write(folder, FRESH, "b_fresh.ipynb")]
    result = run(pytester, "--ntdd", "-p", "no:randomly", *map(str, paths), subprocess=True)
    result.assert_outcomes(passed=3)


@pytest.mark.slow
def test_after_a_patching_notebook_the_next_gets_a_kernels_verdicts(
    pytester: pytest.Pytester,
) -> None:
    """Each in a kernel of its own, then both in one `pytest --ntdd`: the same verdicts."""
    folder = pytester.path / "notebooks"
    folder.mkdir()
    paths = [_write(folder, PATCHES, "a_patches.ipynb"), _write(folder, FRESH, "b_fresh.ipynb")]
    alone = {path.name: kernel_verdicts(path) for path in paths}
    assert not any(alone["b_fresh.ipynb"].values()), alone
    assert ntdd_run_by_notebook(pytester, "--ntdd", *map(str, paths)) == alone
