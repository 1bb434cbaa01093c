"""`ntdd init`: a GitHub Actions workflow that tests a repository's notebooks."""

from __future__ import annotations

from pathlib import Path

import jinja2

from ntdd.errors import ForeignFileError
from ntdd.files import write_atomic
from ntdd.templates import template_dir

WORKFLOW_TEMPLATE = "workflow.yml.j2"


def render_workflow(notebooks: str, python: str, check: bool, workflow_name: str) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        autoescape=False,  # the output is YAML, not HTML
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template(WORKFLOW_TEMPLATE)
    return template.render(
        notebooks=notebooks, python=python, check=check, workflow_name=workflow_name
    )


def write_workflow(
    path: Path, notebooks: str, python: str, check: bool = True, force: bool = False
) -> Path:
    """Write the workflow to *path*; an existing file is replaced only with *force*."""
    if path.exists() and not force:
        raise ForeignFileError(f"{path}: exists; not overwriting it (use --force)")
    write_atomic(path, render_workflow(notebooks, python, check, path.name))
    return path
