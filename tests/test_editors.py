"""The editors people test from: VS Code's Test Explorer and PyCharm's runner.

VS Code's Python extension drives pytest through its own plugin,
`vscode_pytest`, a copy of which is in `clients/vscode/` exactly as shipped
(see its README): discovery writes the tree the explorer shows, a run by
test id writes each test's outcome, and a coverage run the lines covered.
PyCharm reads teamcity-messages' service messages (`pytest --teamcity`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jupytext
import pytest
from conftest import SAMPLES, line_of, make_notebook, md, run, write_notebook

VSCODE = Path(__file__).resolve().parent / "clients" / "vscode"
DEVICE_CELLS: list[Any] = [
    md("# A notebook"),
    "x = 1",
    "# TEST: x is one\nassert x == 1",
    "# TEST\ndef test_on_device(device):\n    assert x == 1",
]


def write_text_notebook(path: Path, cells: list[Any]) -> Path:
    """A jupytext notebook: percent-format `.py`, or MyST `.md`."""
    nb = make_notebook(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python3", "language": "python"}
    path.write_text(jupytext.writes(nb, {".py": "py:percent", ".md": "md:myst"}[path.suffix]))
    return path


def messages(pipe: Path) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages the adapter wrote: a `content-length` header, then a body."""
    data = pipe.read_bytes()
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b"\r\n")[0].split(b":")[1])
        yield json.loads(rest[:length])["params"]
        data = rest[length:]


def discover(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    """The payload of VS Code's discovery: `pytest -p vscode_pytest --collect-only`."""
    pipe = pytester.path.parent / "discovery-pipe"
    monkeypatch.setenv("TEST_RUN_PIPE", str(pipe))
    monkeypatch.syspath_prepend(str(VSCODE))
    run(pytester, "-p", "vscode_pytest", "--collect-only", *args)
    (payload,) = messages(pipe)
    return payload


def leaves(node: dict[str, Any], base: Path, parents: tuple[str, ...] = ()) -> Iterator[Any]:
    """Each test of a discovery tree: its id (absolute), path, line and the names above it."""
    for child in node.get("children", []):
        if child["type_"] == "test":
            file, _, rest = child["id_"].partition("::")
            yield f"{base / file}::{rest}", base / child["path"], parents
        else:
            yield from leaves(child, base, (*parents, child["name"]))


def tree_tests(payload: Any) -> dict[str, tuple[Path, tuple[str, ...]]]:
    base = Path(payload["pathBase"])
    found: dict[str, tuple[Path, tuple[str, ...]]] = {}
    for test_id, path, parents in leaves(payload["tests"], base):
        assert test_id not in found, f"{test_id} is in the tree twice"
        found[test_id] = (path, parents)
    return found


def linenos(payload: Any) -> dict[str, int]:
    """Each test's `lineno`, as the explorer puts its run button there."""

    def walk(node: dict[str, Any]) -> Iterator[tuple[str, int]]:
        for child in node.get("children", []):
            if child["type_"] == "test":
                yield child["id_"].split("::", 1)[1], int(child["lineno"])
            else:
                yield from walk(child)

    return dict(walk(payload["tests"]))


def collected(pytester: pytest.Pytester, *args: str) -> set[str]:
    """The node ids `pytest --ntdd --co` lists, made absolute as the adapter makes them."""
    result = run(pytester, "--ntdd", "--co", "-q", *args)
    ids = [line for line in result.outlines if "::" in line]
    return {str(pytester.path / i.split("::")[0]) + "::" + i.split("::", 1)[1] for i in ids}


def test_vscode_discovers_every_sample_notebook_test_once_under_its_notebook(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The device variants are plain tests to the adapter: it groups a parametrized
    test by cutting its node id at `.py`, and failed the whole tree where there is none."""
    shutil.copytree(SAMPLES, pytester.path / "sample_notebooks")
    payload = discover(pytester, monkeypatch, "--ntdd", "sample_notebooks")
    assert (payload["status"], payload["error"]) == ("success", [])
    found = tree_tests(payload)
    assert set(found) == collected(pytester, "sample_notebooks")
    device_tests = [i for i in found if i.endswith(("[cpu]", "[cuda]"))]
    assert len(device_tests) == 6
    for test_id, (path, parents) in found.items():
        assert path == Path(test_id.split("::")[0])  # the notebook, not its module
        assert parents[-1] == path.name  # under its notebook
        assert path.suffix == ".ipynb"


def test_vscode_puts_each_test_at_its_cells_line_in_the_notebook(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = write_notebook(pytester.path / "nb.ipynb", DEVICE_CELLS)
    payload = discover(pytester, monkeypatch, "--ntdd", "nb.ipynb")
    assert payload["status"] == "success"
    at_device_cell = line_of(nb, "def test_on_device")
    assert linenos(payload) == {
        "test_x_is_one": line_of(nb, "# TEST: x is one"),
        "test_on_device[cpu]": at_device_cell,
        "test_on_device[cuda]": at_device_cell,
    }


@pytest.mark.parametrize("suffix", [".py", ".md"])
def test_vscode_discovers_a_jupytext_notebooks_tests_at_its_lines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    nb = write_text_notebook(pytester.path / f"nb{suffix}", DEVICE_CELLS)
    payload = discover(pytester, monkeypatch, "--ntdd", nb.name)
    assert (payload["status"], payload["error"]) == ("success", [])
    found = tree_tests(payload)
    assert set(found) == collected(pytester, nb.name)
    assert {path for path, _ in found.values()} == {nb}
    assert linenos(payload)["test_x_is_one"] == line_of(nb, "# TEST: x is one")


# -- runs by id, and with coverage ----------------------------------------------------


def run_ids(pytester: pytest.Pytester, ids: list[str], *args: str, **env: str) -> list[Any]:
    """A run of the tests *ids* as the Test Explorer starts one: `run_pytest_script.py`."""
    pipe, id_file = pytester.path.parent / "run-pipe", pytester.path.parent / "ids"
    id_file.write_text("\n".join(ids), encoding="utf-8")
    environment = {**os.environ, "TEST_RUN_PIPE": str(pipe), "RUN_TEST_IDS_PIPE": str(id_file)}
    script = VSCODE / "vscode_pytest" / "run_pytest_script.py"
    command = [sys.executable, str(script), "-p", "no:cacheprovider", "--ntdd", *args]
    subprocess.run(command, cwd=pytester.path, env={**environment, **env}, check=False)
    return list(messages(pipe))


def outcomes(sent: list[Any]) -> dict[str, dict[str, Any]]:
    return {k: v for m in sent for k, v in (m.get("result") or {}).items() if "outcome" in v}


@pytest.mark.slow
def test_vscode_runs_picked_tests_and_shows_a_failure_in_the_notebooks_terms(
    pytester: pytest.Pytester,
) -> None:
    cells = [*DEVICE_CELLS, "# TEST: x is two\nassert x == 2", "y = 1 / 0", "# TEST: late\npass"]
    nb = write_notebook(pytester.path / "nb.ipynb", cells)
    picked = [f"{nb}::test_on_device[cpu]", f"{nb}::test_x_is_two", f"{nb}::test_late"]
    found = outcomes(run_ids(pytester, picked))
    assert {k: v["outcome"] for k, v in found.items()} == {
        picked[0]: "success",
        picked[1]: "failure",
        picked[2]: "error",
    }
    failure = found[picked[1]]["message"]
    assert ">       assert x == 2" in failure
    assert "in notebook nb.ipynb, cell 5" in failure
    setup_error = found[picked[2]]["traceback"]
    assert ">   y = 1 / 0" in setup_error and "ZeroDivisionError: division by zero" in setup_error
    for text in (failure, setup_error):
        assert "ntdd/" not in text and "_pytest" not in text and "SetupError" not in text


@pytest.mark.slow
def test_vscode_discovers_and_runs_a_notebooks_parametrized_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The adapter groups a parametrized test by cutting its node id at `.py`, and failed
    the whole tree on a notebook's: each variant is a test of its own under its notebook."""
    cells = [
        "import pytest\nx = 1",
        "# TEST\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n == x",
    ]
    nb = write_notebook(pytester.path / "nb.ipynb", cells)
    payload = discover(pytester, monkeypatch, "--ntdd", "nb.ipynb")
    assert (payload["status"], payload["error"]) == ("success", [])
    found = tree_tests(payload)
    picked = [f"{nb}::test_n[1]", f"{nb}::test_n[2]"]
    assert set(found) == collected(pytester, "nb.ipynb") >= set(picked)
    assert all(parents[-1] == "nb.ipynb" for _, parents in found.values())
    ran = outcomes(run_ids(pytester, picked))
    assert {k: v["outcome"] for k, v in ran.items()} == {picked[0]: "success", picked[1]: "failure"}


@pytest.mark.slow
def test_vscode_runs_with_coverage_of_the_notebooks_lines(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.coverage.run]\nplugins = ["ntdd.coverage"]\n')
    cells = ["x = 1\nif x == 2:\n    never = True", "# TEST: x is one\nassert x == 1"]
    nb = write_notebook(pytester.path / "nb.ipynb", cells)
    sent = run_ids(pytester, [f"{nb}::test_x_is_one"], "-p", "pytest_cov", COVERAGE_ENABLED="True")
    assert {v["outcome"] for v in outcomes(sent).values()} == {"success"}
    (coverage,) = [m for m in sent if m.get("coverage")]
    lines = coverage["result"][str(nb)]
    assert line_of(nb, "never = True") in lines["lines_missed"]
    assert {line_of(nb, '"x = 1'), line_of(nb, "assert x == 1")} <= set(lines["lines_covered"])


# -- the device variants, for every other consumer -------------------------------------


def test_device_variants_keep_their_node_ids_k_and_junit_names(
    pytester: pytest.Pytester,
) -> None:
    write_notebook(pytester.path / "nb.ipynb", DEVICE_CELLS)
    result = run(pytester, "--ntdd", "--co", "-q", "nb.ipynb", "--ntdd-devices", "cpu,cuda")
    assert [line for line in result.outlines if "::" in line] == [
        "nb.ipynb::test_x_is_one",
        "nb.ipynb::test_on_device[cpu]",
        "nb.ipynb::test_on_device[cuda]",
    ]
    selected = run(pytester, "--ntdd", "nb.ipynb", "-k", "cpu", "--junitxml=junit.xml")
    selected.assert_outcomes(passed=1, deselected=2)
    cases = ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("nb.ipynb", "test_on_device[cpu]")
    ]


@pytest.mark.slow  # xdist's workers are processes
@pytest.mark.parametrize("mode", ["loadgroup", "loadfile", "load"])
def test_under_xdist_each_devices_setup_runs_once_on_one_worker(
    pytester: pytest.Pytester, mode: str
) -> None:
    cells = [
        "import os\nwith open('setups.txt', 'a') as f:\n    f.write(f'{os.getpid()}\\n')",
        *DEVICE_CELLS[1:],
        "# TEST\ndef test_again(device):\n    assert str(device) == 'cpu'",
    ]
    write_notebook(pytester.path / "nb.ipynb", cells)
    args = ("--ntdd", "nb.ipynb", "-n", "2", "--dist", mode, "--ntdd-devices", "cpu")
    run(pytester, *args, plugins=["xdist"], subprocess=True).assert_outcomes(passed=3)
    assert len((pytester.path / "setups.txt").read_text().splitlines()) == 1
