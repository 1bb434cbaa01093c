"""`--ntdd-outputs`: a check compares what the cell showed, all of it, and nothing else.

No output ntdd makes itself (a test's docstring) stands for a cell's; a
stream too long to keep whole is compared whole, by digest, never tail
against tail; the `tqdm` normaliser leaves a progress bar's numbers alone;
a check cannot hang the run past its timeout.
"""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from conftest import run, write_notebook
from test_output_checks import ran, stdout, verdicts


def test_a_last_test_a_mark_may_leave_out_gives_its_cell_no_output_of_ntdds_own(
    pytester: pytest.Pytester,
) -> None:
    """The test that runs the cells no test is sure to reach is not the last cell's test:
    its docstring is no `Out[n]` of that cell, in the check or the report."""
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("x = 1", count=1),
            ran("# TEST: first\nassert x == 1", count=2),
            ran("print(x)", stdout("1\n"), count=3),
            ran("# TEST: it learned @full_run\nassert x == 1", count=4),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "--ntdd-report=r.html", "nb.ipynb")
    assert found == dict.fromkeys(
        ["outputs_of_cell_1", "outputs_of_cell_2", "outputs_of_cell_3", "outputs_of_cell_4"],
        "PASSED",
    )
    got.assert_outcomes(passed=7)
    assert "which no test is sure to reach" not in (pytester.path / "r.html").read_text()


# 650 lines of 1,000 characters: more than a run keeps of a stream (its last 200,000 or more)
LONG = "for i in range(650):\n    print(f'{i:06d}' + '.' * 993)"
LONG_TEXT = "".join(f"{i:06d}" + "." * 993 + "\n" for i in range(650))
ONE_CHANGED = LONG.replace("f'{i:06d}'", "f'{6 if i == 5 else i:06d}'")  # in the part left out


def test_a_stream_longer_than_a_run_keeps_passes_when_printed_the_same(
    pytester: pytest.Pytester,
) -> None:
    assert len(LONG_TEXT) == 650_000
    write_notebook(pytester.path / "nb.ipynb", [ran(LONG, stdout(LONG_TEXT))])
    run(pytester, "--ntdd-outputs", "nb.ipynb").assert_outcomes(passed=2)


def test_a_long_stream_that_differs_early_fails_saying_it_was_compared_whole(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", [ran(ONE_CHANGED, stdout(LONG_TEXT))])
    got = run(pytester, "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(
        [
            "stdout differs: the fresh stream was longer than a run keeps whole, so the two "
            "were compared by the length and SHA-256 of all that was printed*",
            "  saved: 650,000 characters",
            "  fresh: 650,000 characters, held as * with what was left out noted",
            "  they end alike: the difference is in what was left out",
        ]
    )


@pytest.mark.slow
def test_a_long_stream_written_back_as_its_tail_is_still_compared_whole(
    pytester: pytest.Pytester,
) -> None:
    """Written back, the stream is its tail, with the whole one's digest in the cell's
    metadata: a number changed in the part the tail leaves out fails the next check."""
    path = write_notebook(pytester.path / "nb.ipynb", [ran(LONG)])
    run(pytester, "--ntdd-outputs", "--ntdd-overwrite", "nb.ipynb")
    cell = json.loads(path.read_text())["cells"][0]
    assert len("".join(cell["outputs"][0]["text"])) < 650_000  # its tail
    whole = cell["metadata"]["ntdd"]["shortened_streams"]["stdout"]
    assert whole["length"] == 650_000
    nbformat.validate(nbformat.read(path, as_version=4))

    run(pytester, "--ntdd-outputs", "nb.ipynb").assert_outcomes(passed=2)
    _change_source(path, ONE_CHANGED)
    got = run(pytester, "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(
        ["stdout differs: the saved and the fresh streams were longer than a run keeps whole*"]
    )


def test_a_tail_written_back_without_its_digest_cannot_pass(pytester: pytest.Pytester) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", [ran(LONG)])
    run(pytester, "--ntdd-outputs", "--ntdd-overwrite", "nb.ipynb")
    notebook = json.loads(path.read_text())
    notebook["cells"][0]["metadata"].pop("ntdd")  # a tool that strips metadata
    path.write_text(json.dumps(notebook))
    got = run(pytester, "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(["*the saved stream was written back shortened*cannot be compared*"])


def test_a_stream_written_whole_again_loses_the_mark_of_its_tail(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", [ran(LONG)])
    run(pytester, "--ntdd-outputs", "--ntdd-overwrite", "nb.ipynb")
    _change_source(path, "print('short now')")
    run(pytester, "--ntdd-outputs", "--ntdd-overwrite", "nb.ipynb")
    cell = json.loads(path.read_text())["cells"][0]
    assert "ntdd" not in cell["metadata"]
    assert "".join(cell["outputs"][0]["text"]) == "short now\n"


def _change_source(path: Any, source: str) -> None:
    notebook = json.loads(path.read_text())
    notebook["cells"][0]["source"] = source
    path.write_text(json.dumps(notebook))


def test_the_tqdm_normaliser_keeps_the_postfix_a_bar_shows(pytester: pytest.Pytester) -> None:
    """tqdm's elapsed time and rate are brittle; the loss it shows is the cell's output."""
    bar = "import sys\nprint('100%|##| 10/10 [00:00<00:00, 2491.09it/s, loss=0.523, acc=0.910]')"
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran(bar, stdout("100%|##| 10/10 [00:01<00:00,  9.87it/s, loss=0.523, acc=0.910]\n")),
            ran(bar, stdout("100%|##| 10/10 [00:01<00:00,  9.87it/s, loss=5.230, acc=0.110]\n")),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "--ntdd-outputs-normalize=tqdm", "nb.ipynb")
    assert found == {"outputs_of_cell_1": "PASSED", "outputs_of_cell_2": "FAILED"}
    got.stdout.fnmatch_lines(["  -100%|##| 10/10 [<elapsed>, loss=5.230, acc=0.110]"])


@pytest.mark.slow
def test_a_sanitize_pattern_that_backtracks_fails_its_check_at_the_timeout(
    pytester: pytest.Pytester,
) -> None:
    """A check's comparison is C code (`re`) that holds the interpreter: its timeout must
    still land. Without it this run never ends (pytester's own limit fails it)."""
    pytester.path.joinpath("sanitize.cfg").write_text("regex: (a+)+$\nreplace: X\n")
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran("print('a' * 40 + 'b')", stdout("a" * 40 + "b\n"))],
    )
    got = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--ntdd-outputs",
        "--ntdd-outputs-sanitize-with=sanitize.cfg",
        "--ntdd-timeout=1",
        "nb.ipynb",
        timeout=120,
    )
    got.assert_outcomes(passed=1, failed=1)
    got.stdout.fnmatch_lines(
        [
            "cell 1 (id *): nb.ipynb::outputs_of_cell_1 timed out after 1 s (ntdd timeout) "
            "while its saved and fresh outputs were cleaned and compared*"
        ]
    )
