"""`ntdd export --check` and `ntdd sync`: notebooks and modules never drift apart."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from conftest import code, make_notebook, sha

from ntdd.commands.cli import main

CELLS = [
    "import math\nradius = 2",
    code("area = math.pi * radius**2\narea", tags=["keep-me"]),
    "# TEST: area is positive\nassert area > 0",
    "# TEST\ndef test_circumference():\n    '''Two pi r.'''\n"
    "    assert 2 * math.pi * radius > area / 2",
]


def snapshot(*paths: Path) -> dict[Path, tuple[str, int]]:
    return {p: (sha(p), p.stat().st_mtime_ns) for p in paths}


@pytest.fixture
def circle(tmp_path: Path) -> Path:
    notebook = make_notebook(CELLS)
    notebook.cells[1].outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": "12.56"}, execution_count=2)
    ]
    notebook.cells[1].execution_count = 2
    path = tmp_path / "circle.ipynb"
    nbformat.write(notebook, str(path))
    assert main(["export", str(path)]) == 0
    return path


@pytest.fixture
def module(circle: Path) -> Path:
    return circle.with_name("test_circle.py")


def edit_notebook(path: Path, index: int, source: str) -> None:
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells[index].source = source
    nbformat.write(notebook, str(path))


def edit_module(module: Path, old: str, new: str) -> None:
    text = module.read_text()
    assert old in text
    module.write_text(text.replace(old, new, 1))


# -- export --check ---------------------------------------------------------


def test_check_passes_when_every_module_is_current(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(circle, module)
    assert main(["export", "--check", str(circle)]) == 0
    assert "every module is current" in capsys.readouterr().out
    assert snapshot(circle, module) == before


def test_check_lists_a_missing_module(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module.unlink()
    assert main(["export", "--check", str(circle)]) == 1
    assert capsys.readouterr().out == f"{module}: missing: not exported yet\n"
    assert not module.exists()


def test_check_lists_a_stale_module_naming_the_cells(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell_id = nbformat.read(str(circle), as_version=4).cells[2].id
    edit_notebook(circle, 2, "# TEST: area is positive\nassert area >= 0")
    before = snapshot(module)
    assert main(["export", "--check", str(circle)]) == 1
    assert (
        capsys.readouterr().out
        == f"{module}: stale: the notebook changed in cell 3 (id {cell_id})\n"
    )
    assert snapshot(module) == before


def test_check_lists_a_stale_module_when_setup_changed(
    circle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_notebook(circle, 0, "import math\nradius = 3")
    assert main(["export", "--check", str(circle)]) == 1
    assert "stale: the notebook's setup cells changed" in capsys.readouterr().out


def test_check_lists_a_hand_edited_module(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_module(module, "assert area > 0", "assert area > 1")
    assert main(["export", "--check", str(circle)]) == 1
    assert "hand-edited in cell 3 (id " in capsys.readouterr().out


def test_check_lists_edits_outside_the_test_regions(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_module(module, "radius = 2", "radius = 5")
    assert main(["export", "--check", str(circle)]) == 1
    assert "hand-edited outside the test regions" in capsys.readouterr().out


def test_outputs_and_execution_counts_do_not_make_a_module_stale(circle: Path) -> None:
    notebook = nbformat.read(str(circle), as_version=4)
    notebook.cells[1].outputs = []
    notebook.cells[1].execution_count = 99
    nbformat.write(notebook, str(circle))
    assert main(["export", "--check", str(circle)]) == 0


def test_check_finds_modules_through_the_output_option(
    circle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "generated"
    assert main(["export", "--check", str(circle), "-o", str(out)]) == 1
    assert main(["export", str(circle), "-o", str(out)]) == 0
    assert main(["export", "--check", str(circle), "-o", str(out)]) == 0


def test_check_finds_modules_through_the_config(
    circle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ntdd]\noutput = "generated"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["export", "--check", "circle.ipynb"]) == 1
    assert main(["export", "circle.ipynb"]) == 0
    assert main(["export", "--check", "circle.ipynb"]) == 0


def test_check_of_a_foreign_file_is_bad_input(circle: Path, module: Path) -> None:
    module.write_text("def test_mine():\n    pass\n")
    assert main(["export", "--check", str(circle)]) == 2


# -- sync ---------------------------------------------------------------------


def test_sync_of_a_pair_that_agrees_changes_no_byte(circle: Path, module: Path) -> None:
    before = snapshot(circle, module)
    assert main(["sync", str(circle)]) == 0
    assert main(["sync", str(module)]) == 0
    assert snapshot(circle, module) == before


def test_sync_regenerates_the_module_when_the_notebook_changed(circle: Path, module: Path) -> None:
    edit_notebook(circle, 2, "# TEST: area is positive\nassert area > 0.5")
    before = snapshot(circle)
    assert main(["sync", str(circle)]) == 0
    assert "assert area > 0.5" in module.read_text()
    assert snapshot(circle) == before
    assert main(["export", "--check", str(circle)]) == 0


def source_of(path: Path, index: int) -> str:
    """A cell's source as stored (nbformat stores it as a list of lines)."""
    source = json.loads(path.read_text())["cells"][index]["source"]
    return "".join(source) if isinstance(source, list) else source


def test_sync_writes_an_edited_test_body_back_into_its_cell(circle: Path, module: Path) -> None:
    raw_before = circle.read_text()
    edit_module(module, "    assert area > 0", "    assert area > 0\n    assert area < 100")
    assert main(["sync", str(module)]) == 0
    after = json.loads(circle.read_text())
    expected = json.loads(raw_before)
    expected["cells"][2]["source"] = [
        "# TEST: area is positive\n",
        "assert area > 0\n",
        "assert area < 100",
    ]
    assert after == expected  # every other cell, output, id and metadata as it was
    assert circle.read_text() == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    nbformat.validate(nbformat.read(str(circle), as_version=nbformat.NO_CONVERT))
    assert main(["export", "--check", str(circle)]) == 0


def test_sync_writes_a_docstring_edit_back(circle: Path, module: Path) -> None:
    edit_module(module, "'''Two pi r.'''", "'''The circumference is two pi r.'''")
    assert main(["sync", str(circle)]) == 0
    assert "'''The circumference is two pi r.'''" in source_of(circle, 3)


def test_sync_turns_an_edited_decorator_into_a_mark_on_the_test_line(
    circle: Path, module: Path
) -> None:
    edit_module(
        module, "def test_area_is_positive():", "@pytest.mark.slow\ndef test_area_is_positive():"
    )
    assert main(["sync", str(circle)]) == 0
    assert source_of(circle, 2).startswith("# TEST: area is positive @slow\n")
    assert "@pytest.mark.slow\ndef test_area_is_positive():" in module.read_text()


def test_sync_adds_a_test_function_added_to_a_cells_region(circle: Path, module: Path) -> None:
    edit_module(
        module,
        "    assert 2 * math.pi * radius > area / 2",
        "    assert 2 * math.pi * radius > area / 2\n\n\n"
        "def test_diameter():\n    assert radius * 2 == 4",
    )
    assert main(["sync", str(circle)]) == 0
    assert "def test_diameter():" in source_of(circle, 3)


def test_sync_refuses_when_both_changed_and_changes_nothing(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_module(module, "assert area > 0", "assert area > 1")
    edit_notebook(circle, 2, "# TEST: area is positive\nassert area > 2")
    before = snapshot(circle, module)
    assert main(["sync", str(circle)]) == 1
    err = capsys.readouterr().err
    assert "both changed since the last export; in conflict: cell 3 (id " in err
    assert "--prefer notebook or --prefer module" in err
    assert snapshot(circle, module) == before


def test_prefer_notebook_discards_the_module_edits(circle: Path, module: Path) -> None:
    edit_module(module, "assert area > 0", "assert area > 1")
    edit_notebook(circle, 2, "# TEST: area is positive\nassert area > 2")
    assert main(["sync", str(circle), "--prefer", "notebook"]) == 0
    assert "assert area > 2" in module.read_text()


def test_prefer_module_writes_the_module_edits_back(circle: Path, module: Path) -> None:
    edit_module(module, "assert area > 0", "assert area > 1")
    edit_notebook(circle, 2, "# TEST: area is positive\nassert area > 2")
    assert main(["sync", str(circle), "--prefer", "module"]) == 0
    assert source_of(circle, 2).endswith("assert area > 1")
    assert main(["export", "--check", str(circle)]) == 0


def test_edits_outside_test_regions_are_refused_not_lost(
    circle: Path, module: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_module(module, "radius = 2", "radius = 5")
    before = snapshot(circle, module)
    assert main(["sync", str(circle)]) == 1
    assert "edited outside its test regions" in capsys.readouterr().err
    assert snapshot(circle, module) == before


def test_sync_keeps_source_written_as_a_single_string(tmp_path: Path) -> None:
    notebook = make_notebook(["x = 1", "# TEST: x\nassert x == 1"])
    raw = json.dumps(notebook, indent=2, ensure_ascii=True)  # another editor's layout
    path = tmp_path / "nb.ipynb"
    path.write_text(raw)
    assert main(["export", str(path)]) == 0
    edit_module(path.with_name("test_nb.py"), "assert x == 1", "assert x >= 1")
    assert main(["sync", str(path)]) == 0
    expected = json.loads(raw)
    expected["cells"][1]["source"] = "# TEST: x\nassert x >= 1"
    assert path.read_text() == json.dumps(expected, indent=2, ensure_ascii=True)


def test_sync_refuses_a_layout_it_cannot_reproduce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notebook = make_notebook(["x = 1", "# TEST: x\nassert x == 1"])
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(notebook, indent=3))
    assert main(["export", str(path)]) == 0
    edit_module(path.with_name("test_nb.py"), "assert x == 1", "assert x >= 1")
    before = snapshot(path)
    assert main(["sync", str(path)]) == 2
    assert "cannot reproduce byte for byte" in capsys.readouterr().err
    assert snapshot(path) == before


def test_a_wrapped_cell_with_a_multi_line_string_round_trips(tmp_path: Path) -> None:
    source = "# TEST: text\ns = '''first\nsecond at column 0\n'''\nassert s.count(chr(10)) == 2"
    path = tmp_path / "nb.ipynb"
    nbformat.write(make_notebook([source]), str(path))
    assert main(["export", str(path)]) == 0
    edit_module(path.with_name("test_nb.py"), "== 2", "== 2  # two lines")
    assert main(["sync", str(path)]) == 0
    assert source_of(path, 0) == source + "  # two lines"


def test_sync_of_a_file_that_is_not_ours_is_bad_input(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("def test():\n    pass\n")
    assert main(["sync", str(module)]) == 2
