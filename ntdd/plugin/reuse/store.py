"""The store of `--ntdd-reuse DIR`: one JSON file per notebook's key, each a run that passed.

A file is named after the key it answers (`<key>.json`), so a lookup is one
read, and two runs that share the folder (a CI cache, two terminals) write
different files or the same bytes, each atomically (`write_atomic`: a
temporary file, then `os.replace`). A file that is not an entry ntdd wrote
for that key (bad JSON, another schema, another tool's file) is never
trusted: the notebook runs, and the run says so in one line.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ntdd.errors import NtddError
from ntdd.notebook.files import write_atomic

SCHEMA = "ntdd-reuse/1"


@dataclass(frozen=True)
class Entry:
    """A notebook's complete run in which every test passed or was skipped."""

    key: str
    notebook: str  # as that run named it, for people reading the folder
    tests: int  # the tests it ran
    at: str  # when the run started, UTC, `YYYY-MM-DD HH:MM`
    run: str  # the run's short id

    @property
    def label(self) -> str:
        """The run, as the terminal names it: `2026-12-07 21:03 UTC, run 1a2b3c4d`."""
        return f"{self.at} UTC, run {self.run}"


class Store:
    """The folder of entries."""

    def __init__(self, folder: Path, said: str) -> None:
        self.folder = folder
        self.said = said  # the option or key that named it, for the one-line notes

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def read(self, key: str) -> tuple[Entry | None, str]:
        """The entry for *key*, or None; and a note where a file there is not one."""
        path = self.path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, ""
        except (OSError, UnicodeDecodeError) as e:
            return None, self._ignored(path, type(e).__name__)
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return None, self._ignored(path, "not JSON")
        why = _wrong(data, key)
        if why:
            return None, self._ignored(path, why)
        fields = {name: data[name] for name in ("key", "notebook", "tests", "at", "run")}
        return Entry(**fields), ""

    def write(self, entry: Entry) -> str:
        """Keep *entry*; a note where it cannot be written (the run's verdicts stand). A
        file already there that is not an entry (noted when it was read) is left as it is:
        ntdd writes over none but its own."""
        if self.path(entry.key).exists() and self.read(entry.key)[0] is None:
            return ""
        data = {"schema": SCHEMA, **asdict(entry)}
        try:
            write_atomic(self.path(entry.key), json.dumps(data, indent=1) + "\n")
        except NtddError as e:
            return f"ntdd: {self.said}: {e}; the next run runs {entry.notebook} again"
        return ""

    def _ignored(self, path: Path, why: str) -> str:
        return f"ntdd: {self.said}: {path}: not an entry ntdd wrote ({why}); ignored, it runs"


def _wrong(data: object, key: str) -> str:
    """Why *data* is not an entry for *key*; "" when it is."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return f"no schema {SCHEMA}"
    if data.get("key") != key:
        return "another key's"
    types = {"notebook": str, "tests": int, "at": str, "run": str}
    wrong = [name for name, kind in types.items() if not isinstance(data.get(name), kind)]
    if wrong or isinstance(data.get("tests"), bool):
        return f"bad {', '.join(wrong) or 'tests'}"
    return ""
