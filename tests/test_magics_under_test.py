"""Magics in test cells: they run as in a kernel, or the test fails; installs never run.

A kernel runs `%run script.py` and `%prun stmt`, and shows what they raise as
the cell's error; a test of that cell is red there, so it is red here. A
magic ntdd cannot run leaves the cell's code unrun: its test fails, naming
the cell and the magic. `!pip install` is an install, as `%pip install` is.
"""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest
from conftest import run

from ntdd.cells.cell_code import to_python
from ntdd.cells.magics import cannot_run, installs, notes

SCRIPTS = {
    "checks.py": "ran = 1\nassert ran == 2\n",
    "good.py": "good = 2\n\ndef helper():\n    return good\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "exits0.py": "import sys\nsys.exit(0)\n",
}


@pytest.fixture
def scripts(pytester: pytest.Pytester) -> None:
    for name, text in SCRIPTS.items():
        (pytester.path / name).write_text(text)


# -- %run ---------------------------------------------------------------------------


def test_a_script_that_raises_under_run_fails_its_test(
    notebook: Any, run_notebook: Any, scripts: None
) -> None:
    notebook(["x = 1", "# TEST: checks\n%run checks.py\nassert ran == 1"])
    result = run_notebook()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["checks.py:2: AssertionError"])


def test_a_scripts_names_reach_the_notebook_and_its_functions_their_globals(
    notebook: Any, run_notebook: Any, scripts: None
) -> None:
    notebook(
        [
            "%run good.py",
            "# TEST: from setup\nassert helper() == good == 2",
            "# TEST: in the test\n%run -i good.py\nassert helper() == 2",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


def test_a_script_that_exits_fails_unless_its_status_is_zero_or_run_e(
    notebook: Any, run_notebook: Any, scripts: None
) -> None:
    notebook(
        [
            "# TEST: exits\n%run exits.py",
            "# TEST: exits ignored\n%run -e exits.py\n%run exits0.py",
        ]
    )
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_exits FAILED*", "*test_exits_ignored PASSED*"])


def test_run_runs_a_module_and_a_notebook(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester
) -> None:
    (pytester.path / "here.py").write_text("from_module = 5\n")
    notebook(["from_other = 7"], name="other.ipynb")
    notebook(["# TEST\n%run -m here\n%run other.ipynb\nassert (from_module, from_other) == (5, 7)"])
    run_notebook().assert_outcomes(passed=1)


# -- %prun ---------------------------------------------------------------------------


def test_a_profiled_statement_runs_and_fails_its_test_when_it_raises(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            "x = 1",
            "# TEST: profiled\n%prun -q assert x == 2",
            "# TEST: profiled and passing\n%prun y = x + 1\nassert y == 2",
        ]
    )
    result = run_notebook("nb.ipynb", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_profiled FAILED*", "*test_profiled_and_passing PASSED*"])


def test_a_profile_report_never_goes_to_a_pager(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    paged = pytester.path / "paged"
    monkeypatch.setenv("TERM", "xterm-256color")  # IPython pages on a terminal...
    monkeypatch.setenv("LINES", "2")  # ...when the report is longer than the screen
    monkeypatch.setenv("PAGER", f"touch {paged}; cat > /dev/null")
    notebook(["# TEST\n%prun sorted(str(n) for n in range(100))"])
    run_notebook().assert_outcomes(passed=1)
    assert not paged.exists()


def test_a_magic_that_does_not_expand_variables_is_not_expanded(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["x = 1", "# TEST\n%time s = '{x}'\nassert s == '{x}'"])
    run_notebook().assert_outcomes(passed=1)


# -- what cannot run -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("magic", "reason"),
    [
        ("%debug", "it starts the interactive debugger"),
        ("%run -d good.py", "`%run -d` starts the interactive debugger"),
        ("%store -r kept", "not a magic ntdd runs"),
    ],
)
def test_a_magic_that_cannot_run_fails_its_test_naming_the_cell_and_the_magic(
    magic: str, reason: str, notebook: Any, run_notebook: Any, scripts: None
) -> None:
    notebook([f"# TEST: uses it\n{magic}\nassert True"])
    result = run_notebook()
    result.assert_outcomes(failed=1)
    said = f"{magic!r} cannot run under test: {reason}"
    result.stdout.fnmatch_lines([f"*CannotRunUnderTest: nb.ipynb (test cell 1, id *): {said}"])


def test_in_a_setup_cell_a_magic_that_cannot_run_is_dropped_with_a_warning(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(["%debug\nx = 1", "# TEST\nassert x == 1"])
    result = run_notebook("nb.ipynb", "-W", "default")
    result.assert_outcomes(passed=1)
    said = [line for line in result.outlines if "'%debug'" in line and "dropped" in line]
    assert len(said) == 1, said  # once: as the notebook is read, or (exported) as it runs
    collected = "ntdd: warning: nb.ipynb: cell 1 (id *): '%debug' cannot run under test *dropped"
    exported = "*nb.ipynb (setup cell 1, id *):1: NtddWarning: *'%debug' dropped*"
    assert fnmatch.fnmatch(said[0], collected) or fnmatch.fnmatch(said[0], exported), said


def test_shell_aliases_run(notebook: Any, run_notebook: Any) -> None:
    notebook(["# TEST\n%mkdir made\n%ls\nimport os\nassert os.path.isdir('made')"])
    run_notebook().assert_outcomes(passed=1)


def test_reading_a_notebook_says_which_magics_will_fail_their_test() -> None:
    cells = {
        "test": "# TEST\n%debug\n!pip install x",
        "setup": "%store -r kept",
    }
    said = {
        kind: notes(to_python(source).magics, in_test=kind == "test")
        for kind, source in cells.items()
    }
    assert said == {
        "test": [
            "'%debug' cannot run under test (it starts the interactive debugger): the test fails",
            "'!pip install x' will be dropped: installs never run under test",
        ],
        "setup": [
            "'%store -r kept' cannot run under test (not a magic ntdd runs): it will be dropped"
        ],
    }


# -- ntdd's own ------------------------------------------------------------------------

# Left in a notebook from Jupyter: under test, the run `%ntdd` would start is running.
NTDDS_OWN = "%load_ext ntdd\n%reload_ext ntdd\n%ntdd\n%ntdd -k x\n%ntdd --live -v\n%unload_ext ntdd"


def test_ntdds_own_magics_left_in_a_notebook_do_nothing_under_test_without_a_word(
    notebook: Any, run_notebook: Any
) -> None:
    notebook(
        [
            f"{NTDDS_OWN}\nx = 1",
            NTDDS_OWN,
            f"# TEST: in a test cell\n{NTDDS_OWN}\nassert x == 1",
            "# TEST: after them\nassert x == 1",
        ]
    )
    run_notebook().assert_outcomes(passed=2, warnings=0)


def test_reading_a_notebook_says_nothing_of_ntdds_own_magics() -> None:
    calls = to_python(f"# TEST\n{NTDDS_OWN}").magics
    assert notes(calls, in_test=True) == notes(calls, in_test=False) == []


# -- installs ----------------------------------------------------------------------------

INSTALLS = [
    "pip install torch",
    "pip3 install -q torch",
    "python -m pip install torch",
    "python3 -m pip -q install torch",
    "/usr/bin/python3.11 -m pip install -U torch",
    "uv pip install torch",
    "uv add torch",
    "conda install -y torch",
    "mamba install torch",
    "micromamba install torch",
    "PIP_NO_INPUT=1 pip uninstall -y torch",
    "cd .. && pip install -e .",
    "pip --timeout 60 install torch",
    "python -m pip --cache-dir pip-cache -q install torch",
    "pip3 --proxy http://proxy:3128 install torch",
]
NOT_INSTALLS = [
    "pip --version",
    "pip list",
    "pip --timeout 60 list",
    "python -m pytest",
    "conda list",
    "echo pip install",
]


@pytest.mark.parametrize("command", INSTALLS)
def test_an_install_is_told_apart(command: str) -> None:
    assert installs(command)


@pytest.mark.parametrize("command", NOT_INSTALLS)
def test_other_commands_are_not_installs(command: str) -> None:
    assert not installs(command)


def test_run_options_that_cannot_run_under_test_are_found_by_ipythons_grammar() -> None:
    assert cannot_run("run", "-d script.py")
    assert cannot_run("run", "-t -p -s cumulative script.py")
    assert cannot_run("run", "-t -N3 script.py -d") is None  # -d is the script's own argument
    assert cannot_run("run", "-m module") is None


def test_a_shell_escape_that_installs_is_not_run(
    notebook: Any, run_notebook: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installers that only leave a mark when they run, and nothing else on the PATH:
    were ntdd to run an install, no real installer could change an environment."""
    tools = pytester.path / "tools"
    tools.mkdir()
    for tool in ("pip", "pip3", "python", "uv", "conda"):
        script = tools / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{pytester.path}/ran.txt"\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(tools))
    escapes = "\n".join(f"!{command}" for command in [*INSTALLS[:3], "uv pip install x"])
    notebook([f"# TEST\n{escapes}\nout = !conda install -y x\n!pip --version\nassert out == []"])
    result = run_notebook("nb.ipynb", "-W", "default")
    result.assert_outcomes(passed=1)
    said = [line for line in result.outlines if "'!pip install torch'" in line]
    assert len(said) == 1 and "dropped" in said[0], said
    assert (pytester.path / "ran.txt").read_text() == "pip --version\n"


# -- cell magics --------------------------------------------------------------------

COUNTED = (
    "class Count:\n    n = 0\n    def __repr__(self):\n        Count.n += 1\n        return 'c'"
)


def test_a_cell_magics_body_shows_its_last_expression_as_a_kernel_does(
    notebook: Any, run_notebook: Any
) -> None:
    """`%%capture` runs its body as a cell: its last expression is formatted (and captured),
    a trailing `;` or not, as a kernel reads the `;` off the cell, the magic's call."""
    notebook(
        [
            COUNTED,
            "%%capture\nCount()",
            "# TEST: formatted\nassert Count.n == 1",
            "%%capture\nCount();",
            "# TEST: a semicolon in the body does not hide it\nassert Count.n == 2",
        ]
    )
    run_notebook().assert_outcomes(passed=2)


# -- display-only magics fail where a kernel's import fails ----------------------------


def test_load_ext_of_an_extension_that_is_not_installed_fails_as_in_a_kernel(
    notebook: Any, run_notebook: Any
) -> None:
    """A kernel's Run All stops at `%load_ext line_profiler` without line_profiler."""
    notebook(["%load_ext no_such_extension\nx = 1", "# TEST\nassert x == 1"])
    result = run_notebook()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ModuleNotFoundError: No module named 'no_such_extension'*"])


def test_load_ext_of_an_importable_extension_and_of_ntdd_do_nothing(
    pytester: pytest.Pytester, notebook: Any, run_notebook: Any
) -> None:
    (pytester.path / "my_extension.py").write_text("def load_ipython_extension(ip):\n    pass\n")
    notebook(["%load_ext my_extension\n%reload_ext ntdd\nx = 1", "# TEST\nassert x == 1"])
    run_notebook().assert_outcomes(passed=1)


def test_the_widget_backend_without_ipympl_fails_as_in_a_kernel(
    pytester: pytest.Pytester, notebook: Any, run_notebook: Any
) -> None:
    package = pytester.path / "matplotlib"
    package.mkdir()
    (package / "__init__.py").write_text("")  # the notebook's folder comes first on sys.path
    notebook(["%matplotlib widget\nx = 1", "# TEST\nassert x == 1"])
    result = run_notebook()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*RuntimeError: 'widget' is not a recognised GUI loop*"])


@pytest.mark.slow
def test_matplotlib_magic_without_matplotlib_fails_as_in_a_kernel(
    pytester: pytest.Pytester, notebook: Any
) -> None:
    """A kernel's `%matplotlib` imports matplotlib; where that fails, so does the cell.
    (The notebook's folder comes first on sys.path: there, matplotlib cannot be imported.)"""
    package = pytester.path / "matplotlib"
    package.mkdir()
    (package / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n"
    )
    notebook(["%matplotlib inline\nx = 1", "# TEST\nassert x == 1"])
    result = run(pytester, "--ntdd", subprocess=True)  # a process where it was never imported
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ModuleNotFoundError: No module named 'matplotlib'*"])
