"""The kill rule of `ntdd faults`: Fisher's exact test over runs under several seeds, sequential,
and the notebooks that seed themselves, checked at two thread counts."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import write_notebook

from ntdd.commands.cli import main
from ntdd.faults.results import (
    CAUGHT,
    NOT_APPLICABLE,
    SURVIVED,
    UNDECIDED,
    FaultResult,
    Injected,
    NotebookReport,
    Outcomes,
    Summary,
)
from ntdd.faults.rule import KillRule, Tally, fisher_one_sided
from ntdd.faults.trials import run_trials


def test_fishers_one_sided_p_values_are_the_textbooks() -> None:
    # The lady tasting tea: 3 of her 4 "milk first" cups right, 1 of the 4 others wrong.
    assert fisher_one_sided(Tally(4, 3), Tally(4, 1)) == pytest.approx(17 / 70)
    assert fisher_one_sided(Tally(3, 3), Tally(3, 0)) == pytest.approx(1 / 20)
    assert fisher_one_sided(Tally(2, 2), Tally(5, 0)) == pytest.approx(1 / 21)
    assert fisher_one_sided(Tally(3, 0), Tally(5, 0)) == 1.0


def test_the_rule_catches_two_failing_runs_against_five_passing_clean_ones_and_no_fewer() -> None:
    rule = KillRule()
    clean = Tally(5, 0)
    assert rule.verdict(Tally(1, 1), clean) is None  # p = 1/6: run on
    assert rule.verdict(Tally(2, 2), clean) == CAUGHT  # p = 1/21
    assert rule.fewest_runs(5) == 2
    assert KillRule(alpha=0.01).fewest_runs(5) == 4  # 1/56 for 3 runs; 1/126
    assert KillRule(max_runs=1).fewest_runs(5) is None


def test_a_fault_whose_runs_pass_survives_once_no_run_left_could_catch_it() -> None:
    rule = KillRule()  # six runs at most
    clean = Tally(5, 0)
    assert rule.verdict(Tally(1, 0), clean) is None
    assert rule.verdict(Tally(2, 0), clean) is None  # 4 of 6 failing would still be caught
    assert rule.verdict(Tally(3, 0), clean) == SURVIVED


def test_a_fault_caught_under_some_seeds_only_is_undecided_never_caught() -> None:
    rule = KillRule()
    clean = Tally(5, 0)
    assert rule.verdict(Tally(2, 1), clean) is None
    assert rule.verdict(Tally(4, 2), clean) is None  # 4 of 6 at best: p = 15/330
    assert rule.verdict(Tally(5, 2), clean) == UNDECIDED  # 3 of 6 at best: p = 20/165
    # Against clean runs that fail as often, failing runs are no evidence.
    assert rule.verdict(Tally(3, 1), Tally(10, 4)) == SURVIVED


Run = Callable[[str | None, int, int], tuple[Outcomes, Injected]]


def fake_runs(failing: Callable[[str | None, int, int], list[str]], **clean: object) -> Run:
    """Runs that fail the tests *failing* names for (variant, seed, threads), and note them."""
    made: list[tuple[str | None, int, int]] = []

    def run(variant: str | None, seed: int, threads: int) -> tuple[Outcomes, Injected]:
        made.append((variant, seed, threads))
        failed = failing(variant, seed, threads)
        tests = {t: "failed" if t in failed else "passed" for t in ("test_a", "test_b")}
        outcomes = Outcomes(tests, **clean)  # type: ignore[arg-type]
        return outcomes, Injected(applied=["changed"] if variant else [])

    run.made = made  # type: ignore[attr-defined]
    return run


def test_each_fault_runs_until_decided_against_five_clean_runs() -> None:
    def failing(variant: str | None, seed: int, threads: int) -> list[str]:
        return {"always": ["test_a"], "never": [], "half": ["test_b"] * (seed % 2)}.get(
            variant or "", []
        )

    run = fake_runs(failing)
    trial = run_trials(("always", "never", "half"), run, KillRule(), seed=10)
    results = {r.name: r for r in trial.results}
    assert (results["always"].status, results["always"].runs) == (CAUGHT, 2)
    assert results["always"].failed_runs == ("seed 10", "seed 11")
    assert results["always"].p_value == pytest.approx(1 / 21)
    assert (results["never"].status, results["never"].runs) == (SURVIVED, 3)
    assert results["half"].status == UNDECIDED and results["half"].caught_by == ("test_b",)
    made = run.made  # type: ignore[attr-defined]
    assert [seed for variant, seed, _ in made if variant is None] == [10, 11, 12, 13, 14]
    assert all(threads == 1 for *_, threads in made)
    assert (trial.clean.tally(), trial.seeds_itself) == (Tally(5, 0), "")


def test_a_flaky_clean_test_is_measured_on_more_seeds_and_raises_the_bar() -> None:
    def failing(variant: str | None, seed: int, threads: int) -> list[str]:
        flaky = ["test_b"] if seed in (3, 7) else []
        return ["test_a", *flaky] if variant == "breaks_a" else flaky

    trial = run_trials(("breaks_a", "nothing"), fake_runs(failing), KillRule())
    assert trial.clean.tally() == Tally(10, 2)
    assert trial.clean.flaky() == {"test_b": ["seed 3", "seed 7"]}
    results = {r.name: r for r in trial.results}
    assert (results["breaks_a"].status, results["breaks_a"].runs) == (CAUGHT, 3)  # 2 were not
    assert (results["breaks_a"].clean_runs, results["breaks_a"].clean_failures) == (10, 2)
    assert results["nothing"].status == SURVIVED


def test_a_notebook_that_seeds_itself_runs_each_fault_once_at_one_and_two_threads() -> None:
    def failing(variant: str | None, seed: int, threads: int) -> list[str]:
        return {"caught": ["test_a"], "at_two": ["test_a"] * (threads == 2)}.get(variant or "", [])

    seeding = {"own_seeds": ["torch.manual_seed(0)"]}
    run = fake_runs(failing, **seeding)
    trial = run_trials(("caught", "missed", "at_two"), run, KillRule())
    results = {r.name: r for r in trial.results}
    assert trial.seeds_itself == "torch.manual_seed(0)" and trial.threads == (1, 2)
    assert [(r.status, r.runs, r.failures, r.p_value) for r in results.values()] == [
        (CAUGHT, 2, 2, None),
        (SURVIVED, 2, 0, None),
        (UNDECIDED, 2, 1, None),
    ]
    assert results["at_two"].reason == (
        "its tests fail at 2 threads and pass at 1: the verdict depends on torch's thread count"
    )
    made = run.made  # type: ignore[attr-defined]
    assert {seed for _, seed, _ in made} == {0}  # more seeds would say nothing
    assert [t for v, _, t in made if v is None] == [1, 2]


def test_a_fault_that_changes_nothing_runs_once() -> None:
    def run(variant: str | None, seed: int, threads: int) -> tuple[Outcomes, Injected]:
        runs.append(variant)
        injected = Injected(not_applicable="no optimizer was made") if variant else Injected()
        return Outcomes({"test_a": "passed"}), injected

    runs: list[str | None] = []
    (result,) = run_trials(("lr0",), run, KillRule()).results
    assert (result.status, result.reason) == (NOT_APPLICABLE, "no optimizer was made")
    assert runs == [None] * 5 + ["lr0"]


def test_undecided_faults_count_against_the_kill_rate_and_the_exit_policy() -> None:
    results = (FaultResult("a", CAUGHT), FaultResult("b", UNDECIDED))
    report = NotebookReport("nb.ipynb", "tested", results)
    assert (report.caught, len(report.applicable)) == (1, 2)
    assert not Summary((report,), ("a", "b"), 1.0).passed
    assert Summary((report,), ("a", "b"), 0.5).passed


# -- the seeds reach a notebook, or the notebook seeds itself (real runs) ---------------------


def seed_watch_of(code: str, seed: int = 5) -> tuple[list[str], dict[str, str]]:
    """Run *code* as a notebook's cells would, under a SeedWatch; its own seeds, and the
    generators the run's seed reached."""
    pytest.importorskip("torch")
    import numpy
    import torch

    from ntdd.faults.seeds import SeedWatch

    torch.manual_seed(seed)
    numpy.random.seed(seed)
    random.seed(seed)
    watch = SeedWatch(seed)
    with watch.watching():
        exec(code, {})
        watch.check()
    return watch.own, watch.drawn


@pytest.mark.parametrize(
    ("code", "seeds_itself"),
    [
        ("import torch\ntorch.manual_seed(0)\nx = torch.randn(3)", True),
        ("import torch\nx = torch.randn(3)\ntorch.manual_seed(0)\ny = torch.randn(3)", False),
        ("import torch\nx = torch.randn(3)", False),
        ("import random\nrandom.seed(1)\nimport torch\ntorch.manual_seed(1)\n"
         "x = torch.randn(2)\ny = random.random()", True),
        ("import torch\ntorch.manual_seed(0)\nimport numpy as np\nz = np.random.rand(2)", False),
        ("import numpy as np\nrng = np.random.default_rng()\nz = rng.random(2)", False),
        ("import numpy as np\nrng = np.random.default_rng(0)\nz = rng.random(2)", True),
        ("x = sum(range(10))", True),  # no generator drawn: every run the same
    ],
)  # fmt: skip
def test_a_notebook_seeds_itself_only_where_no_draw_comes_before_its_own_seed(
    code: str, seeds_itself: bool
) -> None:
    own, drawn = seed_watch_of(code)
    assert (not drawn) is seeds_itself, (own, drawn)


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_flaky_test_is_reported_with_its_seeds_and_the_faults_judged_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    setup = (
        "import torch\nfrom torch import nn\nX = torch.randn(64, 2)\ny = (X[:, 0] > 0).long()\n"
        "model = nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.5)\n"
        "for _ in range(30):\n    opt.zero_grad()\n"
        "    nn.functional.cross_entropy(model(X), y).backward()\n    opt.step()"
    )
    tests = [
        "# TEST: learned\nassert (model(X).argmax(1) == y).float().mean() > 0.9",
        "# TEST: a coin\nassert torch.rand(1).item() > 0.3",
    ]
    write_notebook(tmp_path / "nb.ipynb", [setup, *tests])
    assert main(["faults", "nb.ipynb", "--faults", "lr0,stale_grad", "--json"]) == 1
    (notebook,) = json.loads(capsys.readouterr().out)["notebooks"]
    assert notebook["seeds_itself"] is None and notebook["clean_runs"] == 10
    flaky = notebook["flaky"]["test_a_coin"]
    assert flaky and len(flaky) == notebook["clean_failures"] < 10
    lr0, stale = notebook["faults"]
    assert lr0["status"] == "caught" and lr0["p_value"] <= 0.05
    assert lr0["failures"] == lr0["runs"] < 6 and lr0["clean_runs"] == 10
    assert stale["status"] == "survived" and stale["caught_by"] == []
    # The same seeds, the same verdicts; the text says which seeds the coin failed on.
    assert main(["faults", "nb.ipynb", "--faults", "lr0,stale_grad"]) == 1
    out = capsys.readouterr().out
    assert f"flaky without any fault: test_a_coin failed {len(flaky)} of 10 clean runs (" in out
    assert "kill rate: 1 of 2 applicable faults caught at α = 0.05 (50%)" in out


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_test_that_fails_at_two_threads_only_is_flaky_with_the_thread_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    setup = "import torch\ntorch.manual_seed(0)\nopt = torch.optim.SGD([torch.zeros(1)], lr=0.1)"
    threads = "# TEST: one thread\nassert torch.get_num_threads() == 1"
    lr = "# TEST: the rate\nassert opt.param_groups[0]['lr'] == 0.1"
    write_notebook(tmp_path / "nb.ipynb", [setup, threads, lr])
    assert main(["faults", "nb.ipynb", "--faults", "lr0", "--json"]) == 0
    (notebook,) = json.loads(capsys.readouterr().out)["notebooks"]
    assert notebook["seeds_itself"] == "torch.manual_seed(0)" and notebook["threads"] == [1, 2]
    assert notebook["flaky"] == {"test_one_thread": ["seed 0, 2 threads"]}
    (lr0,) = notebook["faults"]
    assert (lr0["status"], lr0["runs"], lr0["failures"], lr0["p_value"]) == ("caught", 2, 2, None)
    assert lr0["caught_by"] == ["test_the_rate"]


def test_a_budget_that_cannot_catch_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = write_notebook(tmp_path / "nb.ipynb", ["# TEST\nassert True"])
    assert main(["faults", str(notebook), "--max-runs", "1"]) == 2
    assert "--max-runs 1 cannot catch any fault" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["faults", str(notebook), "--alpha", "1.5"])


def test_the_report_gives_each_faults_runs_p_value_and_verdict_and_the_rule() -> None:
    from ntdd.faults.report import as_json, markdown, notebook_table

    undecided = FaultResult(
        "lr0", UNDECIDED, ("opt lr 0.5 → 0",), caught_by=("test_a",), runs=5, failures=2,
        clean_runs=5, clean_failures=0, p_value=0.1667, failed_runs=("seed 1", "seed 3"),
    )  # fmt: skip
    caught = FaultResult(
        "nan", CAUGHT, ("X[0, 0] → nan",), caught_by=("test_a",), runs=2, failures=2,
        clean_runs=5, clean_failures=0, p_value=1 / 21, failed_runs=("seed 0", "seed 1"),
    )  # fmt: skip
    report = NotebookReport(
        "nb.ipynb", "tested", (caught, undecided), {"test_a": "passed", "test_b": "passed"},
        clean_runs=5, clean_failures=1, flaky={"test_b": ["seed 4"]}, threads=(1,),
    )  # fmt: skip
    text = notebook_table(report)
    assert "against 5 clean runs (1 failed)" in text
    assert "nan    X[0, 0] → nan   2/2     0.0476  test_a" in text
    assert (
        "lr0    opt lr 0.5 → 0  2/5     0.167   UNDECIDED, not caught: its tests failed on 2 "
        "of 5 runs (seed 1, seed 3: test_a), not significantly more often than on 0 of 5 clean "
        "runs"
    ) in text
    assert "kill rate: 1 of 2 applicable faults caught at α = 0.05 (50%)" in text
    assert "flaky without any fault: test_b failed 1 of 5 clean runs (seed 4)" in text
    summary = Summary((report,), ("nan", "lr0"), 1.0)
    page = markdown(summary)
    assert "| `lr0` | opt lr 0.5 → 0 | 2/5 | 0.167 | ❔ undecided, not caught: its tests" in page
    assert "- test_b failed 1 of 5 clean runs (seed 4)" in page
    (notebook,) = as_json(summary, 1)["notebooks"]
    assert notebook["flaky"] == {"test_b": ["seed 4"]} and notebook["clean_failures"] == 1
    assert [(f["status"], f["runs"], f["failures"]) for f in notebook["faults"]] == [
        (CAUGHT, 2, 2), (UNDECIDED, 5, 2),
    ]  # fmt: skip


def test_a_clean_run_that_dies_ends_the_notebooks_runs_as_its_error() -> None:
    def run(variant: str | None, seed: int, threads: int) -> tuple[Outcomes, Injected]:
        made.append(seed)
        if seed == 2:
            return Outcomes(), Injected(error="its run was killed by SIGSEGV before its tests")
        return Outcomes({"test_a": "passed"}), Injected()

    made: list[int] = []
    trial = run_trials(("lr0",), run, KillRule())
    assert trial.died == "its clean run was killed by SIGSEGV before its tests"
    assert (trial.results, made) == ([], [0, 1, 2])  # no fault ran: nothing to judge by


def test_runs_in_this_process_put_the_seeding_functions_back_even_when_pytest_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--no-fork` runs in this process: the seeding calls it watches are patched for a run,
    and put back after it, also where the run could not finish (pytest's internal error)."""
    torch = pytest.importorskip("torch")
    import numpy

    from ntdd.faults import runs
    from ntdd.faults.command import Request, run_notebook

    def failing(*args: object, **kwargs: object) -> Outcomes:
        runs_session(*args, **kwargs)  # type: ignore[arg-type]
        raise RuntimeError("pytest could not run nb.ipynb (exit 3)")

    runs_session = runs.run_session
    monkeypatch.setattr(runs, "run_session", failing)
    before = (torch.manual_seed, numpy.random.seed, random.seed, numpy.random.default_rng)
    notebook = write_notebook(tmp_path / "nb.ipynb", ["import torch", "# TEST: one\nassert 1"])
    with pytest.raises(RuntimeError, match="could not run"):
        run_notebook(notebook, Request((str(notebook),), ("lr0",), fork=False))
    after = (torch.manual_seed, numpy.random.seed, random.seed, numpy.random.default_rng)
    assert after == before
