"""A notebook's markdown on `--ntdd-report`'s page: rendered, and cleaned of what could
take the page over.

nbconvert's own cleaner (its `clean_html` filter) keeps bleach's dozen inline
tags and escapes the rest, so that a heading or a paragraph showed as its HTML
text (`<h1 id="Title">Title</h1>`). This one keeps what markdown writes
(headings, paragraphs, lists, tables, code, rules, images) and escapes every
other tag, so that `<meta http-equiv="refresh">`, `<style>`, `<form>`,
`<input>`, `<base>`, `<script>` or `<iframe>` in a cell show as text; a
`<style>` element is dropped, its text with it (`names`). Links keep only
http(s) and mailto targets, and in-page anchors; the ids and classes a
notebook writes stay out of the page's own (`names`).

A cell's HTML output (a DataFrame's table, `display(HTML(...))`) is cleaned
the same way, and its images show only from data: URIs, so that the page
stays self-contained and fetches nothing when opened.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from ntdd.plugin.report.names import DROPPED, OwnNames

TAGS = frozenset(
    {
        *("h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "div", "span"),
        *("em", "strong", "b", "i", "u", "s", "del", "sup", "sub", "small", "mark", "kbd"),
        *("a", "abbr", "acronym", "code", "pre", "blockquote", "img"),
        *("ul", "ol", "li", "dl", "dt", "dd", "details", "summary"),
        *("table", "thead", "tbody", "tfoot", "tr", "th", "td", "caption"),
    }
)
_CELL = ["align", "colspan", "rowspan"]
ATTRIBUTES = {  # each tag's, beside those of every tag ("*")
    "*": ["class", "id", "title"],
    "a": ["href"],
    "img": ["src", "alt", "width", "height"],
    "ol": ["start"],
    "th": _CELL,
    "td": _CELL,
}
PROTOCOLS = frozenset({"http", "https", "mailto"})


def clean_markdown_html(html: Any) -> str:
    """*html* (a markdown cell as nbconvert rendered it) with markdown's tags kept, and
    every other tag escaped."""
    return str(_markdown_cleaner().clean(_text(html)))


def clean_output_html(html: Any) -> str:
    """*html* (a cell's `text/html` output) cleaned as markdown is, its images only
    those the page holds (data: URIs)."""
    return str(_output_cleaner().clean(_text(html)))


def _text(html: Any) -> str:
    return html.decode() if isinstance(html, bytes) else str(html)


@cache
def _markdown_cleaner() -> Any:
    """Made once: bleach's cleaner builds its parser and serializer when made."""
    from bleach.sanitizer import Cleaner

    return Cleaner(
        tags=TAGS | DROPPED, attributes=ATTRIBUTES, protocols=PROTOCOLS, filters=[OwnNames]
    )


@cache
def _output_cleaner() -> Any:
    from bleach.sanitizer import Cleaner

    return Cleaner(
        tags=TAGS | DROPPED,
        attributes=_output_attribute,
        protocols=PROTOCOLS | {"data"},
        filters=[OwnNames],
    )


def _output_attribute(tag: str, name: str, value: str) -> bool:
    """Whether an output's tag keeps an attribute: markdown's, but `src` only as a
    data: image, and no `href` to a data: URI."""
    if name not in ATTRIBUTES["*"] and name not in ATTRIBUTES.get(tag, []):
        return False
    if name == "src":
        return value.startswith("data:image/")
    if name == "href":
        return not value.strip().lower().startswith("data:")
    return True
