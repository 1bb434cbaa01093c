"""What a kernel keeps from cell to cell, ntdd keeps: warning filters, logging, the
event loop, assertion messages, the working directory's imports, future flags.

Each case is one a real kernel's Run All judges as written here (see
`test_parity.py`, which runs the same notebooks in a kernel).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import export, run

# The inner runs are in-process: this suite's `filterwarnings = error` is under their filters.
SHOWN = ("nb.ipynb", "-W", "default::UserWarning")
CATCHES = (
    "try:\n    warnings.warn('{text}')\n    raised = False\n"
    "except UserWarning:\n    raised = True\nassert raised"
)


def test_a_warning_filter_a_cell_sets_lasts_for_every_test_below(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "import warnings\nwarnings.simplefilter('error', UserWarning)",
            "# TEST: first\n" + CATCHES.format(text="x"),
            "# TEST: second\n" + CATCHES.format(text="y"),
            "# TEST: third\n" + CATCHES.format(text="z"),
        ]
    )
    run_notebook(*SHOWN).assert_outcomes(passed=3)


def test_a_filter_set_by_a_test_cell_lasts_too(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "import warnings",
            "# TEST: sets it\nwarnings.filterwarnings('error', message='late')",
            "# TEST: below\n" + CATCHES.format(text="late"),
        ]
    )
    run_notebook(*SHOWN).assert_outcomes(passed=2)


def test_a_dropped_magic_is_no_error_under_filterwarnings_error(
    pytester: pytest.Pytester, notebook: Callable[..., Path]
) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    path = notebook(["x = 1\n%pip install nothing-at-all", "# TEST: x\nassert x == 1"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1)  # said as the notebook is read, and not again
    result.stdout.fnmatch_lines(["ntdd: warning: *'%pip install nothing-at-all' will be dropped*"])
    assert export(path) == 0
    result = run(pytester, "test_nb.py")  # an exported module says so as the cell runs
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*NtddWarning*%pip install nothing-at-all*dropped*"])


def test_a_setup_cells_warning_is_the_notebooks_not_the_tests(
    pytester: pytest.Pytester, notebook: Callable[..., Path]
) -> None:
    notebook(
        [
            "import warnings\nwarnings.warn('from the setup cell')",
            "# TEST: passes\nassert True",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "-W", "default")  # not this suite's `error`
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["nb.ipynb", "*nb.ipynb (setup cell 1, id *):2: UserWarning: from the setup*"]
    )


def test_basic_config_in_a_cell_configures_logging(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "import io, logging\nstream = io.StringIO()\n"
            "logging.basicConfig(stream=stream, level=logging.INFO, format='%(message)s')",
            "# TEST: its handler\nlogging.info('hello')\nassert stream.getvalue() == 'hello\\n'",
            "# TEST: its level\nassert logging.getLogger().level == logging.INFO",
        ]
    )
    run_notebook("nb.ipynb", "-o", "log_level=ERROR").assert_outcomes(passed=2)


def test_the_notebooks_root_logger_is_its_own(
    pytester: pytest.Pytester, notebook: Callable[..., Path]
) -> None:
    notebook(["import logging\nlogging.basicConfig(level=logging.DEBUG)", "# TEST\npass"])
    notebook(
        ["# TEST: a fresh root\nimport logging\n"
         "assert not logging.getLogger().handlers\n"
         "assert logging.getLogger().level == logging.WARNING"],
        name="nb2.ipynb",
    )  # fmt: skip
    run(pytester, "--ntdd", "nb.ipynb", "nb2.ipynb").assert_outcomes(passed=2)


def test_a_test_that_takes_caplog_still_reads_the_records(
    pytester: pytest.Pytester, notebook: Callable[..., Path]
) -> None:
    notebook(
        [
            "import logging",
            "# TEST\ndef test_logs(caplog):\n    logging.getLogger('nb').warning('careful')\n"
            "    assert 'careful' in caplog.text",
        ]
    )
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)


def test_every_cell_runs_in_a_running_event_loop(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "import asyncio\nloop = asyncio.get_running_loop()\n"
            "async def work():\n    await asyncio.sleep(0)\n    return 1",
            "# TEST: the same loop\nassert asyncio.get_running_loop() is loop",
            "# TEST: a task from a cell that does not await\ntask = asyncio.ensure_future(work())",
            "# TEST: the task ran between the cells\nassert task.done() and task.result() == 1",
            "# TEST: awaits on it\nassert await asyncio.create_task(work()) == 1",
            "# TEST: asyncio.run is refused\ncoroutine = work()\ntry:\n"
            "    asyncio.run(coroutine)\n    refused = False\nexcept RuntimeError:\n"
            "    refused = True\n    coroutine.close()\nassert refused",
        ]
    )
    run_notebook().assert_outcomes(passed=5)


def test_a_caught_assertion_error_has_pythons_message(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "x = 1",
            "# TEST: its message\ntry:\n    assert x == 2, 'custom'\n"
            "except AssertionError as e:\n    assert str(e) == 'custom' and e.args == ('custom',)",
            "# TEST: none\ntry:\n    assert x == 2\nexcept AssertionError as e:\n"
            "    assert e.args == ()",
            "# TEST: an assert not caught is still explained\nassert x == 2",
        ]
    )
    result = run_notebook()
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*assert 1 == 2*"])


def test_imports_after_chdir_look_in_the_new_working_directory(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "import os\nos.makedirs('sub', exist_ok=True)\n"
            "with open('sub/only_here.py', 'w') as f:\n    f.write('VALUE = 7')\n%cd sub",
            "# TEST: imports from sub\nimport only_here\nassert only_here.VALUE == 7",
        ]
    )
    run_notebook().assert_outcomes(passed=1)


def test_a_future_import_applies_to_the_cells_below(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    notebook(
        [
            "from __future__ import annotations",
            "def f(x: Undefined) -> None:\n    pass",
            "# TEST: strings\nassert f.__annotations__['x'] == 'Undefined'",
            "# TEST: a test cell's own\ndef g(y: AlsoUndefined):\n    pass\n"
            "assert g.__annotations__['y'] == 'AlsoUndefined'",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_in_a_def_test_cell_a_caught_assertion_has_pytests_message(
    notebook: Callable[..., Path], run_notebook: Callable[..., Any]
) -> None:
    """A difference the docs list: the module's functions are rewritten as pytest
    rewrites the exported module, so both ways agree."""
    notebook(
        [
            "x = 1",
            "# TEST\ndef test_reads_it():\n    try:\n        assert x == 2, 'custom'\n"
            "    except AssertionError as e:\n        assert str(e).startswith('custom\\n')",
        ]
    )
    run_notebook().assert_outcomes(passed=1)


REVERSED = """\
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    yield
    items.reverse()
"""


def test_a_replay_starts_without_the_filters_of_the_run_before(
    pytester: pytest.Pytester, notebook: Callable[..., Path]
) -> None:
    pytester.makeconftest(REVERSED)
    notebook(
        [
            "import warnings",
            "# TEST: no filter yet\nwarnings.warn('not an error here')",
            "# TEST: sets one\nwarnings.simplefilter('error', UserWarning)",
        ]
    )
    result = run(pytester, "--ntdd", *SHOWN)
    result.assert_outcomes(passed=2, warnings=2)  # the first also on the way to the second
    result.stdout.fnmatch_lines(["ntdd: 1 test(s) ran out of notebook order*"])
