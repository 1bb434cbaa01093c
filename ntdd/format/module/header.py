"""The header of a generated module: the fields that say where it came from, written and read.

# ntdd: generated — edit the notebook or use `ntdd sync`.
# ntdd-source: nb.ipynb        the notebook, relative to the module
# ntdd-version: 0.1.0          which ntdd wrote it
# ntdd-hash: sha256:…          the notebook's test content
# ntdd-render: …               the format and the templates (`render_fingerprint`)
# ntdd-markers: 7              how many region markers ntdd wrote
# ntdd-frame: …                the hash of the text outside test regions
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

#: Bumped whenever the same notebook and templates would render different text:
#: a module whose header records the same format and templates is current.
FORMAT = 8

HEADER_FIRST_LINE = "# ntdd: generated — edit the notebook or use `ntdd sync`."
VERSION_FIELD = "# ntdd-version: "
FRAME_FIELD = "# ntdd-frame: "
MARKERS_FIELD = "# ntdd-markers: "  # how many markers ntdd wrote: more marker-like lines are fakes
HEADER_FIELD = re.compile(r"# ntdd-(?P<key>[a-z-]+): (?P<value>.*)$")
HEADER_LINES = 12


@dataclass(frozen=True)
class Header:
    """What a generated module records about its origin."""

    notebook: str  # the notebook, relative to the module's folder (`# ntdd-source:`)
    version: str
    content_hash: str
    frame: str = ""  # hash of everything outside the test regions
    render: str = ""  # the format and templates it was rendered with


def header_text(header: Header) -> str:
    """The header's lines, before the frame hash is stamped in."""
    return "\n".join(
        [
            HEADER_FIRST_LINE,
            f"# ntdd-source: {_quoted(header.notebook)}",
            f"{VERSION_FIELD}{header.version}",
            f"# ntdd-hash: {header.content_hash}",
            f"# ntdd-render: {header.render}",
        ]
    )


def is_generated(text: str) -> bool:
    """Whether *text* is a module ntdd wrote (its first line is ntdd's header)."""
    return text.startswith(HEADER_FIRST_LINE)


def parse_header(text: str) -> Header | None:
    """The header of a generated module, or None when *text* is not one."""
    if not is_generated(text):
        return None
    fields: dict[str, str] = {}
    for line in text.split("\n", HEADER_LINES)[1:HEADER_LINES]:
        match = HEADER_FIELD.match(line)
        if match is None:
            break
        fields[match["key"]] = match["value"].strip()
    if not {"source", "version", "hash"} <= fields.keys():
        return None
    try:
        notebook = _unquoted(fields["source"])
    except ValueError:
        return None
    frame, render = fields.get("frame", ""), fields.get("render", "")
    return Header(notebook, fields["version"], fields["hash"], frame, render)


def _quoted(path: str) -> str:
    """A path as a header field: as is, or as a JSON string when it holds odd characters."""
    plain = path.isprintable() and path == path.strip() and not path.startswith('"')
    return path if plain else json.dumps(path)


def _unquoted(field: str) -> str:
    if not field.startswith('"'):
        return field
    value = json.loads(field)
    if not isinstance(value, str):
        raise ValueError(field)
    return value


def render_fingerprint(templates: list[Path]) -> str:
    """What a rendering depends on besides the notebook: ntdd's format and the templates.

    Not ntdd's version or code: a release that renders the same text leaves
    committed modules current. (A change to how modules are rendered bumps
    `FORMAT`; the golden sample modules catch one that forgets to.)
    """
    stamps = []
    for path in templates:
        stat = path.stat()
        stamps.append((path, stat.st_mtime_ns, stat.st_size))
    return _fingerprint(tuple(stamps))


@functools.lru_cache(maxsize=64)
def _fingerprint(stamps: tuple[tuple[Path, int, int], ...]) -> str:
    """The templates' digest, read again only when one of them changed (every
    module rendered would otherwise read and hash them all)."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    for path, _, _ in stamps:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def without_version(text: str) -> str:
    """*text* less its version line: two modules that differ only there say the same."""
    return "\n".join(line for line in text.split("\n") if not line.startswith(VERSION_FIELD))
