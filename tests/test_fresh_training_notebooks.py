"""The careful user's tests of the oracle's fresh notebooks pass in a full run.

The oracle of `ntdd faults` counts a fault as caught when its written-in bug
fails a test that passes cleanly: that holds only while every test of
`tests/fresh_training_cases.py` passes in a full run, as a user runs it
(`pytest --ntdd`, one thread, in a process of its own). Each full run takes
seconds of CPU: slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh_training_cases import FRESH
from test_unseen_notebooks import assert_every_test_passes

pytest.importorskip("torch")
pytest.importorskip("matplotlib")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FRESH))
def test_every_test_of_the_notebook_passes_in_a_full_run(name: str, tmp_path: Path) -> None:
    for module in FRESH[name].needs:
        pytest.importorskip(module)
    assert_every_test_passes(FRESH[name], tmp_path)


@pytest.mark.slow
def test_every_fresh_notebook_is_new_to_the_oracle() -> None:
    """Fresh means neither the oracle's cases nor smoke mode's unseen ones hold it."""
    from fault_cases import CASES
    from unseen_cases import UNSEEN

    earlier = {case.real for case in (*CASES.values(), *UNSEEN.values())}
    assert [case.real for case in FRESH.values() if case.real in earlier] == []
    assert len(FRESH) >= 5
