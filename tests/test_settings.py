"""Settings declared once (`ntdd.settings.table`) and resolved in one place: the command
line over the ini over `[tool.ntdd]` over the default; a bad value named where it came
from; the combinations that would change what a file says refused, in one line."""

from __future__ import annotations

import ast
import json
import os

import nbformat
import pytest
from conftest import ROOT, code, run, sha, write_notebook

from ntdd.config import Smoke
from ntdd.settings.parsers import PARSERS
from ntdd.settings.table import ROWS

# Prints the settings the run resolved, one per line, before it collects anything.
SHOW = """
from ntdd.runtime.settings import settings_of


def pytest_report_header(config):
    settings = settings_of(config)
    smoke = settings.smoke
    return [
        f"timeout={settings.timeout}",
        f"devices={','.join(settings.devices)}",
        f"run_untested={settings.run_untested}",
        f"smoke_batches={smoke.batches if smoke else None}",
        f"parameters={dict(settings.parameters.common)}",
    ]
"""


@pytest.fixture
def shown(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(SHOW)
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    return pytester


def resolved(pytester: pytest.Pytester, *args: str) -> dict[str, str]:
    """The settings a `--ntdd --collect-only` run resolved, as its header shows them."""
    result = run(pytester, "--ntdd", "--collect-only", *args, "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    lines = (line.split("=", 1) for line in result.stdout.lines if "=" in line)
    return {name: value for name, value in lines if name.isidentifier()}


# -- the table ----------------------------------------------------------------------


def test_every_row_names_a_parser_and_each_flag_ini_key_and_pyproject_key_once() -> None:
    assert {row.parse for row in ROWS} <= set(PARSERS)
    for place in ("name", "flag", "ini", "pyproject"):
        given = [getattr(row, place) for row in ROWS if getattr(row, place)]
        assert len(given) == len(set(given)), place


def test_the_table_imports_nothing_but_the_defaults() -> None:
    """Every pytest run imports it, with or without `--ntdd`."""
    tree = ast.parse((ROOT / "ntdd" / "settings" / "table.py").read_text(encoding="utf-8"))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__"
    }
    imported |= {
        a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names
    }
    assert imported <= {"ntdd.defaults", "typing"}


def test_pytest_help_lists_every_flag_and_ini_key_of_the_table(pytester: pytest.Pytester) -> None:
    help_text = run(pytester, "--help").stdout.str()
    missing = [
        name
        for row in ROWS
        for name in (row.flag, row.ini)
        if name and not any(line.lstrip().startswith(name) for line in help_text.splitlines())
    ]
    assert not missing


# -- precedence: the command line, the ini, [tool.ntdd], the default ---------------


PLACES = [
    # (the setting as the header shows it, the flag, the ini line, the [tool.ntdd] line,
    #  the value from each place and the default)
    ("timeout", ["--ntdd-timeout", "10"], "ntdd_timeout = 20", "timeout = 30",
     ("10.0", "20.0", "30.0", "600.0")),
    ("devices", ["--ntdd-devices", "mps"], "ntdd_devices = cuda", 'devices = ["cuda:1"]',
     ("mps", "cuda", "cuda:1", "cpu,cuda")),
    ("run_untested", ["--ntdd-run-untested"], "ntdd_run_untested = true", "run_untested = true",
     ("True", "True", "True", "False")),
    ("smoke_batches", ["--ntdd-smoke", "--ntdd-smoke-batches", "5"], "ntdd_smoke_batches = 6",
     "smoke_batches = 7", ("5", "6", "7", "4")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "flag", "ini", "pyproject", "values"), PLACES)
def test_the_command_line_wins_over_the_ini_which_wins_over_pyproject_then_the_default(
    shown: pytest.Pytester,
    name: str,
    flag: list[str],
    ini: str,
    pyproject: str,
    values: tuple[str, str, str, str],
) -> None:
    smoke = ["--ntdd-smoke"] if name == "smoke_batches" else []
    assert resolved(shown, *smoke)[name] == values[3]
    shown.makepyprojecttoml(f"[tool.ntdd]\n{pyproject}\n")
    assert resolved(shown, *smoke)[name] == values[2]
    shown.makeini(f"[pytest]\n{ini}\n")  # pytest.ini: pytest reads it before pyproject.toml
    assert resolved(shown, *smoke)[name] == values[1]
    assert resolved(shown, *flag)[name] == values[0]


def test_an_ini_switch_set_false_turns_off_what_pyproject_turns_on(shown: pytest.Pytester) -> None:
    shown.makepyprojecttoml("[tool.ntdd]\nsmoke = true\nrun_untested = true\n")
    assert resolved(shown)["smoke_batches"] == "4"
    got = resolved(shown, "-o", "ntdd_smoke=false", "-o", "ntdd_run_untested=false")
    assert (got["smoke_batches"], got["run_untested"]) == ("None", "False")


def test_test_only_parameters_merge_name_by_name_in_the_same_order(shown: pytest.Pytester) -> None:
    shown.makepyprojecttoml("[tool.ntdd.parameters]\na = 1\nb = 1\nc = 1\n")
    shown.makeini("[pytest]\nntdd_parameters = b=2 c=2\n")
    got = resolved(shown, "--ntdd-param", "c=3")
    assert got["parameters"] == str({"a": "1", "b": "2", "c": "3"})


# -- a bad value, named where it came from -----------------------------------------


@pytest.mark.parametrize(
    ("place", "says"),
    [
        ("flag", "ntdd: --ntdd-timeout: timeout must be a number of seconds >= 0, got 'soon'"),
        ("ini", "ntdd: ini ntdd_timeout: timeout must be a number of seconds >= 0, got 'soon'"),
        (
            "pyproject",
            "ntdd: */pyproject.toml [[]tool.ntdd[]]: timeout must be a number of seconds >= 0, "
            "got 'soon'",
        ),
    ],
)
def test_a_bad_value_is_one_usage_error_naming_where_it_came_from(
    shown: pytest.Pytester, place: str, says: str
) -> None:
    args = ["--ntdd-timeout", "soon"] if place == "flag" else []
    if place == "ini":
        shown.makeini("[pytest]\nntdd_timeout = soon\n")
    if place == "pyproject":
        shown.makepyprojecttoml('[tool.ntdd]\ntimeout = "soon"\n')
    result = run(shown, "--ntdd", *args, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {says}"])


@pytest.mark.parametrize(
    ("args", "pyproject", "says"),
    [
        (["-o", "ntdd_smoke_names=2x"], "", "ntdd: ini ntdd_smoke_names: smoke_names must be*"),
        ([], "smoke_epochs = 0", "ntdd: */pyproject.toml [[]tool.ntdd[]]: smoke_epochs must be*"),
        (["--ntdd-shard", "3/2"], "", "ntdd: --ntdd-shard: expected K/N*"),
        (["-o", "ntdd_parameters=lr"], "", "ntdd: ini ntdd_parameters: 'lr' is not NAME=VALUE*"),
    ],
)
def test_each_kind_of_value_names_its_place(
    shown: pytest.Pytester, args: list[str], pyproject: str, says: str
) -> None:
    shown.makepyprojecttoml(f"[tool.ntdd]\nsmoke = true\n{pyproject}\n")
    result = run(shown, "--ntdd", *args, "nb.ipynb")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {says}"])


# -- combinations refused, where the settings are built ------------------------------

PARAMETERS = "[tool.ntdd.parameters]\nx = 2\n"
REFUSED = [
    # (the command line, pyproject.toml's [tool.ntdd], what the one line says)
    (["--ntdd-overwrite", "--ntdd-smoke"], "",
     "--ntdd-overwrite with --ntdd-smoke: each notebook would be written over with a smoke "
     "run's outputs, its trainings cut short; write copies with --ntdd-write-notebooks DIR "
     "(they say they are a smoke run's), or overwrite in a run without smoke mode"),
    (["--ntdd-overwrite", "-o", "ntdd_smoke=true"], "", "--ntdd-overwrite with ini ntdd_smoke: *"),
    (["--ntdd-overwrite"], "[tool.ntdd]\nsmoke = true\n",
     "--ntdd-overwrite with */pyproject.toml [[]tool.ntdd[]] smoke: *"),
    (["--ntdd-overwrite", "--ntdd-param", "x=2"], "",
     "--ntdd-overwrite with --ntdd-param: each notebook would be written over with the outputs "
     "of parameters its own cells do not set; write copies with --ntdd-write-notebooks DIR "
     "(they say which), or overwrite in a run without test-only parameters"),
    (["--ntdd-overwrite", "-o", "ntdd_parameters=x=2"], "",
     "--ntdd-overwrite with ini ntdd_parameters: *"),
    (["--ntdd-overwrite"], PARAMETERS,
     "--ntdd-overwrite with */pyproject.toml [[]tool.ntdd[]] parameters: *"),
    (["--ntdd-overwrite", "--ntdd-write-notebooks", "out"], "",
     "--ntdd-write-notebooks and --ntdd-overwrite: give one of them"),
    (["--ntdd-write-incomplete"], "",
     "--ntdd-write-incomplete writes with --ntdd-write-notebooks DIR or --ntdd-overwrite"),
    (["--ntdd-outputs", "--ntdd-outputs-lax"], "",
     "--ntdd-outputs and --ntdd-outputs-lax: choose one"),
    (["--ntdd-outputs", "--ntdd-smoke"], "",
     "--ntdd-outputs with --ntdd-smoke: a smoke run's outputs are not the notebook's (its "
     "trainings cut short), and would be checked against those it saved; check outputs in a "
     "run without smoke mode"),
    (["--ntdd-outputs-lax"], "[tool.ntdd]\nsmoke = true\n",
     "--ntdd-outputs-lax with */pyproject.toml [[]tool.ntdd[]] smoke: *"),
    (["--ntdd-outputs-lax", "--ntdd-param", "x=2"], "",
     "--ntdd-outputs-lax with --ntdd-param: the outputs of parameters the notebook's own cells "
     "do not set would be checked against those it saved; check outputs in a run without "
     "test-only parameters"),
    (["--ntdd-summary", "results.txt", "--ntdd-report", "results.txt"], "",
     "--ntdd-summary and --ntdd-report both name results.txt: one would write over what the "
     "other says; give each its own file"),
    (["--ntdd-store-durations", "d.json"], '[tool.ntdd]\nreport = "d.json"\n',
     "*pyproject.toml [[]tool.ntdd[]] report and --ntdd-store-durations both name d.json: *"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "pyproject", "says"), REFUSED)
def test_a_combination_that_would_change_what_a_file_says_is_refused_in_one_line(
    pytester: pytest.Pytester, args: list[str], pyproject: str, says: str
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", [code("x = 1", ["parameters"]), "# TEST\nx"])
    if pyproject:
        pytester.makepyprojecttoml(pyproject)
    before = sha(path)

    result = run(pytester, "--ntdd", *args, "nb.ipynb")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.strip()] == [result.stderr.lines[0]]
    result.stderr.fnmatch_lines([f"ERROR: ntdd: {says}"])
    assert sha(path) == before
    assert not (pytester.path / "out").exists()


def test_what_is_refused_in_place_is_allowed_once_the_other_option_is_off(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    pytester.makepyprojecttoml("[tool.ntdd]\nsmoke = true\n")
    result = run(pytester, "--ntdd", "--ntdd-overwrite", "-o", "ntdd_smoke=false", "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK
    assert nbformat.read(path, as_version=4).cells[0].execution_count == 1


def test_durations_recorded_in_a_smoke_run_are_allowed(pytester: pytest.Pytester) -> None:
    """They balance the runs that read them: a project whose every run is a smoke run
    (`[tool.ntdd] smoke = true`) records them in its sharded CI, as the workflow does."""
    write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    result = run(pytester, "--ntdd", "--ntdd-smoke", "--ntdd-store-durations", "d.json", "nb.ipynb")
    assert result.ret == pytest.ExitCode.OK
    assert list(json.loads((pytester.path / "d.json").read_text())) == ["nb.ipynb"]


# -- what the writer says ---------------------------------------------------------


def test_a_smoke_or_parameterised_runs_copy_says_so_in_its_metadata(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", [code("x = 1", ["parameters"]), "# TEST\nx"])

    result = run(
        pytester, "--ntdd", "--ntdd-smoke", "--ntdd-param", "x=2",
        "--ntdd-write-notebooks", "out", "nb.ipynb",
    )  # fmt: skip

    assert result.ret == pytest.ExitCode.OK
    copy = nbformat.read(pytester.path / "out" / "nb.ipynb", as_version=4)
    assert copy.metadata["ntdd"] == {
        "written_from": "nb.ipynb",
        "smoke": Smoke().describe(),
        "parameters": {"x": "2"},
    }
    run(pytester, "--ntdd", "--ntdd-write-notebooks", "out", "nb.ipynb")
    again = nbformat.read(pytester.path / "out" / "nb.ipynb", as_version=4)
    assert again.metadata["ntdd"] == {"written_from": "nb.ipynb"}  # the notebook's own run


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_an_error_writing_a_notebook_back_names_the_option_the_user_gave(
    pytester: pytest.Pytester,
) -> None:
    path = write_notebook(pytester.path / "nb.ipynb", ["x = 1", "# TEST\nassert x"])
    path.chmod(0o444)
    try:
        result = run(pytester, "--ntdd", "--ntdd-overwrite", "nb.ipynb")
    finally:
        path.chmod(0o644)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["ntdd: error: --ntdd-overwrite: *nb.ipynb: read-only*"])
    assert "--ntdd-write-notebooks" not in result.stdout.str()


PROBE = """
import sys


def pytest_unconfigure(config):
    with open("modules.txt", "w", encoding="utf-8") as f:
        f.write("\\n".join(sorted(sys.modules)))
"""


def test_a_run_that_asks_nothing_of_ntdd_reads_no_settings(pytester: pytest.Pytester) -> None:
    """ntdd sleeps: neither the resolver nor `[tool.ntdd]` is read (a bad value there is
    not this run's business), until a module ntdd generated is collected."""
    pytester.makeconftest(PROBE)
    pytester.makepyprojecttoml('[tool.ntdd]\ntimeout = "soon"\n')
    pytester.makepyfile(test_plain="def test_runs():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "test_plain.py")
    result.assert_outcomes(passed=1)
    modules = set((pytester.path / "modules.txt").read_text(encoding="utf-8").split())
    assert "ntdd.settings.table" in modules
    assert not {"ntdd.settings.resolve", "ntdd.settings.pyproject"} & modules
    asked = pytester.runpytest_subprocess("-p", "no:randomly", "--ntdd", "test_plain.py")
    assert asked.ret == pytest.ExitCode.USAGE_ERROR
    asked.stderr.fnmatch_lines(["*pyproject.toml [[]tool.ntdd[]]: timeout must be a number*"])
