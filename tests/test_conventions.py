"""Conventions notebooks already carry: papermill's parameters, Quarto's and nbdev's
`#|` directives, and cells numbered as a person counts them in Jupyter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import code, md, run, write_notebook

from ntdd.commands.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")

TRAINING = [
    "# TEST: before the parameters\nassert 'num_epochs' not in globals()",
    code("num_epochs = 20\nlr = 0.5", tags=["parameters"]),
    "steps = num_epochs * 10",
    "# TEST: the overrides went in after the parameters cell\n"
    "assert (num_epochs, steps, lr) == (1, 10, 0.1)",
]


# -- test-only parameters ----------------------------------------------------------


def test_overrides_go_in_right_after_the_cell_tagged_parameters(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING)
    result = run(
        pytester,
        "--ntdd",
        "--ntdd-param",
        "num_epochs=1",
        "--ntdd-param",
        "lr=0.1",
        "nb.ipynb",
        "-v",
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["ntdd: nb.ipynb: test parameters num_epochs=1, lr=0.1 (after cell 2)"]
    )


def test_overrides_come_from_the_ini_and_pyproject_per_notebook(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING, name="train.ipynb")
    notebook(
        [*TRAINING[:3], "# TEST: its own\nassert (num_epochs, lr) == (1, 0.5)"], name="other.ipynb"
    )
    pytester.makepyprojecttoml(
        '[tool.ntdd.parameters]\nnum_epochs = 3\n\n[tool.ntdd.parameters."train.ipynb"]\nlr = 0.1\n'
    )
    pytester.makeini("[pytest]\nntdd_parameters = num_epochs=1\n")
    run(pytester, "--ntdd", "train.ipynb", "other.ipynb").assert_outcomes(passed=4)


def test_the_command_line_wins_over_the_configuration(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(TRAINING)
    pytester.makepyprojecttoml("[tool.ntdd.parameters]\nnum_epochs = 7\nlr = 0.1\n")
    result = run(pytester, "--ntdd", "--ntdd-param", "num_epochs=1", "nb.ipynb")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("lr=abc", "*--ntdd-param lr=abc: 'abc' is not a Python literal*"),
        ("2lr=1", "*--ntdd-param: '2lr' is not a name a notebook can assign*"),
        ("lr", "*--ntdd-param: 'lr' is not NAME=VALUE*"),
    ],
)
def test_a_bad_override_is_a_usage_error_naming_it(
    notebook: Any, pytester: pytest.Pytester, given: str, message: str
) -> None:
    notebook(TRAINING)
    result = run(pytester, "--ntdd", "--ntdd-param", given, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_without_a_parameters_cell_overrides_go_in_before_the_first_cell(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["quick = False", "epochs = 20 if not quick else 1", "# TEST\nassert epochs == 1"])
    run(pytester, "--ntdd", "--ntdd-param", "quick=True", "nb.ipynb").assert_outcomes(passed=1)


def test_the_exported_module_records_its_parameters_and_takes_the_runs_on_top(
    notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = notebook(TRAINING)
    pytester.makepyprojecttoml("[tool.ntdd.parameters]\nnum_epochs = 1\nlr = 0.3\n")
    monkeypatch.chdir(pytester.path)
    assert main(["export", str(path)]) == 0
    module = (pytester.path / "test_nb.py").read_text()
    assert "__ntdd__.parameters(2, {'num_epochs': 1, 'lr': 0.3})" in module
    result = run(pytester, "test_nb.py", "--ntdd-param", "lr=0.1")
    result.assert_outcomes(passed=2)
    assert main(["export", "--check", str(path)]) == 0


def test_a_notebook_without_a_parameters_cell_or_overrides_is_as_before(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    path = notebook(["x = 1", "# TEST\nassert x == 1"])
    assert main(["export", str(path)]) == 0
    assert "parameters" not in (pytester.path / "test_nb.py").read_text()
    run_notebook().assert_outcomes(passed=1)


# -- #| directives ----------------------------------------------------------------


def test_a_cell_with_eval_false_runs_as_in_a_kernel(notebook: Any, run_notebook: Any) -> None:
    """nbdev's and Quarto's runners leave such a cell out; a kernel's Run All runs it."""
    notebook(
        [
            "x = 1",
            "#| eval: false\nimport json\nx = 2",
            "#| eval: false\n# TEST: runs too\nassert x == 2",
            "# TEST\nassert json.dumps(x) == '2'",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_a_run_that_skips_eval_false_leaves_those_cells_out(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "x = 1",
            "#| eval: false\nraise RuntimeError('a long training run')",
            "#| eval: false\n# TEST: not run either\nassert False",
            "# TEST\nassert x == 1",
        ]
    )
    result = run_notebook("nb.ipynb", "-rs", "--ntdd-skip-eval-false")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*#| eval: false*"])


def test_skipping_eval_false_is_a_project_setting(notebook: Any, pytester: pytest.Pytester) -> None:
    """nbdev notebooks end with `nbdev_export()` marked `#| eval: false`, which raises
    outside the project: a project that honours the directive says so once."""
    pytester.makepyprojecttoml("[tool.ntdd]\nskip_eval_false = true\n")
    notebook(
        [
            "x = 1",
            "# TEST\nassert x == 1",
            "y = x + 1\nassert y == 2",
            "#| eval: false\nraise RuntimeError('nbdev_export() outside a project')",
        ]
    )
    result = run(pytester, "--ntdd", "nb.ipynb", "-v")
    result.assert_outcomes(passed=2)  # the cells below the test still run, in the end test
    result.stdout.fnmatch_lines(["*test_notebook_runs_to_the_end PASSED*"])
    pytester.makepyprojecttoml("[tool.ntdd]\n")
    run(pytester, "--ntdd", "nb.ipynb").assert_outcomes(passed=1, failed=1)


def test_nbdev_flags_are_marks(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            "x = 1",
            "#| slow\n# TEST: slow one\nassert x",
            "#| export\n# TEST: quick\nassert x",
        ]
    )
    run_notebook("nb.ipynb", "-m", "not slow").assert_outcomes(passed=1)
    run_notebook("nb.ipynb", "-m", "slow").assert_outcomes(passed=1)


# -- cell numbers -------------------------------------------------------------------


def test_messages_count_cells_as_jupyter_does(notebook: Any, run_notebook: Any) -> None:
    notebook([md("# Title"), "total = 6", "# TEST: total\nassert total == 7"])
    result = run_notebook()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*in notebook nb.ipynb, cell 3 (id *), line 2: assert total == 7"])


def test_export_reports_cells_counted_from_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_notebook(
        tmp_path / "nb.ipynb", ["x = 1", "# TEST: same\nassert x", "# TEST: same\nassert x"]
    )
    assert main(["export", str(path)]) == 0
    assert "cell 3 (id " in capsys.readouterr().err
