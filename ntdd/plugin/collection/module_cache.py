"""Collected notebooks' modules, compiled and cached, as pytest caches rewritten modules.

Reading a notebook, planning, rendering, rewriting its asserts and compiling
cost milliseconds per notebook; loading the compiled code back costs a
fraction of one. An entry is keyed on everything that can change the
compiled module: the notebook's bytes, its test parameters, whether the run
makes a notebook without tests a test (`--ntdd-run-untested`), the name it is
compiled under, ntdd (its format, templates, version and code), pytest's
version, assertion mode and assertion pass hook, and the Python that
compiled it, with its optimization level (`-O` strips asserts). An entry
`--collect-only` stored says that its asserts are not rewritten; the first
run that runs its tests rewrites them and stores it again.

An entry is code that runs as it is loaded, so only what this user wrote is
trusted, as git trusts only a repository its user owns: a folder or entry
owned by another user, or that another user could have written (group- or
world-writable), is not used. An entry carries a checksum of its bytes,
checked before they are unmarshalled (damaged marshal data can crash the
interpreter); an entry that fails it, or does not say the key it was stored
under, is compiled again.
The cache lives in pytest's cache folder; `-p no:cacheprovider` switches it off,
and so does a folder that cannot be written (a read-only checkout) or that
this user does not own alone.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import os
import stat
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

from ntdd import _version as ntdd_version
from ntdd._version import __version__
from ntdd.format.module import FORMAT, render_fingerprint
from ntdd.notebook.positions import FileLines
from ntdd.pipeline.templates import module_templates

_MAGIC = "ntdd-module-4"
_CHECKSUM = hashlib.sha256().digest_size  # an entry's first bytes: the SHA-256 of the rest
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_session_cache = pytest.StashKey["ModuleCache | None"]()


@dataclass(frozen=True)
class Entry:
    """What collecting a notebook produced: the module's source, its code, the plan's
    warnings, and where each cell's lines are in the notebook's file (for reports).

    *structure_only*: the code was compiled for `--collect-only`, its asserts
    not rewritten; a run that runs tests compiles it again before it imports it.
    """

    source: str
    code: types.CodeType
    warnings: tuple[str, ...]
    file_lines: FileLines = ()
    structure_only: bool = False


class ModuleCache:
    """Compiled modules in a folder, one file per key."""

    def __init__(self, folder: Path, salt: str) -> None:
        self.folder = folder
        self.salt = salt
        self._made: set[Path] = set()  # subfolders known to exist

    @classmethod
    def of(cls, config: pytest.Config) -> ModuleCache | None:
        """The session's cache; None when pytest's cache is off or unwritable. One per session."""
        if _session_cache not in config.stash:
            config.stash[_session_cache] = cls._open(config)
        return config.stash[_session_cache]

    @classmethod
    def _open(cls, config: pytest.Config) -> ModuleCache | None:
        cache = getattr(config, "cache", None)
        if cache is None:
            return None
        try:
            folder = Path(cache.mkdir("ntdd-modules"))
            if not _own_alone(folder, os.stat(folder)):
                return None  # another user's, or theirs to write: its entries could be anyone's
        except OSError:  # a read-only checkout: compile every notebook, as without a cache
            return None
        mode = str(config.getoption("assertmode", "rewrite"))
        pass_hook = bool(config.getini("enable_assertion_pass_hook"))
        return cls(folder, _salt(mode, pass_hook))

    def key(self, data: bytes, *parts: str) -> str:
        digest = hashlib.sha256(self.salt.encode())
        for part in parts:
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0" + data)
        return digest.hexdigest()

    def load(self, key: str) -> Entry | None:
        """The entry stored under *key*; None when there is none, or it is unusable."""
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                if not _own_alone(path, os.fstat(f.fileno())) or not _own_alone(
                    path.parent, os.stat(path.parent)
                ):
                    return None
                data = f.read()
            checksum, payload = data[:_CHECKSUM], data[_CHECKSUM:]
            if hashlib.sha256(payload).digest() != checksum:
                return None  # damaged: unmarshalling it could crash the interpreter
            stored = marshal.loads(payload)
            magic, stored_key, source, warnings, code, file_lines, structure_only = stored
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if magic != _MAGIC or stored_key != key or not isinstance(code, types.CodeType):
            return None
        if not isinstance(source, str) or not all(isinstance(w, str) for w in warnings):
            return None
        if not isinstance(file_lines, tuple) or not isinstance(structure_only, bool):
            return None
        return Entry(source, code, tuple(warnings), file_lines, structure_only)

    def store(self, key: str, entry: Entry) -> None:
        """Write *entry* under *key*, atomically; a cache that cannot be written is no error."""
        path = self._path(key)
        payload = marshal.dumps(
            (
                _MAGIC,
                key,
                entry.source,
                entry.warnings,
                entry.code,
                entry.file_lines,
                entry.structure_only,
            )
        )
        data = hashlib.sha256(payload).digest() + payload
        with contextlib.suppress(OSError):
            if path.parent not in self._made:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._made.add(path.parent)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except OSError:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.ntddc"


def _own_alone(path: Path, status: os.stat_result) -> bool:
    """Whether *path* (as *status* describes it) is this user's, and no one else's to write.

    A cache folder ntdd made with a permissive umask is this user's: it is
    made private rather than refused.
    """
    if not hasattr(os, "getuid"):  # Windows: no owners to compare; ACLs decide
        return True
    if status.st_uid != os.getuid():
        return False
    if status.st_mode & _OTHERS_WRITE and stat.S_ISDIR(status.st_mode):
        os.chmod(path, stat.S_IMODE(status.st_mode) & ~_OTHERS_WRITE)
        return True
    return not status.st_mode & _OTHERS_WRITE


@functools.cache
def _salt(assert_mode: str, assertion_pass_hook: bool) -> str:
    """What every entry of this process depends on besides its notebook.

    Worked out once per process: it stats every module of ntdd (a changed
    checkout recompiles) and hashes the templates.
    """
    stamps = sorted(_stamps(Path(ntdd_version.__file__).resolve().parent, ""))  # ntdd/
    return "|".join(
        [
            _MAGIC,
            __version__,
            str(FORMAT),
            render_fingerprint(module_templates()),
            pytest.__version__,
            assert_mode,
            f"pass-hook={assertion_pass_hook}",  # the rewriter emits the hook's calls or not
            sys.implementation.cache_tag or "",
            sys.version,
            f"optimize={sys.flags.optimize}",  # compile() strips asserts under -O
            *stamps,
        ]
    )


def _stamps(folder: Path | str, prefix: str) -> list[str]:
    """`path:mtime:size` of every module under *folder*, paths from the package's root.

    `os.scandir`, not `Path.rglob`: every run stats every module, and the
    walk costs a fifth of rglob's (0.7 ms against 3.8 ms for ntdd's 130 modules).
    """
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".py") and entry.is_file():
                stat = entry.stat()
                found.append(f"{prefix}{entry.name}:{stat.st_mtime_ns}:{stat.st_size}")
            elif entry.is_dir() and entry.name != "__pycache__":
                found += _stamps(entry.path, f"{prefix}{entry.name}/")
    return found
