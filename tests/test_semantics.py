"""How notebook cells behave as tests, checked both as an exported module and via --ntdd."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import code, md, requires_torch, run

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")


def test_bare_statements_and_def_cells_become_tests(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            md("# A notebook"),
            "values = [1, 2, 3]",
            "# TEST: sum\nassert sum(values) == 6",
            "# TEST\ndef helper():\n    return len(values)\n\n"
            "def test_length():\n    '''Three values.'''\n    assert helper() == 3\n\n"
            "def test_wrong():\n    assert helper() == 4",
        ]
    )
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        ["*::test_sum PASSED*", "*::test_length PASSED*", "*::test_wrong FAILED*"]
    )


def test_names_are_unique_identifiers_even_for_unicode_keywords_and_punctuation(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "# TEST: größe prüfen\nassert True",
            "# TEST: class\nassert True",
            "# TEST: shape: (N, 128)!\nassert True",
            "# TEST: shape (N, 128)\nassert True",
            "# TEST: 🔥\nassert True",
            "# TEST\nassert True",
        ]
    )
    result = run_notebook("nb.ipynb", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "*::test_größe_prüfen",
            "*::test_class",
            "*::test_shape_n_128",
            "*::test_shape_n_128_2",
            "*::test_cell_5",
            "*::test_cell_6",
        ]
    )


def test_a_name_collision_is_warned_about(
    notebook: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from ntdd.commands.cli import main

    path = notebook(["# TEST: same\nassert True", "# TEST: same\nassert True"])
    assert main(["export", str(path)]) == 0
    assert "test name 'test_same' is taken; this test is 'test_same_2'" in capsys.readouterr().err


def test_marks_on_the_marker_line(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            '# TEST: skipped @skip("not today")\nassert False',
            '# TEST: expected to fail @xfail("known bug")\nassert False',
            "# TEST: slow one @slow\nassert True",
            "# TEST: quick\nassert True",
        ]
    )
    result = run_notebook("nb.ipynb", "-rsx")
    result.assert_outcomes(passed=2, skipped=1, xfailed=1)
    result.stdout.fnmatch_lines(["*not today*", "*known bug*"])
    run_notebook("nb.ipynb", "-m", "not slow").assert_outcomes(passed=1, skipped=1, xfailed=1)


def test_tags_are_marks_too(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            code("# TEST: skipped\nassert False", tags=["ntdd-skip"]),
            code("# TEST: failing\nassert False", tags=["ntdd-xfail"]),
            code("# TEST: slow\nassert True", tags=["ntdd-slow"]),
        ]
    )
    run_notebook("nb.ipynb").assert_outcomes(passed=1, skipped=1, xfailed=1)
    run_notebook("nb.ipynb", "-m", "slow").assert_outcomes(passed=1)


def test_marks_apply_to_every_function_of_a_def_cell(notebook: Any, run_notebook: Any) -> None:
    notebook(
        ['# TEST @xfail("both broken")\ndef test_a():\n    assert 0\n\ndef test_b():\n    assert 0']
    )
    run_notebook("nb.ipynb").assert_outcomes(xfailed=2)


def test_cuda_mark_skips_with_a_reason_without_a_gpu(notebook: Any, run_notebook: Any) -> None:
    notebook(["# TEST: on the gpu @cuda\nimport torch\nassert torch.zeros(1).cuda()"])
    result = run_notebook("nb.ipynb", "-rs")
    if _cuda():
        result.assert_outcomes(passed=1)
    else:
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(["*needs cuda: *"])


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def test_skipped_setup_cells_are_not_run(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            "x = 1",
            "# NTDD: skip\nraise RuntimeError('a long training loop')",
            code("raise RuntimeError('a download')", tags=["ntdd-skip"]),
            "# NBVAL_SKIP\nraise RuntimeError('skipped for nbval too')",
            "# TEST\nassert x == 1",
        ]
    )
    run_notebook().assert_outcomes(passed=1)


def test_setup_cells_marked_to_raise_do_not_stop_setup(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            code("x = 1\n1 / 0", tags=["raises-exception"]),
            "y = x + 1",
            "# TEST\nassert y == 2",
        ]
    )
    run_notebook().assert_outcomes(passed=1)


def test_setup_runs_once_for_all_tests(notebook: Any, run_notebook: Any, pytester: Any) -> None:
    notebook(
        [
            "with open('runs.txt', 'a') as f:\n    f.write('setup\\n')",
            "# TEST: a\nassert True",
            "# TEST: b\nassert True",
            "# TEST\ndef test_c():\n    assert True",
        ]
    )
    run_notebook().assert_outcomes(passed=3)
    assert (pytester.path / "runs.txt").read_text() == "setup\n"


def test_a_test_sees_the_cells_above_it_and_none_below(notebook: Any, run_notebook: Any) -> None:
    notebook(
        [
            "a = 1",
            "# TEST: before b\nassert a == 1\nassert 'b' not in globals()",
            "b = 2",
            "# TEST: after b\nassert a == 1 and b == 2",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_a_test_cells_assignments_land_in_the_namespace(notebook: Any, run_notebook: Any) -> None:
    notebook(["# TEST: defines\nsecret = 1", "# TEST: sees it\nassert secret == 1"])
    run_notebook().assert_outcomes(passed=2)


def test_magics_and_shell_escapes_run_or_are_dropped_with_a_note(
    notebook: Any, run_notebook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NTDD_MAGIC", raising=False)
    notebook(
        [
            "%matplotlib inline\n%env NTDD_MAGIC=on\nfiles = !echo listed",
            "%%time\ntimed = 21 * 2",
            "%pip install nothing-at-all",
            "%%writefile written.txt\nhello",
            "# TEST: magics ran\nimport os, pathlib\nassert os.environ['NTDD_MAGIC'] == 'on'\n"
            "assert files == ['listed']\nassert timed == 42\n"
            "assert pathlib.Path('written.txt').read_text() == 'hello\\n'",
        ]
    )
    result = run_notebook("nb.ipynb", "-W", "default")
    result.assert_outcomes(passed=1)
    said = [line for line in result.outlines if "'%pip install nothing-at-all'" in line]
    assert len(said) == 1 and "dropped" in said[0], said  # as it is read, or (exported) runs


def test_setup_and_tests_run_in_the_notebook_folder(
    notebook: Any, run_notebook: Any, pytester: Any
) -> None:
    data = pytester.path / "sub" / "data.txt"
    data.parent.mkdir()
    data.write_text("42")
    (pytester.path / "sub" / "helpers.py").write_text("def answer():\n    return 42\n")
    notebook(
        [
            "from pathlib import Path\nvalue = int(Path('data.txt').read_text())",
            "# TEST: reads beside the notebook\nfrom helpers import answer\n"
            "assert value == answer() == int(Path('data.txt').read_text())",
        ],
        name="sub/nb.ipynb",
    )
    cwd = os.getcwd()
    run_notebook("sub/nb.ipynb").assert_outcomes(passed=1)
    assert os.getcwd() == cwd


def test_cwd_is_restored_even_when_setup_fails(
    notebook: Any, run_notebook: Any, pytester: Any
) -> None:
    notebook(["import os\nos.chdir('/')\n1 / 0", "# TEST\nassert True"], name="sub/nb.ipynb")
    notebook(
        ["# TEST\ndef test_moves():\n    import os\n    os.chdir('/')\n    assert False"],
        name="sub/nb2.ipynb",
    )
    run_notebook("sub/nb.ipynb").assert_outcomes(errors=1)
    run_notebook("sub/nb2.ipynb").assert_outcomes(failed=1)
    assert Path.cwd() == pytester.path


def test_a_failing_setup_cell_errors_its_tests_with_the_cells_traceback(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "ok = 1",
            "def f():\n    return 1 / 0\n\nvalue = f()",
            "# TEST: a\nassert ok",
            "# TEST: b\nassert ok",
        ]
    )
    result = run_notebook()
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            ">*return 1 / 0",
            "E*ZeroDivisionError: division by zero",
            # exported: the cell's own name; collected: the notebook's line, then the cell
            "*nb.ipynb*:*: ZeroDivisionError*",
            "*ZeroDivisionError in setup cell 2: division by zero",
            "*ZeroDivisionError in setup cell 2 (see test_a)",
        ]
    )


def test_a_setup_cell_with_a_syntax_error_errors_the_tests(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = (1,\n", "# TEST\nassert True"])
    result = run_notebook()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*SyntaxError*", "*setup cell 1*"])


def test_a_test_cell_with_a_syntax_error_fails_alone(notebook: Any, run_notebook: Any) -> None:
    notebook(["x = 1", "# TEST: broken\nassert (x ==\n", "# TEST: fine\nassert x == 1"])
    result = run_notebook()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*nb.ipynb: cell 2 (id *): SyntaxError: * (line 2)*"])


def test_a_def_cell_using_setup_state_at_import_time_fails_alone(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "cases = [1, 2]",
            "# TEST\nimport pytest\n\n"
            "@pytest.mark.parametrize('n', cases)\ndef test_n(n):\n    assert n",
            "# TEST: fine\nassert cases",
        ]
    )
    result = run_notebook()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*line 4 uses 'cases' from a setup cell while the module is imported*"]
    )


def test_a_failure_names_the_notebook_cell_and_line(notebook: Any, run_notebook: Any) -> None:
    notebook(["data = [1, 2]", "# TEST: total\ntotal = sum(data)\nassert total == 4"])
    result = run_notebook()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            ">       assert total == 4",
            "E       assert 3 == 4",
            "E       in notebook nb.ipynb, cell 2 (id *), line 3: assert total == 4",
        ]
    )


def test_fixtures_can_be_taken_by_test_functions(
    notebook: Any, run_notebook: Any, pytester: Any
) -> None:
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef answer():\n    return 42\n")
    notebook(
        [
            "# TEST\ndef test_fixtures(tmp_path, monkeypatch, capsys, answer):\n"
            "    monkeypatch.setenv('NTDD_X', '1')\n    print('hi')\n"
            "    assert capsys.readouterr().out == 'hi\\n'\n    assert answer == 42\n"
            "    assert tmp_path.is_dir()"
        ]
    )
    run_notebook().assert_outcomes(passed=1)


@requires_torch
def test_device_tests_run_per_device_with_the_device_variable_pinned(
    notebook: Any, run_notebook: Any, pytester: Any
) -> None:
    notebook(
        [
            "import torch\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
            "weights = torch.ones(3, device=device)\n"
            "with open('setups.txt', 'a') as f:\n    f.write(str(device) + '\\n')",
            "# TEST: built on the device under test\nassert weights.device == device",
            "# TEST\ndef test_fixture_and_variable_agree(device):\n"
            "    assert weights.device.type == device.type",
            "# TEST: no device here\nassert weights.sum() == 3",
        ]
    )
    result = run_notebook("nb.ipynb", "-v", "-rs")
    if _cuda():
        result.assert_outcomes(passed=5)
    else:
        result.assert_outcomes(passed=3, skipped=2)
        result.stdout.fnmatch_lines(
            [
                "*::test_built_on_the_device_under_test[[]cpu[]] PASSED*",
                "*::test_fixture_and_variable_agree[[]cpu[]] PASSED*",
                "*::test_no_device_here PASSED*",
                "*cuda: torch.cuda.is_available() is False*",
            ]
        )
        assert (pytester.path / "setups.txt").read_text() == "cpu\n"


def test_devices_can_be_chosen(notebook: Any, pytester: Any) -> None:
    notebook(["# TEST\ndef test_d(device):\n    assert str(device) == 'cpu'"])
    result = run(pytester, "--ntdd", "--ntdd-devices", "cpu", "nb.ipynb", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*::test_d[[]cpu[]] PASSED*"])


def test_a_notebook_without_torch_still_works(
    notebook: Any, run_notebook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    notebook(
        [
            "device = 'cpu'\nitems = ['a', 'b']",
            "# TEST: plain python\nassert len(items) == 2",
            "# TEST\ndef test_device_is_a_name(device):\n    assert device == 'cpu'",
        ]
    )
    result = run_notebook("nb.ipynb", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["*cuda: torch is not installed*"])
