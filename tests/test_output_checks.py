"""`--ntdd-outputs` and `--ntdd-outputs-lax`: saved outputs checked in the run, as nbval
checks them in a kernel: its markers and tags, its modes, its sanitize files; the
normalisers; a diff at the cell's line; never checked twice beside nbval."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import nbformat
import pytest
from conftest import code, line_of, md, run, sha, write_notebook


def stdout(text: str) -> Any:
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def result(text: str, count: int = 1) -> Any:
    return nbformat.v4.new_output(
        "execute_result", data={"text/plain": text}, execution_count=count
    )


def ran(source: str, *outputs: Any, count: int | None = 1, tags: tuple[str, ...] = ()) -> Any:
    """A code cell as a notebook saves it after a run: its outputs and execution count."""
    cell = code(source, tags)
    cell.execution_count = count
    cell.outputs = list(outputs)
    return cell


def verdicts(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, str]]:
    """A run under `-v`, and each output check's verdict by its name."""
    got = run(pytester, "-v", "-p", "no:randomly", *args)
    found = {}
    for line in got.stdout.lines:
        nodeid, _, rest = line.partition(" ")
        if "::outputs_of_cell_" in nodeid and rest:
            found[nodeid.rpartition("::")[2]] = rest.split()[0]
    return got, found


def test_every_cell_is_checked_and_a_changed_output_fails_with_a_diff_at_its_cell(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(
        pytester.path / "nb.ipynb",
        [
            md("# A notebook without tests"),
            ran("x = 1\nprint('hello', x)", stdout("hello 1\n")),
            ran("x + 1", result("3", 2), count=2),  # saved before a change: now 2
            ran("y = x", count=3),
        ],
    )
    before = sha(path)
    junit = ("--junitxml=out.xml", "-o", "junit_family=xunit1")  # xunit1 holds file and line
    got, found = verdicts(pytester, "--ntdd-outputs", *junit, "--ntdd-report=r.html", "nb.ipynb")

    assert found == {
        "outputs_of_cell_2": "PASSED",
        "outputs_of_cell_3": "FAILED",
        "outputs_of_cell_4": "PASSED",
    }
    got.stdout.fnmatch_lines(
        [
            "*cell 3 (id *): its outputs differ from those saved in the notebook",
            "text/plain differs:",
            "  --- saved",
            "  +++ fresh",
            "  -3",
            "  +2",
        ]
    )
    case = ET.parse(pytester.path / "out.xml").find(".//testcase[@name='outputs_of_cell_3']")
    assert case is not None
    assert case.get("file") == "nb.ipynb"
    assert case.get("line") == str(line_of(path, '"x + 1"') - 1)
    failure = case.find("failure")
    assert failure is not None and "+2" in (failure.text or "")
    page = (pytester.path / "r.html").read_text()
    assert "its outputs differ from those saved in the notebook\ntext/plain differs:" in page
    assert sha(path) == before  # checking never changes the notebook


def test_a_notebooks_tests_run_first_and_the_checks_see_the_cells_their_tests_ran(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("n = 2", count=1),
            ran("# TEST: n is two\nprint('testing')\nassert n == 2", stdout("testing\n"), count=2),
            ran("n * 10", result("20", 3), count=3),
        ],
    )
    got = run(pytester, "-v", "-p", "no:randomly", "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=5)
    names = [line.split("::")[1].split()[0] for line in got.stdout.lines if "nb.ipynb::" in line]
    assert names == [
        "test_n_is_two",
        "test_notebook_runs_to_the_end",
        "outputs_of_cell_1",
        "outputs_of_cell_2",
        "outputs_of_cell_3",
    ]


@pytest.mark.parametrize("form", ["comment", "tag"])
def test_lax_mode_checks_only_the_cells_marked_to_be_checked(
    pytester: pytest.Pytester, form: str
) -> None:
    marked = ("# NBVAL_CHECK_OUTPUT\n" if form == "comment" else "") + "print(2)"
    tags = ("nbval-check-output",) if form == "tag" else ()
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran("print(1)", stdout("one\n")), ran(marked, stdout("2\n"), count=2, tags=tags)],
    )
    got = run(pytester, "-v", "--ntdd-outputs-lax", "nb.ipynb")
    got.assert_outcomes(passed=2)  # the notebook's run to its end, and cell 2's check
    got.stdout.fnmatch_lines(["*nb.ipynb::outputs_of_cell_2 PASSED*"])
    assert "outputs_of_cell_1" not in got.stdout.str()  # unmarked: not checked


@pytest.mark.parametrize("form", ["comment", "tag", "old comment"])
def test_strict_mode_leaves_out_the_cells_marked_to_be_ignored(
    pytester: pytest.Pytester, form: str
) -> None:
    word = "PYTEST_VALIDATE_IGNORE_OUTPUT" if form == "old comment" else "NBVAL_IGNORE_OUTPUT"
    source = ("" if form == "tag" else f"# {word}\n") + "print(object())"
    tags = ("nbval-ignore-output",) if form == "tag" else ()
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran(source, stdout("<object object at 0x7f0>\n"), tags=tags)],
    )
    got = run(pytester, "-v", "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=1)  # the run to the end only
    assert "outputs_of_cell_1" not in got.stdout.str()


@pytest.mark.parametrize("form", ["comment", "tag"])
def test_a_cell_marked_to_be_skipped_is_neither_run_nor_checked(
    pytester: pytest.Pytester, form: str
) -> None:
    source = ("# NBVAL_SKIP\n" if form == "comment" else "") + "raise SystemExit('never run')"
    tags = ("nbval-skip",) if form == "tag" else ()
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran(source, stdout("was run once\n"), tags=tags), ran("z = 1", count=2)],
    )
    got = run(pytester, "-v", "-rs", "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=2, skipped=1)
    reason = "# NBVAL_SKIP" if form == "comment" else "tag nbval-skip"
    got.stdout.fnmatch_lines([f"SKIPPED [[]1] nb.ipynb:*: {reason}: not run, so its outputs*"])


@pytest.mark.parametrize("form", ["comment", "tag"])
def test_a_cell_marked_to_raise_has_its_error_compared_by_name_and_message(
    pytester: pytest.Pytester, form: str
) -> None:
    def raising(message: str) -> Any:
        source = ("# NBVAL_RAISES_EXCEPTION\n" if form == "comment" else "") + (
            "raise ValueError('bad input')"
        )
        error = nbformat.v4.new_output(
            "error", ename="ValueError", evalue=message, traceback=["any", "frames"]
        )
        return ran(source, error, tags=("raises-exception",) if form == "tag" else ())

    write_notebook(pytester.path / "same.ipynb", [raising("bad input"), "after = 1"])
    write_notebook(pytester.path / "other.ipynb", [raising("other input"), "after = 1"])
    got = run(pytester, "-v", "-p", "no:randomly", "--ntdd-outputs", "same.ipynb", "other.ipynb")
    got.stdout.fnmatch_lines(
        ["*same.ipynb::outputs_of_cell_1 PASSED*", "*other.ipynb::outputs_of_cell_1 FAILED*"]
    )
    got.stdout.fnmatch_lines(["evalue differs:", "  -other input", "  +bad input"])


def test_a_cell_saved_with_outputs_but_never_run_fails_and_one_without_is_skipped_saying_so(
    pytester: pytest.Pytester,
) -> None:
    """Not compared, as nbval does not compare it: a check that passed would say it was.
    An empty cell (the one Jupyter leaves at a notebook's end) too."""
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("print(1)", stdout("stale\n"), count=None),
            ran("print(2)", count=None),
            ran("", count=None),
        ],
    )
    got, found = verdicts(pytester, "-rfs", "--ntdd-outputs", "nb.ipynb")
    assert found == {
        "outputs_of_cell_1": "FAILED",
        "outputs_of_cell_2": "SKIPPED",
        "outputs_of_cell_3": "SKIPPED",
    }
    assert got.ret == pytest.ExitCode.TESTS_FAILED
    got.stdout.fnmatch_lines(
        [
            "*cell 1 * saved with outputs but never run*",
            "SKIPPED [[]1] nb.ipynb:*: cell 2 (id *) was saved without having been run (it has "
            "no execution count): it has no outputs to compare",
        ]
    )


def test_streams_compare_as_shown_however_the_cell_split_its_printing(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran(
                "import sys\nfor i in range(3):\n    print(f'\\rstep {i}', end='')\nprint()\n"
                "print('a'); print('b', file=sys.stderr); print('c')",
                stdout("step 2\na\nc\n"),
                nbformat.v4.new_output("stream", name="stderr", text="b\n"),
            )
        ],
    )
    got = run(pytester, "-v", "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=2)


SANITIZE = "regex: \\d{2}:\\d{2}:\\d{2}\nreplace: TIME\n\nregex: id=\\d+\nreplace: id=N\n"


@pytest.mark.parametrize("option", ["--nbval-sanitize-with", "--ntdd-outputs-sanitize-with"])
def test_an_nbval_sanitize_file_cleans_both_sides_before_they_compare(
    pytester: pytest.Pytester, option: str
) -> None:
    pytester.path.joinpath("sanitize.cfg").write_text(SANITIZE)
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran(
                "import datetime, random\nprint(datetime.datetime.now().strftime('%H:%M:%S'))\n"
                "print(f'id={random.randrange(10**6, 10**7)}')",
                stdout("12:01:02\nid=4242424\n"),
            )
        ],
    )
    plugins = ["nbval"] if option.startswith("--nbval") else []
    unsanitized = run(pytester, "--ntdd-outputs", "nb.ipynb")
    unsanitized.assert_outcomes(passed=1, failed=1)
    got = run(pytester, "--ntdd-outputs", f"{option}=sanitize.cfg", "nb.ipynb", plugins=plugins)
    got.assert_outcomes(passed=2)


def test_a_sanitize_file_with_a_broken_regex_is_one_usage_error_naming_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.path.joinpath("bad.cfg").write_text("regex: (unclosed\nreplace: X\n")
    write_notebook(pytester.path / "nb.ipynb", ["x = 1"])
    got = run(pytester, "--ntdd-outputs", "--ntdd-outputs-sanitize-with=bad.cfg", "nb.ipynb")
    assert got.ret == pytest.ExitCode.USAGE_ERROR
    got.stderr.fnmatch_lines(["*bad.cfg: regex '(unclosed'*"])


NOISY = {
    "addresses": ("print(object())", "<object object at 0x7f1234abcd>\n"),
    "timestamps": (
        "import datetime\nprint('at', datetime.datetime.now().isoformat(' '))",
        "at 2024-01-02 03:04:05.678901\n",
    ),
    "durations": (
        "import time\nt = time.perf_counter()\nprint(f'took {time.perf_counter() - t + 1:.3f} s')",
        "took 1.234 s\n",
    ),
    "tqdm": (
        "import sys\nprint('100%|##########| 10/10 [00:00<00:00, 2491.09it/s]', file=sys.stderr)",
        "100%|##########| 10/10 [00:01<00:00,  9.87it/s]\n",
    ),
    "floats": ("print(0.1 + 0.2)", "0.3\n"),
}


@pytest.mark.parametrize("name", sorted(NOISY))
def test_each_normaliser_makes_its_brittle_output_compare_and_is_off_by_default(
    pytester: pytest.Pytester, name: str
) -> None:
    source, saved = NOISY[name]
    stream = "stderr" if name == "tqdm" else "stdout"
    output = nbformat.v4.new_output("stream", name=stream, text=saved)
    write_notebook(pytester.path / "nb.ipynb", [ran(source, output)])
    run(pytester, "--ntdd-outputs", "nb.ipynb").assert_outcomes(passed=1, failed=1)
    normalised = run(pytester, "--ntdd-outputs", f"--ntdd-outputs-normalize={name}", "nb.ipynb")
    normalised.assert_outcomes(passed=2)


def test_the_floats_normaliser_keeps_the_digits_asked_for(pytester: pytest.Pytester) -> None:
    write_notebook(pytester.path / "nb.ipynb", [ran("print(2 / 3)", stdout("0.6667\n"))])
    for digits, verdict in (("4", {"passed": 2}), ("6", {"passed": 1, "failed": 1})):
        got = run(
            pytester,
            "--ntdd-outputs",
            "--ntdd-outputs-normalize=floats",
            f"--ntdd-outputs-float-digits={digits}",
            "nb.ipynb",
        )
        got.assert_outcomes(**verdict)


def test_an_unknown_normaliser_is_a_usage_error_listing_the_known(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", ["x = 1"])
    got = run(pytester, "--ntdd-outputs", "--ntdd-outputs-normalize=dates", "nb.ipynb")
    assert got.ret == pytest.ExitCode.USAGE_ERROR
    got.stderr.fnmatch_lines(["*unknown normaliser(s) dates (known: addresses, *, or all)*"])


@pytest.mark.parametrize("nbval", ["--nbval-lax", "--nbval"])
@pytest.mark.parametrize("ours", ["--ntdd-outputs", "--ntdd-outputs-lax"])
def test_checking_outputs_beside_nbval_is_refused_never_done_twice(
    pytester: pytest.Pytester, nbval: str, ours: str
) -> None:
    write_notebook(pytester.path / "nb.ipynb", [ran("print(1)", stdout("1\n"))])
    got = run(pytester, ours, nbval, "nb.ipynb", plugins=["nbval"])
    assert got.ret == pytest.ExitCode.USAGE_ERROR
    got.stderr.fnmatch_lines([f"*{ours} checks outputs as {nbval} does*drop {nbval}*"])


def test_the_mode_and_the_normalisers_can_live_in_pyproject(pytester: pytest.Pytester) -> None:
    pytester.path.joinpath("pyproject.toml").write_text(
        '[tool.ntdd]\noutputs = "lax"\noutputs_normalize = ["addresses"]\n'
    )
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("print(1)", stdout("changed\n")),  # not marked: lax mode leaves it
            ran("# NBVAL_CHECK_OUTPUT\nprint(object())", stdout("<object object at 0x7f00aa>\n")),
        ],
    )
    got = run(pytester, "-v", "--ntdd", "nb.ipynb")
    got.assert_outcomes(passed=2)
    got.stdout.fnmatch_lines(["*nb.ipynb::outputs_of_cell_2 PASSED*"])
    pytester.path.joinpath("pyproject.toml").write_text('[tool.ntdd]\noutputs = "every"\n')
    bad = run(pytester, "--ntdd", "nb.ipynb")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(['*outputs must be "strict" or "lax", got *every*'])


@pytest.mark.slow
def test_the_checks_run_where_their_notebook_runs_under_xdist(pytester: pytest.Pytester) -> None:
    for name in ("a", "b"):
        write_notebook(
            pytester.path / f"{name}.ipynb",
            [ran(f"print('{name}')", stdout(f"{name}\n")), ran("1 + 1", result("2", 2), count=2)],
        )
    got = run(pytester, "-n", "2", "--ntdd-outputs", "a.ipynb", "b.ipynb", plugins=["xdist"])
    got.assert_outcomes(passed=6)


def test_a_text_notebook_has_no_saved_outputs_and_no_checks(pytester: pytest.Pytester) -> None:
    pytest.importorskip("jupytext")
    pytester.path.joinpath("nb.py").write_text(
        "# ---\n# jupyter:\n#   jupytext:\n#     text_representation:\n"
        "#       format_name: percent\n# ---\n\n# %%\nprint(1)\n"
    )
    got = run(pytester, "--ntdd-outputs", "nb.py")
    got.assert_outcomes(passed=1)  # its run to the end: nothing saved to compare with


def test_a_notebook_written_back_by_ntdd_passes_its_own_check(pytester: pytest.Pytester) -> None:
    """What `--ntdd-write-notebooks` writes is what `--ntdd-outputs` expects: outputs
    round-trip through the file (streams, results, displays, errors marked to raise)."""
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            "import sys\nprint('out'); print('err', file=sys.stderr)\n{'a': [1, 2]}",
            "from IPython.display import display, HTML\ndisplay(HTML('<b>x</b>'))",
            code("raise KeyError('k')", ("raises-exception",)),
            "# TEST\nassert True",
        ],
    )
    run(pytester, "--ntdd", "--ntdd-write-notebooks=out", "nb.ipynb").assert_outcomes(passed=1)
    written = json.loads((pytester.path / "out" / "nb.ipynb").read_text())
    assert written["cells"][1]["outputs"]  # something to compare
    (pytester.path / "nb.ipynb").unlink()
    got = run(pytester, "--ntdd-outputs", "out/nb.ipynb")
    got.assert_outcomes(passed=5)


def test_a_cell_the_run_leaves_out_is_skipped_with_the_reason(pytester: pytest.Pytester) -> None:
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("# NTDD: skip\nimport time; time.sleep(600)", stdout("trained\n")),
            ran("x = 1", count=2),
        ],
    )
    got = run(pytester, "-rs", "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=2, skipped=1)
    got.stdout.fnmatch_lines(["*# NTDD: skip: not run, so its outputs are not checked*"])


FIGURE = "import matplotlib.pyplot as plt\nplt.plot([0, 1, 2], [0, 1, 4])\nplt.title('growth');"


@pytest.mark.slow
def test_a_figure_a_kernel_saved_passes_and_a_changed_line_fails_with_the_images_on_the_report(
    pytester: pytest.Pytester,
) -> None:
    from nbclient import NotebookClient

    path = write_notebook(pytester.path / "nb.ipynb", ["%matplotlib inline", FIGURE])
    saved = nbformat.read(path, as_version=4)
    NotebookClient(
        saved, timeout=120, resources={"metadata": {"path": str(pytester.path)}}
    ).execute()
    nbformat.write(saved, path)
    assert "image/png" in saved.cells[1].outputs[0]["data"]  # a kernel's figure, saved

    # In a process of its own, as every run whose notebook imports matplotlib.
    same = run(pytester, "-v", "--ntdd-outputs", "nb.ipynb", subprocess=True)
    same.assert_outcomes(passed=3)

    saved.cells[1].source = FIGURE.replace("[0, 1, 4]", "[0, 1, 3]")  # one point moved
    nbformat.write(saved, path)
    changed = run(pytester, "--ntdd-outputs", "--ntdd-report=r.html", "nb.ipynb", subprocess=True)
    changed.assert_outcomes(passed=2, failed=1)
    changed.stdout.fnmatch_lines(["image/png (figure 1 of 1) differs: perceptual distance *"])
    page = (pytester.path / "r.html").read_text()
    for side in ("saved", "fresh", "difference"):
        assert f'<img alt="{side}" src="data:image/png;base64,' in page

    loose = run(
        pytester,
        "--ntdd-outputs",
        "--ntdd-outputs-image-tolerance=size",
        "nb.ipynb",
        subprocess=True,
    )
    loose.assert_outcomes(passed=3)  # the same size: compared by size only, it passes
    unseen = run(
        pytester,
        "--ntdd-outputs",
        "--ntdd-outputs-image-tolerance=off",
        "nb.ipynb",
        subprocess=True,
    )
    unseen.assert_outcomes(passed=3)  # figures left out, as nbval leaves them


def test_a_cell_sets_its_own_image_tolerance_and_a_bad_one_names_the_cell(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(
        pytester.path / "nb.ipynb",
        [ran("#| image-tolerance: lots\nx = 1"), ran("#| image-tolerance: 3\ny = 2")],
    )
    got = run(pytester, "--ntdd-outputs", "nb.ipynb")
    got.assert_outcomes(passed=2, failed=1)  # the run to the end, cell 2's check; cell 1's
    got.stdout.fnmatch_lines(
        ["*nb.ipynb: cell 1 (id *): `#| image-tolerance: lots` must be a number >= 0*"]
    )


def test_outputs_that_differ_can_be_written_back_and_then_pass(pytester: pytest.Pytester) -> None:
    """A difference is the notebook's saved outputs gone stale, not a run that failed:
    `--ntdd-overwrite` writes the fresh ones, and the next check passes."""
    write_notebook(pytester.path / "nb.ipynb", [ran("print('new')", stdout("old\n"))])
    junit = ("--junitxml=out.xml", "-o", "junit_family=xunit1")
    stale = run(pytester, "--ntdd-outputs", "--ntdd-overwrite", *junit, "nb.ipynb")
    stale.assert_outcomes(passed=1, failed=1)
    stale.stdout.fnmatch_lines(["ntdd: wrote 1 notebook as run*"])
    case = ET.parse(pytester.path / "out.xml").find(".//testcase[@name='outputs_of_cell_1']")
    assert case is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["notebook"] == "nb.ipynb" and properties["cell"] == "1"
    run(pytester, "--ntdd-outputs", "nb.ipynb").assert_outcomes(passed=2)


def test_a_cell_that_raises_errors_the_checks_below_it_not_those_above(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("print('above')", stdout("above\n")),
            ran("1 / 0", count=2),
            ran("print('below')", stdout("below\n"), count=3),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "nb.ipynb")
    assert found == {
        "outputs_of_cell_1": "PASSED",  # it ran, as Run All ran it, before cell 2 raised
        "outputs_of_cell_2": "ERROR",
        "outputs_of_cell_3": "ERROR",  # Run All stops at cell 2: it never ran
    }
    got.stdout.fnmatch_lines(["*test_notebook_runs_to_the_end*ZeroDivisionError*"])


IPYTHON_ENDINGS = [
    ran("%config InlineBackend.figure_format = 'png'\n1 + 1", result("2")),
    ran("a = 1; a", result("1")),
    ran("a = 2; a;"),
    ran("%time 3 + 4", result("7")),
]


def test_a_cells_last_value_shows_after_ipython_syntax_and_semicolons_as_in_a_kernel(
    pytester: pytest.Pytester,
) -> None:
    """What a kernel shows as `Out[n]` (these outputs are a kernel's), ntdd records."""
    write_notebook(pytester.path / "nb.ipynb", IPYTHON_ENDINGS)
    got, found = verdicts(
        pytester, "--ntdd-outputs", "--ntdd-outputs-normalize=durations", "nb.ipynb"
    )
    assert found == {f"outputs_of_cell_{n}": "PASSED" for n in (1, 2, 3)} | {
        "outputs_of_cell_4": "FAILED"  # `%time` prints its times: saved here without them
    }
    got.stdout.fnmatch_lines(["stdout: the fresh outputs have it, the saved ones do not:"])


def test_a_test_cells_failed_assert_is_recorded_as_a_kernel_shows_it(
    pytester: pytest.Pytester,
) -> None:
    """pytest rewrites a test cell's `assert` for the test's report; the cell's output
    is a kernel's: the assert's own message, or none."""
    error = nbformat.v4.new_output("error", ename="AssertionError", evalue="", traceback=[])
    said = nbformat.v4.new_output("error", ename="AssertionError", evalue="too big", traceback=[])
    write_notebook(
        pytester.path / "nb.ipynb",
        [
            ran("x = 0.1 + 0.2"),
            ran("# TEST: bare\nassert x == 0.3", error, count=2, tags=("raises-exception",)),
            ran(
                "# TEST: said\nassert x < 0.3, 'too big'", said, count=3, tags=("raises-exception",)
            ),
        ],
    )
    got, found = verdicts(pytester, "--ntdd-outputs", "nb.ipynb")
    assert found == {f"outputs_of_cell_{n}": "PASSED" for n in (1, 2, 3)}
    got.stdout.fnmatch_lines(["*test_bare FAILED*", "*test_said FAILED*"])


def test_lax_mode_fails_an_unmarked_cell_saved_with_outputs_but_never_run_as_nbval_does(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(
        pytester.path / "nb.ipynb", [ran("print(1)", stdout("1\n"), count=None), ran("y = 2")]
    )
    _, found = verdicts(pytester, "--ntdd-outputs-lax", "nb.ipynb")
    assert found == {"outputs_of_cell_1": "FAILED"}


def test_a_sanitize_file_is_found_where_pytest_was_started_as_nbval_finds_it(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\n")  # the rootdir: above the folder pytest starts in
    sub = pytester.mkdir("sub")
    sub.joinpath("sanitize.cfg").write_text("regex: \\d+\nreplace: N\n")
    write_notebook(
        sub / "nb.ipynb", [ran("import random\nprint(random.random())", stdout("0.5\n"))]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        got = run(
            pytester, "--ntdd-outputs", "--ntdd-outputs-sanitize-with=sanitize.cfg", "nb.ipynb"
        )
    got.assert_outcomes(passed=2)
    missing = run(pytester, "--ntdd-outputs", "--ntdd-outputs-sanitize-with=gone.cfg", "sub")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(["*--ntdd-outputs-sanitize-with: *gone.cfg: cannot be read: *"])
