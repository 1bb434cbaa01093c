"""One declared record per report: outputs made JSON-safe where they are recorded, so that a
notebook with unusual outputs keeps its verdict under xdist, the report and write-back."""

from __future__ import annotations

import datetime
import json
import math
from typing import Any

import nbformat
import numpy as np
import pytest
from conftest import run

from ntdd.plugin.results.record import TestRecord
from ntdd.runtime.cell_log import CellRun
from ntdd.runtime.json_safe import json_safe, outputs_safe, text_safe

# What a kernel shows without complaint: a file name Python could not decode, numpy's
# scalars in a JSON display, NaN, bytes and dates in a display's data.
UNUSUAL = (
    "import numpy as np\nfrom IPython.display import JSON, display\n"
    "print('caf\\udce9.csv')\n"
    "display(JSON({'acc': np.float64(0.91), 'n': np.int64(3), 'w': np.arange(3)}))\n"
    "display({'application/json': {'loss': float('nan'), 'day': __import__('datetime').date"
    "(2026, 1, 2)}}, raw=True)"
)
FAILING = "# TEST: fails\nassert 1 == 2"
PASSING = "# TEST: passes\nassert np.float32(0.5) == 0.5"


def test_numpy_values_become_the_numbers_a_kernel_sends() -> None:
    notes: list[str] = []
    value = {"acc": np.float64(0.91), "n": np.int64(3), "w": np.arange(3), "f": np.float32(0.5)}
    safe = json_safe(value, notes)
    assert safe == {"acc": 0.91, "n": 3, "w": [0, 1, 2], "f": 0.5}
    assert [type(v) for v in safe.values()] == [float, int, list, float]
    assert notes == []


def test_bytes_dates_nan_and_keys_are_cleaned_as_jupyter_client_cleans_them() -> None:
    safe = json_safe(
        {"b": b"xy", "d": datetime.date(2026, 1, 2), "nan": math.nan, 1: "one"}, notes=[]
    )
    assert safe == {"b": "eHk=", "d": "2026-01-02", "nan": "nan", "1": "one"}


def test_an_object_with_no_json_form_is_shown_by_its_repr_with_a_note() -> None:
    class Odd:
        def __repr__(self) -> str:
            return "Odd()"

    notes: list[str] = []
    assert json_safe({"x": Odd()}, notes) == {"x": "Odd()"}
    assert notes == ["Odd has no JSON form: shown as Odd()"]
    shown = {"output_type": "display_data", "data": {"application/json": Odd()}, "metadata": {}}
    [output] = outputs_safe([shown], notes=[])
    assert output["data"] == {"application/json": "Odd()"}
    assert output["metadata"] == {"ntdd": {"notes": ["Odd has no JSON form: shown as Odd()"]}}


def test_a_structure_that_holds_itself_is_shown_by_its_repr_not_raised() -> None:
    data: dict[str, Any] = {"loss": float("nan")}
    data["self"] = data
    notes: list[str] = []
    assert json_safe(data, notes) == repr(data)
    assert notes == [f"dict has no JSON form: shown as {data!r}"]


def test_lone_surrogates_read_back_as_a_notebook_reads_a_kernels_text() -> None:
    assert text_safe("caf\udce9.csv") == "caf\ufffd.csv"
    assert text_safe("\ud800 and é") == "\ufffd and é"
    assert json_safe({"text": "caf\udce9"}, []) == {"text": "caf\ufffd"}
    plain = "plain text, é"
    assert text_safe(plain) is plain


def test_a_record_round_trips_through_plain_json() -> None:
    run = CellRun(1, "a1", "cpu", 0.1, "out", "", outputs=[{"output_type": "stream"}])
    record = TestRecord(
        notebook="nb.ipynb", device="cpu", cell=2, cells=(run,), smoke=(("a", "b"),)
    )
    data = json.loads(json.dumps(record.to_data()))
    assert TestRecord.from_data(data) == record


def _notebook(path: Any, *sources: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nbformat.write(nb, str(path))


@pytest.mark.parametrize(
    "options",
    [
        # an xdist run each: the same outputs cross execnet for both, so one is quick
        pytest.param(["--ntdd-report", "report.html"], marks=pytest.mark.slow),
        ["--ntdd-write-notebooks", "out"],
    ],
    ids=["report", "write-notebooks"],
)
def test_unusual_outputs_keep_a_failing_verdict_under_xdist(
    pytester: pytest.Pytester, options: list[str]
) -> None:
    """The outputs cross execnet as plain data: the failing test is counted, no
    INTERNALERROR, and the run is red (it was green, with the test gone)."""
    _notebook(pytester.path / "nb.ipynb", UNUSUAL, FAILING)
    result = run(
        pytester, "--ntdd", "-n", "2", *options, "nb.ipynb", plugins=["xdist"], subprocess=True
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.slow
def test_unusual_outputs_are_written_back_as_a_kernel_would_save_them(
    pytester: pytest.Pytester,
) -> None:
    """Serially the writer meets them at the session's end: the clean notebook is written
    (it crashed the writer, leaving every notebook unwritten), the failing one is not."""
    _notebook(pytester.path / "clean.ipynb", UNUSUAL, PASSING)
    _notebook(pytester.path / "red.ipynb", UNUSUAL, FAILING)
    result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", ".", subprocess=True)
    result.assert_outcomes(passed=1, failed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    written = nbformat.read(str(pytester.path / "out" / "clean.ipynb"), as_version=4)
    nbformat.validate(written)
    outputs = written.cells[0].outputs
    assert outputs[0]["text"] == "caf\ufffd.csv\n"
    assert outputs[1]["data"]["application/json"] == {"acc": 0.91, "n": 3, "w": [0, 1, 2]}
    assert outputs[2]["data"]["application/json"] == {"loss": "nan", "day": "2026-01-02"}
    assert not (pytester.path / "out" / "red.ipynb").exists()


# Counts the opens of each notebook in the process, as an audit hook sees them.
OPENS = """
import collections, os, sys
OPENS = collections.Counter()
def _count(event, args):
    if event == "open" and args and isinstance(args[0], (str, os.PathLike)):
        name = os.fsdecode(args[0])
        if name.endswith(".ipynb"):
            OPENS[os.path.basename(name)] += 1
sys.addaudithook(_count)
def pytest_unconfigure(config):
    with open("opens.txt", "w") as f:
        f.write(repr(dict(OPENS)))
"""


@pytest.mark.slow
def test_a_run_with_every_option_reads_a_notebook_three_times(pytester: pytest.Pytester) -> None:
    """The collection, the saved outputs when the checks run, and once at the end for the
    page and the writer together (it was five: the checks and the page read their own)."""
    _notebook(pytester.path / "nb.ipynb", "# NBVAL_CHECK_OUTPUT\nprint(1)", PASSING)
    nb = nbformat.read(str(pytester.path / "nb.ipynb"), as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
    nb.cells[0].execution_count = 1
    nb.cells[1].source = "# TEST: passes\nassert 1"
    nbformat.write(nb, str(pytester.path / "nb.ipynb"))
    pytester.makeconftest(OPENS)
    every = ["--ntdd-report", "r.html", "--ntdd-summary", "s.md", "--ntdd-outputs-lax"]
    every += ["--ntdd-write-notebooks", "out", "--junitxml", "j.xml"]
    every += ["--ntdd-store-durations", "d.json"]
    result = run(pytester, "--ntdd", *every, "nb.ipynb", subprocess=True)
    result.assert_outcomes(passed=2)
    assert (pytester.path / "opens.txt").read_text() == "{'nb.ipynb': 3}"
