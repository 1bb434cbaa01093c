"""Runs the `run:` steps of a GitHub Actions job here, as a runner would.

Steps run in order in bash (`-eo pipefail`, as `defaults: run: shell: bash`
makes GitHub run them), in the repository's folder, with the runner's files
(`$RUNNER_TEMP`, `$GITHUB_OUTPUT`, `$GITHUB_STEP_SUMMARY`), `${{ }}`
expressions filled in from the event and the matrix, and `if:` honoured.
`uses:` steps (checkout, setup-python, upload) are GitHub's own and are left
out: the repository is already here, and so is Python.

Installs: the environment running the tests is the one a workflow would
install. `install="dry-run"` lets pip resolve every requirement and install
nothing (ntdd itself resolves from this checkout); `install="none"` leaves
the pip lines out, where another test already resolved them;
`install="real"` runs them as written, into a fresh virtual environment
(`venv`) that every step then runs in, its plugins loaded as pytest finds
them, as on a runner.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from conftest import ROOT, plugin_env

VENV_PATH = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # `ntdd` on PATH
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_PIP_LINE = re.compile(r"^(\s*)python3? -m pip install .*$", re.MULTILINE)
_NTDD_REQUIREMENT = re.compile(r"'ntdd(\[[^\]]*\])[^']*'")  # as the workflow quotes it
# The workflow runs `pytest --ntdd --ntdd-run-untested`; a checkout of ntdd that does
# not have that option yet runs the workflow's tests without it.
RUN_UNTESTED_KNOWN = any(
    "--ntdd-run-untested" in path.read_text() for path in (ROOT / "ntdd" / "plugin").rglob("*.py")
)


@dataclass
class JobRun:
    """What running a job's steps left behind."""

    temp: Path  # $RUNNER_TEMP
    ran: list[str] = field(default_factory=list)  # names of the steps run, in order
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    failed: str | None = None  # the first step that failed, where steps may fail
    logs: dict[str, str] = field(default_factory=dict)  # each step's output, by name

    @property
    def summary(self) -> str:
        path = self.temp / "summary.md"
        return path.read_text() if path.exists() else ""

    def notebooks(self) -> list[str]:
        """The picked notebooks: the pick step writes them NUL-ended, as git's -z does."""
        return [name for name in (self.temp / "notebooks").read_text().split("\0") if name]


def load_job(workflow: Path | str, job: str) -> dict[str, Any]:
    text = workflow if isinstance(workflow, str) else workflow.read_text()
    return dict(yaml.safe_load(text)["jobs"][job])


def run_job(
    workflow: Path | str,
    job: str,
    *,
    repo: Path,
    temp: Path,
    event: str,
    base: str = "",
    matrix: Mapping[str, object] | None = None,
    install: str = "none",
    skip: Collection[str] = (),
    until: str | None = None,
    venv: Path | None = None,
    check: bool = True,
    env: Mapping[str, str] | None = None,
) -> JobRun:
    """Run *job*'s `run:` steps; each must succeed, unless not *check*: then after a
    failed step only `always()` steps run, as on GitHub. *skip* names steps not to run
    here; *until* names the last step to run; *venv* is the environment they run in;
    *env* is set for every step, over what the runner sets (`GITHUB_REF_NAME` for a
    tag's run)."""
    temp.mkdir(parents=True, exist_ok=True)
    contexts = {
        "github.event_name": event,
        "github.event.pull_request.base.sha": base,
        "runner.temp": str(temp),
        **{f"matrix.{k}": str(v) for k, v in (matrix or {}).items()},
    }
    done = JobRun(temp)
    for step in load_job(workflow, job)["steps"]:
        if "run" not in step or not _condition(step.get("if"), done.outputs, contexts):
            continue
        if done.failed is not None and "always()" not in str(step.get("if")):
            continue
        name = step.get("name", step["run"][:30])
        if name not in skip:
            ok = _run_step(step, name, repo, temp, contexts, event, install, done, venv, env or {})
            assert ok or not check, f"{name}:\n{done.logs[name]}"
            done.failed = done.failed or (None if ok else name)
        if name == until:
            break
    return done


# The pytest plugins a workflow installs: "ntdd[nbval,jupytext]", and pytest-xdist for shards.
# Others that this machine may have (pytest-randomly...) are not on a runner.
WORKFLOW_PLUGINS = plugin_env("nbval.plugin", "xdist.plugin")


def run_script(
    script: str, repo: Path, env: Mapping[str, str], plugins: bool = True
) -> subprocess.CompletedProcess[str]:
    """*script* in bash, as a step runs; with *plugins*, pytest loads the workflow's only."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "GITHUB_", "VIRTUAL_ENV"))
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=repo,
        env={**clean, **(WORKFLOW_PLUGINS if plugins else {}), **env},
        capture_output=True,
        text=True,
    )


def _run_step(
    step: dict[str, Any],
    name: str,
    repo: Path,
    temp: Path,
    contexts: dict[str, str],
    event: str,
    install: str,
    done: JobRun,
    venv: Path | None,
    job_env: Mapping[str, str],
) -> bool:
    output_file = temp / "output.txt"
    output_file.write_text("")
    outputs = {
        f"steps.{step_id}.outputs.{key}": value
        for step_id, values in done.outputs.items()
        for key, value in values.items()
    }
    known = {**contexts, **outputs}
    env = {k: _expand(str(v), known) for k, v in step.get("env", {}).items()}
    env.update(
        RUNNER_TEMP=str(temp),
        GITHUB_OUTPUT=str(output_file),
        GITHUB_STEP_SUMMARY=str(temp / "summary.md"),
        GITHUB_EVENT_NAME=event,
        # pip gives up at once on an index this machine cannot reach
        # (download.pytorch.org) and goes on with the others.
        PIP_RETRIES="0",
        PIP_TIMEOUT="5",
        PATH=VENV_PATH if venv is None else f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    env.update(job_env)
    script = _installs(_expand(step["run"], contexts), install)
    result = run_script(script, repo, env, plugins=venv is None)
    done.ran.append(name)
    done.logs[name] = f"{result.stdout}\n{result.stderr}"
    if "id" in step:
        lines = output_file.read_text().splitlines()
        done.outputs[step["id"]] = dict(line.split("=", 1) for line in lines if "=" in line)
    return result.returncode == 0


def _installs(script: str, install: str) -> str:
    if not RUN_UNTESTED_KNOWN:
        script = script.replace(" --ntdd-run-untested", "")
    if install == "none":
        return _PIP_LINE.sub(r"\1true  # installed already", script)
    if install == "real":
        return script
    script = script.replace("pip install ", "pip install --dry-run ")
    return _NTDD_REQUIREMENT.sub(rf"'{ROOT}\1'", script)  # this checkout, not PyPI's


def _expand(text: str, contexts: dict[str, str]) -> str:
    """GitHub's expressions filled in; a step's output that no step here set (an
    upload's, GitHub's own) is empty, as GitHub gives an output never set."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return contexts.get(name, "") if name.startswith("steps.") else contexts[name]

    return _EXPRESSION.sub(value, text)


def _condition(
    expression: Any, outputs: dict[str, dict[str, str]], contexts: dict[str, str]
) -> bool:
    """The `if:` forms the workflows use, joined by `&&`: `always()`,
    `steps.<id>.outputs.<key> != '<value>'` and `matrix.<key> == <value>`."""
    if expression is None:
        return True
    clauses = [c.strip() for c in str(expression).split("&&") if c.strip() != "always()"]
    for clause in clauses:
        step = re.fullmatch(r"steps\.(\w+)\.outputs\.(\w+) (==|!=) '(.*)'", clause)
        matrix = re.fullmatch(r"(matrix\.\w+) == (\w+)", clause)
        assert step or matrix, f"the test does not understand `if: {expression}`"
        if step:
            equal = outputs.get(step[1], {}).get(step[2]) == step[4]
            if equal != (step[3] == "=="):
                return False
        elif matrix and contexts.get(matrix[1]) != matrix[2]:
            return False
    return True


def starts_workflow(patterns: Sequence[str], path: str) -> bool:
    """Whether a change to *path* starts a workflow whose `paths:` are *patterns*, as
    GitHub's filter cheat sheet has it: the last pattern that matches decides, and one
    that starts with `!` excludes."""
    started = False
    for pattern in patterns:
        if pattern.startswith("!"):
            started = started and not _filter_matches(pattern[1:], path)
        else:
            started = started or _filter_matches(pattern, path)
    return started


def _filter_matches(pattern: str, path: str) -> bool:
    """`**` any characters (`**/`, any folders), `*` any but `/`, `?` and `+` zero or
    one and one or more of the character before, `[...]` one of those listed, and `\\`
    escaping the next special character (any other is itself)."""
    regex, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and pattern[i + 1 : i + 2] in ("*", "?", "+", "[", "!", "\\"):
            regex, i = regex + re.escape(pattern[i + 1]), i + 2
        elif pattern.startswith("**/", i):  # any folders, none too: `**/README.md`
            regex, i = regex + "(.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif c == "[":
            end = pattern.index("]", i)
            regex, i = regex + pattern[i : end + 1], end + 1
        else:
            regex += "[^/]*" if c == "*" else c if c in "?+" else re.escape(c)
            i += 1
    return re.fullmatch(regex, path) is not None
