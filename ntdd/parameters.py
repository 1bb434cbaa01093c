"""Test-only parameters: values that replace a notebook's defaults under test.

papermill's convention: the cell tagged `parameters` holds a notebook's
defaults (`num_epochs = 20`), and overrides go in right after it (or before
the first code cell, in a notebook without one). Overrides come from
`pytest --ntdd-param num_epochs=1`, the `ntdd_parameters` ini key, and
`[tool.ntdd.parameters]`, for every notebook or for one:

    [tool.ntdd.parameters]
    num_epochs = 1
    [tool.ntdd.parameters."notebooks/train.ipynb"]
    lr = 0.1

Values are Python literals, kept as source text: a module records them as
written, and a bad one is an error naming it.
"""

from __future__ import annotations

import ast
import keyword
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ntdd.errors import ConfigError

TAG = "parameters"

Values = tuple[tuple[str, str], ...]  # (name, literal source), in order


@dataclass(frozen=True)
class Parameters:
    """Overrides for every notebook, and for notebooks by path (the latter win)."""

    common: Values = ()
    by_notebook: tuple[tuple[Path, Values], ...] = field(default=())

    def for_notebook(self, notebook: Path) -> Values:
        """The overrides that apply to *notebook*."""
        return tuple({**dict(self.common), **dict(self._own(notebook))}.items())

    def shared_by(self, notebook: Path) -> frozenset[str]:
        """The names *notebook* gets only as one of every notebook's, none of its own:
        where it lacks one, the way out is to give it to the notebooks that have it."""
        return frozenset(dict(self.common)) - frozenset(dict(self._own(notebook)))

    def _own(self, notebook: Path) -> Values:
        if not self.by_notebook:
            return ()
        where = Path(os.path.realpath(notebook))  # a symlink loop stays as it is
        return tuple(item for path, extra in self.by_notebook if path == where for item in extra)

    def over(self, other: Parameters) -> Parameters:
        """These overrides on top of *other* (the command line over the configuration)."""
        return Parameters(
            tuple({**dict(other.common), **dict(self.common)}.items()),
            (*other.by_notebook, *self.by_notebook),
        )


def parse_assignments(items: Iterable[str], where: str) -> Values:
    """`["num_epochs=1", "lr=0.1"]` -> `(("num_epochs", "1"), ("lr", "0.1"))`."""
    values: dict[str, str] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep:
            raise ConfigError(f"{where}: {item!r} is not NAME=VALUE (e.g. num_epochs=1)")
        values[_name(name, where)] = literal(text, f"{where} {item}")
    return tuple(values.items())


def parse_table(table: object, base: Path, where: str) -> Parameters:
    """`[tool.ntdd.parameters]`: values for every notebook, and tables for one each."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where}: parameters must be a table")
    common: dict[str, str] = {}
    by_notebook: list[tuple[Path, Values]] = []
    for key, value in table.items():
        if isinstance(value, Mapping):
            notebook = (base / key).resolve()
            by_notebook.append((notebook, _values(value, f"{where} [parameters.{key!r}]")))
        else:
            common[_name(key, where)] = _text(value, f"{where} parameters.{key}")
    return Parameters(tuple(common.items()), tuple(by_notebook))


def literal(text: str, where: str) -> str:
    """*text*, if it is a Python literal; a `ConfigError` naming it if not."""
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ConfigError(
            f"{where}: {text!r} is not a Python literal (numbers, strings in quotes, "
            "True, None, lists, ...)"
        ) from None
    comment = _comment_in(text)
    if comment is not None:
        raise ConfigError(
            f"{where}: {text!r} ends in a comment ({comment!r}); give the value alone "
            f"({text[: text.index(comment)].strip()!r})"
        )
    return text


def _comment_in(text: str) -> str | None:
    """A `# comment` in a literal: the value is written into the module as its source
    text, where the comment would swallow the rest of the line."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    return next((t.string for t in tokens if t.type == tokenize.COMMENT), None)


def describe(values: Values) -> str:
    return ", ".join(f"{name}={text}" for name, text in values)


def _values(table: Mapping[str, object], where: str) -> Values:
    return tuple((_name(k, where), _text(v, f"{where}.{k}")) for k, v in table.items())


def _text(value: object, where: str) -> str:
    """A TOML value as a literal; only values a literal can write back."""
    return literal(repr(value), where)


def _name(name: str, where: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ConfigError(f"{where}: {name!r} is not a name a notebook can assign")
    return name
