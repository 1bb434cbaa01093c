"""`ntdd faults`: the field's common PyTorch failures, injected; which tests notice them.

- `catalogue`: the twelve faults, what each changes, where it acts, when it
  applies, and the check that would catch it (`creation` holds the patches of
  torch that act where objects are made or called, `models` where a model's
  construction ends, `data` what the data faults make of a tensor and `uses`
  where the notebook first uses its data, `training` what they do to a
  hand-written model in a namespace, `finding` what they look for there).
  These import neither pytest nor torch: a fault uses the torch the notebook
  imported.
- `runs`: a notebook's tests run in this process through `pytest --ntdd`,
  with a fault injected through the run's `config.stash`; the outcomes and
  what each fault changed.
- `forked`: the same results from one run per notebook, forked before its
  first cell, one child per fault.
- `apart`: each notebook's runs in a child process, so that a clean run that
  crashes is that notebook's error and the others are still reported.
- `children`: forking a child and reading what it sends home, for both.
- `report`: the results as a text table, JSON and Markdown.
- `command`: `ntdd faults PATH...`, for the CLI.

Only `runs`, `forked` and `command` import pytest.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format, ntdd.pipeline,
ntdd.runtime, ntdd.torch, pytest.
"""

from __future__ import annotations

from ntdd.faults.catalogue import FAULTS, Fault, NotApplicable, Seen

__all__ = ["FAULTS", "Fault", "NotApplicable", "Seen"]
