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
    templates = sorted(template_dir().glob("*.py.j2"))
    return [*templates, template] if template is not None else templates
