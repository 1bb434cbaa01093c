"""Whether the workflow `ntdd init` writes is green exactly where `pytest --ntdd` is, by hand.

    python benchmarks/init_workflow.py --user-python ENV/bin/python --torch-wheels DIR
    python benchmarks/init_workflow.py --user-python ENV/bin/python --torch-wheels DIR --fail
    python benchmarks/init_workflow.py ... --wheel dist/ntdd-0.1.0-py3-none-any.whl
    python benchmarks/init_workflow.py ... --init-arg=--no-nbval

A folder of notebooks that import torch, pandas, numpy, matplotlib and tqdm
(a helper module beside them, a `%pip install` line, a notebook without
tests, and no requirements file) is made a git repository. The user's
environment (`--user-python`: one with ntdd, torch, pandas, matplotlib and
tqdm installed) runs `pytest --ntdd` on it, then `ntdd init --dry-run`. Then
the workflow's CPU job runs as a runner runs it: its `run:` steps in order,
in bash, in a fresh virtual environment that holds only what the workflow's
own Install step puts there; after a failed step only `if: always()` steps
run. The figures: the local run's outcomes, and the job's: which step failed,
and the outcomes in its JUnit report.

What a runner reaches and this machine may not is mapped, and said: the
PyTorch index (`--index-url https://download.pytorch.org/whl/cpu` becomes
`--find-links DIR`, a folder holding torch's CPU wheel, `--torch-wheels`),
and, with `--map-ntdd SPEC`, the workflow's ntdd requirement (for a workflow
that names a release this machine cannot install). `--wheel FILE` copies an
ntdd wheel into the repository and installs it into the user's environment
first, as a user who commits the wheel they use would. `--fail` plants a bug
that one notebook's test catches: both runs must then be red.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import nbformat
import yaml

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_NTDD_REQUIREMENT = re.compile(r'"(?:ntdd|[^"\s]*ntdd[^"\s]*\.whl)\[[^"]*"')

NOTEBOOKS: dict[str, list[str]] = {
    "notebooks/model.ipynb": [
        "import numpy as np\nimport torch\nfrom torch import nn\nfrom tqdm import tqdm",
        "torch.manual_seed(0)\nx = torch.randn(64, 4)\ny = (x.sum(dim=1) > 0).long()",
        "model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.5)\nlosses = []\n"
        "for _ in tqdm(range(30)):\n    opt.zero_grad()\n"
        "    loss = nn.functional.cross_entropy(model(x), y)\n"
        "    loss.backward()\n    opt.step()\n    losses.append(loss.item())",
        "# TEST: one logit per class\nassert model(x).shape == (64, 2)",
        "# TEST: the loss goes down\nassert losses[-1] < losses[0]",
        "# TEST\ndef test_on_device(device):\n"
        "    assert model.to(device)(x.to(device)).shape == (64, 2)",
        "# TEST: numpy sees the weights\n"
        "assert np.isfinite(model[0].weight.detach().numpy()).all()",
    ],
    "notebooks/data.ipynb": [
        "%pip install tqdm",
        "import numpy as np\nimport pandas as pd",
        "df = pd.DataFrame({'a': np.arange(10), 'b': np.arange(10) ** 2})\ndf['c'] = df.a + df.b",
        "# TEST: ten rows\nassert len(df) == 10",
        "# TEST: c is a plus b\nassert (df.c == df.a + df.b).all()",
        "# TEST: the mean of a\nassert df.a.mean() == 4.5",
    ],
    "notebooks/plots.ipynb": [
        "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport pandas as pd",
        "series = pd.Series([3, 1, 2])\nfig, ax = plt.subplots()\nseries.plot(ax=ax)",
        "# TEST: one line\nassert len(ax.get_lines()) == 1",
        "# TEST: its data\nassert list(ax.get_lines()[0].get_ydata()) == [3, 1, 2]",
    ],
    "notebooks/scaled.ipynb": [
        "from helpers import scale\nimport tqdm.auto",
        "values = [scale(v) for v in tqdm.auto.tqdm([1, 2, 3])]",
        "# TEST: scaled\nassert values == [2, 4, 6]",
    ],
    "notebooks/explore.ipynb": [
        "# Exploring, no tests",
        "import pandas as pd\nimport matplotlib.pyplot as plt\npd.DataFrame({'x': [1, 2]}).plot()",
    ],
}
HELPERS = "def scale(v):\n    return 2 * v\n"
BUG = ("notebooks/data.ipynb", "df['c'] = df.a + df.b", "df['c'] = df.a - df.b")


def make_repository(root: Path, fail: bool, wheel: Path | None) -> str | None:
    """The notebooks, committed; the wheel's path in the repository, when given one."""
    for name, cells in NOTEBOOKS.items():
        nb = nbformat.v4.new_notebook()
        for source in cells:
            if fail and name == BUG[0]:
                source = source.replace(BUG[1], BUG[2])
            new = nbformat.v4.new_markdown_cell if source.startswith("# Ex") else None
            nb.cells.append((new or nbformat.v4.new_code_cell)(source))
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, root / name)
    (root / "notebooks" / "helpers.py").write_text(HELPERS)
    (root / ".gitignore").write_text("__pycache__/\n.ipynb_checkpoints/\n")
    inside = None
    if wheel is not None:
        (root / "wheels").mkdir()
        inside = f"wheels/{wheel.name}"
        shutil.copy(wheel, root / inside)
    git = ["git", "-c", "user.name=ntdd", "-c", "user.email=ntdd@example.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "--no-gpg-sign", "-m", "notebooks"], cwd=root, check=True)
    return inside


def outcomes(junit: Path) -> Counter[str]:
    """passed, failed, error and skipped, counted from a JUnit report."""
    counts: Counter[str] = Counter()
    if not junit.exists():
        return counts
    for case in ET.parse(junit).getroot().iter("testcase"):
        kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
        counts[{"failure": "failed"}.get(kinds[0], kinds[0]) if kinds else "passed"] += 1
    return counts


def describe(counts: Counter[str]) -> str:
    order = ("passed", "failed", "error", "skipped")
    return ", ".join(f"{counts[k]} {k}" for k in order if counts[k]) or "no tests"


def run_untested_known(python: str) -> bool:
    """Whether this ntdd has `--ntdd-run-untested`; where not, neither run passes it."""
    done = subprocess.run([python, "-m", "pytest", "--help"], capture_output=True, text=True)
    return "--ntdd-run-untested" in done.stdout


def run_locally(python: str, repo: Path, temp: Path, untested: bool) -> tuple[int, Counter[str]]:
    junit = temp / "local.xml"
    command = [python, "-m", "pytest", "--ntdd", "notebooks", "-p", "no:cacheprovider", "-q"]
    command += ["--ntdd-run-untested"] if untested else []
    done = subprocess.run(
        [*command, f"--junitxml={junit}"], cwd=repo, capture_output=True, text=True
    )
    return done.returncode, outcomes(junit)


def run_job(
    workflow: str,
    repo: Path,
    temp: Path,
    env_bin: Path,
    torch_wheels: Path | None,
    ntdd: str,
    untested: bool,
) -> tuple[str | None, list[str]]:
    """Run the CPU job's `run:` steps; the first step that failed (None: green), and the log."""
    job = yaml.safe_load(workflow)["jobs"]["notebooks"]
    contexts = {"github.event_name": "push", "runner.temp": str(temp)}
    outputs: dict[str, dict[str, str]] = {}
    failed: str | None = None
    log: list[str] = []
    for step in job["steps"]:
        if "run" not in step:
            continue
        condition = str(step.get("if", ""))
        if failed is not None and "always()" not in condition:
            continue
        if "steps.pick.outputs.count != '0'" in condition and outputs.get("pick", {}).get(
            "count"
        ) in (None, "0"):
            continue
        script = _mapped(_expand(step["run"], contexts), torch_wheels, ntdd, untested)
        output = temp / "output.txt"
        output.write_text("")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "VIRTUAL_ENV"))},
            **{k: _expand(str(v), contexts) for k, v in step.get("env", {}).items()},
            "PATH": f"{env_bin}{os.pathsep}{os.environ['PATH']}",
            "RUNNER_TEMP": str(temp),
            "GITHUB_OUTPUT": str(output),
            "GITHUB_STEP_SUMMARY": str(temp / "summary.md"),
            "PIP_RETRIES": "0",
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
        log.append(f"## {step['name']}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
        if "id" in step:
            lines = output.read_text().splitlines()
            outputs[step["id"]] = dict(line.split("=", 1) for line in lines if "=" in line)
        if done.returncode != 0 and failed is None:
            failed = step["name"]
    return failed, log


def _expand(text: str, contexts: dict[str, str]) -> str:
    return _EXPRESSION.sub(lambda m: contexts.get(m.group(1), ""), text)


def _mapped(script: str, torch_wheels: Path | None, ntdd: str, untested: bool) -> str:
    if not untested:
        script = script.replace(" --ntdd-run-untested", "")
    if torch_wheels is not None:
        script = script.replace(f"--index-url {TORCH_CPU_INDEX}", f"--find-links {torch_wheels}")
    return _NTDD_REQUIREMENT.sub(f'"{ntdd}"', script) if ntdd else script


def installed(env_bin: Path) -> dict[str, str]:
    """The fresh environment's distributions and versions, as pip lists them."""
    done = subprocess.run(
        [str(env_bin / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
    )
    pairs = (line.split("==", 1) for line in done.stdout.splitlines() if "==" in line)
    return {name.lower(): version for name, version in pairs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--user-python", required=True, help="the user's environment's python")
    parser.add_argument("--torch-wheels", type=Path, help="a folder holding torch's CPU wheel")
    parser.add_argument("--map-ntdd", default="", help="install this instead of ntdd's spec")
    parser.add_argument("--wheel", type=Path, help="an ntdd wheel to commit and install first")
    parser.add_argument("--init-arg", action="append", default=[], help="passed to ntdd init")
    parser.add_argument("--fail", action="store_true", help="plant a bug one test catches")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="ntdd-init-"))
    repo, temp, env = scratch / "repo", scratch / "runner", scratch / "env"
    repo.mkdir()
    temp.mkdir()
    inside = make_repository(repo, args.fail, args.wheel)
    if inside is not None:
        pip = [args.user_python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall"]
        subprocess.run([*pip, str(repo / inside)], check=True)
    untested = run_untested_known(args.user_python)
    if not untested:
        print("this ntdd has no --ntdd-run-untested: neither run passes it")
    code, local = run_locally(args.user_python, repo, temp, untested)
    print(f"local `pytest --ntdd notebooks`: exit {code}: {describe(local)}")
    init = [args.user_python, "-m", "ntdd", "init", "--dry-run", *args.init_arg]
    made = subprocess.run(init, cwd=repo, capture_output=True, text=True)
    if made.returncode != 0:
        print(made.stderr)
        return 1
    print(made.stderr.rstrip())
    (scratch / "ntdd.yml").write_text(made.stdout)
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    failed, log = run_job(
        made.stdout, repo, temp, env / "bin", args.torch_wheels, args.map_ntdd, untested
    )
    (scratch / "job.log").write_text("\n".join(log))
    job = outcomes(temp / "ntdd-junit.xml")
    print(f"job: {'green' if failed is None else f'red: {failed!r} failed'}: {describe(job)}")
    versions = installed(env / "bin")
    cuda = sorted(name for name in versions if name.startswith("nvidia-"))
    print(f"job's torch: {versions.get('torch', 'not installed')}; CUDA wheels: {cuda or 'none'}")
    errors = sorted(
        set(re.findall(r"ModuleNotFoundError: No module named '(\w+)'", "\n".join(log)))
    )
    if errors:
        print(f"job's missing modules: {', '.join(errors)}")
    agree = (code == 0) == (failed is None)
    print(
        f"the job is {'green' if failed is None else 'red'} where the local run is "
        f"{'green' if code == 0 else 'red'}: {'agree' if agree else 'DISAGREE'}"
    )
    if args.keep:
        print(f"kept: {scratch}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
