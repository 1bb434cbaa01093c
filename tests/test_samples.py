"""The sample notebooks: their tests pass, exported or collected, with the same outcomes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import SAMPLES, requires_torch, run

from ntdd.commands.cli import main

pytestmark = pytest.mark.slow  # each runs a sample notebook, most with torch

SAMPLE_NAMES = sorted(p.stem for p in SAMPLES.glob("*.ipynb"))
TORCH_SAMPLES = {"tiny_classifier", "failure_modes"}


@pytest.fixture
def samples(pytester: pytest.Pytester) -> Path:
    """A copy of sample_notebooks/, so runs cannot touch the real folder."""
    target = pytester.path / "sample_notebooks"
    shutil.copytree(SAMPLES, target)
    return target


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("warnings", "seconds")}


@pytest.mark.parametrize("name", SAMPLE_NAMES)
def test_a_sample_passes_the_same_way_exported_and_collected(
    samples: Path, pytester: pytest.Pytester, name: str
) -> None:
    if name in TORCH_SAMPLES:
        pytest.importorskip("torch")
    notebook = samples / f"{name}.ipynb"
    assert main(["export", str(notebook), "-o", str(pytester.path / "generated")]) == 0
    # In this process: conftest imported torch, and what its first training step imports,
    # up front, so pytester's runs never import (and drop) a part of it.
    exported = run(pytester, "-W", "ignore", "generated")
    collected = run(pytester, "-W", "ignore", "--ntdd", str(notebook))
    assert outcomes(exported) == outcomes(collected)
    assert exported.ret == collected.ret == 0
    counts = outcomes(collected)
    assert counts.get("passed", 0) >= 2
    assert counts.get("xfailed", 0) >= 1  # each sample documents a pitfall


@requires_torch
def test_the_torch_samples_have_device_tests_that_run_per_device(
    samples: Path, pytester: pytest.Pytester
) -> None:
    result = run(pytester, "-W", "ignore", "--ntdd", str(samples), "-v")
    result.stdout.fnmatch_lines(
        [
            "*tiny_classifier.ipynb::test_model_lives_on_the_device_under_test[[]cpu[]] PASSED*",
            "*tiny_classifier.ipynb::test_model_lives_on_the_device_under_test[[]cuda[]] *",
        ]
    )


def test_the_sample_without_torch_never_imports_it(
    samples: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)
    result = run(pytester, "--ntdd", str(samples / "data_prep.ipynb"))
    result.assert_outcomes(passed=3, xfailed=1)
