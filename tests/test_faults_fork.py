"""Fault runs forked from the clean run give what one run per fault gives, at a fraction of it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SAMPLES, write_notebook

from ntdd.faults import FAULTS, forked
from ntdd.faults.command import Request, run_notebook
from ntdd.faults.results import NotebookReport

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

SETUP = (
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.Linear(8, 1)).eval()\n"
    "x = torch.randn(16, 4)\ny = torch.randn(16)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)"
)
TESTS = [
    "# TEST: shape\nassert model(x).shape == (16, 1)",
    "# TEST: finite\nfrom ntdd.torch import assert_finite\nassert_finite(model(x))",
    "assert model(x).abs().max() < 100, 'a setup cell that checks'",
    "# TEST: after the check\nassert True",
    "# TEST: fails cleanly\nassert False",
    "# TEST: skipped @skip\nassert False",
    "# TEST: expected @xfail\nassert model(x).dtype == torch.float64",
    "# TEST: a step\nloss = nn.functional.mse_loss(model(x).squeeze(1), y)\n"
    "opt.zero_grad()\nloss.backward()\nopt.step()\n"
    "assert nn.functional.mse_loss(model(x).squeeze(1), y) < loss",
]


def both_ways(notebook: Path, faults: tuple[str, ...] = tuple(FAULTS)) -> list[NotebookReport]:
    reports = []
    for fork in (True, False):
        request = Request((str(notebook),), faults, fork=fork)
        reports.append(run_notebook(notebook, request))
    return reports


def without_mode(report: NotebookReport) -> dict[str, object]:
    return {k: v for k, v in vars(report).items() if k != "mode"}


@pytest.fixture(scope="module")
def every_fault_both_ways(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], list[NotebookReport]]:
    """A notebook's every fault, forked and one run per fault, each notebook once: the
    tests that read the same runs share them (an xdist group keeps them on one worker)."""
    reports: dict[str, list[NotebookReport]] = {}

    def of(which: str) -> list[NotebookReport]:
        if which not in reports:
            folder = tmp_path_factory.mktemp("faults")
            if which == "the sample":
                notebook = folder / "failure_modes.ipynb"
                notebook.write_bytes((SAMPLES / "failure_modes.ipynb").read_bytes())
            elif which == "a helper module":
                notebook = helper_notebook(folder / "helper")
            else:
                notebook = write_notebook(folder / "nb.ipynb", [SETUP, *TESTS])
            reports[which] = both_ways(notebook)
        return reports[which]

    return of


@pytest.mark.slow
@pytest.mark.xdist_group("setup_checks")
def test_forked_runs_agree_with_one_run_per_fault(
    every_fault_both_ways: Callable[[str], list[NotebookReport]],
) -> None:
    forked_, one_by_one = every_fault_both_ways("setup checks")
    assert (forked_.mode, one_by_one.mode) == ("fork", "process")
    assert without_mode(forked_) == without_mode(one_by_one)
    verdicts = {r.name: r.status for r in forked_.results}
    assert {name: verdicts[name] for name in ("scale", "mode", "labels", "stale_grad")} == {
        "scale": "caught",
        "mode": "survived",
        "labels": "not applicable",
        "stale_grad": "survived",
    }
    scale = next(r for r in forked_.results if r.name == "scale")
    assert scale.by_setup == ("test_after_the_check", "test_a_step")  # a setup cell raised
    assert forked_.baseline["test_fails_cleanly"] == "failed"


@pytest.mark.slow
@pytest.mark.parametrize(
    "which",
    [
        "the sample",
        pytest.param("a helper module", marks=pytest.mark.xdist_group("helper_module")),
        pytest.param("setup checks", marks=pytest.mark.xdist_group("setup_checks")),
    ],
)
def test_forked_runs_agree_on_every_fault_of_the_sample_and_more(
    every_fault_both_ways: Callable[[str], list[NotebookReport]], which: str
) -> None:
    """One notebook each, so that xdist's workers share them out."""
    forked_, one_by_one = every_fault_both_ways(which)
    assert without_mode(forked_) == without_mode(one_by_one), which


def helper_notebook(folder: Path) -> Path:
    """A model that lives in a module beside the notebook, checked by one test per fault."""
    folder.mkdir()
    (folder / "helpers.py").write_text(
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 1)).eval()\n"
    )
    return write_notebook(
        folder / "nb.ipynb",
        [
            "import torch\nfrom helpers import model\nx = torch.randn(16, 4)",
            "# TEST: still in eval mode\nassert not model.training",
            "# TEST: still trainable\nassert all(p.requires_grad for p in model.parameters())",
            "# TEST: small weights\nassert all(p.abs().max() < 10 for p in model.parameters())",
            "# TEST: complete state\nassert len(model.state_dict()) == 4",
        ],
    )


@pytest.mark.slow
def test_no_fault_carries_into_another_even_in_a_helper_module(tmp_path: Path) -> None:
    notebook = helper_notebook(tmp_path / "helper")
    names = ("mode", "detached", "scale", "unregistered")
    report = run_notebook(notebook, Request((str(notebook),), names))
    caught = {r.name: r.caught_by for r in report.results}
    assert caught == HELPER_CATCHES


@pytest.mark.slow
@pytest.mark.xdist_group("helper_module")
def test_no_fault_carries_into_another_even_in_a_helper_module_one_run_each(
    every_fault_both_ways: Callable[[str], list[NotebookReport]],
) -> None:
    """One run per fault, every fault in turn: those of the forked test among them."""
    _, one_by_one = every_fault_both_ways("a helper module")
    caught = {r.name: r.caught_by for r in one_by_one.results if r.name in HELPER_CATCHES}
    assert caught == HELPER_CATCHES


HELPER_CATCHES = {
    "mode": ("test_still_in_eval_mode",),
    "detached": ("test_still_trainable",),
    "scale": ("test_small_weights",),
    "unregistered": ("test_complete_state",),
}


@pytest.mark.slow
def test_forked_faults_run_the_cells_again_in_children_forked_after_start_up(
    tmp_path: Path,
) -> None:
    """A fault acts where the notebook makes its objects, so each child runs the cells; the
    children are forked from one pytest run, after pytest started, collected and imported,
    itself a child of this process, so that a crash is the notebook's own. The notebook seeds
    itself: each run at 1 thread, then at 2, forked from a new process."""
    count = tmp_path / "setups.txt"
    note = f"open({str(count)!r}, 'a').write(f'{{os.getpid()}} {{os.getppid()}}\\n')"
    setup = f"{SETUP}\nimport os\n{note}"
    notebook = write_notebook(tmp_path / "nb.ipynb", [setup, TESTS[0], TESTS[1]])
    faults = ("nan", "shape", "lr0")
    run_notebook(notebook, Request((str(notebook),), faults))
    runs = [line.split() for line in count.read_text().splitlines()]
    here = str(os.getpid())
    assert len(runs) == 2 * (1 + len(faults))  # the clean notebook and each fault, twice
    parents = [parent for _, parent in runs]
    at_one, at_two = parents[: 1 + len(faults)], parents[1 + len(faults) :]
    assert len(set(at_one)) == len(set(at_two)) == 1 and at_one[0] != at_two[0]
    assert here not in parents and here not in [pid for pid, _ in runs]
    count.unlink()
    run_notebook(notebook, Request((str(notebook),), faults, fork=False))
    assert [pid for pid, _ in (line.split() for line in count.read_text().splitlines())] == [
        here
    ] * (2 * (1 + len(faults)))


@pytest.mark.slow
def test_where_forking_is_unsafe_the_faults_run_one_after_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forked, "fork_unsafe", lambda: "CUDA is available")
    notebook = write_notebook(tmp_path / "nb.ipynb", [SETUP, *TESTS[:2]])
    report = run_notebook(notebook, Request((str(notebook),), ("nan", "lr0")))
    assert report.mode == "process"
    assert [r.status for r in report.results] == ["caught", "survived"]


@pytest.mark.slow
def test_when_fork_fails_every_fault_runs_the_slow_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(forked, "fork", fail)
    notebook = write_notebook(tmp_path / "nb.ipynb", [SETUP, *TESTS[:2]])
    report = run_notebook(notebook, Request((str(notebook),), ("nan", "lr0")))
    assert report.mode == "process"
    assert [r.status for r in report.results] == ["caught", "survived"]


def test_forking_is_unsafe_without_os_fork_or_with_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    assert forked.fork_unsafe() == ""  # here: Linux, no CUDA
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert "CUDA" in forked.fork_unsafe()
    monkeypatch.delattr(os, "fork")
    assert forked.fork_unsafe() == "this platform has no os.fork"


@pytest.mark.slow
def test_a_child_that_crashes_is_an_error_not_a_catch(tmp_path: Path) -> None:
    crash = (
        "# TEST: crashes on NaN\nimport ctypes\nif torch.isnan(x).any():\n    ctypes.string_at(0)"
    )
    kill = "# TEST: dies on float64\nimport os, signal\n"
    kill += "if x.dtype == torch.float64:\n    os.kill(os.getpid(), signal.SIGKILL)"
    notebook = write_notebook(tmp_path / "nb.ipynb", [SETUP, crash, kill, TESTS[0]])
    report = run_notebook(notebook, Request((str(notebook),), ("nan", "dtype", "shape")))
    assert [(r.name, r.status, r.reason) for r in report.results] == [
        ("nan", "error", "its run was killed by SIGSEGV before its tests finished"),
        ("dtype", "error", "its run was killed by SIGKILL before its tests finished"),
        ("shape", "caught", ""),
    ]
    assert not report.meets(0.0)


@pytest.mark.slow
def test_a_child_that_hangs_past_the_timeout_is_killed_and_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocked signals: the test's own timeout cannot interrupt it; the parent's clock can."""
    monkeypatch.setattr(forked, "GRACE", 1.0)
    hang = (
        "# TEST: hangs on NaN\nimport signal, time\nif torch.isnan(x).any():\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())\n    time.sleep(60)"
    )
    notebook = write_notebook(tmp_path / "nb.ipynb", [SETUP, hang])
    report = run_notebook(notebook, Request((str(notebook),), ("nan",), timeout="1"))
    (result,) = report.results
    assert (result.status, result.reason) == ("error", "its run said nothing for 2 s; killed")


@pytest.mark.slow
def test_children_run_torch_on_one_thread_after_the_parent_used_a_pool(tmp_path: Path) -> None:
    """OpenMP's pool does not survive a fork: a child using it would hang. Every run keeps
    one thread (`children.same_threads`): the notebook's `set_num_threads(2)` changes nothing."""
    threads = (
        "import torch\ntorch.set_num_threads(2)\nbig = torch.randn(512, 512)\n(big @ big).sum()"
    )
    work = "# TEST: matmul\ntorch.set_num_threads(2)\nassert (big @ big).isfinite().all()"
    notebook = write_notebook(tmp_path / "nb.ipynb", [threads, SETUP, work])
    before = torch.get_num_threads()
    report = run_notebook(notebook, Request((str(notebook),), ("nan", "shape"), timeout="20"))
    assert [r.status for r in report.results] == ["not applicable"] * 2  # big is no model's data
    assert torch.get_num_threads() == before
    torch.set_num_threads(before)


@pytest.mark.slow
def test_a_project_faulthandler_timeout_does_not_hang_the_forked_children(
    pytester: pytest.Pytester,
) -> None:
    """pytest's faulthandler timer lives in a thread that a fork leaves behind: a child
    that cancels it at the end of a test waited for ever. `ntdd faults` runs inside a
    pytest session that armed it (a project's `faulthandler_timeout`), and forks."""
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST: x is one\nassert x == 1"])
    pytester.makeini("[pytest]\nfaulthandler_timeout = 600\n")
    pytester.makepyfile(
        test_faults_inside="""
        from ntdd.commands.cli import main

        def test_faults_inside_a_session():
            assert main(["faults", "nb.ipynb", "--faults", "nan"]) in (0, 1)
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=240)
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_the_runs_at_two_threads_never_hang_in_a_process_whose_thread_pool_ran(
    pytester: pytest.Pytester,
) -> None:
    """A notebook that seeds itself is checked at 2 threads. A child forked from a process
    whose OpenMP pool has run (a pytest session's earlier test at torch's default thread
    count) hung at its first parallel region: the pool's threads do not survive a fork.
    Those runs are forked from a new process."""
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            "import torch\ntorch.manual_seed(0)\nw = torch.randn(64, 64, requires_grad=True)\n"
            "opt = torch.optim.SGD([w], lr=0.1)\nx = torch.randn(256, 64)",
            "# TEST: a step changes the weights\nbefore = w.detach().clone()\n"
            "(x @ w).pow(2).mean().backward()\nopt.step()\nassert not torch.equal(before, w)",
        ],
    )
    pytester.makepyfile(
        test_faults_after_a_pool="""
        import torch
        from ntdd.commands.cli import main

        def test_faults_after_a_pool():
            torch.set_num_threads(2)
            big = torch.randn(512, 512)
            assert (big @ big).isfinite().all()  # the pool's threads start
            assert main(["faults", "nb.ipynb", "--faults", "lr0"]) == 0
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=300)
    result.assert_outcomes(passed=1)
