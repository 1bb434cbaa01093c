"""Where the Jinja templates live, installed or in a checkout; and what renders."""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from pathlib import Path

# The modules whose code decides what a rendered module says.
_RENDERING_CODE = ("markers.py", "names.py", "source.py", "plan.py", "render.py", "regions.py")

MODULE_TEMPLATE = "module.py.j2"


@functools.cache
def template_dir() -> Path:
    """The wheel ships `templates/` as `ntdd/templates`; a checkout has it beside `ntdd/`."""
    installed = resources.files("ntdd") / "templates"
    if installed.is_dir():
        return Path(str(installed))
    return Path(__file__).resolve().parent.parent / "templates"


@functools.cache
def render_fingerprint(version: str, template: Path | None = None) -> str:
    """A hash of everything besides the notebook that a rendering depends on.

    ntdd's version, its module templates (`*.py.j2`: not the workflow's, so
    that a change to CI does not make every module stale), the code that
    renders, and a template of the user's own. A module whose header records
    the same fingerprint and notebook hash would render to the same bytes:
    export can skip it.
    """
    digest = hashlib.sha256(version.encode())
    files = sorted(template_dir().glob("*.py.j2")) + [
        Path(__file__).parent / name for name in _RENDERING_CODE
    ]
    if template is not None:
        files.append(template)
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]
