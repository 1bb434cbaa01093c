# ntdd: generated — edit the notebook or use `ntdd sync`.
# ntdd-source: circle.ipynb
# ntdd-version: 0.1.0
# ntdd-hash: sha256:56dd3098ff1ddf19baa1f1f6f48dd6425c4fa1b1dd7ae2f73985e367d46cca2e
# ntdd-render: 91d41675f5183317
# ntdd-markers: 3
# ntdd-frame: 7ef03303d5110de6
# ruff: noqa  (the tests read the notebook's names, which linters cannot see)
"""Tests of the notebook circle.ipynb, written by ntdd: each test sees
the notebook as Jupyter's Run All leaves it at the test's cell (see `ntdd.runtime`)."""

# Formatters would make the module differ from what ntdd writes:
# fmt: off
import pytest

from ntdd.runtime import NotebookRuntime

__ntdd__ = NotebookRuntime(globals(), notebook='circle.ipynb', uses_device=False)


# %% ntdd fixtures
# `device`, and the fixtures that run the notebook's cells up to each test's cell:
pytest_generate_tests, _ntdd_device, _ntdd_notebook, _ntdd_cells = __ntdd__.fixtures()


# %% ntdd setup: cell 1, id cell0
__ntdd__.setup(1, 'cell0', """\
import math
radius = 2""")


# %% ntdd test: cell 2, id cell1, sha 95c0e2de7c1c
def test_area_is_positive():
    # TEST: area is positive
    assert math.pi * radius**2 > 0
