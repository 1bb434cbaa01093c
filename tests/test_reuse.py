"""`--ntdd-reuse DIR`: a notebook's verdicts reused when nothing that can change them changed.

Each test runs pytest on real notebooks more than once and reads what a user
reads: the totals (`2 passed, 3 reused`), the line under them that names the
run reused, the exit status, JUnit and the job summary. A notebook runs
again when its bytes, a file it imports or names, an option, or an installed
package changed; a run that failed, was cut short or was a `-k` subset is
never reused.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import run, write_notebook

from ntdd.plugin.reuse.key import NOT_VERDICT_FIELDS, VERDICT_FIELDS
from ntdd.settings.typed import Settings

STORE = ("--ntdd-reuse", "store")
FROM_THE_RUN = "reused: the verdicts of"


@pytest.fixture
def folder(pytester: pytest.Pytester) -> Path:
    """Two notebooks: `uses_helper` imports a module beside it (which imports another)
    and reads a CSV file; `alone` imports nothing of the folder."""
    root = pytester.path
    (root / "helper.py").write_text("from deeper import base\n\ndef one():\n    return base()\n")
    (root / "deeper.py").write_text("def base():\n    return 1\n")
    (root / "data.csv").write_text("a,b\n1,2\n")
    write_notebook(
        root / "uses_helper.ipynb",
        [
            "import helper\nx = helper.one()\n"
            "with open('data.csv') as f:\n    rows = f.read().splitlines()",
            "# TEST: one\nassert x == 1",
            "# TEST: two rows\nassert len(rows) == 2",
        ],
    )
    write_notebook(root / "alone.ipynb", ["y = 2", "# TEST: y\nassert y == 2"])
    return root


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("seconds",)}


def reuse_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return run(pytester, "--ntdd", *STORE, *args, ".")


def test_a_second_run_reuses_every_notebook_and_says_from_which_run(
    pytester: pytest.Pytester, folder: Path
) -> None:
    first = reuse_run(pytester)
    assert outcomes(first) == {"passed": 3}
    assert FROM_THE_RUN not in first.stdout.str()
    second = reuse_run(pytester, "-v")
    assert second.ret == pytest.ExitCode.OK
    assert outcomes(second) == {"reused": 3}
    second.stdout.fnmatch_lines(
        [
            "*uses_helper.ipynb::test_one REUSED*",
            "*= 3 reused in *",
            "ntdd: 3 reused: the verdicts of 2 notebooks from the run of "
            "????-??-?? ??:?? UTC, run ???????? (--ntdd-reuse)",
        ]
    )
    assert second.stdout.lines[-1].startswith("ntdd: 3 reused")  # under the totals


def test_an_edited_notebook_runs_again_and_the_others_are_reused(
    pytester: pytest.Pytester, folder: Path
) -> None:
    reuse_run(pytester)
    write_notebook(folder / "alone.ipynb", ["y = 2", "# TEST: y\nassert y == 2  # edited"])
    assert outcomes(reuse_run(pytester)) == {"passed": 1, "reused": 2}
    assert outcomes(reuse_run(pytester)) == {"reused": 3}


@pytest.mark.parametrize(
    "edited",
    ["helper.py", "deeper.py", "data.csv"],
    ids=["a module it imports", "a module that module imports", "a file its code names"],
)
def test_an_edited_file_a_notebook_reaches_runs_it_and_only_it(
    pytester: pytest.Pytester, folder: Path, edited: str
) -> None:
    reuse_run(pytester)
    path = folder / edited
    text = path.read_text()
    path.write_text(text.replace("1,2", "3,4") if edited.endswith(".csv") else text + "# edited\n")
    assert outcomes(reuse_run(pytester)) == {"passed": 2, "reused": 1}


@pytest.mark.parametrize(
    "option",
    [
        ("--ntdd-timeout", "100"),
        ("--ntdd-smoke",),
        *(  # the slow tier: the same check, the other options
            pytest.param(option, marks=pytest.mark.slow)
            for option in (
                ("--ntdd-devices", "cpu"),
                ("--ntdd-run-untested",),
                ("--ntdd-skip-eval-false",),
                ("--ntdd-outputs-lax",),
                ("-W", "error::UserWarning"),
                ("--runxfail",),
            )
        ),
    ],
    ids=lambda option: option[0],
)
def test_an_option_that_reaches_the_notebooks_runs_them_again(
    pytester: pytest.Pytester, folder: Path, option: tuple[str, ...]
) -> None:
    reuse_run(pytester)
    changed = reuse_run(pytester, *option)
    assert outcomes(changed)["passed"] >= 3 and "reused" not in outcomes(changed)
    assert outcomes(reuse_run(pytester, *option)).get("reused", 0) >= 3


def test_a_test_only_parameter_runs_the_notebook_again(pytester: pytest.Pytester) -> None:
    cells = ["n = 3", "# TEST: n is small\nassert n < 10"]
    write_notebook(pytester.path / "nb.ipynb", [cells[0], cells[1]])
    nb = pytester.path / "nb.ipynb"
    data = json.loads(nb.read_text())
    data["cells"][0]["metadata"]["tags"] = ["parameters"]
    nb.write_text(json.dumps(data))
    assert outcomes(reuse_run(pytester)) == {"passed": 1}
    assert outcomes(reuse_run(pytester, "--ntdd-param", "n=4")) == {"passed": 1}
    assert outcomes(reuse_run(pytester, "--ntdd-param", "n=4")) == {"reused": 1}


def test_a_notebook_without_tests_run_to_its_end_is_reused(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "untested.ipynb", ["x = 1", "print(x)"])
    assert outcomes(reuse_run(pytester, "--ntdd-run-untested")) == {"passed": 1}
    second = reuse_run(pytester, "--ntdd-run-untested", "-rA")
    assert second.ret == pytest.ExitCode.OK
    assert outcomes(second) == {"reused": 1}
    assert "INTERNALERROR" not in second.stdout.str() + second.stderr.str()


def test_a_notebook_that_failed_is_never_reused(pytester: pytest.Pytester, folder: Path) -> None:
    cells = ["z = 1", "# TEST: ok\nassert z", "# TEST\nassert z == 2"]
    write_notebook(folder / "failing.ipynb", cells)
    for _ in range(2):
        result = reuse_run(pytester)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert outcomes(result)["failed"] == 1
    assert outcomes(result) == {"failed": 1, "passed": 1, "reused": 3}


def test_a_notebook_whose_setup_errors_is_never_reused(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "nb.ipynb", ["1 / 0", "# TEST: t\nassert True"])
    for _ in range(2):
        assert outcomes(reuse_run(pytester)) == {"errors": 1}


def test_a_k_subset_is_not_stored_as_the_notebooks_run(
    pytester: pytest.Pytester, folder: Path
) -> None:
    assert outcomes(reuse_run(pytester, "-k", "test_one or test_y")) == {
        "passed": 2,
        "deselected": 1,
    }
    assert outcomes(reuse_run(pytester)) == {"passed": 2, "reused": 1}  # alone ran whole


@pytest.mark.slow
def test_a_run_cut_short_is_not_stored(pytester: pytest.Pytester, folder: Path) -> None:
    pytester.makeconftest(
        "import pytest\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.nodeid.endswith('test_one') and report.when == 'teardown':\n"
        "        pytest.exit('stopped')\n"
    )
    cut = reuse_run(pytester, "-p", "no:randomly")
    assert "stopped" in cut.stdout.str()
    (folder / "conftest.py").unlink()
    assert outcomes(reuse_run(pytester)).get("passed", 0) >= 2  # uses_helper ran again


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        pytest.param(json.dumps({"schema": "something else"}), marks=pytest.mark.slow),
        pytest.param(json.dumps([1, 2]), marks=pytest.mark.slow),
    ],
    ids=["bad JSON", "another schema", "another tool's file"],
)
def test_a_damaged_or_foreign_entry_is_ignored_in_one_line_and_left_as_it_is(
    pytester: pytest.Pytester, folder: Path, text: str
) -> None:
    reuse_run(pytester)
    entries = sorted((folder / "store").glob("*.json"))
    assert len(entries) == 2
    for entry in entries:
        entry.write_text(text)
    result = reuse_run(pytester)
    assert result.ret == pytest.ExitCode.OK
    assert outcomes(result) == {"passed": 3}
    noted = [line for line in result.stdout.lines if "not an entry ntdd wrote" in line]
    assert len(noted) == 2 and all(line.startswith("ntdd: --ntdd-reuse: ") for line in noted)
    assert all(entry.read_text() == text for entry in entries)  # never overwritten
    assert "Traceback" not in result.stdout.str()


@pytest.mark.slow
def test_an_entry_for_another_key_is_not_trusted(pytester: pytest.Pytester, folder: Path) -> None:
    reuse_run(pytester)
    first, second = sorted((folder / "store").glob("*.json"))
    first_text = first.read_text()
    first.write_text(second.read_text())
    result = reuse_run(pytester)
    assert "another key's" in result.stdout.str()
    assert outcomes(result)["reused"] >= 1 and outcomes(result)["passed"] >= 1
    assert first.read_text() != first_text


@pytest.mark.slow
def test_under_xdist_the_controller_stores_and_the_workers_reuse(
    pytester: pytest.Pytester, folder: Path
) -> None:
    args = ("--ntdd", *STORE, "-n", "2", ".")
    first = run(pytester, *args, plugins=["xdist"], subprocess=True)
    assert outcomes(first) == {"passed": 3}
    assert len(list((folder / "store").glob("*.json"))) == 2
    second = run(pytester, *args, plugins=["xdist"], subprocess=True)
    assert second.ret == pytest.ExitCode.OK
    assert outcomes(second) == {"reused": 3}
    assert "ntdd: 3 reused: the verdicts of 2 notebooks" in second.stdout.str()


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("pytest.ini", "[pytest]\nntdd_reuse = kept\n"),
        ("pyproject.toml", '[tool.ntdd]\nreuse = "kept"\n'),
    ],
)
def test_the_store_can_be_named_in_the_ini_or_pyproject(
    pytester: pytest.Pytester, folder: Path, name: str, text: str
) -> None:
    (folder / name).write_text(text)
    assert outcomes(run(pytester, "--ntdd", ".")) == {"passed": 3}
    assert len(list((folder / "kept").glob("*.json"))) == 2
    assert outcomes(run(pytester, "--ntdd", ".")) == {"reused": 3}


@pytest.mark.slow
def test_without_the_option_nothing_is_reused_or_stored(
    pytester: pytest.Pytester, folder: Path
) -> None:
    reuse_run(pytester)
    assert outcomes(run(pytester, "--ntdd", ".")) == {"passed": 3}


@pytest.mark.slow
def test_a_changed_package_version_runs_every_notebook(
    pytester: pytest.Pytester, folder: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    installed = site / "ntdd_fake_dist-1.0.dist-info"
    installed.mkdir(parents=True)
    metadata = "Metadata-Version: 2.1\nName: ntdd-fake-dist\nVersion: {}\n"
    (installed / "METADATA").write_text(metadata.format("1.0"))
    monkeypatch.syspath_prepend(str(site))
    assert outcomes(reuse_run(pytester)) == {"passed": 3}
    assert outcomes(reuse_run(pytester)) == {"reused": 3}
    upgraded = installed.rename(site / "ntdd_fake_dist-1.1.dist-info")
    (upgraded / "METADATA").write_text(metadata.format("1.1"))
    assert outcomes(reuse_run(pytester)) == {"passed": 3}


def test_junit_shows_a_reused_test_as_skipped_saying_which_run_it_reuses(
    pytester: pytest.Pytester, folder: Path
) -> None:
    reuse_run(pytester)
    reuse_run(pytester, "--junit-xml", "junit.xml")
    suite = ET.parse(folder / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("3", "3", "0")
    case = suite.find("testcase[@name='test_one']")
    assert case is not None
    skipped = case.find("skipped")
    assert skipped is not None
    assert skipped.get("message", "").startswith("passed in the run of ")
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert str(properties["ntdd_reused"]) in skipped.get("message", "")


@pytest.mark.slow
def test_the_summary_and_the_report_say_what_was_reused(
    pytester: pytest.Pytester, folder: Path
) -> None:
    reuse_run(pytester)
    reuse_run(pytester, "--ntdd-summary", "summary.md", "--ntdd-report", "report.html")
    summary = (folder / "summary.md").read_text()
    assert "3 reused" in summary and "the verdicts of 2 notebooks from the run of" in summary
    page = (folder / "report.html").read_text()
    assert "reused" in page and "passed in the run of" in page


def test_a_reused_notebook_keeps_the_seconds_recorded_when_it_ran(
    pytester: pytest.Pytester, folder: Path
) -> None:
    """Not the nothing a reused run takes, which would unbalance the next shards."""
    reuse_run(pytester, "--ntdd-store-durations", "durations.json")
    durations = folder / "durations.json"
    recorded = json.loads(durations.read_text())
    assert set(recorded) == {"alone.ipynb", "uses_helper.ipynb"}
    durations.write_text(json.dumps({**recorded, "alone.ipynb": 123.0}))
    write_notebook(folder / "uses_helper.ipynb", ["x = 1", "# TEST: one\nassert x == 1"])
    result = reuse_run(pytester, "--ntdd-store-durations", "durations.json")
    assert outcomes(result) == {"passed": 1, "reused": 1}
    now = json.loads(durations.read_text())
    assert now["alone.ipynb"] == 123.0 and "uses_helper.ipynb" in now


@pytest.mark.parametrize("writing", [("--ntdd-write-notebooks", "out"), ("--ntdd-overwrite",)])
def test_reuse_with_notebooks_written_back_is_refused_in_one_line(
    pytester: pytest.Pytester, folder: Path, writing: tuple[str, ...]
) -> None:
    result = reuse_run(pytester, *writing)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert "--ntdd-reuse with " in said and writing[0] in said
    assert not (folder / "store").exists()


def test_every_setting_is_in_the_key_or_said_not_to_change_verdicts() -> None:
    """A new setting fails this until it is put in one of the two lists."""
    fields = {field.name for field in dataclasses.fields(Settings)}
    assert set(VERDICT_FIELDS) | set(NOT_VERDICT_FIELDS) == fields
    assert not set(VERDICT_FIELDS) & set(NOT_VERDICT_FIELDS)


def test_a_run_that_measures_coverage_reuses_nothing_and_says_so(
    pytester: pytest.Pytester, folder: Path
) -> None:
    """A reused notebook's lines would count as never run: `--cov-fail-under` would fail."""
    pytest.importorskip("pytest_cov")
    assert outcomes(reuse_run(pytester)) == {"passed": 3}
    measured = run(pytester, "--ntdd", *STORE, "--cov=.", ".", plugins=["pytest_cov"])
    assert outcomes(measured) == {"passed": 3}
    measured.stdout.fnmatch_lines(["ntdd: --ntdd-reuse: coverage is measured (--cov)*"])
    assert outcomes(reuse_run(pytester)) == {"reused": 3}
