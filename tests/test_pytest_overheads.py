"""Work of pytest's that ntdd spares a notebook run, and what a user still gets.

An xfailed test's report is written but never printed, so it keeps only the
notebook's frames, not a library's (formatting a frame parses its whole file);
pytest's two garbage collections at exit become one; and what collection made
is left out of the collector's automatic passes while the tests run.
"""

from __future__ import annotations

import pytest

from tests.conftest import code, write_notebook

# A failure raised inside a library (json's decoder), below two frames of the notebook's.
SETUP = "import json\n\ndef parse(text):\n    return json.loads(text)"
FAILING = "parse('{')"


def _reports(pytester: pytest.Pytester, cells: list[str], *args: str) -> list[pytest.TestReport]:
    write_notebook(pytester.path / "nb.ipynb", cells)
    recorder = pytester.inline_run("-p", "no:cacheprovider", "--ntdd", "nb.ipynb", *args)
    return [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]


def _report(pytester: pytest.Pytester, test_line: str, *args: str) -> pytest.TestReport:
    (report,) = _reports(pytester, [SETUP, f"{test_line}\n{FAILING}"], *args)
    return report


@pytest.mark.parametrize(
    "mark",
    ['@xfail("no closing brace")', '@xfail("no brace", raises=(KeyError, ValueError))'],
    ids=["any-error", "raises-matches"],
)
def test_an_xfailed_report_keeps_the_notebooks_frames_only(
    pytester: pytest.Pytester, mark: str
) -> None:
    report = _report(pytester, f"# TEST: broken json {mark}")
    assert hasattr(report, "wasxfail") and report.skipped
    text = report.longreprtext
    assert "parse('{')" in text  # the test cell's line
    assert "return json.loads(text)" in text  # the setup cell's helper
    assert "JSONDecodeError" in text
    assert "decoder.py" not in text


def test_a_failure_still_shows_the_librarys_frames(pytester: pytest.Pytester) -> None:
    report = _report(pytester, "# TEST: broken json")
    assert report.failed
    assert "parse('{')" in report.longreprtext
    assert "decoder.py" in report.longreprtext


@pytest.mark.parametrize(
    ("test_line", "args"),
    [
        ('# TEST: broken json @xfail("no brace", raises=KeyError)', ()),  # another error
        ('# TEST: broken json @xfail("no brace")', ("--runxfail",)),
    ],
    ids=["raises-does-not-match", "runxfail"],
)
def test_a_failure_pytest_reports_as_failed_keeps_every_frame(
    pytester: pytest.Pytester, test_line: str, args: tuple[str, ...]
) -> None:
    report = _report(pytester, test_line, *args)
    assert report.failed
    assert "decoder.py" in report.longreprtext


def test_a_conditional_xfail_is_left_to_pytest(pytester: pytest.Pytester) -> None:
    """A condition is pytest's to evaluate: the report keeps every frame either way."""
    report = _report(pytester, '# TEST: broken json @xfail(True, reason="no brace")')
    assert hasattr(report, "wasxfail")
    assert "decoder.py" in report.longreprtext


LEAKY = (
    "class Leaky:\n"
    "    def __del__(self):\n"
    "        raise RuntimeError('raised in __del__')\n\n"
    "leak = Leaky()\nleak.me = leak  # a cycle: only the collector frees it\ndel leak"
)

# Counts the collector's full passes from the end of the session to the exit.
COUNTING = """
import atexit, gc, sys

full = []

def count(phase, info):
    if phase == "start" and info["generation"] == 2:
        full.append(1)

def pytest_sessionfinish():
    gc.callbacks.append(count)
    atexit.register(lambda: sys.stderr.write(f"full collections at exit: {len(full)}\\n"))
"""


@pytest.mark.parametrize("ntdd", [True, False], ids=["ntdd", "plain pytest"])
def test_garbage_is_collected_once_at_exit_and_what_it_raises_is_reported(
    pytester: pytest.Pytester, ntdd: bool
) -> None:
    """pytest alone collects twice as it closes; with a notebook run, ntdd makes it once."""
    pytester.makeconftest(COUNTING)
    if ntdd:
        write_notebook(pytester.path / "nb.ipynb", [code(LEAKY), "# TEST: runs\nassert True"])
        args = ["--ntdd", "nb.ipynb"]
    else:
        pytester.makepyfile(test_leak=f"{LEAKY}\n\ndef test_runs():\n    pass\n")
        args = ["test_leak.py"]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    assert "raised in __del__" in result.stdout.str() + result.stderr.str()
    passes = 1 if ntdd else 2
    result.stderr.fnmatch_lines([f"full collections at exit: {passes}"])


@pytest.mark.slow
def test_without_pytests_unraisable_plugin_ntdd_adds_no_collection(
    pytester: pytest.Pytester,
) -> None:
    """`-p no:unraisableexception` asks for no collection at exit: ntdd makes none either."""
    pytester.makeconftest(COUNTING)
    write_notebook(pytester.path / "nb.ipynb", [code(LEAKY), "# TEST: runs\nassert True"])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:unraisableexception", "--ntdd", "nb.ipynb"
    )
    result.assert_outcomes(passed=1)
    result.stderr.fnmatch_lines(["full collections at exit: 0"])


# Notes the collector's frozen objects while collecting, while a test runs, and once done.
FREEZE_NOTED = """
import gc

def pytest_itemcollected(item):
    print(f"frozen while collecting: {gc.get_freeze_count() > 0}")

def pytest_runtest_call(item):
    print(f"frozen during the test: {gc.get_freeze_count() > 0}")

def pytest_sessionfinish():
    print(f"frozen after the tests: {gc.get_freeze_count() > 0}")
"""


@pytest.mark.slow
def test_what_collection_made_is_left_out_of_the_collectors_passes_while_tests_run(
    pytester: pytest.Pytester,
) -> None:
    """pytest's modules and items live to the end of the run: the automatic passes skip them."""
    pytester.makeconftest(FREEZE_NOTED)
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST: runs\nassert x == 1"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*frozen during the test: True*", "*frozen after the tests: False*"]
    )


def test_without_ntdd_the_collector_is_left_as_it_is(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(FREEZE_NOTED)
    pytester.makepyfile(test_plain="def test_runs():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", "test_plain.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*frozen while collecting: False*", "*frozen during the test: False*"]
    )


CYCLE = (
    "import weakref\n\n"
    "class Node:\n"
    "    pass\n\n"
    "node = Node()\nnode.me = node  # a cycle: only the collector frees it\n"
    "gone = weakref.ref(node)\ndel node\n"
    "made = [[] for _ in range(100_000)]  # enough new objects for the collector's own passes"
)


@pytest.mark.slow
def test_a_notebooks_garbage_is_still_collected_by_the_automatic_passes(
    pytester: pytest.Pytester,
) -> None:
    """The cells' objects are made after collection: the collector frees them as in a kernel."""
    write_notebook(pytester.path / "nb.ipynb", [CYCLE, "# TEST: freed\nassert gone() is None"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--ntdd", "nb.ipynb")
    result.assert_outcomes(passed=1)
