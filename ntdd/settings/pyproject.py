"""`[tool.ntdd]` in pyproject.toml: read once, its keys held to the table.

    [tool.ntdd]
    output = "tests/notebooks"   # where `ntdd export` writes modules
    template = "my_module.py.j2"  # a template of your own
    devices = ["cpu", "cuda"]     # devices that `device` tests run on
    timeout = 60                  # seconds per test, setup included
    report = "ntdd-report.html"   # `pytest --ntdd` writes its HTML report there
    run_untested = true           # `pytest --ntdd` runs notebooks without tests, one test each
    smoke = true                  # `pytest --ntdd` runs every notebook in smoke mode
    smoke_batches = 4             # ...where a DataLoader yields at most 4 batches a pass
    smoke_epochs = 2              # ...and a training loop runs at most 2 times
    smoke_examples = 16           # ...over at most 16 examples of a Dataset it iterates itself
    skip_eval_false = true        # cells marked `#| eval: false` are left out, as nbdev_test does
    outputs = "lax"               # `pytest --ntdd` checks saved outputs, as nbval's --nbval-lax
    outputs_sanitize_with = "sanitize.cfg"   # ...cleaned by nbval's regex/replace pairs
    outputs_normalize = ["addresses", "timestamps"]  # ...and by these normalisers
    outputs_float_digits = 6      # ...the floats normaliser keeping 6 significant digits
    outputs_image_tolerance = 3   # ...a figure passing within this perceptual distance

    [tool.ntdd.parameters]        # test-only overrides of the `parameters` cell
    num_epochs = 1
    [tool.ntdd.parameters."notebooks/train.ipynb"]
    lr = 0.1

Paths are relative to the pyproject.toml that holds them. An unknown key is
an error listing the known ones (`table.PYPROJECT_KEYS`). Each value is
read by its row's parser, as the plugin's resolver reads it: `load_config`
gives `ntdd export` and the other commands the keys they use.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntdd.errors import ConfigError
from ntdd.parameters import Parameters
from ntdd.settings.parsers import PARSERS, Given
from ntdd.settings.table import BY_NAME, PYPROJECT_KEYS


@dataclass(frozen=True)
class Project:
    """The `[tool.ntdd]` table of the nearest pyproject.toml, its values as TOML has them."""

    values: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None  # the pyproject.toml read; None: there is none

    @property
    def where(self) -> str:
        """How an error about one of its values names the place: file and table."""
        return f"{self.source} [tool.ntdd]"

    def given(self, name: str) -> Given | None:
        """The value of setting *name*, for its parser; None where the table has none."""
        key = BY_NAME[name].pyproject
        if key is None or key not in self.values or self.source is None:
            return None
        return Given(self.values[key], self.where, self.source.parent, key, f"{self.where} {key}")

    def parsed(self, name: str) -> Any:
        """The value of setting *name*, parsed; None where the table has none."""
        given = self.given(name)
        return None if given is None else PARSERS[BY_NAME[name].parse](given)


@dataclass(frozen=True)
class Config:
    """What the commands read of `[tool.ntdd]`."""

    output: Path | None = None  # where `ntdd export` writes modules
    template: Path | None = None
    parameters: Parameters = field(default_factory=Parameters)
    skip_eval_false: bool | None = None  # cells marked `#| eval: false` are left out
    source: Path | None = None  # the pyproject.toml read, if any


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above *start*."""
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def read_project(start: Path | None = None) -> Project:
    """`[tool.ntdd]` of the nearest pyproject.toml; an empty one where there is none."""
    pyproject = find_pyproject((start or Path.cwd()).resolve())
    if pyproject is None:
        return Project()
    if sys.version_info >= (3, 11):  # imported here: a run without a pyproject.toml needs none
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{pyproject}: cannot be read as TOML: {e}") from e
    table = data.get("tool", {}).get("ntdd", {})
    unknown = set(table) - PYPROJECT_KEYS
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown key(s) in [tool.ntdd]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(PYPROJECT_KEYS))})"
        )
    return Project(table, pyproject)


def load_config(start: Path | None = None) -> Config:
    """The commands' keys of `[tool.ntdd]`; defaults where there is no pyproject.toml."""
    project = read_project(start)
    return Config(
        output=project.parsed("output"),
        template=project.parsed("template"),
        parameters=project.parsed("parameters") or Parameters(),
        skip_eval_false=project.parsed("skip_eval_false"),
        source=project.source,
    )
