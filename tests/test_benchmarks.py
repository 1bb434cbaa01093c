"""The benchmark scripts run (quick sizes, a round each): their figures come from runs by hand."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import ROOT, plugin_env, write_notebook

# The scripts' pytest runs compare `-n 2` with `-n 0`: they need xdist, and no other
# plugin this machine may have.
ENV = {**os.environ, **plugin_env("xdist.plugin")}

BENCHMARKS = ROOT / "benchmarks"
RUN = str(BENCHMARKS / "run.py")


def _pairs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_pairs", BENCHMARKS / "pairs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_tools_run_turn_about_after_a_warm_up_and_ratios_come_from_pairs() -> None:
    pairs = _pairs()
    order: list[str] = []
    values = {"a": iter([9.0, 1.0, 2.0, 4.0]), "b": iter([9.0, 2.0, 2.0, 2.0])}

    def measure(name: str) -> float:
        order.append(name)
        return next(values[name])

    figures = pairs.interleaved({n: lambda n=n: measure(n) for n in "ab"}, runs=3, warmup=1)
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]  # each round starts further on
    assert figures["a"].samples == (1.0, 2.0, 4.0) and figures["b"].samples == (2.0, 2.0, 2.0)
    assert pairs.ratio(figures["a"], figures["b"]).samples == (0.5, 1.0, 2.0)
    assert figures["a"].describe(str) == "2.0 (1.0\u20134.0)"


@pytest.mark.slow
def test_the_script_runs_one_workload_or_two_in_quick_mode(tmp_path: Path) -> None:
    out = tmp_path / "bench.md"
    quick = ["--quick", "--rounds", "1", "--warmup", "0", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, RUN, *quick, "--workload", "tests", "--workload", "unused"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text(encoding="utf-8")
    assert "## Tests in one notebook" in report and "## Unused" in report
    assert "## Corpus" not in report  # only what was asked for
    assert "| 10 | " in report and "| 1\u00d7 |" in report  # setup ran once for 10 tests
    assert "| ntdd costs ≤ 10 ms when unused, paired | " in report
    assert "## Unused" in done.stdout  # the tables go to stdout too
    assert "tests: round 1/1 done" in done.stderr and "unused: round 1/1 done" in done.stderr


def test_the_script_lists_its_workloads_and_the_peers_they_need() -> None:
    done = subprocess.run([sys.executable, RUN, "--list"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert names[:3] == ["corpus", "heavy", "parallel"] and "memory" in names
    assert "[needs nbval, nbmake, ipykernel]" in done.stdout


def test_a_missing_peer_stops_the_script_up_front_naming_the_extra() -> None:
    hide = (
        "import runpy, sys; sys.modules['nbmake'] = None; sys.path.insert(0, sys.argv[1]);"
        "sys.argv = [sys.argv[2], '--workload', 'unused', '--workload', 'corpus'];"
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", hide, str(BENCHMARKS), RUN], capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert "nbmake is not installed; workload corpus needs it." in done.stderr
    assert "pip install -e '.[bench]'" in done.stderr
    assert done.stdout == "" and "unused:" not in done.stderr  # nothing ran first


# A notebook that takes little to run: the script's own default is a sample with more
# tests, for the figures; here only the script's workings are under test.
SMALL_MODEL = [
    "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).eval()\n"
    "x = torch.randn(16, 4)",
    "# TEST: shape\nassert model(x).shape == (16, 1)",
    "# TEST: finite\nassert model(x).isfinite().all()",
]


@pytest.mark.slow
def test_the_faults_benchmark_compares_ntdd_faults_with_one_test_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "faults.md"
    script = str(BENCHMARKS / "faults.py")
    notebook = write_notebook(tmp_path / "small.ipynb", SMALL_MODEL)
    quick = ["--runs", "1", "--warmup", "0", "--notebook", str(notebook), "--faults", "nan,scale"]
    quick += ["--out", str(out)]
    done = subprocess.run(
        [sys.executable, script, *quick],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text(encoding="utf-8")
    assert report.startswith("# `ntdd faults` on small.ipynb\n")
    assert "| one test run: `pytest --ntdd` | " in report
    assert "| `ntdd faults` (2 faults, forked) | " in report
    assert "| `ntdd faults --no-fork` (2 faults, one run each) | " in report
    assert "Target: `ntdd faults` ≤ 3\u00d7 one test run: " in report


@pytest.mark.slow
def test_the_untested_benchmark_holds_ntdd_and_nbmake_to_a_kernels_run_all(
    tmp_path: Path,
) -> None:
    pytest.importorskip("nbmake")
    out = tmp_path / "untested.md"
    quick = ["--only", "subword", "--rounds", "1", "--warmup", "0", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "untested.py"), *quick],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text(encoding="utf-8")
    assert "| ntdd | 1/1 | 1/1 | none |" in report and "| nbmake | 1/1 | 1/1 | none |" in report
    assert "| d2l-pytorch-colab__subword-embedding.ipynb | runs | runs | runs |" in report
    assert "| `pytest --nbmake` | " in report and "nbmake ÷ ntdd, CPU, paired" in report


def _workloads() -> ModuleType:
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import workloads
    finally:
        sys.path.remove(str(BENCHMARKS))
    return workloads


def test_the_pytest_floor_holds_the_notebooks_cells_and_one_test_per_test_cell(
    tmp_path: Path,
) -> None:
    """The `real` workload's floor is the same cells as plain pytest modules: no cell
    left out, none added, a test function for each `# TEST` cell."""
    pytest.importorskip("IPython")
    workloads = _workloads()
    for notebook in workloads.real_chapters(tmp_path):
        module = workloads.pytest_floor_module(notebook, tmp_path)
        source = module.read_text(encoding="utf-8")
        compile(source, str(module), "exec")
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        tests = [c for c in cells if "".join(c["source"]).startswith("# TEST")]
        assert source.count("\ndef test_cell_") == len(tests) > 1, module.name
