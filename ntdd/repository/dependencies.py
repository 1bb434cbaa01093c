"""The files in which a repository says what its notebooks need installed.

A `requirements.txt` (at the top, else in the notebooks' folder) is installed
with `pip install -r`; a project (`[project]` in pyproject.toml, or a
setup.py) with `pip install -e .`, which installs its dependencies too. An
`environment.yml` (or `.yaml`) is conda's: the workflow builds it with
micromamba instead of setting up Python, as conda would, and installs ntdd
into it. Where a repository has none of them, the notebooks' own imports
say what to install (`pins`).

What these files name from the torch family is read too: a hosted runner
installs it from PyTorch's CPU index first, so that pip finds it satisfied
instead of downloading PyPI's CUDA build.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ntdd.repository.requirements import requirement_lines, torch_requirements

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REQUIREMENTS = "requirements.txt"
ENVIRONMENTS = ("environment.yml", "environment.yaml")
_CONDA_ITEM = re.compile(r"^\s*-\s+([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclass(frozen=True)
class Declared:
    """What the repository's own files say to install; paths relative to its top."""

    requirements: str | None = None  # a requirements.txt
    package: str | None = None  # pyproject.toml or setup.py: `pip install -e .`
    conda: str | None = None  # an environment.yml
    conda_names: tuple[str, ...] = ()  # the packages it lists: python and pip among them?
    torch: tuple[str, ...] = ()  # the torch family, as the requirements and project name it

    @property
    def any(self) -> bool:
        return bool(self.requirements or self.package or self.conda)


def declared(root: Path, notebooks_dir: str) -> Declared:
    """The dependency files of the repository at *root*, whose notebooks are in *notebooks_dir*."""
    folders = [root] if notebooks_dir == "." else [root, root / notebooks_dir]
    requirements = next((f / REQUIREMENTS for f in folders if (f / REQUIREMENTS).is_file()), None)
    conda = next((f / n for f in folders for n in ENVIRONMENTS if (f / n).is_file()), None)
    project = _project(root)
    package = "pyproject.toml" if project is not None else None
    if package is None and (root / "setup.py").is_file():
        package = "setup.py"
    lines = requirement_lines(_read(requirements)) if requirements else []
    dependencies = project.get("dependencies", []) if project else []
    lines += [str(d) for d in dependencies] if isinstance(dependencies, list) else []
    return Declared(
        requirements=requirements.relative_to(root).as_posix() if requirements else None,
        package=package,
        conda=conda.relative_to(root).as_posix() if conda else None,
        conda_names=tuple(_conda_names(_read(conda))) if conda else (),
        torch=torch_requirements(lines),
    )


def _project(root: Path) -> dict[str, Any] | None:
    """pyproject.toml's `[project]` table, when it declares one."""
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    project = data.get("project")
    return project if isinstance(project, dict) else None


def _conda_names(text: str) -> list[str]:
    """The names an environment file's lists hold (`- python=3.11`, `- pip`), read
    line by line: ntdd reads no YAML otherwise, and needs only these."""
    return [m.group(1).lower() for m in map(_CONDA_ITEM.match, text.splitlines()) if m]


def _read(path: Path | None) -> str:
    try:
        return path.read_text(encoding="utf-8") if path is not None else ""
    except (OSError, UnicodeDecodeError):
        return ""
