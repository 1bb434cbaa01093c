"""The benchmark script runs (on tiny sizes): its figures come from runs by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, plugin_env

# The scripts' pytest runs compare `-n 2` with `-n 0`: they need xdist, and no other
# plugin this machine may have.
ENV = {**os.environ, **plugin_env("xdist.plugin")}


@pytest.mark.slow
def test_the_benchmark_script_runs_every_workload_on_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "bench.md"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run.py"),
            "--tiny",
            "--repeat",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text()
    for heading in (
        "1. Real notebooks",
        "2. Many notebooks",
        "3. Many tests",
        "4. Memory",
        "5. Export",
        "6. Parallel",
        "7. Shards",
    ):
        assert f"## {heading}" in report
    assert "| 10 | " in report and "| 1\u00d7 |" in report  # setup ran once for 10 tests


@pytest.mark.slow
def test_the_faults_benchmark_compares_ntdd_faults_with_one_test_run(tmp_path: Path) -> None:
    out = tmp_path / "faults.md"
    script = str(ROOT / "benchmarks" / "faults.py")
    done = subprocess.run(
        [sys.executable, script, "--runs", "1", "--warmup", "0", "--out", str(out)],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert done.returncode == 0, done.stderr
    report = out.read_text(encoding="utf-8")
    assert "| one test run: `pytest --ntdd` | " in report
    assert "| `ntdd faults` (12 faults, forked) | " in report
    assert "Target: `ntdd faults` ≤ 3\u00d7 one test run: " in report
