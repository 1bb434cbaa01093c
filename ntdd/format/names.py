"""Test function names: valid, unique and deterministic Python identifiers."""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable


def identifier_from_title(title: str) -> str:
    """`"input shape"` -> `"test_input_shape"`; Unicode letters are kept.

    Python normalises identifiers with NFKC, so names are normalised first:
    two titles that Python would read as the same name get the same result.
    Returns "" when no identifier character survives (emoji, punctuation).
    """
    text = unicodedata.normalize("NFKC", title).lower()
    chars = (ch if ("a" + ch).isidentifier() else "_" for ch in text)
    stem = re.sub(r"_+", "_", "".join(chars)).strip("_")
    if not stem:
        return ""
    name = unicodedata.normalize("NFKC", stem if stem.startswith("test") else f"test_{stem}")
    return name if name.isidentifier() and not keyword.iskeyword(name) else ""


def positional_name(cell_index: int) -> str:
    """The name of an unnamed test cell: `test_cell_7` for cell 7 (counted from 1)."""
    return f"test_cell_{cell_index}"


class NameRegistry:
    """Hands out unique names in notebook order; later duplicates get a suffix."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = set(reserved)

    def claim(self, wanted: str) -> str:
        """Return *wanted*, or *wanted* with the first free `_2`, `_3`, ... suffix."""
        name, n = wanted, 1
        while name in self._taken:
            n += 1
            name = f"{wanted}_{n}"
        self._taken.add(name)
        return name
