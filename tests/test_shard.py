"""`--ntdd-shard K/N`: disjoint shards of whole notebooks, balanced, the same everywhere."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import run
from hypothesis import given
from hypothesis import strategies as st

from ntdd.errors import ConfigError
from ntdd.plugin.scale.balance import (
    SECONDS_PER_WORKER,
    load_durations,
    partition,
    weigh,
    workers_that_pay,
)
from ntdd.settings.parsers import parse_shard

# -- the partition, on plain values ---------------------------------------------


@pytest.mark.parametrize("text", ["1/1", "2/4", " 4 / 4 "])
def test_k_of_n_is_read(text: str) -> None:
    assert str(parse_shard(text, "--ntdd-shard")) == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "-1/4", "1/0", "", "2/4/8"])
def test_a_bad_k_of_n_says_what_is_accepted(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--ntdd-shard: expected K/N, .*1 <= K <= N"):
        parse_shard(text, "--ntdd-shard")


@pytest.mark.parametrize("text", ["1/1025", f"1/{10**20}"])
def test_more_shards_than_a_matrix_holds_are_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--ntdd-shard: \d+ shards is more than any CI matrix"):
        parse_shard(text, "--ntdd-shard")


def test_the_heaviest_units_go_first_each_to_the_lightest_shard() -> None:
    weights = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 3.0}
    # LPT: a->1, b->2, c->2 (4 < 5), d->1 (5 < 7), e->1? no: loads are 8 and 7, so e->2.
    assert partition(weights, 2) == [["a", "d"], ["b", "c", "e"]]


def test_ties_go_by_path_and_by_shard_number() -> None:
    assert partition({"b": 1.0, "a": 1.0, "c": 1.0}, 2) == [["a", "c"], ["b"]]


def test_more_shards_than_units_leaves_the_last_ones_empty() -> None:
    assert partition({"a": 2.0, "b": 1.0}, 4) == [["a"], ["b"], [], []]


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=8), st.floats(0, 1e4, allow_nan=False), max_size=40
    ),
    st.integers(1, 9),
)
def test_every_unit_lands_in_exactly_one_shard(weights: dict[str, float], count: int) -> None:
    shards = partition(weights, count)
    assert len(shards) == count
    assert sorted(u for shard in shards for u in shard) == sorted(weights)
    assert partition(dict(reversed(list(weights.items()))), count) == shards  # order-free


def test_without_durations_units_weigh_their_test_count() -> None:
    weights = weigh({"a.ipynb": 3, "b.ipynb": 1}, None)
    assert weights.of == {"a.ipynb": 3.0, "b.ipynb": 1.0} and not weights.by_durations


def test_a_unit_the_file_does_not_know_weighs_the_mean_per_test_times_its_tests() -> None:
    weights = weigh({"old.ipynb": 4, "new.ipynb": 3}, {"old.ipynb": 20.0, "gone.ipynb": 9.0})
    assert weights.of == {"old.ipynb": 20.0, "new.ipynb": 15.0}  # 20 s / 4 tests * 3 tests
    assert weights.by_durations and weights.recorded == 1


@pytest.mark.parametrize(
    "text", ["not json", "[1, 2]", '{"a.ipynb": "slow"}', '{"a.ipynb": -1}', '{"a": true}']
)
def test_a_corrupt_durations_file_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "durations.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=r"durations\.json"):
        load_durations(path, "--ntdd-durations")


# -- pytest --ntdd-shard ---------------------------------------------------------


def collected(pytester: pytest.Pytester, *args: str, plugins: Sequence[str] = ()) -> list[str]:
    """The node ids a (sharded) run would run."""
    result = run(pytester, "--ntdd", "--co", "-q", *args, plugins=plugins)
    return [line for line in result.outlines if "::" in line]


@pytest.fixture
def notebooks(notebook: Any, pytester: pytest.Pytester) -> list[str]:
    """Five notebooks of 1 to 5 tests, and a plain test file."""
    names = []
    for i in range(1, 6):
        tests = [f"# TEST: t{j}\nassert x == 1" for j in range(i)]
        notebook(["x = 1", *tests], name=f"nb{i}.ipynb")
        names.append(f"nb{i}.ipynb")
    pytester.makepyfile(test_plain="def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    return [*names, "test_plain.py"]


def test_the_shards_are_disjoint_and_cover_the_run(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    everything = collected(pytester)
    shards = [collected(pytester, "--ntdd-shard", f"{k}/3") for k in (1, 2, 3)]
    assert sorted(n for shard in shards for n in shard) == sorted(everything)  # each once
    files = [{nodeid.split("::")[0] for nodeid in shard} for shard in shards]
    assert sum(map(len, files)) == len(notebooks)  # no file in two shards
    assert [len(shard) for shard in shards] == [6, 6, 5]  # by count: 5+1, 4+2, 3+2


def test_a_sharded_run_deselects_the_other_shards_and_says_what_it_got(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    result = run(pytester, "--ntdd", "--ntdd-shard", "1/3", ".")
    result.assert_outcomes(passed=6, deselected=11)
    result.stdout.fnmatch_lines(
        [
            "ntdd: shard 1/3, balanced by test count",
            "ntdd: shard 1/3: 2 of 6 notebooks and test files, 6 tests",
        ]
    )


def test_recorded_durations_balance_the_shards(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    durations = dict.fromkeys(notebooks, 1.0) | {"nb1.ipynb": 50.0}
    (pytester.path / "durations.json").write_text(json.dumps(durations))
    shards = [
        collected(pytester, "--ntdd-shard", f"{k}/2", "--ntdd-durations", "durations.json")
        for k in (1, 2)
    ]
    assert {n.split("::")[0] for n in shards[0]} == {"nb1.ipynb"}  # 50 s against 5 s
    assert len(shards[1]) == 16


def test_the_durations_file_can_come_from_the_ini(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    durations = dict.fromkeys(notebooks, 1.0) | {"test_plain.py": 99.0}
    (pytester.path / "durations.json").write_text(json.dumps(durations))
    pytester.makeini("[pytest]\nntdd_durations = durations.json\n")
    shard = collected(pytester, "--ntdd-shard", "1/2")
    assert {n.split("::")[0] for n in shard} == {"test_plain.py"}


def test_a_durations_file_that_knows_none_of_the_files_says_so(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    (pytester.path / "durations.json").write_text(json.dumps({"elsewhere.ipynb": 3.0}))
    result = run(pytester, "--ntdd", "--ntdd-shard=1/3", "--ntdd-durations=durations.json", ".")
    result.assert_outcomes(passed=6, deselected=11)  # as by count
    result.stdout.fnmatch_lines(
        ["ntdd: shard 1/3: 2 of 6 * (the durations file has none of them: balanced by test count)"]
    )


def test_a_missing_durations_file_balances_by_count_and_says_so(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    result = run(pytester, "--ntdd", "--ntdd-shard", "1/3", "--ntdd-durations", "none.json", ".")
    result.assert_outcomes(passed=6, deselected=11)
    result.stdout.fnmatch_lines(
        [
            "ntdd: shard 1/3, balanced by test count",
            "ntdd: warning: --ntdd-durations: none.json not found; "
            "record it with --ntdd-store-durations",
        ]
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ntdd-shard", "4/3"], "*ntdd: --ntdd-shard: expected K/N, the K-th of N shards*"),
        (
            ["--ntdd-shard", "1/3", "--ntdd-durations", "bad.json"],
            "*ntdd: --ntdd-durations: *bad.json: not a durations file*",
        ),
        (["--ntdd-store-durations", "bad.json"], "*ntdd: --ntdd-store-durations: *bad.json*"),
    ],
)
def test_bad_shard_options_are_usage_errors(
    notebooks: list[str], pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    (pytester.path / "bad.json").write_text("[]")
    result = run(pytester, "--ntdd", *args, ".")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_shard_with_nothing_to_run_passes(notebook: Any, pytester: pytest.Pytester) -> None:
    """A pull request that touches one notebook, in a matrix of four shards."""
    notebook(["# TEST\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-shard", "4/4", "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["ntdd: shard 4/4 has nothing to run*"])
    assert (
        run(pytester, "--ntdd", "-k", "nothing", "nb.ipynb").ret
        == pytest.ExitCode.NO_TESTS_COLLECTED
    )


@pytest.mark.slow
def test_durations_are_stored_per_file_and_merged(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    store = pytester.path / "out" / "durations.json"
    store.parent.mkdir()
    store.write_text(json.dumps({"elsewhere.ipynb": 7.0, "nb1.ipynb": 99.0}))
    result = run(pytester, "--ntdd", "--ntdd-store-durations", "out/durations.json", ".")
    result.stdout.fnmatch_lines(["ntdd: durations of 6 notebooks and test files recorded in *"])
    recorded = json.loads(store.read_text())
    assert set(recorded) == {*notebooks, "elsewhere.ipynb"}
    assert recorded["elsewhere.ipynb"] == 7.0  # kept: it did not run
    assert recorded["nb1.ipynb"] < 99.0  # replaced
    assert list(recorded) == sorted(recorded)  # stable diffs


def test_store_durations_sums_setup_call_and_teardown(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["import time\ntime.sleep(0.3)", "# TEST\nimport time\ntime.sleep(0.2)"])
    run(pytester, "--ntdd", "--ntdd-store-durations", "d.json", "nb.ipynb").assert_outcomes(
        passed=1
    )
    assert json.loads((pytester.path / "d.json").read_text())["nb.ipynb"] >= 0.5


def test_nbvals_items_go_with_their_notebook(notebook: Any, pytester: pytest.Pytester) -> None:
    pytest.importorskip("nbval")
    for name in "abc":
        notebook(["x = 1", "# TEST: t\nassert x"], name=f"{name}.ipynb")
    shards = [
        collected(pytester, "--nbval-lax", "--ntdd-shard", f"{k}/3", plugins=["nbval"])
        for k in (1, 2, 3)
    ]
    for shard in shards:
        assert len({nodeid.split("::")[0] for nodeid in shard}) == 1
        assert len(shard) == 3  # ntdd's test and nbval's two cells


@pytest.mark.slow
def test_xdist_workers_shard_alike_and_the_controller_stores_durations(
    notebooks: list[str], pytester: pytest.Pytester
) -> None:
    pytest.importorskip("xdist")
    alone = run(pytester, "--ntdd", "--ntdd-shard", "2/3", "-v", ".")
    spread = run(
        pytester,
        "--ntdd",
        "--ntdd-shard",
        "2/3",
        "-n",
        "2",
        "-v",
        "--ntdd-store-durations",
        "d.json",
        ".",
        plugins=["xdist"],
        subprocess=True,
    )
    spread.assert_outcomes(passed=6)

    def passed(result: pytest.RunResult) -> set[str]:
        lines = [line.split() for line in result.outlines if "PASSED" in line]
        return {word for words in lines for word in words if "::" in word}

    assert passed(spread) == passed(alone)
    spread.stdout.fnmatch_lines(["ntdd: shard 2/3: 2 of 6 notebooks and test files, 6 tests"])
    assert set(json.loads((pytester.path / "d.json").read_text())) == {
        nodeid.split("::")[0] for nodeid in passed(alone)
    }


@pytest.mark.slow  # an xdist run; test_a_shard_with_nothing_to_run_passes is the quick one
def test_an_empty_shard_passes_under_xdist_too(notebook: Any, pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    notebook(["# TEST\nassert True"])
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-shard",
        "2/2",
        "-n",
        "2",
        "nb.ipynb",
        plugins=["xdist"],
        subprocess=True,
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["ntdd: shard 2/2 has nothing to run*"])


@pytest.mark.parametrize(
    ("seconds", "cpus", "workers"),
    [
        ([SECONDS_PER_WORKER * 0.95] * 2, 4, 0),  # one worker's worth: no xdist at all
        ([SECONDS_PER_WORKER] * 3, 4, 3),  # a worker per SECONDS_PER_WORKER
        ([SECONDS_PER_WORKER * 6], 4, 0),  # one notebook: a second worker idles
        ([SECONDS_PER_WORKER * 10, 1.0, 1.0], 2, 0),  # one long notebook, two quick
        ([SECONDS_PER_WORKER * 10, SECONDS_PER_WORKER * 2], 4, 2),
        ([SECONDS_PER_WORKER] * 100, 4, 4),  # never more than the cores
        ([SECONDS_PER_WORKER] * 100, 1, 0),
        ([], 4, 0),
    ],
)
def test_auto_workers_are_as_many_as_the_recorded_work_pays_for(
    seconds: list[float], cpus: int, workers: int
) -> None:
    assert workers_that_pay(seconds, cpus) == workers


WORKER = (
    "# TEST: runs without xdist workers\nimport os\nassert 'PYTEST_XDIST_WORKER' not in os.environ"
)


# an xdist run each: with durations recorded in the quick run, without in the slow tier
@pytest.mark.parametrize("recorded", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_n_auto_starts_no_workers_where_the_recorded_work_does_not_pay(
    notebook: Any, pytester: pytest.Pytester, recorded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # when this suite runs under xdist
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    notebook([WORKER], name="a.ipynb")
    notebook([WORKER], name="b.ipynb")
    if recorded:
        (pytester.path / "d.json").write_text('{"a.ipynb": 3.0, "b.ipynb": 4.0}')
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-shard",
        "1/1",
        "-n",
        "auto",
        "--ntdd-durations",
        "d.json",
        ".",
        plugins=["xdist"],
        subprocess=True,
    )
    result.assert_outcomes(passed=2)


def test_the_shard_options_are_in_pytest_help(pytester: pytest.Pytester) -> None:
    result = run(pytester, "--help")
    result.stdout.fnmatch_lines(
        [
            "*--ntdd-shard=K/N*",
            "*--ntdd-durations=FILE*",
            "*--ntdd-store-durations=FILE*",
        ]
    )
