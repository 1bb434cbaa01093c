"""Reports point at the notebook for tools: its file, relative to rootdir, and the line in it.

JUnit's `file=`/`line=`, pytest-sugar's and VS Code's `item.location`,
GitHub's annotations and an editor's `path:line:` links read fields, not
messages; each must name the `.ipynb` (or the jupytext file) and the line of
that file where the source line is. The notebooks sit in a subfolder, and
each has two failing tests: the second is where a process left in the
notebook's folder used to double the folder.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import line_of, make_notebook, run, write_notebook

CELLS = [
    "x = 1",
    "# TEST: first\nassert x == 2",
    "y = 2",
    "# TEST: second\nz = 3\nassert y == 3",
    "# TEST\ndef test_passes():\n    assert x == 1",
]


@pytest.fixture
def failing(pytester: pytest.Pytester) -> Path:
    return write_notebook(pytester.path / "nbs" / "failing.ipynb", CELLS)


def test_each_tests_location_is_the_notebook_and_its_cells_line_for_every_test(
    pytester: pytest.Pytester, failing: Path
) -> None:
    """`item.location`, as pytest-sugar and the terminal read it at each test's start."""
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nbs")
    locations = {c.nodeid: c.location for c in recorder.getcalls("pytest_runtest_logstart")}
    assert locations == {
        "nbs/failing.ipynb::test_first": (
            "nbs/failing.ipynb",
            line_of(failing, "# TEST: first") - 1,  # 0-based, as pytest's are
            "test_first",
        ),
        "nbs/failing.ipynb::test_second": (
            "nbs/failing.ipynb",
            line_of(failing, "# TEST: second") - 1,
            "test_second",
        ),
        "nbs/failing.ipynb::test_passes": (
            "nbs/failing.ipynb",
            line_of(failing, "def test_passes") - 1,
            "test_passes",
        ),
    }
    items = {c.item.nodeid: c.item for c in recorder.getcalls("pytest_itemcollected")}
    path, line, _ = items["nbs/failing.ipynb::test_second"].reportinfo()  # asked for after the run
    assert (Path(path), line) == (failing, line_of(failing, "# TEST: second") - 1)


def test_a_failures_report_names_the_line_of_the_failing_statement_in_the_notebook_file(
    pytester: pytest.Pytester, failing: Path
) -> None:
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nbs")
    failed = {r.nodeid: r for r in recorder.getreports("pytest_runtest_logreport") if r.failed}
    first, second = (
        failed["nbs/failing.ipynb::test_first"],
        failed["nbs/failing.ipynb::test_second"],
    )
    assert first.location[:2] == ("nbs/failing.ipynb", line_of(failing, "assert x == 2") - 1)
    assert second.location[:2] == ("nbs/failing.ipynb", line_of(failing, "assert y == 3") - 1)


def test_traceback_entries_link_to_the_notebook_line_and_messages_keep_the_cell(
    pytester: pytest.Pytester, failing: Path
) -> None:
    result = run(pytester, "--ntdd", "nbs")
    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            f"nbs/failing.ipynb:{line_of(failing, 'assert x == 2')}: AssertionError "
            "(test cell 2, id *, line 2)",
            f"nbs/failing.ipynb:{line_of(failing, 'assert y == 3')}: AssertionError "
            "(test cell 4, id *, line 3)",
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["E*in notebook nbs/failing.ipynb, cell 4 (id *), line 3*"])
    result.stdout.no_fnmatch_line("*ntdd module*")
    result.stdout.no_fnmatch_line("*nbs/nbs/*")


def test_junit_xunit1_names_the_notebook_file_and_line(
    pytester: pytest.Pytester, failing: Path
) -> None:
    run(pytester, "--ntdd", "nbs", "--junitxml=out.xml", "-o", "junit_family=xunit1")
    cases = {c.get("name"): c for c in ET.parse(pytester.path / "out.xml").iter("testcase")}
    places = {name: (c.get("file"), c.get("line")) for name, c in cases.items()}
    assert places == {
        "test_first": ("nbs/failing.ipynb", str(line_of(failing, "assert x == 2") - 1)),
        "test_second": ("nbs/failing.ipynb", str(line_of(failing, "assert y == 3") - 1)),
        "test_passes": ("nbs/failing.ipynb", str(line_of(failing, "def test_passes") - 1)),
    }


def test_a_setup_cells_failure_points_at_the_line_that_raised(pytester: pytest.Pytester) -> None:
    path = write_notebook(
        pytester.path / "nbs" / "setup.ipynb",
        [
            "def helper(v):\n    assert v == 1",
            "# TEST: calls\nhelper(2)",
            "raise ValueError('boom')",
            "# TEST: after\nassert True",
        ],
    )
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nbs")
    failed = {r.nodeid: r for r in recorder.getreports("pytest_runtest_logreport") if r.failed}
    lines = {nodeid: r.location[1] for nodeid, r in failed.items()}
    assert lines == {
        "nbs/setup.ipynb::test_calls": line_of(path, "    assert v == 1") - 1,  # the deepest
        "nbs/setup.ipynb::test_after": line_of(path, "raise ValueError") - 1,
    }


def test_pytest_and_other_plugins_run_in_the_sessions_folder_and_cells_in_the_notebooks(
    pytester: pytest.Pytester,
) -> None:
    """A cell's `os.chdir` still holds for the cells below it, as in a kernel."""
    pytester.makeconftest(
        """
        import os, pytest
        SEEN = []

        @pytest.fixture(autouse=True)
        def other_plugins_fixture():
            SEEN.append(("fixture", os.getcwd()))
            yield
            SEEN.append(("fixture teardown", os.getcwd()))

        def pytest_runtest_logreport(report):
            SEEN.append((f"report {report.when}", os.getcwd()))

        def pytest_sessionfinish(session):
            away = [(what, cwd) for what, cwd in SEEN if cwd != str(session.config.rootpath)]
            assert not away, away
            assert len(SEEN) > 6
        """
    )
    (pytester.path / "nbs" / "data").mkdir(parents=True)
    write_notebook(
        pytester.path / "nbs" / "cwd.ipynb",
        [
            "import os\nstart = os.getcwd()",
            "# TEST: in its folder\nassert os.path.basename(start) == 'nbs'\n"
            "assert os.getcwd() == start",
            "os.chdir('data')",
            "# TEST: where the cell went\nassert os.getcwd() == os.path.join(start, 'data')",
        ],
    )
    result = run(pytester, "--ntdd", "nbs")
    result.assert_outcomes(passed=2)
    assert Path.cwd() == pytester.path


def test_a_notebooks_post_run_cell_callbacks_run_in_its_folder_after_a_test_too(
    pytester: pytest.Pytester,
) -> None:
    """The callback after a test's cell is the notebook's code, as it is after a setup cell."""
    write_notebook(
        pytester.path / "nbs" / "events.ipynb",
        [
            "import os\nseen = []\n"
            "get_ipython().events.register('post_run_cell', lambda r: seen.append(os.getcwd()))",
            "# TEST: first\nassert True",
            "# TEST: every callback ran in the notebook's folder\n"
            "assert len(seen) == 2 and set(seen) == {os.getcwd()}, seen",
        ],
    )
    run(pytester, "--ntdd", "nbs").assert_outcomes(passed=2)


# -- GitHub annotations -----------------------------------------------------------


def annotations(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line.startswith("::error ")]


def failed_twice(pytester: pytest.Pytester) -> pytest.RunResult:
    """The run of `failing`, checked to have failed: no annotation means none was due."""
    result = run(pytester, "--ntdd", "nbs")
    result.assert_outcomes(passed=1, failed=2)
    return result


@pytest.mark.parametrize("report", [[], ["--ntdd-report", "report.html"]], ids=["", "report"])
def test_on_github_actions_ntdd_annotates_each_failure_at_the_notebooks_line(
    pytester: pytest.Pytester, failing: Path, monkeypatch: pytest.MonkeyPatch, report: list[str]
) -> None:
    """Failures only: the HTML report's notes on a report are not the annotation's."""
    if report:
        pytest.importorskip("nbconvert")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    found = annotations(run(pytester, "--ntdd", "nbs", *report))
    assert [line.split("::")[1] for line in found] == [
        f"error file=nbs/failing.ipynb,line={line_of(failing, 'assert x == 2')},"
        "title=nbs/failing.ipynb%3A%3Atest_first",
        f"error file=nbs/failing.ipynb,line={line_of(failing, 'assert y == 3')},"
        "title=nbs/failing.ipynb%3A%3Atest_second",
    ]
    assert "cell 2 (id " in found[0]


def test_outside_github_actions_there_is_no_annotation(
    pytester: pytest.Pytester, failing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    assert annotations(failed_twice(pytester)) == []


def test_a_plugin_registered_as_the_annotating_plugin_leaves_annotations_to_it(
    pytester: pytest.Pytester, failing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name pytest-github-actions-annotate-failures registers its reporter under."""
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    pytester.makeconftest(
        "def pytest_configure(config):\n"
        "    config.pluginmanager.register(object(), 'annotate_errors')\n"
    )
    assert annotations(failed_twice(pytester)) == []


def test_with_the_annotating_plugin_each_failure_is_annotated_once_at_the_notebooks_line(
    pytester: pytest.Pytester, failing: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pytest_github_actions_annotate_failures")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    plugin = "pytest_github_actions_annotate_failures.plugin"
    found = annotations(run(pytester, "--ntdd", "nbs", plugins=[plugin]))
    assert [line.split("::")[1] for line in found] == [
        f"error file=nbs/failing.ipynb,line={line_of(failing, 'assert x == 2')}",
        f"error file=nbs/failing.ipynb,line={line_of(failing, 'assert y == 3')}",
    ]


# -- text notebooks ---------------------------------------------------------------


def test_a_text_notebook_points_at_the_line_of_its_py_file(pytester: pytest.Pytester) -> None:
    jupytext: Any = pytest.importorskip("jupytext")

    nb = make_notebook(CELLS)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python3", "language": "python"}
    path = pytester.path / "nbs" / "failing.py"
    path.parent.mkdir()
    path.write_text(jupytext.writes(nb, "py:percent"), encoding="utf-8")
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nbs/failing.py")
    failed = {r.nodeid: r for r in recorder.getreports("pytest_runtest_logreport") if r.failed}
    assert failed["nbs/failing.py::test_second"].location[:2] == (
        "nbs/failing.py",
        line_of(path, "assert y == 3") - 1,
    )
    assert os.path.samefile(Path.cwd(), pytester.path)


def test_a_setup_cell_under_a_cell_magic_points_at_the_line_of_its_body_that_raised(
    pytester: pytest.Pytester,
) -> None:
    """`%%capture` runs the lines below its own: the line that raised is the cell's, not
    the one above it."""
    path = write_notebook(
        pytester.path / "nbs" / "magic.ipynb",
        ["%%capture\nx = 1\nraise ValueError('boom')", "# TEST: after\nassert x == 1"],
    )
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nbs")
    (error,) = [r for r in recorder.getreports("pytest_runtest_logreport") if r.failed]
    raised = line_of(path, "raise ValueError")
    assert error.location[1] == raised - 1
    assert f"nbs/magic.ipynb:{raised}: ValueError (setup cell 1, " in str(error.longrepr)
    assert "line 3)" in str(error.longrepr)


# -- beside other plugins -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "strict"])
def test_an_async_test_points_at_the_notebook_under_pytest_asyncio(
    pytester: pytest.Pytester, mode: str
) -> None:
    """pytest-asyncio's items for a notebook's `async def` tests are made plain again."""
    pytest.importorskip("pytest_asyncio")
    path = write_notebook(
        pytester.path / "nbs" / "async.ipynb",
        ["x = 1", "# TEST: awaits\nasync def test_awaits():\n    assert x == 2"],
    )
    options = ["-o", f"asyncio_mode={mode}", "-o", "asyncio_default_fixture_loop_scope=function"]
    recorder = pytester.inline_run("-p", "no:cacheprovider", "-p", "asyncio", *options, "--ntdd")
    [report] = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert report.failed
    assert report.location[:2] == ("nbs/async.ipynb", line_of(path, "assert x == 2") - 1)
    [start] = recorder.getcalls("pytest_runtest_logstart")
    assert start.location[:2] == ("nbs/async.ipynb", line_of(path, "async def test_awaits") - 1)
