"""A module written in an older format of ntdd's generated modules: stale, and says so.

`tests/old_formats/circle_format_7.py` is what ntdd wrote, in format 7, for the
notebook built here (the same cells and ids, so its content hash still
matches): only its format is old. Run by plain pytest, it says what
`ntdd export --check` says of it, and to export it again; its tests are the
notebook's, so nothing is lost.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import run

from ntdd.commands.cli import main

OLD = Path(__file__).parent / "old_formats" / "circle_format_7.py"


@pytest.fixture
def old_module(pytester: pytest.Pytester) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell("import math\nradius = 2"),
        nbformat.v4.new_code_cell("# TEST: area is positive\nassert math.pi * radius**2 > 0"),
    ]
    for index, cell in enumerate(notebook.cells):
        cell.id = f"cell{index}"
    nbformat.write(notebook, str(pytester.path / "circle.ipynb"))
    module = pytester.path / "test_circle.py"
    shutil.copyfile(OLD, module)
    return module


def test_check_lists_a_module_of_an_older_format_as_stale(
    old_module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "--check", str(old_module.with_name("circle.ipynb"))]) == 1
    out = capsys.readouterr().out
    assert "test_circle.py: stale: " in out
    assert "writes it differently" in out or "renders it differently now" in out


def test_a_module_of_an_older_format_gives_check_s_reason_and_says_to_export_again(
    pytester: pytest.Pytester, old_module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["export", "--check", str(old_module.with_name("circle.ipynb"))])
    reason = capsys.readouterr().out.strip().split(": ", 1)[1]  # after the module's path
    result = run(pytester, "test_circle.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*test_circle.py: {reason}; run `ntdd export` again"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*AttributeError*")


def test_exported_again_it_runs_its_tests(pytester: pytest.Pytester, old_module: Path) -> None:
    assert main(["export", str(old_module.with_name("circle.ipynb"))]) == 0
    assert "__ntdd__.fixtures()" not in old_module.read_text()
    run(pytester, "test_circle.py").assert_outcomes(passed=1)
