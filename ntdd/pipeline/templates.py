"""Where the Jinja templates live, installed or in a checkout."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

MODULE_TEMPLATE = "module.py.j2"


@functools.cache
def template_dir() -> Path:
    """The wheel ships `templates/` as `ntdd/templates`; a checkout has it beside `ntdd/`."""
    installed = resources.files("ntdd") / "templates"
    if installed.is_dir():
        return Path(str(installed))
    return Path(__file__).resolve().parents[2] / "templates"


def module_templates(template: Path | None = None) -> list[Path]:
    """The templates a module is rendered from: ntdd's (`*.py.j2`, not the
    workflow's), and a template of the user's own."""
    templates = list(_templates_in(template_dir()))
    return [*templates, template] if template is not None else templates


@functools.cache
def _templates_in(folder: Path) -> tuple[Path, ...]:
    """The module templates in *folder*, listed once: a package's files stay put."""
    return tuple(sorted(folder.glob("*.py.j2")))
