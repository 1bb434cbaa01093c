# ntdd: generated — edit the notebook or use `ntdd sync`.
# ntdd-source: data_prep.ipynb
# ntdd-version: 0.1.0
# ntdd-hash: sha256:89c7ebe2d28f1f9b03547bea5d4c7578e89206c4465c004c62db1add00cb38d8
# ntdd-render: bf08c823e004d65c
# ntdd-markers: 8
# ntdd-frame: edb61d731f5d5660
# ruff: noqa  (the tests read the notebook's names, which linters cannot see)
"""Tests of the notebook data_prep.ipynb, written by ntdd: each test sees
the notebook as Jupyter's Run All leaves it at the test's cell (see `ntdd.runtime`)."""

# Formatters would make the module differ from what ntdd writes:
# fmt: off
import pytest

from ntdd.runtime import NotebookRuntime

__ntdd__ = NotebookRuntime(globals(), notebook='data_prep.ipynb', uses_device=False)


# %% ntdd fixtures
# `device`, and the fixtures that run the notebook's cells up to each test's cell:
from ntdd.runtime.fixtures import pytest_generate_tests, device as _ntdd_device, _ntdd_notebook, _ntdd_cells


# %% ntdd setup: cell 2, id 7e5d04ef
__ntdd__.setup(2, '7e5d04ef', """\
import csv
import statistics

import numpy as np""")


# %% ntdd setup: cell 3, id 7b69f05c
__ntdd__.setup(3, '7b69f05c', """\
with open("data/people.csv", newline="") as f:
    rows = list(csv.DictReader(f))
len(rows)""")


# %% ntdd setup: cell 5, id 89df59b2
__ntdd__.setup(5, '89df59b2', """\
%%time
def fill_median(rows, column):
    known = [float(r[column]) for r in rows if r[column]]
    median = statistics.median(known)
    return [float(r[column]) if r[column] else median for r in rows]


ages = fill_median(rows, "age")
heights = np.array(fill_median(rows, "height_cm"))""")


# %% ntdd setup: cell 6, id 7ba250ab
__ntdd__.setup(6, '7ba250ab', """\
def zscore(values):
    values = np.asarray(values, dtype=float)
    return (values - values.mean()) / values.std()


height_z = zscore(heights)
height_z.round(2)""")


# %% ntdd test: cell 8, id f2dbd777, sha b974d4f001bf
def test_no_gaps_are_left():
    # TEST: no gaps are left
    assert len(ages) == len(rows) == len(heights)
    assert not np.isnan(heights).any()


# %% ntdd test: cell 9, id 55f81dfa, sha 60e4d47f3851
# TEST
def test_median_fills_the_gap():
    """bob has no age: he gets the median of the others."""
    bob = [r["name"] for r in rows].index("bob")
    assert ages[bob] == statistics.median([36, 29, 41, 33])


def test_zscores_are_standardised():
    """Mean 0 and standard deviation 1, up to rounding."""
    assert np.isclose(height_z.mean(), 0.0)
    assert np.isclose(height_z.std(), 1.0)


# %% ntdd test: cell 10, id 520ed147, sha 54641f870676
@pytest.mark.xfail(reason='0.1 + 0.2 is not 0.3 in binary floating point: compare with math.isclose')
def test_decimal_sums_are_exact():
    # TEST: decimal sums are exact @xfail("0.1 + 0.2 is not 0.3 in binary floating point: compare with math.isclose")
    assert 0.1 + 0.2 == 0.3
