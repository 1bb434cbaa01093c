"""What the notebooks import, as distributions a runner installs at the versions found here.

Where a repository names no requirements (no requirements file, no
installable pyproject.toml, no environment.yml), a workflow that installs
ntdd alone fails every notebook on its first import. So `ntdd init` takes
the top-level names of what the notebooks import (`notebook_imports`), leaves
out the standard library and the modules that live in the repository, and
asks the environment it runs in which distribution provides each name
(`importlib.metadata.packages_distributions()`) and at which version. A
package named by a `%pip install` line counts too. `resolve` is pure: the
environment comes in as two lookups, so each case is tested without
installing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ntdd.repository.git import checkout_of
from ntdd.repository.origin import RELEASE, Origin, origin_of
from ntdd.repository.requirements import TORCH_FAMILY, name_of, normal_name

ADD_IT = "name it in a requirements.txt, which `ntdd init` then installs instead"


@dataclass(frozen=True)
class Pins:
    """The distributions a runner installs for the notebooks' imports, and what is missing."""

    requirements: tuple[str, ...] = ()  # `pandas==2.2.3`, the torch family left out
    torch: tuple[str, ...] = ()  # `torch==2.5.1`: from PyTorch's CPU index on a hosted runner
    unresolved: tuple[tuple[str, str], ...] = ()  # (module, the first notebook importing it)
    warnings: tuple[str, ...] = ()  # distributions installed here from what a runner lacks


def resolve(
    imported: Mapping[str, str],
    named: Sequence[str],
    distributions: Mapping[str, Sequence[str]],
    version: Callable[[str], str | None],
    origin: Callable[[str], Origin | None] = lambda name: None,
    skip: Iterable[str] = ("ntdd",),
) -> Pins:
    """Pins for *imported* ({module: the first notebook importing it}) and *named* (the
    requirements `%pip install` lines name), by *distributions*
    (`packages_distributions()`), each at its *version* here; *origin* says how a runner
    installs one not from an index."""
    skipped = {normal_name(s) for s in skip}
    found: dict[str, str] = {}  # distribution -> requirement
    warnings: list[str] = []
    unresolved = []
    for module, notebook in imported.items():
        names = [d for d in distributions.get(module, ()) if version(d) is not None]
        if not names:
            if not any(normal_name(name_of(spec)) == normal_name(module) for spec in named):
                unresolved.append((module, notebook))
            continue
        for name in names:
            key = normal_name(name)
            if key in skipped or key in found:
                continue
            found[key], warning = _pinned(name, str(version(name)), origin(name))
            warnings += [warning] if warning else []
    for spec in named:
        key = normal_name(name_of(spec))
        if key and key not in skipped and key not in found:
            here = version(name_of(spec))
            found[key] = f"{name_of(spec)}=={_public(here)}" if here else spec
    pins = sorted(found.items())
    return Pins(
        requirements=tuple(r for k, r in pins if k not in TORCH_FAMILY),
        torch=tuple(r for k, r in pins if k in TORCH_FAMILY),
        unresolved=tuple(unresolved),
        warnings=tuple(warnings),
    )


def installed_pins(root: Path, imported: Mapping[str, str], named: Sequence[str]) -> Pins:
    """`resolve` against the environment `ntdd init` runs in, for the repository at *root*."""
    import json
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    def origin(name: str) -> Origin | None:
        record = metadata.distribution(name).read_text("direct_url.json")
        if not record:
            return None
        try:
            found = origin_of(
                name, metadata.version(name), json.loads(record), root, checkout_of, ADD_IT
            )
        except (ValueError, TypeError):
            return None
        return None if found.form == RELEASE and not found.warning else found

    return resolve(imported, named, metadata.packages_distributions(), version, origin)


def _pinned(name: str, version: str, origin: Origin | None) -> tuple[str, str | None]:
    if origin is None:
        return f"{name}=={_public(version)}", None
    return origin.requirement(name), origin.note if origin.warning else None


def _public(version: str) -> str:
    """A version without its local label: `2.5.1+cu124` is `2.5.1`, on any index."""
    return version.split("+", 1)[0]
