"""`%load_ext ntdd`: `# TEST` cells run as their pytest tests, in a real Jupyter kernel.

One notebook exercises the extension cell by cell (a kernel start costs
seconds); each test below reads the outputs of the cells it is about.
The kernel has no torch: `sys.modules["torch"] = None` makes importing it fail.
It knows its notebook's name, as JupyterLab tells it (`__session__`).
"""

from __future__ import annotations

import io
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import code, isolated_plugins, make_notebook, run

from ntdd.errors import NotebookTestFailure
from ntdd.kernel.cells import KernelTests, render_cell
from ntdd.kernel.extension import MarkTestCells, summary_line
from ntdd.kernel.regions import CellScope
from ntdd.kernel.run import Outcome, Result, run_tests

# `kernel_run` starts one kernel for the module: under xdist (--dist loadgroup) its
# tests share a worker, or each worker would start one.
pytestmark = pytest.mark.xdist_group("kernel_run")

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = {
    "no torch": 'import sys\nsys.modules["torch"] = None  # this kernel has no torch\n'
    '__session__ = "course/lab.ipynb"  # as JupyterLab tells the kernel',
    "load": "%load_ext ntdd",
    "setup": "X = [3.0, 4.0]\ntotal = 0",
    "cuda": "# TEST: on the gpu @cuda\nassert False",  # the first test cell: needs __ntdd__
    "normalise": "# TEST: normalise\nnorm = sum(v * v for v in X) ** 0.5\n"
    "X = [v / norm for v in X]\ntotal += 1\nprint('norm was', norm)",
    "after normalise": "print(X, total)",
    "red": "# TEST: two entries\nassert len(X) == 3",
    "green": "# TEST: two entries\nassert len(X) == 2",
    "fixtures": "# TEST\n"
    "def test_fixtures(tmp_path, capsys, monkeypatch, device):\n"
    '    """pytest\'s fixtures, and the notebook\'s own device."""\n'
    '    monkeypatch.setenv("NTDD_KERNEL_TEST", "1")\n'
    '    print("captured")\n'
    '    assert capsys.readouterr().out == "captured\\n"\n'
    "    assert tmp_path.is_dir()\n"
    '    assert device == "cpu"\n\n'
    "def helper():\n"
    "    return 2",
    "defined": 'print(helper(), callable(test_fixtures), "test_two_entries" in dir())',
    "conftest": "# TEST\ndef test_conftest_fixture(answer):\n    assert answer == 42",
    "skip": '# TEST: later @skip("not yet")\nassert False',
    "xfail": '# TEST: known bug @xfail("issue 12")\nassert False',
    "timeout": "# TEST: too slow @timeout(0.5)\nimport time\ntime.sleep(30)",
    "magics": "# TEST: magics\n%time q = 3\nassert q == 3\nassert get_ipython().kernel is not None",
    "await": "# TEST: awaits\nimport asyncio\nawait asyncio.sleep(0)\nawaited = True",
    "rerun": '%ntdd --live -v -k "not too_slow"',
    "rerun -x": "%ntdd --live -x",
    "opt out": "%config NtddMagics.raise_on_failure = False",
    "reported only": "# TEST: reported only\nassert total < 0",
    "who": "%who",
    "torch": 'print("torch:", sys.modules["torch"])',
    "unload": "%unload_ext ntdd",
    "plain again": "# TEST: plain code again\nassert False",
}


CONFTEST = """\
import pytest


@pytest.fixture
def answer():
    return 42
"""


@pytest.fixture(scope="module")
def kernel_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The notebook run top to bottom by nbclient, going on after errors; its folder."""
    import nbclient

    folder = tmp_path_factory.mktemp("kernel")
    (folder / "conftest.py").write_text(CONFTEST)
    nb = make_notebook(list(CELLS.values()))
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    with isolated_plugins():  # `%ntdd` runs pytest in the kernel, which inherits these
        client.execute()
    return dict(zip(CELLS, nb.cells, strict=True)), folder


def text(cell: Any) -> str:
    """A cell's stream output, as one text without colours."""
    return ANSI.sub("", "".join(o.get("text", "") for o in cell.outputs))


def error(cell: Any) -> Any:
    return next((o for o in cell.outputs if o.output_type == "error"), None)


slow = pytest.mark.slow


@slow
def test_a_failing_cell_shows_pytests_report_and_errors(kernel_run: Any) -> None:
    cell = kernel_run[0]["red"]
    report = text(cell)
    assert "def test_two_entries():" in report
    assert ">       assert len(X) == 3" in report
    assert "E       assert 2 == 3" in report
    assert "E        +  where 2 = len([0.6, 0.8])" in report
    where = f"in notebook lab.ipynb, cell {cell.execution_count}, line 2: assert len(X) == 3"
    assert f"E       {where}" in report  # the cell as Jupyter numbers it: In [6]
    assert "FAILED lab.ipynb::test_two_entries - assert 2 == 3" in report
    assert error(cell).ename == "NotebookTestFailure"
    assert error(cell).evalue == "test_two_entries failed"


@slow
def test_a_passing_cell_says_so_in_one_line(kernel_run: Any) -> None:
    cell = kernel_run[0]["green"]
    assert text(cell) == "ntdd: test_two_entries passed\n"
    assert error(cell) is None


@slow
def test_a_bare_cells_assignments_land_in_the_kernels_namespace(kernel_run: Any) -> None:
    cells = kernel_run[0]
    assert text(cells["normalise"]) == "norm was 5.0\nntdd: test_normalise passed\n"
    assert text(cells["after normalise"]) == "[0.6, 0.8] 1\n"


@slow
def test_a_cell_of_functions_defines_them_and_runs_them_with_fixtures(kernel_run: Any) -> None:
    cells = kernel_run[0]
    assert text(cells["fixtures"]) == "ntdd: test_fixtures passed\n"
    # Defined in the kernel, as the cell would define them; a bare cell's wrapper is not.
    assert text(cells["defined"]) == "2 True False\n"
    # The conftest.py of the kernel's working directory is loaded.
    assert text(cells["conftest"]) == "ntdd: test_conftest_fixture passed\n"


@slow
def test_marks_are_honoured(kernel_run: Any) -> None:
    cells = kernel_run[0]
    assert text(cells["skip"]) == "ntdd: test_later skipped (not yet)\n"
    assert text(cells["xfail"]) == "ntdd: test_known_bug xfailed (issue 12)\n"
    assert text(cells["cuda"]) == (
        "ntdd: test_on_the_gpu skipped (needs cuda: torch is not installed)\n"
    )
    assert not any(error(cells[name]) for name in ("skip", "xfail", "cuda"))
    timed_out = cells["timeout"]
    assert "timed out after 0.5 s (ntdd timeout)" in text(timed_out)
    assert error(timed_out).evalue == "test_too_slow failed"


@slow
def test_magics_and_top_level_await_work_in_test_cells(kernel_run: Any) -> None:
    cells = kernel_run[0]
    assert text(cells["magics"]).endswith("ntdd: test_magics passed\n")  # after %time's lines
    assert text(cells["await"]) == "ntdd: test_awaits passed\n"


@slow
def test_ntdd_live_runs_every_test_cell_again_as_one_session(kernel_run: Any) -> None:
    cells = kernel_run[0]
    rerun = text(cells["rerun"])
    # The red run of `two entries` was replaced by the green one: 10 tests, one deselected.
    assert "lab.ipynb::test_normalise PASSED" in rerun  # -v: one line per test
    assert re.search(r" 6 passed, 2 skipped, 1 deselected, 1 xfailed in [\d.]+s =+$", rerun, re.M)
    assert error(cells["rerun"]) is None
    first_failure = text(cells["rerun -x"])
    assert "stopping after 1 failures" in first_failure
    assert re.search(r"^1 failed, 4 passed, 2 skipped, 1 xfailed in [\d.]+s$", first_failure, re.M)
    assert error(cells["rerun -x"]).evalue == "1 of 10 tests failed: test_too_slow"


@slow
def test_raise_on_failure_false_only_reports(kernel_run: Any) -> None:
    cell = kernel_run[0]["reported only"]
    assert "FAILED lab.ipynb::test_reported_only" in text(cell)
    assert error(cell) is None


@slow
def test_the_kernel_is_left_as_without_the_extension(kernel_run: Any) -> None:
    cells, folder = kernel_run
    assert "@py" not in text(cells["who"]) and "__ntdd__" not in text(cells["who"])
    assert text(cells["torch"]) == "torch: None\n"  # never imported
    assert error(cells["plain again"]).ename == "AssertionError"  # unloaded: code again
    # No cache, no notebook written (pytest may keep the rewritten conftest's bytecode).
    assert {p.name for p in folder.iterdir()} - {"__pycache__"} == {"conftest.py"}


def test_the_transformer_marks_test_cells_only() -> None:
    mark = MarkTestCells()
    assert mark(["# TEST: a\n", "assert x\n"]) == ["%%ntdd\n", "# TEST: a\n", "assert x\n"]
    assert mark(["\n", "# TEST\n"]) == ["%%ntdd\n", "\n", "# TEST\n"]
    assert mark(["x = 1\n", "# TEST\n"]) == ["x = 1\n", "# TEST\n"]
    assert mark([]) == []


def test_a_cell_renders_as_export_writes_it() -> None:
    rendered = render_cell("# TEST: shape @slow\nX = 2 * X", 7, "abc", "nb.ipynb")
    assert rendered.marker.startswith("# %% ntdd test: cell 7, id abc, sha ")
    assert rendered.region.split("\n") == [
        "@pytest.mark.slow",
        "def test_shape():",
        "    global X  # ntdd: the cell's assignments land in the notebook's namespace, "
        "as in a kernel",
        "    # TEST: shape @slow",
        "    X = 2 * X",
    ]


def test_a_wrapped_cells_function_is_kept_out_of_the_namespace() -> None:
    namespace: dict[str, Any] = {"X": 1}
    wrapped = CellScope(namespace, keep_apart=True)
    exec("@pytest.mark.slow\ndef test_a():\n    global X\n    X = 2", namespace, wrapped)
    assert "test_a" not in namespace and "test_a" in wrapped
    wrapped["test_a"]()
    assert namespace["X"] == 2
    functions = CellScope(namespace, keep_apart=False)
    exec("import math\ndef test_b():\n    pass", namespace, functions)
    assert {"math", "test_b"} <= namespace.keys()


def test_the_summary_line_names_each_test_and_reason() -> None:
    outcome = Outcome(0)
    outcome.results = {
        "test_a": Result("test_a", "passed"),
        "test_b": Result("test_b", "xfailed", "issue 12"),
    }
    assert summary_line(outcome) == "ntdd: test_a passed, test_b xfailed (issue 12)"


# -- the in-kernel run, in this process --------------------------------------------
#
# `%ntdd` runs pytest in the kernel's process, under whatever plugin setup the kernel
# inherited; these run it here, as the extension does, without a kernel.

PLUGIN_SETUPS = {
    "PYTEST_PLUGINS names it": {},  # this suite's, which kernels inherit
    # pytest-asyncio, where installed, warns at start-up that a setting is unset
    "autoloaded": {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": None,
        "PYTEST_PLUGINS": None,
        "PYTEST_ADDOPTS": "-p no:asyncio",
    },
    "not autoloaded, named by nothing": {"PYTEST_PLUGINS": None},
    "not autoloaded, named by -p": {"PYTEST_PLUGINS": None, "PYTEST_ADDOPTS": "-p ntdd"},
}


def run_in_kernel(*cells: str) -> Outcome:
    """The test cells defined and run by one `%ntdd`, as a kernel would."""
    tests = KernelTests({}, "lab.ipynb")
    ran = [tests.define(cell, index, None) for index, cell in enumerate(cells, 1)]
    return run_tests(tests.module(ran), "lab.py", [], io.StringIO())


@pytest.mark.parametrize("setup", PLUGIN_SETUPS)
def test_an_in_kernel_run_has_ntdds_plugin_however_plugins_are_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    """ntdd's plugin runs `async def` tests on the notebook's loop; pytest alone fails them."""
    for name, value in PLUGIN_SETUPS[setup].items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    awaits = "# TEST\nasync def test_awaits():\n    import asyncio\n    await asyncio.sleep(0)"
    monkeypatch.chdir(tmp_path)
    outcome = run_in_kernel(awaits)
    assert outcome.results["test_awaits"].category == "passed"


def test_an_in_kernel_run_leaves_the_kernels_random_numbers_to_it_beside_pytest_randomly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-randomly would reseed `random` before each test, and shuffle the tests."""
    pytest.importorskip("pytest_randomly")
    monkeypatch.setenv("PYTEST_PLUGINS", "ntdd.plugin,pytest_randomly")
    monkeypatch.chdir(tmp_path)
    state = random.getstate()
    random.seed(7)
    try:
        outcome = run_in_kernel(
            *[f"# TEST: t{i}\nassert True" for i in range(20)],
            "# TEST: the kernel's stream goes on\nimport random\n"
            "assert random.random() == random.Random(7).random()",
        )
    finally:
        random.setstate(state)
    assert list(outcome.results) == [
        *(f"test_t{i}" for i in range(20)),
        "test_the_kernel_s_stream_goes_on",
    ]
    assert outcome.results["test_the_kernel_s_stream_goes_on"].category == "passed"


# -- the other runners, on a notebook that loads the extension ----------------------

LOADING = [
    "%load_ext ntdd",
    "x = 1",
    "# TEST: one\nassert x == 1",
    "# TEST\ndef test_two():\n    assert x == 1",
]


def test_under_pytest_ntdd_load_ext_is_harmless(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(LOADING)
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=2)


@slow
def test_nbvals_kernel_runs_test_cells_through_the_extension(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook([*LOADING, code("# TEST: red\nassert x == 2")])
    # In a process of its own: nbval leaves its kernel's stderr file open.
    result = run(pytester, "--nbval-lax", "nb.ipynb", plugins=["nbval"], subprocess=True)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*NotebookTestFailure*test_red failed*"])


# -- an IPython shell in this process, with the extension loaded ---------------------


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """IPython's shell with `%load_ext ntdd`, working in tmp_path; no history written."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_cell("%load_ext ntdd")
    try:
        yield ip
    finally:
        ip.run_cell("%unload_ext ntdd")
        InteractiveShell.clear_instance()


def run_cell(shell: Any, source: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, Any]:
    """What a cell printed (without colours), and the error it raised, if any."""
    capsys.readouterr()
    result = shell.run_cell(source)
    printed = capsys.readouterr()
    return ANSI.sub("", printed.out + printed.err), result.error_in_exec


DESELECTING_CONFTEST = """\
def pytest_collection_modifyitems(config, items):
    left_out = [item for item in items if "flaky" in item.name]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in left_out]
"""


def test_a_cell_whose_test_the_conftest_deselects_is_not_green(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "conftest.py").write_text(DESELECTING_CONFTEST)
    printed, error = run_cell(shell, "# TEST: flaky network\nassert False", capsys)
    assert "ntdd: test_flaky_network" not in printed
    assert "1 deselected" in printed
    assert isinstance(error, NotebookTestFailure)
    assert str(error) == ("did not run: test_flaky_network deselected; pytest's report is above")


def test_a_cell_of_a_test_class_and_parametrized_tests_is_green(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = (
        "# TEST\nimport pytest\n\nclass TestShape:\n    def test_a(self):\n        pass\n\n"
        "@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n"
    )
    printed, error = run_cell(shell, cell, capsys)
    assert printed == "ntdd: TestShape::test_a passed, test_n[1] passed, test_n[2] passed\n"
    assert error is None


def test_a_bare_test_cells_last_expression_is_shown_as_the_kernel_shows_it(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its `__repr__` runs, as without the extension and under `pytest --ntdd`."""
    shell.run_cell(
        "class Count:\n    n = 0\n    def __repr__(self):\n        Count.n += 1\n"
        "        return 'counted'"
    )
    printed, error = run_cell(shell, "# TEST: shows\nCount()", capsys)
    assert error is None, printed
    assert shell.user_ns["Count"].n == 1
    printed, error = run_cell(shell, "# TEST: hidden\nCount();", capsys)
    assert error is None, printed
    assert shell.user_ns["Count"].n == 1
    printed, error = run_cell(
        shell, "# TEST: as notebook code\nfrom math import *\nCount()", capsys
    )
    assert error is None, printed
    assert shell.user_ns["Count"].n == 2


@pytest.mark.parametrize("returncode", [0, 1])
def test_a_cell_whose_test_calls_pytest_exit_is_not_green(
    shell: Any, capsys: pytest.CaptureFixture[str], returncode: int
) -> None:
    cell = f"# TEST: stops\nimport pytest\npytest.exit('done', returncode={returncode})"
    printed, error = run_cell(shell, cell, capsys)
    assert "ntdd: test_stops passed" not in printed
    assert "NotebookExit" in printed  # an ordinary exception in a kernel: the test fails
    assert isinstance(error, NotebookTestFailure)


# `%ntdd`: the saved notebook, as `pytest --ntdd` runs it. Its tests read state
# that later cells change (`x = 2`) and change state themselves (`total += 1`):
# run again against the kernel's end-of-notebook namespace, both would fail.
SAVED = [
    "%load_ext ntdd",
    "total = 0\nx = 1",
    "# TEST: adds one\ntotal += 1\nassert total == 1",
    "# TEST: x is one\nassert x == 1",
    "x = 2",
]


@pytest.mark.parametrize(
    # a pytest run in the kernel each: the magic's argument in the quick run, how each
    # editor names the notebook in the slow tier
    "told",
    [
        pytest.param("VS Code", marks=pytest.mark.slow),
        pytest.param("JupyterLab", marks=pytest.mark.slow),
        "the magic's argument",
    ],
)
def test_ntdd_runs_the_saved_notebook_as_pytest_ntdd_does(
    shell: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    told: str,
) -> None:
    path = tmp_path / "lab.ipynb"
    nbformat.write(make_notebook(SAVED), str(path))
    for cell in SAVED[1:]:
        run_cell(shell, cell, capsys)
    magic = "%ntdd -v"
    if told == "VS Code":
        shell.user_ns["__vsc_ipynb_file__"] = str(path)
    elif told == "JupyterLab":  # the path from the server's root; the kernel runs beside it
        monkeypatch.setenv("JPY_SESSION_NAME", "course/lab.ipynb")
    else:
        magic += " lab.ipynb"
    printed, error = run_cell(shell, magic, capsys)
    assert error is None
    assert "lab.ipynb::test_adds_one PASSED" in printed
    assert "lab.ipynb::test_x_is_one PASSED" in printed
    live, error = run_cell(shell, "%ntdd --live", capsys)  # what %ntdd did before
    assert "2 failed" in live
    assert isinstance(error, NotebookTestFailure)


@pytest.mark.slow
def test_ntdd_on_a_saved_notebook_whose_test_fails_raises(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nbformat.write(make_notebook(["x = 1", "# TEST: x is two\nassert x == 2"]), "lab.ipynb")
    printed, error = run_cell(shell, "%ntdd lab.ipynb", capsys)
    assert "FAILED lab.ipynb::test_x_is_two" in printed
    assert isinstance(error, NotebookTestFailure)
    assert str(error) == "pytest --ntdd lab.ipynb failed (exit code 1)"


@slow
@pytest.mark.parametrize("name", ["-draft.ipynb", "-pno:old.ipynb", "@notes.ipynb"])
def test_ntdd_runs_a_saved_notebook_whose_name_looks_like_an_option(
    shell: Any, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The child's pytest took `-pno:old.ipynb` for `-p no:old.ipynb`, and ran the
    project's testpaths instead of the notebook: its failing test never ran."""
    Path("pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    Path("tests").mkdir()
    nbformat.write(make_notebook(["x = 1", "# TEST: x is two\nassert x == 2"]), name)
    shell.user_ns["__session__"] = name  # as JupyterLab tells the kernel
    printed, error = run_cell(shell, "%ntdd", capsys)
    assert f"FAILED {name}::test_x_is_two" in printed
    assert isinstance(error, NotebookTestFailure)


def test_ntdd_without_a_saved_notebook_says_how_to_name_one(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    printed, _ = run_cell(shell, "%ntdd", capsys)
    assert "UsageError: %ntdd: this kernel was not told which notebook it runs; give its path" in (
        printed
    )
    shell.user_ns["__session__"] = "Untitled.ipynb"  # JupyterLab named it; never saved here
    printed, _ = run_cell(shell, "%ntdd", capsys)
    assert "%ntdd: Untitled.ipynb is not saved where this kernel runs; save it" in printed
    printed, _ = run_cell(shell, "%ntdd gone.ipynb", capsys)
    assert "UsageError: %ntdd gone.ipynb: no such notebook file" in printed
    Path("notes.txt").write_text("# TEST\nassert False\n", encoding="utf-8")
    printed, _ = run_cell(shell, "%ntdd notes.txt", capsys)  # pytest would collect nothing
    assert "UsageError: %ntdd notes.txt: not a notebook: give a .ipynb" in printed
    assert "pytest --ntdd" not in printed


@slow
def test_ntdd_passes_under_filterwarnings_error_where_pytest_ntdd_passes(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest marks a plugin's package for assertion rewriting (here through `-p ntdd`, as
    it does for every autoloaded plugin): a child that imported ntdd before `pytest.main`
    warned that ntdd "cannot be rewritten", and `error` made that a failed run."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n', encoding="utf-8"
    )
    nbformat.write(make_notebook(["x = 1", "# TEST: x is one\nassert x == 1"]), "lab.ipynb")
    monkeypatch.delenv("PYTEST_PLUGINS")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p ntdd")
    command = [sys.executable, "-m", "pytest", "--ntdd", "lab.ipynb", "-p", "no:cacheprovider"]
    assert subprocess.run(command, capture_output=True).returncode == 0
    printed, error = run_cell(shell, "%ntdd lab.ipynb", capsys)
    assert "PytestAssertRewriteWarning" not in printed
    assert error is None
    assert re.search(r"^1 passed in [\d.]+s$", printed, re.M)


def test_ntdd_in_a_kernel_that_its_own_run_started_starts_no_other(
    shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """nbval's kernel, under `pytest --ntdd --nbval-lax` that `%ntdd` started, runs `%ntdd`
    cells too: each would start the run again, without end."""
    nbformat.write(make_notebook(["x = 1", "# TEST: x is one\nassert x == 1"]), "lab.ipynb")
    monkeypatch.setenv("NTDD_SAVED_RUN", "lab.ipynb")
    printed, _ = run_cell(shell, "%ntdd lab.ipynb", capsys)
    assert "UsageError: %ntdd lab.ipynb: this kernel runs inside the run of lab.ipynb" in printed
    assert "passed" not in printed


@slow
def test_in_a_real_kernel_ntdd_agrees_with_pytest_ntdd_where_live_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel learns its notebook as JupyterLab tells it: `JPY_SESSION_NAME`."""
    import nbclient

    nb = make_notebook([*SAVED, "%ntdd", "%ntdd --live"])
    path = tmp_path / "lab.ipynb"
    nbformat.write(nb, str(path))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    saved, live = nb.cells[-2:]
    # the two tests, and the end test that runs the last cell (`x = 2`)
    assert re.search(r"^3 passed(, \d+ warnings?)? in [\d.]+s$", text(saved), re.M)
    assert error(saved) is None
    assert "2 failed" in text(live)
    assert error(live).evalue == "2 of 2 tests failed: test_adds_one, test_x_is_one"
