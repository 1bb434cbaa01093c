"""The module already on disk: read as text, and never overwritten unless it is safe.

Export, `--check`, sync and the nbconvert exporter read a module through
`read_existing`, and replace one only when it is ntdd's module of that very
notebook (`ensure_ours`) and holds no edits that `ntdd sync` has not carried
back yet (`ensure_unedited`).
"""

from __future__ import annotations

import os
from pathlib import Path

from ntdd.errors import FileWriteError, ForeignFileError, ModuleEditedError
from ntdd.format.module import HEADER_FIRST_LINE, intact, is_generated, parse_header


def ensure_ours(target: Path, text: str, notebook: Path) -> None:
    """Refuse to replace a file ntdd did not write for *notebook*."""
    header = parse_header(text)
    if header is None:
        what = "has a broken ntdd header" if is_generated(text) else "was not written by ntdd"
        raise ForeignFileError(f"{target}: {what}; not overwriting it (use --force)")
    recorded = (target.parent / header.notebook).resolve()
    if recorded != notebook.resolve():
        raise ForeignFileError(
            f"{target}: was generated from {header.notebook}, not {notebook}; "
            "not overwriting it (export to another folder with -o, or use --force)"
        )


def ensure_unedited(target: Path, text: str) -> None:
    """Refuse to overwrite edits made in a generated module: they would be lost."""
    header = parse_header(text)
    if header is not None and not intact(text, header):
        raise ModuleEditedError(
            f"{target}: edited since it was exported; not overwriting it "
            "(`ntdd sync` writes the edits back to the notebook, --force discards them)"
        )


def read_existing(target: Path) -> str | None:
    """The module at *target* as text (line ends as LF), or None when there is none.

    An editor's dropped final newline is no edit of ntdd's frame.
    """
    try:
        if not target.exists() and not target.is_symlink():
            return None
    except OSError as e:  # a name too long for the file system, say
        raise FileWriteError(f"{target}: cannot write it: {os.strerror(e.errno or 0)}") from e
    if target.is_dir():
        raise ForeignFileError(f"{target}: is a directory; cannot write the module there")
    try:
        data = target.read_bytes()
    except OSError as e:
        raise ForeignFileError(f"{target}: cannot be read: {os.strerror(e.errno or 0)}") from e
    _ensure_saved_as_ntdd_wrote(target, data)
    try:
        text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        return ""  # not text, so not ours: ensure_ours refuses it
    return text + "\n" if text and not text.endswith("\n") else text


def _ensure_saved_as_ntdd_wrote(target: Path, data: bytes) -> None:
    """A module ntdd wrote, re-saved by an editor in another encoding: say how to undo it."""
    header = HEADER_FIRST_LINE.split("—")[0].encode()  # the part any encoding writes alike
    if data.startswith(b"\xef\xbb\xbf" + header):
        raise ForeignFileError(
            f"{target}: an editor saved it with a byte-order mark; ntdd writes modules as "
            'UTF-8 without one. Save it as plain UTF-8 (not "UTF-8 with BOM"), then run '
            "ntdd again"
        )
    if data.startswith(header):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ForeignFileError(
                f"{target}: not UTF-8 (byte {e.start}: an editor saved it in another encoding, "
                "such as cp1252); ntdd writes modules as UTF-8. Save it as UTF-8, then run "
                "ntdd again"
            ) from e
