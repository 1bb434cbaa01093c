"""The files a run writes its results to never destroy a notebook, and fail before the run.

`--ntdd-report`, `--ntdd-summary` and `--ntdd-store-durations` take a value,
so the notebook meant as the run's argument can become the file to write
(`pytest --ntdd --ntdd-report nb.ipynb`); `ntdd faults --report` and
`ntdd list --summary` likewise.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import ntdd_main, run, sha

OPTIONS = ["--ntdd-report", "--ntdd-summary", "--ntdd-store-durations"]


@pytest.fixture
def nb(notebook: Any) -> Path:
    return notebook(["x = 1", "# TEST: x is one\nassert x == 1"])


@pytest.mark.parametrize("option", OPTIONS)
def test_a_notebook_given_as_a_results_file_is_refused_before_the_run(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    before = sha(nb)
    result = run(pytester, "--ntdd", option, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} nb.ipynb: is a notebook*"])
    result.stdout.no_fnmatch_line("*passed*")  # nothing ran
    assert sha(nb) == before


@pytest.mark.parametrize("option", OPTIONS)
def test_a_link_to_a_notebook_is_refused_as_a_results_file(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    before = sha(nb)
    (pytester.path / "results.out").symlink_to(nb.name)
    result = run(pytester, "--ntdd", option, "results.out", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*is a notebook (through the link results.out)*"])
    assert sha(nb) == before


@pytest.mark.parametrize("option", OPTIONS)
def test_a_folder_or_a_read_only_file_is_refused_before_the_run(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    (pytester.path / "out").mkdir()
    result = run(pytester, "--ntdd", option, "out", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} out: is a folder*"])
    locked = pytester.path / "locked.txt"
    locked.write_text("kept\n")
    locked.chmod(0o444)
    result = run(pytester, "--ntdd", option, "locked.txt", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ntdd: {option} locked.txt: read-only*"])
    assert locked.read_text() == "kept\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_summary_that_cannot_be_written_is_one_line_under_the_totals_and_fails_the_run(
    pytester: pytest.Pytester, nb: Path
) -> None:
    result = run(pytester, "--ntdd", "--ntdd-summary", "/dev/full", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: error: --ntdd-summary /dev/full: cannot write it: No space left on device"]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_a_lone_surrogate_a_cell_prints_is_shown_as_jupyter_shows_it(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    """A file name that is not UTF-8, printed, is a lone surrogate in Python: the cell's
    output shows the replacement character, as a kernel's message reaches Jupyter."""
    pytest.importorskip("nbconvert")
    notebook(["print('caf\\udce9.csv')", "# TEST: runs\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-report", "report.html", "--ntdd-summary", "s.md")
    assert result.ret == pytest.ExitCode.OK
    assert "caf\ufffd.csv" in (pytester.path / "report.html").read_text(encoding="utf-8")
    assert "1 passed" in (pytester.path / "s.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "command", [["faults", "nb.ipynb", "--report"], ["list", ".", "--summary"]]
)
def test_the_commands_refuse_a_notebook_as_their_markdown_file(
    pytester: pytest.Pytester, nb: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = sha(nb)
    os.chdir(pytester.path)
    assert ntdd_main([*command, "nb.ipynb"]) == 2
    assert f"{command[-1]} nb.ipynb: is a notebook" in capsys.readouterr().err
    assert sha(nb) == before


# -- a results path that is no regular file: written in place, never replaced ----------

as_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0,
    reason="only root can make a device node (and, as root, a rename would replace one)",
)


def _null_device(folder: Path) -> Path:
    """A character device of /dev/null's numbers (1, 3), where the test can see it."""
    node = folder / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return node


@as_root
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("through_a_link", [False, True])
def test_a_character_device_is_written_to_never_replaced_by_a_file(
    pytester: pytest.Pytester, nb: Path, option: str, through_a_link: bool
) -> None:
    node = _null_device(pytester.path)
    given = node
    if through_a_link:
        given = pytester.path / "results.out"
        given.symlink_to(node)
    result = run(pytester, "--ntdd", option, str(given), "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)
    assert stat.S_ISCHR(os.lstat(node).st_mode)  # still the device, not a file in its place
    assert not list(pytester.path.glob(".null.ntdd-*"))  # nor a temporary left beside it


def _within_minutes(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run in a child process that may not wait on a FIFO forever: the limit is this
    test's guard against a hang, not a measure."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=120)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize(
    # a child process each: the report's in the quick run, the others in the slow tier
    "option",
    [o if o == "--ntdd-report" else pytest.param(o, marks=pytest.mark.slow) for o in OPTIONS],
)
def test_a_fifo_with_a_reader_gets_the_results_and_one_without_is_refused_by_name(
    pytester: pytest.Pytester, nb: Path, option: str
) -> None:
    fifo = pytester.path / "results.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = _within_minutes(pytester, "--ntdd", option, "results.fifo", "nb.ipynb")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # not a file renamed over it
    with contextlib.suppress(OSError):  # a run that wrote nothing: the reader gets its end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    reader.join()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert read and read[0]  # the results went through the FIFO

    result = _within_minutes(pytester, "--ntdd", option, "results.fifo", "nb.ipynb")  # no reader
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"ntdd: error: {option} *results.fifo: a FIFO with no reader; not written*"]
    )
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_a_written_notebook_is_refused_by_name_not_waited_on(
    pytester: pytest.Pytester, nb: Path
) -> None:
    (pytester.path / "out").mkdir()
    os.mkfifo(pytester.path / "out" / "nb.ipynb")
    result = _within_minutes(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["ntdd: error: --ntdd-write-notebooks: *nb.ipynb: is a FIFO, not a copy ntdd wrote*"]
    )
    assert stat.S_ISFIFO(os.lstat(pytester.path / "out" / "nb.ipynb").st_mode)


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc's descriptor links")
@pytest.mark.slow
def test_dev_stdout_redirected_to_a_file_gets_the_page_where_the_output_stands(
    pytester: pytest.Pytester, nb: Path
) -> None:
    """pytester sends the child's output to a file: `pytest … > out.txt`. The page goes
    into it, between pytest's lines; a rename put it in the file's place, and pytest's
    output after it went to a file no longer there."""
    result = _within_minutes(pytester, "--ntdd", "--ntdd-report", "/dev/stdout", "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert "<!DOCTYPE html>" in out and "</html>" in out
    assert "test session starts" in out.split("<!DOCTYPE html>")[0]  # pytest's lines before it
    assert "= 1 passed in" in out.split("</html>")[-1]  # and after it
