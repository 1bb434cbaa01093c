"""`pytest --ntdd`: collection, reporting, options, isolation and scale."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from conftest import SAMPLES, run

from ntdd.commands.cli import main
from ntdd.plugin.collection.collect import NotebookModule


def test_notebooks_are_collected_only_with_ntdd(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nassert True"])
    assert run(pytester, ".").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)


def test_the_ini_key_turns_collection_on(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nassert True"])
    pytester.makeini("[pytest]\nntdd = true\n")
    run(pytester, "nb.ipynb").assert_outcomes(passed=1)


def test_collected_items_are_functions_of_a_notebook_module(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST: a\nassert True", "# TEST\ndef test_b(device):\n    pass"])
    items, _ = pytester.inline_genitems("--ntdd", "nb.ipynb")
    assert [item.nodeid for item in items] == [
        "nb.ipynb::test_a",
        "nb.ipynb::test_b[cpu]",
        "nb.ipynb::test_b[cuda]",
    ]
    assert all(isinstance(item, pytest.Function) for item in items)
    assert all(isinstance(item.parent, NotebookModule) for item in items)


def test_k_and_m_select_notebook_tests(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST: alpha\nassert True", "# TEST: beta @slow\nassert True"])
    run(pytester, "--ntdd", "nb.ipynb", "-k", "alpha").assert_outcomes(passed=1)
    run(pytester, "--ntdd", "nb.ipynb", "-m", "slow").assert_outcomes(passed=1)


def test_verbose_shows_docstrings_or_marker_names(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            "# TEST: the loss goes down\nassert True",
            "# TEST: loss > 0\nassert True",
            "# TEST\ndef test_doc():\n    '''Gradients reach every layer.'''\n    assert False",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "-v")
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb::test_the_loss_goes_down PASSED *",
            "*nb.ipynb::test_loss_0 PASSED - loss > 0*",
            "*nb.ipynb::test_doc FAILED - Gradients reach every layer.*",
            "FAILED nb.ipynb::test_doc - assert False",  # the summary stays plain
        ]
    )
    assert "PASSED - the loss goes down" not in result.stdout.str()  # the name says it


def test_junit_xml_carries_the_notebook_and_cell(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["x = 1", "# TEST: fails\nassert x == 2"])
    run(pytester, "--ntdd", "nb.ipynb", "--junitxml=out.xml")
    case = ET.parse(pytester.path / "out.xml").find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["notebook"] == "nb.ipynb"
    assert props["cell"] == "2"
    assert props["cell_id"]
    failure = case.find("failure")
    assert failure is not None
    assert "in notebook nb.ipynb, cell 2" in (failure.get("message") or "")


def test_a_failure_shows_the_cells_lines_and_names_notebook_cell_and_line(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "def double(v):\n    return v * 2",
            "# TEST: doubling\nresult = double(None)\nassert result",
        ],
        name="sub/model.ipynb",
    )
    result = run(pytester, "--ntdd", "sub/model.ipynb")
    result.stdout.fnmatch_lines(
        [
            "*result = double(None)",
            "*return v * 2",
            "E*TypeError*",
            "E*in notebook sub/model.ipynb, cell 2 (id *), line 2: result = double(None)",
            "sub/model.ipynb:*: TypeError (setup cell 1, id *, line 2)",
        ]
    )


def test_a_broken_notebook_is_one_collection_error_and_the_rest_run(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST\nassert True"], name="a.ipynb")
    (pytester.path / "b.ipynb").write_text('{"cells": [')
    notebook(["# TEST\nassert True"], name="c.ipynb")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR collecting b.ipynb*", "ntdd: b.ipynb: truncated JSON*", "ERROR b.ipynb"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_cell_nested_too_deeply_to_parse_is_its_notebooks_error_and_the_rest_run(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Python's parser gives up on deep nesting with a RecursionError, not a SyntaxError."""
    notebook(["x = " + "1 + " * 50_000 + "1", "# TEST\nassert x"], name="deep.ipynb")
    notebook(["# TEST\nassert True"], name="fine.ipynb")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR collecting deep.ipynb*", "ntdd: deep.ipynb: cell 1 (id *) is nested too deeply: *"]
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_broken_python_file_still_interrupts_as_pytest_does(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["# TEST\nassert True"])
    pytester.makepyfile(test_broken="def test(:\n")
    result = run(pytester, "--ntdd", ".")
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])


def test_a_setup_error_does_not_touch_other_notebooks(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["raise ValueError('bad setup')", "# TEST\nassert True"], name="a.ipynb")
    notebook(["x = 1", "# TEST\nassert x == 1"], name="b.ipynb")
    result = run(pytester, "--ntdd", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["E   ValueError: bad setup", "a.ipynb*: ValueError (setup cell 1, id *, line 1)"]
    )


def test_each_notebook_has_its_own_namespace(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["x = 'a'\nonly_in_a = 1", "# TEST\nassert x == 'a'"], name="a.ipynb")
    notebook(
        ["x = 'b'", "# TEST\nassert x == 'b'\nassert 'only_in_a' not in globals()"], name="b.ipynb"
    )
    run(pytester, "--ntdd", ".").assert_outcomes(passed=2)


def test_the_namespace_is_released_after_the_last_test(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest(
        "import gc, weakref\nrefs = []\n"
        "def pytest_sessionfinish(session):\n"
        "    gc.collect()\n"
        "    print('alive:', [r() is not None for r in refs])\n"
    )
    notebook(
        [
            "import conftest, weakref\nclass Big:\n    pass\n"
            "big = Big()\nconftest.refs.append(weakref.ref(big))",
            "# TEST\nassert big",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "-s")
    result.stdout.fnmatch_lines(["*alive: [[]False[]]*"])


@pytest.mark.slow
def test_a_failing_notebook_is_released_too(notebook: Any, pytester: pytest.Pytester) -> None:
    """A failure's traceback cycles hold the test's locals; they go when the notebook ends.

    The cyclic collector is off, so only ntdd's own release can free them. The
    run is a subprocess: an in-process run's hook recorder keeps every failure.
    """
    pytester.makeconftest(
        "import gc, weakref\nrefs = {}\n"
        "def pytest_configure(config):\n"
        "    gc.disable()\n"
        "def pytest_unconfigure(config):\n"
        "    gc.enable()\n"
        "def pytest_runtest_setup(item):\n"
        "    if item.name == 'test_next':\n"
        "        print('alive:', sorted(k for k, r in refs.items() if r() is not None))\n"
    )
    notebook(
        [
            "import conftest, weakref\nclass Big:\n    pass\n"
            "big = Big()\nconftest.refs['setup'] = weakref.ref(big)",
            "# TEST\ndef test_local():\n    local = Big()\n"
            "    conftest.refs['local'] = weakref.ref(local)\n    assert local is big",
            "# TEST: bare\nassert big is None",
        ],
        name="a.ipynb",
    )
    notebook(["# TEST: next\nassert True"], name="b.ipynb")
    result = run(pytester, "--ntdd", "a.ipynb", "b.ipynb", "-s", subprocess=True)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*alive: [[][]]*"])


def test_a_failure_report_still_shows_its_locals(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\ndef test_local():\n    marker_value = 41\n    assert marker_value == 42"])
    notebook(["# TEST: next\nassert True"], name="z.ipynb")
    result = run(pytester, "--ntdd", "nb.ipynb", "z.ipynb", "--showlocals")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["marker_value *= 41"])


def test_cwd_is_restored_after_failing_tests(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nimport os\nos.chdir('/')\nassert False"], name="sub/a.ipynb")
    notebook(["# TEST\nimport os\nassert os.getcwd().endswith('other')"], name="other/b.ipynb")
    pytester.makepyfile(
        test_after=f"import os\ndef test_cwd():\n    assert os.getcwd() == {str(pytester.path)!r}\n"
    )
    run(pytester, "--ntdd", "sub/a.ipynb", "other/b.ipynb", "test_after.py").assert_outcomes(
        passed=2, failed=1
    )


def test_a_hung_cell_times_out_as_a_failure(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            "x = 1",
            "# TEST: hangs\nimport time\nwhile True:\n    time.sleep(0.05)",
            "# TEST: fine\nassert x",
        ]
    )
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.5", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*NtddTimeout: nb.ipynb::test_hangs timed out after 0.5 s*"])


def test_a_hung_setup_times_out_once(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["import time\ntime.sleep(60)", "# TEST: a\nassert True", "# TEST: b\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-timeout", "0.5", "nb.ipynb", "--durations=0")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*raised NtddTimeout; its traceback is under test_a", "*NtddTimeout in setup cell 1*"]
    )


def test_a_timeout_mark_limits_one_test(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST: slow @timeout(0.3)\nimport time\ntime.sleep(5)"])
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(failed=1)


@pytest.mark.slow
def test_options_come_from_ini_and_pyproject(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\ndef test_d(device):\n    import time\n    time.sleep(2)"])
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nntdd = true\n\n[tool.ntdd]\ndevices = ["cpu"]\ntimeout = 0.3\n'
    )
    result = run(pytester, "nb.ipynb", "-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_d[[]cpu[]] FAILED*"])
    pytester.makefile(
        ".ini", pytest="[pytest]\nntdd = true\nntdd_timeout = 10\nntdd_devices = cpu\n"
    )
    run(pytester, "nb.ipynb").assert_outcomes(passed=1)


def test_bad_option_values_are_usage_errors(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-timeout", "soon", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ntdd: --ntdd-timeout: timeout must be a number of seconds*"])


def test_the_options_are_in_pytest_help(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "ntdd: notebooks as test suites:",
            "*--ntdd *",
            "*--ntdd-timeout=SECONDS*",
            "*--ntdd-devices=LIST*",
        ]
    )


def test_an_exported_module_is_not_collected_beside_its_notebook(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    path = notebook(["# TEST\nassert True"])
    assert main(["export", str(path)]) == 0
    result = run(pytester, "--ntdd", ".", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ntdd: test_nb.py not collected: its notebook nb.ipynb is collected directly",
            "*nb.ipynb::test_cell_1 PASSED*",
        ]
    )
    run(pytester, ".").assert_outcomes(passed=1)  # without --ntdd, the module runs


@pytest.mark.slow
def test_notebook_code_is_measured_by_pytest_cov(notebook: Any, pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_cov")
    (pytester.path / "mylib.py").write_text(
        "def used():\n    return 1\n\n\ndef unused():\n    return 2\n"
    )
    notebook(["import mylib", "# TEST\nassert mylib.used() == 1"])
    result = run(
        pytester,
        "--ntdd",
        "nb.ipynb",
        "--cov=mylib",
        "--cov-report=term-missing",
        plugins=["pytest_cov"],
        subprocess=True,
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["mylib.py * 4 * 1 * 75%*6"])


@pytest.mark.slow
def test_an_xdist_run_keeps_each_notebook_on_one_worker(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    for name in "abcd":
        notebook(
            [
                "import os\nwith open('setups.txt', 'a') as f:\n    f.write(f'{os.getpid()}\\n')",
                *[f"# TEST: t{i}\nassert True" for i in range(6)],
            ],
            name=f"{name}/nb.ipynb",
        )
    result = run(pytester, "--ntdd", "-n", "2", ".", plugins=["xdist"], subprocess=True)
    result.assert_outcomes(passed=24)
    for name in "abcd":
        assert len((pytester.path / name / "setups.txt").read_text().split()) == 1


@pytest.mark.slow  # nbval starts a kernel
def test_nbval_and_ntdd_run_in_one_session(pytester: pytest.Pytester) -> None:
    """nbval runs a sample's cells in a kernel and leaves its `# TEST` cells to ntdd.

    The sample without torch: every sample runs so in the project's workflow,
    whose every step tests/test_workflows.py runs. In a child process: nbval's
    kernels leave a file to the garbage collector, whose ResourceWarning this
    suite's warning filters would turn into errors.
    """
    pytest.importorskip("nbval")
    shutil.copytree(SAMPLES, pytester.path / "nbs")
    sample = "data_prep.ipynb"
    result = run(
        pytester,
        "--ntdd",
        "--nbval-lax",
        f"nbs/{sample}",
        "-v",
        "-W",
        "ignore",
        plugins=["nbval"],
        subprocess=True,
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [f"nbs/{sample}::test_*PASSED*", f"nbs/{sample[:-6]}::ipynb::Cell 0 PASSED*"]
    )
    test_cells = [
        line
        for line in result.outlines
        if "::ipynb::Cell" in line and "SKIPPED (run by ntdd)" in line
    ]
    assert test_cells  # nbval leaves the # TEST cells to ntdd
    assert not [line for line in result.outlines if "::ipynb::Cell" in line and "FAILED" in line]


@pytest.mark.slow  # nbval starts a kernel
def test_an_unreadable_notebook_is_one_error_beside_nbval(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("nbval")
    notebook(["x = 1", "# TEST\nassert x"], name="good.ipynb")
    (pytester.path / "bad.ipynb").write_text("")
    result = run(pytester, "--ntdd", "--nbval-lax", ".", plugins=["nbval"], subprocess=True)
    result.assert_outcomes(passed=2, skipped=1, errors=1)
    result.stdout.fnmatch_lines(["ntdd: bad.ipynb: empty file, not a notebook"])


def test_plan_warnings_are_shown_after_collection(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(["# TEST: same\nassert True", "# TEST: same\nassert True"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["ntdd: warning: nb.ipynb: cell 2 (id *): test name 'test_same' is taken; this test is*"]
    )


@pytest.mark.slow  # nbval starts a kernel
def test_without_ntdd_nbval_still_runs_the_test_cells(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytest.importorskip("nbval")
    notebook(["x = 1", "# TEST: x\nassert x == 1"])
    result = run(pytester, "--nbval-lax", "nb.ipynb", "-v", plugins=["nbval"], subprocess=True)
    result.assert_outcomes(passed=2)
    assert "run by ntdd" not in result.stdout.str()


MY_TEMPLATE = (
    '{% include "module.py.j2" %}\n\n\ndef test_added_by_my_template():\n    assert True\n'
)


def test_a_template_of_ones_own_in_pyproject_is_what_pytest_ntdd_runs(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """`ntdd export` honours `[tool.ntdd] template`; the notebook run must run the same module."""
    pytester.makefile(".toml", pyproject='[tool.ntdd]\ntemplate = "mine.py.j2"\n')
    (pytester.path / "mine.py.j2").write_text(MY_TEMPLATE)
    notebook(["x = 1", "# TEST: x is one\nassert x == 1"])
    result = pytester.runpytest("-p", "no:randomly", "--ntdd", "nb.ipynb", "-v")  # cache on
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_added_by_my_template PASSED*"])
    (pytester.path / "mine.py.j2").write_text(MY_TEMPLATE.replace("assert True", "assert False"))
    result = pytester.runpytest("-p", "no:randomly", "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1, failed=1)  # the template changed: not the cached module


def test_a_template_in_pyproject_that_is_missing_is_a_usage_error(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    pytester.makefile(".toml", pyproject='[tool.ntdd]\ntemplate = "gone.py.j2"\n')
    notebook(["# TEST\nassert True"])
    result = run(pytester, "--ntdd", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*[[]tool.ntdd[]] template: *gone.py.j2: no such file*"])
