"""Work of pytest's that ntdd spares a notebook run, and what a user still gets.

An xfailed test's report is written but never printed, so it keeps only the
notebook's frames, not a library's (formatting a frame parses its whole file);
and pytest's two garbage collections at exit become one.
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
