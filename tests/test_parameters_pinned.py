"""A test-only parameter pins its name: a training notebook's own `epochs = 100`
does not undo `--ntdd-param epochs=1`, and a parameter the notebook never
assigns is an error, not a silent full-length run."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import code, run

# No `parameters` cell, as in the real training notebooks tried: the loop's
# length is set where it trains, and the test counts the steps it took.
TRAINING = [
    "import math\nsteps_taken = 0",
    "# hyperparameters\nepochs, lr = 100, 0.5\nbatches = 3",
    "for _ in range(epochs):\n    for batch in range(batches):\n        steps_taken += 1",
    "# TEST: the loop ran once per pinned epoch\nassert (epochs, lr, steps_taken) == (1, 0.5, 3)",
]


def test_a_later_assignment_keeps_the_pinned_value_and_the_rest_of_the_cell_runs(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(TRAINING)
    run_notebook("nb.ipynb", "--ntdd-param", "epochs=1").assert_outcomes(passed=1)


def test_a_parameter_from_pyproject_pins_its_name_too(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING)
    pytester.makepyprojecttoml("[tool.ntdd.parameters]\nepochs = 1\n")
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1)


def test_every_assignment_of_the_name_is_pinned_and_augmented_ones_too(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "epochs = 50",
            "epochs += 50\nlog = [epochs]",
            "# TEST\nassert (epochs, log) == (2, [2])",
        ]
    )
    run(pytester, "--ntdd", "--ntdd-param", "epochs=2", "nb.ipynb").assert_outcomes(passed=1)


def test_functions_defined_in_a_pinned_cell_see_the_pinned_value(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(
        [
            "epochs = 100\ndef schedule():\n    return list(range(epochs))",
            "# TEST\nassert schedule() == [0]",
        ]
    )
    run(pytester, "--ntdd", "--ntdd-param", "epochs=1", "nb.ipynb").assert_outcomes(passed=1)


def test_verbose_says_which_cells_assignments_were_pinned(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING)
    result = run(pytester, "--ntdd", "--ntdd-param", "epochs=1", "nb.ipynb", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["ntdd: nb.ipynb: test parameters epochs=1 (before cell 1; pinned against cell 2's epochs)"]
    )


def test_a_name_the_notebook_never_assigns_is_an_error_naming_the_closest(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(TRAINING)
    result = run_notebook("nb.ipynb", "--ntdd-param", "epoch=1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb: test parameter 'epoch': no setup cell of the notebook assigns it; "
            "did you mean 'epochs'*"
        ]
    )


def test_the_parameters_cell_rule_holds_where_there_is_one(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """Cells above the `parameters` cell run as written; those below are pinned."""
    notebook(
        [
            "epochs = 7\nbefore = epochs",
            code("epochs = 20", tags=["parameters"]),
            "epochs = 30",
            "# TEST\nassert (before, epochs) == (7, 1)",
        ]
    )
    run(pytester, "--ntdd", "--ntdd-param", "epochs=1", "nb.ipynb").assert_outcomes(passed=1)


def test_a_test_cell_is_not_pinned(notebook: Any, pytester: pytest.Pytester) -> None:
    notebook(
        [
            "epochs = 100",
            "# TEST: a test may set what it likes\nepochs = 5\nassert epochs == 5",
            "# TEST\nassert epochs == 5",
        ]
    )
    run(pytester, "--ntdd", "--ntdd-param", "epochs=1", "nb.ipynb").assert_outcomes(passed=2)
