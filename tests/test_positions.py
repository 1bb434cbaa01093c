"""A test sees the notebook as Jupyter's Run All leaves it at the test's cell.

Each rule is checked both as an exported module and through `pytest --ntdd`.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from conftest import code, requires_torch, run

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")


# -- position --------------------------------------------------------------------


def test_a_test_sees_a_name_as_bound_above_it_though_a_later_cell_rebinds_it(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "net = 'first'",
            "# TEST: sees the first\nassert net == 'first'",
            "net = 'second'",
            "# TEST: sees the second\nassert net == 'second'",
            "# TEST\ndef test_functions_run_at_their_cell_too():\n    assert net == 'second'",
            "net = 'third'",
        ]
    )
    run_notebook().assert_outcomes(passed=4)  # the last cell runs in the end test


def test_a_test_cell_can_rebind_names_and_later_cells_see_them(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "X = [3.0, 4.0]\ntotal = 0",
            "# TEST: normalise\nnorm = sum(v * v for v in X) ** 0.5\nX = [v / norm for v in X]\n"
            "total += 1\nassert abs(X[0] - 0.6) < 1e-9",
            "# TEST: sees it\nassert X == [0.6, 0.8]\ntotal += 1",
            "after = total",
            "# TEST: the setup below saw both tests\nassert after == 2",
        ]
    )
    run_notebook().assert_outcomes(passed=3)


def test_a_failing_test_leaves_the_state_a_kernel_would_and_the_notebook_goes_on(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "x = 0",
            "# TEST: fails half-way\nx = 1\nassert False\nx = 2",
            "# TEST: sees what ran before the failure\nassert x == 1",
        ]
    )
    run_notebook().assert_outcomes(passed=1, failed=1)


def test_a_docstring_stays_the_description_of_a_cell_that_rebinds(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["n = 1", '# TEST\n"""Counting up."""\nn += 1\nassert n == 2'])
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*::test_cell_2 PASSED - Counting up.*"])


def test_names_bound_anywhere_at_the_top_of_a_cell_land_in_the_namespace(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "# TEST: binds\nimport os.path\nfor i in range(3):\n    pass\n"
            "with open(__import__('os').devnull) as handle:\n    pass\n"
            "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    caught = repr(error)\n"
            "squares = [(last := k * k) for k in range(4)]\n"
            "def helper():\n    return 'helper'\nclass Thing:\n    pass",
            "# TEST: sees them\nassert os.path and i == 2 and handle.closed\n"
            "assert 'ZeroDivisionError' in caught and last == 9\n"
            "assert helper() == 'helper' and Thing.__qualname__ == 'Thing'",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_cells_that_mean_something_else_in_a_function_run_as_notebook_code(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "# TEST: star import\nfrom math import *\nassert pi > 3",
            "# TEST: annotated\nlimit: int = 5\nassert limit == 5",
            "# TEST: sees the namespace\nassert 'limit' in locals() and 'pi' in dir()",
        ]
    )
    run_notebook().assert_outcomes(passed=3)
    notebook(["# TEST: fails as code\nfrom math import *\nassert pi == 3"], name="nb2.ipynb")
    result = run_notebook("nb2.ipynb")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*assert 3.14* == 3*", "*in notebook nb2.ipynb, cell 1 (id *), line 3: assert pi == 3"]
    )


# -- out of order: replay, never the wrong state -----------------------------------


@pytest.fixture
def counting(notebook: Any) -> None:
    """A notebook whose tests each depend on the ones above having run."""
    notebook(
        [
            "steps = []",
            "# TEST: first\nsteps.append(1)\nassert steps == [1]",
            "# TEST: second\nsteps.append(2)\nassert steps == [1, 2]",
            "# TEST: third\nsteps.append(3)\nassert steps == [1, 2, 3]",
        ]
    )


def test_a_test_selected_alone_sees_the_cells_above_it_run(
    counting: None, run_notebook: Any
) -> None:
    run_notebook("nb.ipynb", "-k", "third").assert_outcomes(passed=1)
    run_notebook("nb.ipynb", "-k", "not second").assert_outcomes(passed=2)


REVERSE = """
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items):
    yield
    items.reverse()
"""


def test_tests_run_in_reverse_replay_the_notebook_and_say_so(
    counting: None, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(REVERSE)
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["*::test_third PASSED*", "*::test_first PASSED*", "ntdd: 2 test(s) ran out of notebook*"]
    )


def test_a_test_run_twice_sees_the_state_before_its_cell_both_times(
    counting: None, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(
        "import pytest\n\n@pytest.hookimpl(wrapper=True)\n"
        "def pytest_collection_modifyitems(items):\n    yield\n    items.append(items[1])\n"
    )
    run_notebook().assert_outcomes(passed=4)


def test_notebook_order_is_kept_whatever_order_tests_were_collected_in(
    counting: None, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(
        "def pytest_collection_modifyitems(items):\n    items.reverse()\n"  # before ntdd's
    )
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*ran out of notebook order*")


# -- setup cells -----------------------------------------------------------------


def test_a_failing_setup_cell_errors_the_tests_below_it_not_above(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "x = 1",
            "# TEST: above\nassert x == 1",
            "raise RuntimeError('broken data')",
            "# TEST: below\nassert x == 1",
            "# TEST\ndef test_also_below():\n    assert x == 1",
        ]
    )
    result = run_notebook()
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*RuntimeError: broken data*"])


def test_skipped_setup_cells_stay_skipped_when_the_notebook_replays(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(REVERSE)
    notebook(
        [
            "x = 1",
            code("raise RuntimeError('never')", tags=["ntdd-skip"]),
            "# TEST: a\nassert x == 1",
            "# TEST: b\nassert x == 1",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_skipped_test_cells_are_not_run_on_the_way_to_a_later_test(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "calls = []",
            "# TEST: not today @skip\ncalls.append('skipped')",
            "# TEST: expected to fail @xfail\ncalls.append('xfail')\nassert False",
            "# TEST: last\nassert calls == ['xfail']",
        ]
    )
    run_notebook("nb.ipynb", "-k", "last").assert_outcomes(passed=1)


# -- kernel parity -----------------------------------------------------------------


def test_top_level_await_works_in_setup_and_test_cells(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            "import asyncio\nasync def double(x):\n    await asyncio.sleep(0)\n    return 2 * x\n"
            "two = await double(1)",
            "# TEST: awaits\nfour = await double(two)\nassert four == 4",
            "# TEST\nasync def test_async_function():\n    assert await double(four) == 8",
            "# TEST: the same loop serves every cell\n"
            "assert asyncio.get_event_loop_policy() is not None\nassert four == 4",
        ]
    )
    run_notebook().assert_outcomes(passed=3)


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("x = 1\nreturn x", "SyntaxError: 'return' outside function (line 3)"),
        ("yield 1", "SyntaxError: 'yield' outside function (line 2)"),
    ],
)
def test_return_or_yield_at_the_top_of_a_cell_is_that_tests_syntax_error(
    notebook: Any, run_notebook: Any, cell: str, message: str
) -> None:
    notebook([f"# TEST: odd\n{cell}", "# TEST: fine\nassert True"])
    result = run_notebook()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"*nb.ipynb: cell 1 (id *): {message}*"])


def test_cells_run_as_main_and_notebook_classes_pickle(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            "import pickle\nran = __name__ == '__main__'\nclass Point:\n"
            "    def __init__(self, x):\n        self.x = x",
            "# TEST: main\nassert ran and __name__ == '__main__'",
            "# TEST: pickles\nassert pickle.loads(pickle.dumps(Point(3))).x == 3",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_display_handles_and_the_kernel_object_work_and_print_nothing(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "handle = display('hello', display_id=True)\nhandle.update('bye')\n"
            "ip = get_ipython()\ndata, md = ip.display_formatter.format(1)\n"
            "ip.kernel.session.send(ip.kernel.iopub_socket, 'display_data', {'data': data},"
            " parent=ip.parent_header)\ncount = ip.execution_count",
            "# TEST: displayed\nassert data['text/plain'] == '1' and count >= 1\n"
            "assert handle.display_id",
        ]
    )
    result = run_notebook("nb.ipynb", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*hello*")


def test_magics_with_options_run_through_ipython(
    notebook: Any, run_notebook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NTDD_A", raising=False)
    notebook(
        [
            "calls = []\ndef f():\n    calls.append(1)\n    return 2",
            "%timeit -n 1 -r 1 f()\n%time y = f()\n%env NTDD_A=1",
            "%%capture out\nprint('captured')\nz = 5",
            "# TEST: the magics ran\nimport os\nassert calls == [1, 1] and y == 2\n"
            "assert os.environ['NTDD_A'] == '1'\nassert out.stdout == 'captured\\n' and z == 5",
        ]
    )
    result = run_notebook("nb.ipynb", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*per loop (mean ± std. dev. of 1 run, 1 loop each)*"])


# -- devices ---------------------------------------------------------------------


@requires_torch
def test_listed_devices_that_are_missing_skip_and_the_rest_run_on_an_available_one(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    notebook(
        [
            "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
            "# TEST: plain\nassert 1 + 1 == 2",
            "# TEST\ndef test_on(device):\n    assert torch.zeros(1, device=device).sum() == 0",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-devices", "cuda,cpu", "nb.ipynb", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*cuda: torch.cuda.is_available() is False*"])
    result = run(pytester, "--ntdd", "--ntdd-devices", "cuda:1", "nb.ipynb", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*none of the devices is available (cuda:1: *"])


def test_unknown_devices_are_a_usage_error(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-devices", "cpu,tpu", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*devices are cpu, cuda, cuda:N or mps*; got tpu*"])


@requires_torch
def test_each_device_has_its_own_namespace(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    def everything_available(name: str) -> str:
        return ""

    # The modules the run will use: pytester's runs may have dropped and
    # re-imported them, so the package's attributes can be stale copies.
    for name in ("ntdd.runtime.notebook_runtime", "ntdd.plugin.collection.hooks"):
        monkeypatch.setattr(
            importlib.import_module(name), "device_unavailable", everything_available
        )
    notebook(
        [
            "seen = []",
            "# TEST\ndef test_each(device):\n    seen.append(device.type)\n"
            "    assert seen == [device.type]",
            "# TEST: plain runs on the first device\nassert seen == ['cpu']",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-devices", "cpu,cuda", "nb.ipynb", "-v")
    result.assert_outcomes(passed=3)
