"""What the notebooks import, as distributions a runner installs at the versions found here.

Where a repository names no requirements (no requirements file, no
installable pyproject.toml, no environment.yml), a workflow that installs
ntdd alone fails every notebook on its first import. So `ntdd init` reads
the notebooks' code cells as ntdd runs them (`cell_code.to_python`, magics
transformed), takes the top-level names of what they import, leaves out the
standard library and the modules that live in the repository, and asks the
environment it runs in which distribution provides each name
(`importlib.metadata.packages_distributions()`) and at which version. A
package named by a `%pip install` line counts too. `resolve` is pure: the
environment comes in as two lookups, so each case is tested without
installing anything.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ntdd.cells.cell_code import to_python
from ntdd.cells.magics import MagicCall, installs
from ntdd.repository.origin import Origin
from ntdd.values import Cell

# PyPI's Linux wheels of these carry CUDA; a hosted runner installs PyTorch's CPU builds.
TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
ADD_IT = "name it in a requirements.txt, which `ntdd init` then installs instead"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PIP_VALUED = frozenset(
    {
        "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
        "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
        "--platform", "--python-version", "--implementation", "--abi", "--upgrade-strategy",
        "--src", "--trusted-host", "--proxy", "--retries", "--timeout", "--cache-dir",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Imports:
    """What a notebook's cells import, and what its install lines name."""

    modules: tuple[str, ...] = ()  # top-level names: `sklearn` for `from sklearn.svm import X`
    installed: tuple[str, ...] = ()  # requirements from `%pip install …` lines, as written


@dataclass(frozen=True)
class Pins:
    """The distributions a runner installs for the notebooks' imports, and what is missing."""

    requirements: tuple[str, ...] = ()  # `pandas==2.2.3`, the torch family left out
    torch: tuple[str, ...] = ()  # `torch==2.5.1`: from PyTorch's CPU index on a hosted runner
    unresolved: tuple[tuple[str, str], ...] = ()  # (module, the first notebook importing it)
    warnings: tuple[str, ...] = ()  # distributions installed here from what a runner lacks


def cell_imports(cells: Iterable[Cell]) -> Imports:
    """The imports of a notebook's code cells; a cell that is not Python is passed over,
    as `pytest --ntdd` reports it."""
    modules: dict[str, None] = {}
    named: dict[str, None] = {}
    for cell in cells:
        if cell.cell_type != "code":
            continue
        try:
            python = to_python(cell.source)
        except SyntaxError:
            continue
        modules.update(dict.fromkeys(imported(python.tree)))
        for call in python.magics:
            named.update(dict.fromkeys(_pip_requirements(call)))
    return Imports(tuple(modules), tuple(named))


def imported(tree: ast.Module) -> Iterator[str]:
    """The top-level names *tree* imports absolutely: `sklearn` for `from sklearn.svm import X`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def third_party(module: str) -> bool:
    return module not in sys.stdlib_module_names and module != "__main__"


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
    skipped = {_normal(s) for s in skip}
    found: dict[str, str] = {}  # distribution -> requirement
    warnings: list[str] = []
    unresolved = []
    for module, notebook in imported.items():
        names = [d for d in distributions.get(module, ()) if version(d) is not None]
        if not names:
            if not any(_normal(_name_of(spec)) == _normal(module) for spec in named):
                unresolved.append((module, notebook))
            continue
        for name in names:
            key = _normal(name)
            if key in skipped or key in found:
                continue
            found[key], warning = _pinned(name, str(version(name)), origin(name))
            warnings += [warning] if warning else []
    for spec in named:
        key = _normal(_name_of(spec))
        if key and key not in skipped and key not in found:
            here = version(_name_of(spec))
            found[key] = f"{_name_of(spec)}=={_public(here)}" if here else spec
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

    from ntdd.repository.git import checkout_of
    from ntdd.repository.origin import RELEASE, origin_of

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


def torch_requirements(lines: Iterable[str]) -> tuple[str, ...]:
    """The torch family among requirement *lines*, as they are written."""
    return tuple(line for line in lines if _normal(_name_of(line)) in TORCH_FAMILY)


def requirement_lines(text: str) -> list[str]:
    """A requirements file's requirements: no comments, options or blank lines."""
    lines = (re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip() for line in text.splitlines())
    return [line.split(" --")[0].strip() for line in lines if line and not line.startswith("-")]


def _pinned(name: str, version: str, origin: Origin | None) -> tuple[str, str | None]:
    if origin is None:
        return f"{name}=={_public(version)}", None
    return origin.requirement(name), origin.note if origin.warning else None


def _pip_requirements(call: MagicCall) -> Iterator[str]:
    """The requirements an install line names: `%pip install -q pandas "numpy<2"`."""
    line = f"pip {call.line}" if call.name == "pip" else call.line if call.prefix == "!" else ""
    for part in re.split(r"&&|\|\||[;|&\n]", line):
        if not installs(part):
            continue
        try:
            words = shlex.split(part)
        except ValueError:
            words = part.split()
        after = words[words.index("install") + 1 :] if "install" in words else []
        yield from _requirement_words(after)


def _requirement_words(words: list[str]) -> Iterator[str]:
    rest = iter(words)
    for word in rest:
        if word in _PIP_VALUED:
            next(rest, None)
        elif _NAME.match(word) and not any(c in word for c in "/{$") and ".whl" not in word:
            yield word


def _name_of(spec: str) -> str:
    match = _NAME.match(spec)
    return match.group(1) if match else ""


def _normal(name: str) -> str:
    """PEP 503's normal form: `Scikit_Learn` is `scikit-learn`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _public(version: str) -> str:
    """A version without its local label: `2.5.1+cu124` is `2.5.1`, on any index."""
    return version.split("+", 1)[0]
