"""The careful user's tests of the notebooks smoke mode was not tuned on pass in a full run.

`benchmarks/smoke_unseen.py` counts a test that passes in the full run and
fails in smoke mode as smoke mode's false red: that holds only while every
test of `tests/unseen_cases.py` passes in a full run, as a user runs it
(`pytest --ntdd`, one thread, in a process of its own). Some of these
notebooks train for minutes: slow.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, plugin_env
from fault_cases import Case
from unseen_cases import UNSEEN

pytest.importorskip("torch")
pytest.importorskip("matplotlib")


# Full runs of minutes (161 s, 151 s, 255-291 s of CPU): `benchmarks/smoke_unseen.py` runs
# them in full and counts their tests that pass; the suite runs the others.
MINUTES = {
    "NYU-DLSP20__08-seq_classification",
    "nn-zero-to-hero__makemore_part2_mlp",
    "nn-zero-to-hero__makemore_part3_bn",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", [name for name in UNSEEN if name not in MINUTES])
def test_every_test_of_the_notebook_passes_in_a_full_run(name: str, tmp_path: Path) -> None:
    assert_every_test_passes(UNSEEN[name], tmp_path)


def assert_every_test_passes(case: Case, tmp_path: Path) -> None:
    """A copy of *case* with its tests passes in a full `pytest --ntdd` run, test by test."""
    notebook = case.notebook(tmp_path)
    junit = tmp_path / "junit.xml"
    env = {**os.environ, **plugin_env(), "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--ntdd"]
    done = subprocess.run(
        [*command, notebook.name, f"--junitxml={junit}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-4000:]
    tests = list(ET.parse(junit).iter("testcase"))
    # each `# TEST` cell, and one more where setup cells follow the last of them
    assert len(tests) >= len(case.tests), [t.get("name") for t in tests]
    verdicts = {c.tag for t in tests for c in t} & {"failure", "error", "skipped"}
    assert verdicts == set(), done.stdout[-4000:]
