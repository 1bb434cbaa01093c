"""`--ntdd-write-notebooks DIR` and `--ntdd-overwrite`: each notebook written as it ran, its
cells' fresh outputs and execution counts as a kernel's Run All leaves them, and never a
notebook whose run did not complete, one changed meanwhile, or a file ntdd did not write."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import export, run, sha, write_notebook
from nbclient import NotebookClient

CELLS = [
    "import sys\nx = 41\nprint('set up')\nprint('a warning', file=sys.stderr)\nx + 1",
    "# TEST: x is set\nprint('checked')\nassert x == 41\nx * 2",
    "class Table:\n    def _repr_html_(self):\n        return '<b>t</b>'\n"
    "    def __repr__(self):\n        return 'Table()'\ndisplay(Table())\nTable()",
    "# TEST\ndef test_twice():\n    assert 2 * x == 82",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\ny = 1;",
    "for i in range(3):\n    print(f'\\rstep {i}', end='')\nprint()",
]


def _shown(outputs: list[Any]) -> list[tuple[str, Any]]:
    """Outputs as a reader compares them: each kind, and its text or mime types."""
    shown: list[tuple[str, Any]] = []
    for output in outputs:
        kind = output["output_type"]
        if kind == "stream":
            text = re.sub(r"[^\n]*\r", "", "".join(output["text"]))  # as a notebook shows it
            shown.append((f"stream:{output['name']}", text))
        elif kind == "error":
            shown.append((kind, output["ename"]))
        else:
            data = output["data"]
            text = "".join(data.get("text/plain", ""))
            shown.append((kind, (sorted(data), "" if "Figure" in text else text)))
            if kind == "execute_result":
                shown.append(("count", output["execution_count"]))
    return shown


def _by_cell(path: Path) -> list[tuple[Any, list[tuple[str, Any]]]]:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return [(c.execution_count, _shown(c.outputs)) for c in nb.cells if c.cell_type == "code"]


@pytest.mark.slow
def test_each_cell_is_written_with_the_outputs_and_counts_a_kernels_run_all_gives(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", CELLS)
    kernel = nbformat.read(path, as_version=4)
    where = {"metadata": {"path": str(path.parent)}}
    NotebookClient(kernel, timeout=120, resources=where).execute()
    nbformat.write(kernel, pytester.path / "kernel.ipynb")

    # In a process of its own, as every run whose notebook imports matplotlib: pyplot's
    # state is the process's, and earlier tests in this one may have left some.
    result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb", subprocess=True)

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["ntdd: wrote 1 notebook as run, to out"])
    written = _by_cell(pytester.path / "out" / "nb.ipynb")
    assert written == _by_cell(pytester.path / "kernel.ipynb")
    assert [count for count, _ in written] == [1, 2, 3, 4, 5, 6]
    assert ("display_data", (["text/html", "text/plain"], "Table()")) in written[2][1]
    assert written[4][1] == [("display_data", (["image/png", "text/plain"], ""))]  # the figure
    assert sha(path) == sha(pytester.path / "nb.ipynb")  # the notebook itself is unchanged


@pytest.mark.slow
def test_a_display_updated_from_a_cell_below_is_written_as_a_kernel_shows_it(
    pytester: pytest.Pytester,
) -> None:
    cells = [
        "h = display('one', display_id=True)\nprint('shown')",
        "h.update('two')\nagain = display('again', display_id=h.display_id)",
        "# TEST\nh.update('three')\nassert h",
    ]
    path = write_notebook(pytester.path / "nb.ipynb", cells)
    kernel = nbformat.read(path, as_version=4)
    where = {"metadata": {"path": str(path.parent)}}
    NotebookClient(kernel, timeout=120, resources=where).execute()
    nbformat.write(kernel, pytester.path / "kernel.ipynb")

    run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")

    written = _by_cell(pytester.path / "out" / "nb.ipynb")
    assert written == _by_cell(pytester.path / "kernel.ipynb")
    assert written[0][1][0] == ("display_data", (["text/plain"], "'three'"))


def test_overwrite_writes_outputs_in_place_and_keeps_the_files_layout(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1\nprint(x)", "# TEST\nassert x"])
    nb = json.loads(path.read_text(encoding="utf-8"))
    nb["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "stale\n"}]
    nb["metadata"]["kept"] = "as it was"
    path.write_text(json.dumps(nb, indent=2) + "\n", encoding="utf-8")

    result = run(pytester, "--ntdd", "--ntdd-overwrite", "nb.ipynb")

    result.stdout.fnmatch_lines(["ntdd: wrote 1 notebook as run, in place"])
    text = path.read_text(encoding="utf-8")
    again = json.loads(text)
    assert text == json.dumps(again, indent=2) + "\n"  # the file's own indent
    assert again["metadata"]["kept"] == "as it was"
    assert again["cells"][0]["outputs"] == [
        {"output_type": "stream", "name": "stdout", "text": "1\n"}
    ]
    assert [c["execution_count"] for c in again["cells"]] == [1, 2]
    assert [c["source"] for c in again["cells"]] == [c["source"] for c in nb["cells"]]


def test_a_run_that_did_not_complete_is_not_written_unless_asked(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(
        pytester.path / "nb.ipynb", ["x = 1", "# TEST: x is two\nassert x == 2", "print('end')"]
    )
    before = sha(path)

    result = run(pytester, "--ntdd", "--ntdd-overwrite", "nb.ipynb")

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "ntdd: *nb.ipynb not written: its run did not complete (test_x_is_two failed); "
            "--ntdd-write-incomplete writes it"
        ]
    )
    assert sha(path) == before

    run(pytester, "--ntdd", "--ntdd-overwrite", "--ntdd-write-incomplete", "nb.ipynb")

    written = _by_cell(path)
    assert written[1] == (2, [("error", "AssertionError")])  # as a kernel shows the cell
    assert written[2] == (3, [("stream:stdout", "end\n")])


def test_an_earlier_runs_copy_goes_when_this_run_did_not_complete(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")
    assert (pytester.path / "out" / "nb.ipynb").exists()
    other = write_notebook(pytester.path / "out" / "other.ipynb", ["y = 'not ntdd's'"])
    path.write_text(path.read_text(encoding="utf-8").replace("x = 1", "x = 2"), "utf-8")

    result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")

    # x is 2 now: the run fails, and the copy of x = 1's run must not look like this run's
    assert not (pytester.path / "out" / "nb.ipynb").exists()
    assert other.exists()  # a file ntdd did not write: left as it was
    result.stdout.fnmatch_lines(
        [
            "*nb.ipynb not written: its run did not complete*",
            "*out*nb.ipynb: an earlier run's copy, removed",
        ]
    )


def test_a_notebook_gone_before_the_end_is_one_error_line_not_a_crash(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    pytester.makeconftest(
        "from pathlib import Path\n"
        "def pytest_runtest_teardown(item):\n"
        "    Path('nb.ipynb').unlink(missing_ok=True)\n"
    )

    result = run(pytester, "--ntdd", "--ntdd-overwrite", "nb.ipynb")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ntdd: error: --ntdd-overwrite: *nb.ipynb: No such file*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_a_text_notebook_is_said_not_written_and_the_run_stays_green(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("jupytext")
    header = "# ---\n# jupyter:\n#   jupytext:\n#     formats: py:percent\n# ---\n\n"
    pytester.makefile(".py", nb=header + "# %%\nx = 1\n\n# %%\n# TEST\nassert x\n")

    result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.py")

    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*nb.py not written: a text notebook holds no outputs"])
    assert not (pytester.path / "out").exists()


def test_cells_a_run_did_not_reach_leave_it_unwritten(pytester: pytest.Pytester) -> None:
    path = write_notebook(
        pytester.path / "nb.ipynb", ["x = 1", "# TEST: first\nassert x", "# TEST: second\nassert x"]
    )
    before = sha(path)

    result = run(pytester, "--ntdd", "--ntdd-overwrite", "-k", "first", "nb.ipynb")

    result.stdout.fnmatch_lines(["*nb.ipynb not written: its run did not complete (cell 3 did*"])
    assert sha(path) == before


def test_a_cell_left_out_by_design_keeps_its_saved_outputs(pytester: pytest.Pytester) -> None:
    saved = nbformat.v4.new_code_cell(
        "# NTDD: skip\nprint('downloading')",
        outputs=[nbformat.v4.new_output("stream", text="downloaded\n")],
        execution_count=7,
    )
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", saved, "# TEST\nassert x"])

    run(pytester, "--ntdd", "--ntdd-overwrite", "nb.ipynb")

    written = _by_cell(path)
    assert written[1] == (7, [("stream:stdout", "downloaded\n")])
    assert [written[0][0], written[2][0]] == [1, 2]


@pytest.mark.parametrize("how", ["collected", "exported"])
def test_a_notebook_changed_during_the_run_is_not_overwritten(
    pytester: pytest.Pytester, how: str
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    pytester.makeconftest(
        "from pathlib import Path\n"
        "def pytest_runtest_call(item):\n"
        "    p = Path('nb.ipynb')\n"
        "    p.write_text(p.read_text().replace('x = 1', 'x = 2  # edited'))\n"
    )
    if how == "exported":
        assert export(path, "-o", str(pytester.path / "tests")) == 0
    args = ["tests"] if how == "exported" else ["--ntdd", "nb.ipynb"]

    result = run(pytester, "--ntdd-overwrite", *args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ntdd: error: --ntdd-overwrite: *changed since the run*"])
    assert "x = 2  # edited" in path.read_text(encoding="utf-8")


def test_a_file_in_the_folder_that_is_not_the_notebook_is_not_overwritten(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    other = write_notebook(pytester.path / "out" / "nb.ipynb", ["y = 'another notebook'"])
    before = sha(other)

    result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*not a copy ntdd wrote of nb.ipynb; not overwritten"])
    assert sha(other) == before
    run(pytester, "--ntdd", "--ntdd-write-notebooks", "written", "nb.ipynb")
    first = _untimed(pytester.path / "written" / "nb.ipynb")
    again = run(pytester, "--ntdd", "--ntdd-write-notebooks", "written", "nb.ipynb")
    assert again.ret == pytest.ExitCode.OK  # its own earlier copy: written again
    assert _untimed(pytester.path / "written" / "nb.ipynb") == first


def _untimed(path: Path) -> Any:
    """The notebook without its cells' timing, which each run writes anew."""
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        cell["metadata"].pop("execution", None)
    return notebook


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--ntdd-overwrite", "--ntdd-write-notebooks", "out"], "*give one of them"),
        (["--ntdd-write-incomplete"], "*--ntdd-write-incomplete writes with*"),
        (["--ntdd-write-notebooks", "nb.ipynb"], "*nb.ipynb: not a folder"),
    ],
)
def test_options_that_cannot_mean_anything_are_refused_before_the_run(
    pytester: pytest.Pytester, options: list[str], says: str
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    before = sha(path)

    result = run(pytester, "--ntdd", *options, "nb.ipynb")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([says])
    assert sha(path) == before


@pytest.mark.slow
def test_under_xdist_the_controller_writes_what_the_workers_ran(pytester: pytest.Pytester) -> None:
    for name in ("a.ipynb", "b.ipynb"):
        write_notebook(pytester.path / name, ["x = 1\nprint('ran')", "# TEST\nassert x"])

    result = run(
        pytester,
        "--ntdd",
        "-n",
        "2",
        "--ntdd-write-notebooks",
        "out",
        ".",
        plugins=["xdist"],
        subprocess=True,
    )

    result.stdout.fnmatch_lines(["ntdd: wrote 2 notebooks as run, to out"])
    for name in ("a.ipynb", "b.ipynb"):
        assert _by_cell(pytester.path / "out" / name)[0] == (1, [("stream:stdout", "ran\n")])


@pytest.mark.slow
def test_copies_written_inside_the_project_are_never_tested_again(
    pytester: pytest.Pytester,
) -> None:
    """The docs' CI example writes its copies into the project (`executed/`): a later run
    leaves them out and says so, tests the notebook once, and writes no copy of a copy."""
    write_notebook(pytester.path / "nbs" / "a.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    for _ in range(3):
        result = run(pytester, "--ntdd", "--ntdd-write-notebooks", "executed")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["ntdd: wrote 1 notebook as run, to executed"])
    result.stdout.fnmatch_lines(["ntdd: left out 1 notebook it wrote (copies in executed/)"])
    found = pytester.path.rglob("*.ipynb")
    written = sorted(p.relative_to(pytester.path).as_posix() for p in found)
    assert written == ["executed/nbs/a.ipynb", "nbs/a.ipynb"]

    named = run(pytester, "--ntdd", "executed/nbs/a.ipynb")  # by its name: tested, as pytest
    named.assert_outcomes(passed=1)  # tests any file named
    assert "left out" not in named.stdout.str()

    spread = run(pytester, "--ntdd", "-n", "2", plugins=["xdist"], subprocess=True)
    spread.assert_outcomes(passed=1)  # the workers collect; the controller says it once
    assert spread.stdout.str().count("ntdd: left out 1 notebook it wrote") == 1


def test_a_copy_moved_back_over_its_notebook_is_the_notebook(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "a.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    run(pytester, "--ntdd", "--ntdd-write-notebooks", "out").assert_outcomes(passed=1)
    (pytester.path / "out" / "a.ipynb").replace(pytester.path / "a.ipynb")

    result = run(pytester, "--ntdd")

    result.assert_outcomes(passed=1)
    assert "left out" not in result.stdout.str()
