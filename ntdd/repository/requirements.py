"""pip requirements as text: a requirements file's lines, a requirement's name, the torch family.

One reading of a requirement for the repository's files (`dependencies`), a
notebook's install lines (`notebook_imports`) and the pins a runner installs
(`pins`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# PyPI's Linux wheels of these carry CUDA; a hosted runner installs PyTorch's CPU builds.
TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def torch_requirements(lines: Iterable[str]) -> tuple[str, ...]:
    """The torch family among requirement *lines*, as they are written."""
    return tuple(line for line in lines if normal_name(name_of(line)) in TORCH_FAMILY)


def requirement_lines(text: str) -> list[str]:
    """A requirements file's requirements: no comments, options or blank lines."""
    lines = (re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip() for line in text.splitlines())
    return [line.split(" --")[0].strip() for line in lines if line and not line.startswith("-")]


def name_of(spec: str) -> str:
    """The distribution a requirement names: `pandas` of `pandas>=2`; empty for none."""
    match = _NAME.match(spec)
    return match.group(1) if match else ""


def normal_name(name: str) -> str:
    """PEP 503's normal form: `Scikit_Learn` is `scikit-learn`."""
    return re.sub(r"[-_.]+", "-", name).lower()
