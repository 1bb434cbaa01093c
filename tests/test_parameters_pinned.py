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


# docs/writing-tests.md's typo example: the loop binds `epoch`, which the command
# line meant as `epochs`; the training must not run in full without a word.
TYPO = [
    "epochs = 200\nsteps = 0",
    "for epoch in range(epochs):\n    steps += 1",
    "# TEST\nassert steps == 200",
]


def test_a_name_only_a_loop_binds_is_not_a_parameter_and_the_typo_is_named(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(TYPO)
    result = run_notebook("nb.ipynb", "--ntdd-param", "epoch=1")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb: test parameter 'epoch': no setup cell of the notebook assigns it; "
            "did you mean 'epochs'?*"
        ]
    )


@pytest.mark.parametrize(
    "binding",
    [
        "for lr in [0.1]:\n    pass",
        "rates = [lr for lr in [0.1]]",
        "import contextlib\nwith contextlib.nullcontext(0.1) as lr:\n    pass",
        "try:\n    1 / 0\nexcept ZeroDivisionError as lr:\n    pass",
        "import math as lr",
        "if (lr := 0.1):\n    pass",
        "def lr():\n    return 0.1",
        "class lr:\n    pass",
        "lr: float",
    ],
    ids=[
        "for",
        "comprehension",
        "with",
        "except",
        "import",
        "walrus",
        "def",
        "class",
        "bare annotation",
    ],
)
def test_a_name_bound_but_never_assigned_with_equals_is_not_a_parameter(
    notebook: Any, pytester: pytest.Pytester, binding: str
) -> None:
    notebook([binding, "# TEST\nassert True"])
    result = run(pytester, "--ntdd", "--ntdd-param", "lr=1", "nb.ipynb")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test parameter 'lr': no setup cell of the notebook assigns it*"])


@pytest.mark.parametrize(
    "assignment",
    [
        "lr = 0.5",
        "lr: float = 0.5",
        "lr, momentum = 0.5, 0.9",
        "first, *lr = 0, 0.5",
        "a = lr = 0.5",
        "if True:\n    lr = 0.5",
    ],
    ids=["plain", "annotated", "unpacked", "starred", "chained", "in a block"],
)
def test_a_name_assigned_with_equals_is_a_parameter_and_keeps_its_value(
    notebook: Any, pytester: pytest.Pytester, assignment: str
) -> None:
    notebook([assignment, "# TEST\nassert lr == 1"])
    run(pytester, "--ntdd", "--ntdd-param", "lr=1", "nb.ipynb").assert_outcomes(passed=1)


def test_a_folder_wide_parameter_a_notebook_lacks_names_the_notebooks_own_tables(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING, "train.ipynb")
    notebook(["x = 1", "# TEST\nassert x == 1"], "other.ipynb")
    result = run(pytester, "--ntdd", "--ntdd-param", "epochs=1", ".")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "other.ipynb: test parameter 'epochs': no setup cell of the notebook assigns it "
            "(given for every notebook: one that only some notebooks assign goes in their own "
            'tables, [[]tool.ntdd.parameters."NOTEBOOK"[]] in pyproject.toml)'
        ]
    )
    pytester.makepyprojecttoml('[tool.ntdd.parameters."train.ipynb"]\nepochs = 1\n')
    run(pytester, "--ntdd", ".").assert_outcomes(passed=2)  # the way out it names


def test_a_notebooks_own_parameter_it_lacks_is_a_typo_not_a_folder_wide_one(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING)
    pytester.makepyprojecttoml('[tool.ntdd.parameters."nb.ipynb"]\nepoch = 1\n')
    result = run(pytester, "--ntdd", "nb.ipynb")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test parameter 'epoch': *; did you mean 'epochs'?"])
    result.stdout.no_fnmatch_line("*given for every notebook*")
