"""What a notebook's code cells import, and what its install lines name.

The cells are read as ntdd runs them (`cell_code.to_python`, magics
transformed): the top-level names of what they import absolutely, and the
requirements a `%pip install` (or `!pip install`) line names.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ntdd.cells.cell_code import to_python
from ntdd.cells.magics import MagicCall, installs
from ntdd.repository.requirements import name_of
from ntdd.values import Cell

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
        elif name_of(word) and not any(c in word for c in "/{$") and ".whl" not in word:
            yield word
