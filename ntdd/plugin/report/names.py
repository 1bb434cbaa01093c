"""What a notebook writes into `--ntdd-report`'s page, kept out of the page's own names.

The page's header, badges and failure list are found by their ids and classes
(`nb-1-cell-5`, `ntdd-totals`, `ntdd-badge`): a link of the failure list lands on
the cell with that id, the page's styles colour what has those classes, and
tools read them. A notebook's markdown or HTML output that named them would
take their place, so each id a notebook writes is prefixed (`user-content-`,
as GitHub does), with its in-page links, and each class of the page's own
(`ntdd-…`) is dropped. A `<style>` element is dropped with its text: the page
applies no style a notebook wrote, and its text is CSS, not words to read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bleach.html5lib_shim import Filter

PREFIX = "user-content-"
PAGES_CLASSES = "ntdd-"
DROPPED = frozenset({"style"})  # the sanitizer lets them through to this filter, to drop


class OwnNames(Filter):  # type: ignore[misc]
    """An html5lib filter, after bleach's sanitizer: the notebook's names in its own space."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        inside = 0  # within a dropped element
        for token in super().__iter__():
            kind = token["type"]
            if kind in ("StartTag", "EndTag", "EmptyTag") and token["name"] in DROPPED:
                inside += {"StartTag": 1, "EndTag": -1}.get(kind, 0)
                inside = max(inside, 0)
                continue
            if inside:
                continue
            if kind in ("StartTag", "EmptyTag"):
                token["data"] = renamed(token["data"])
            yield token


def renamed(attributes: dict[tuple[str | None, str], str]) -> dict[tuple[str | None, str], str]:
    """A tag's attributes with its id prefixed, an in-page link to such an id, and none of
    the page's classes."""
    kept = {}
    for key, value in attributes.items():
        name = key[1]
        if name == "id" and value:
            value = PREFIX + value
        elif name == "href" and value.startswith("#") and len(value) > 1:
            value = "#" + PREFIX + value[1:]
        elif name == "class":
            value = " ".join(c for c in value.split() if not c.lower().startswith(PAGES_CLASSES))
            if not value:
                continue
        kept[key] = value
    return kept
