"""Finding notebooks and writing files safely."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import glob
import os
import re
import stat
import sys
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

from ntdd.errors import (
    FileChangedError,
    FileWriteError,
    NotebookReadError,
    ReadOnlyError,
)
from ntdd.notebook.text import TEXT_SUFFIXES, has_jupytext_header, is_paired, jupytext_installed

SKIP_DIRS = frozenset({".ipynb_checkpoints", "__pycache__", "node_modules", ".git"})


def find_notebooks(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The notebooks named by *paths*: files as given, folders searched recursively.

    Checkpoints, hidden folders and symlinked folders are not entered, so a
    symlink loop cannot trap the search. A path that does not exist, or a
    file that is not a notebook (see `is_notebook_file`), raises
    `NotebookReadError`.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from _walk(path)
        elif is_notebook_file(path, given=True) and (path.exists() or path.is_symlink()):
            yield path
        elif not path.exists():
            raise NotebookReadError(f"{path}: no such file or directory")
        elif path.suffix in TEXT_SUFFIXES:
            raise NotebookReadError(
                f"{path}: not a notebook (expected a .ipynb file, or a jupytext .py or .md "
                "notebook with its header)"
            )
        else:
            raise NotebookReadError(f"{path}: not a notebook (expected a .ipynb file)")


def path_argument(path: str | Path) -> str:
    """*path* as a command line hands it to pytest (or any argparse program): a relative
    name starts with `./`, so that `-draft.ipynb` is not read as an option, nor
    `@notes.ipynb` as a file of arguments (pytest's `@FILE`)."""
    text = os.fspath(path)
    return text if os.path.isabs(text) else os.path.join(os.curdir, text)


def is_notebook_file(path: Path, given: bool = False) -> bool:
    """Whether ntdd takes *path* for a notebook: a `.ipynb` file, or a jupytext text notebook.

    A `.py` or `.md` file is one only with jupytext's header. Found in a
    folder (not *given* by name), it is taken only where jupytext is
    installed to read it, and not when a `.ipynb` of the same name sits
    beside it: that is a jupytext pair, found once, as the `.ipynb`, and
    tested with the newer file's cells (`text.newest_inputs`).
    """
    if path.suffix == ".ipynb":
        return True
    if path.suffix not in TEXT_SUFFIXES or not (given or jupytext_installed()):
        return False
    return has_jupytext_header(path) and (given or not is_paired(path))


def notebooks_among(
    files: Iterable[str | Path],
    folders: Iterable[str | Path],
    present: Collection[Path] | None = None,
) -> Iterator[Path]:
    """Those of *files* that `find_notebooks(folders)` finds, each once, in order.

    For a list of files made elsewhere (`git ls-files -z`, `git diff -z
    --name-only`): a file counts where the search would reach it, inside one
    of *folders* and through no folder it skips, and it is a notebook there.
    Only files on disk count, and only those among *present* when given (the
    files a checkout has, `git ls-files`): a text notebook whose `.ipynb`
    counts is half of a jupytext pair, found as that `.ipynb`.
    """
    tops = [Path(os.path.abspath(f)) for f in folders]
    kept = None if present is None else frozenset(present)

    def there(path: Path) -> bool:
        return (kept is None or path in kept) and _on_disk(path)

    seen: set[Path] = set()
    for raw in files:
        found = _found_as(Path(raw), tops, there)
        if found is not None and found not in seen:
            seen.add(found)
            yield found


def _found_as(path: Path, tops: list[Path], there: Callable[[Path], bool]) -> Path | None:
    """The notebook a search of *tops* finds for *path*: itself, its `.ipynb`, or none."""
    if not there(path) or not any(_reached(path, top) for top in tops):
        return None
    if path.suffix == ".ipynb":
        return path
    if path.suffix not in TEXT_SUFFIXES or not jupytext_installed():
        return None
    if not has_jupytext_header(path):
        return None
    ipynb = path.with_suffix(".ipynb")
    return ipynb if there(ipynb) else path


def _on_disk(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _reached(path: Path, top: Path) -> bool:
    """Whether a walk of *top* reaches *path*: no skipped, hidden or symlinked folder between."""
    try:
        between = Path(os.path.abspath(path)).relative_to(top).parts[:-1]
    except ValueError:
        return False
    folder = top
    for name in between:
        folder = folder / name
        if not _searched(name) or folder.is_symlink():
            return False
    return True


def _searched(folder_name: str) -> bool:
    return folder_name not in SKIP_DIRS and not folder_name.startswith(".")


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if _searched(d))
        for name in sorted(files):
            if name.endswith((".ipynb", *TEXT_SUFFIXES)) and is_notebook_file(Path(root) / name):
                yield Path(root) / name


def check_results_file(path: Path, option: str, shown: str | None = None) -> None:
    """Refuse, before a run, a file for its results (a report, a summary, durations)
    that would destroy a notebook or that cannot be written.

    An option that takes a value swallows the notebook meant as the run's
    argument (`pytest --ntdd --ntdd-report nb.ipynb`); a symlink may lead to
    one. Either would be overwritten, or have Markdown appended to its JSON.
    *shown* is the path as the user gave it, for messages.
    """
    shown = shown or str(path)
    kind = node_kind(path)
    if kind in _IN_PLACE:
        if not os.access(path, os.W_OK):
            raise FileWriteError(f"{option} {shown}: {kind} not writable by this user")
        return
    if kind is not None and kind != _FOLDER:
        raise FileWriteError(f"{option} {shown}: is {kind}, not a file; give a file name")
    target = path.resolve()
    through = f" (through the link {shown})" if target != path.absolute() else ""
    if target.suffix == ".ipynb" or (target.exists() and is_notebook_file(target, given=True)):
        raise FileWriteError(
            f"{option} {shown}: is a notebook{through}; the results would overwrite it. "
            f"Give the file to write after {option} (e.g. {option} {_example(option)}), "
            "and the notebooks after it"
        )
    if target.is_dir():
        raise FileWriteError(f"{option} {shown}: is a folder; give a file name")
    if target.exists():
        if target.is_file() and _read_only(target):
            raise FileWriteError(f"{option} {shown}: read-only; not writing it")
        return
    folder = next(p for p in target.parents if p.exists())
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise FileWriteError(f"{option} {shown}: cannot write it: {folder} is not writable")


def _example(option: str) -> str:
    if option == "--ntdd-report":
        return "report.html"
    return "durations.json" if "durations" in option else f"{option.strip('-')}.md"


_FIFO = "a FIFO"
_FOLDER = "a folder"
_IN_PLACE = frozenset({"a character device", _FIFO})  # written to, never replaced
_DESCRIPTOR_LINKS = ("/proc/", "/dev/fd/")  # `/dev/stdout` leads through one of them
_MAX_LINKS = 40  # as the kernel's own limit on a path's symlinks


def node_kind(path: Path) -> str | None:
    """What *path* leads to (through its links) where that is not a regular file: `a
    FIFO`, `a character device`, `a folder`, `a block device`, `a socket`; None for a
    regular file, or for nothing there yet."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    kinds = (
        (stat.S_ISFIFO, _FIFO),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISDIR, _FOLDER),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((kind for test, kind in kinds if test(mode)), None)


def replaceable(path: Path) -> bool:
    """Whether a file ntdd writes at *path* may be replaced by a rename: a regular file
    or nothing, and not one reached through a process's open file (`/dev/stdout` with
    the output redirected to a file, which the shell still writes to).

    Anything else is written in place (a character device, a FIFO, such a file) or
    refused (`_write_to_node`): a rename would put a regular file where the device
    node was (as root, `/dev/full` or `/dev/null` itself), or cut the shell's file
    from the output written after it.
    """
    return node_kind(path) is None and not _through_a_descriptor(path)


def _through_a_descriptor(path: Path) -> bool:
    """Whether *path*, or a link it leads through, names an open file descriptor."""
    return any(hop.startswith(_DESCRIPTOR_LINKS) for hop in _hops(path))


def _hops(path: Path) -> Iterator[str]:
    """*path*, then each path its links lead to in turn."""
    here = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        yield here
        try:
            link = os.readlink(here)
        except (OSError, ValueError):
            return
        here = os.path.normpath(os.path.join(os.path.dirname(here), link))


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that *path* names (`/dev/stdout`: 1), if any: written
    through it, the text lands where the process's own output stands, not over it."""
    own = re.compile(rf"/(?:proc/(?:self|{os.getpid()})|dev)/fd/(\d+)")
    for hop in _hops(path):
        named = own.fullmatch(hop)
        if named:
            return int(named[1])
    return None


def _write_to_node(path: Path, data: bytes) -> None:
    """Write *data* to what *path* leads to, in place: a character device or a FIFO (as
    `>>` would), or the file behind an open descriptor, appended to; anything else
    (a folder, a block device, a socket) is refused, naming it.

    A FIFO is opened without blocking: with no reader the open fails at once
    (ENXIO), and it is refused, where a plain open would wait for a reader forever.
    """
    kind = node_kind(path)
    if kind is not None and kind not in _IN_PLACE:
        raise FileWriteError(f"{path}: is {kind}, not a file; not writing it")
    descriptor = _own_descriptor(path)
    if descriptor is not None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # what this process printed comes first
        with os.fdopen(os.dup(descriptor), "wb") as f:  # the same offset as its own writes
            f.write(data)
        return
    nonblocking = getattr(os, "O_NONBLOCK", 0)  # none on Windows, which has no FIFOs
    flags = os.O_WRONLY | os.O_APPEND | nonblocking | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ENXIO and kind == _FIFO:
            raise FileWriteError(
                f"{path}: a FIFO with no reader; not written (start its reader first)"
            ) from e
        raise
    if nonblocking:
        os.set_blocking(fd, True)  # a reader that reads slowly is waited for, as by a shell
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def append_to_file(path: Path, data: bytes) -> None:
    """Append *data* to *path* in one write (a job summary's earlier steps stay, and a
    reader sees all of it or none); a device or FIFO is written as `write_atomic`
    writes one (`_write_to_node`), never waited on forever."""
    if not replaceable(path):
        _write_to_node(path, data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as f:
        f.write(data)


def write_atomic(
    path: Path, text: str | bytes, newline: str = "\n", was: bytes | None = None
) -> None:
    """Write *text* to *path* so that readers see the old file or the new, never half.

    The new content goes to a temporary file in the same folder, is flushed to
    disk, and replaces the old file in one rename. An existing file keeps its
    permissions; a symlink is written through, to its target; a read-only
    file is refused. *newline* ends the lines of *text* (`"\r\n"` keeps a
    CRLF file CRLF). Temporary files a killed run left behind are removed. A
    file with other hard links is written in place, so that all its names
    see the new content. With *was*, the file must still hold those bytes
    when it is replaced (checked last, just before the rename); else
    `FileChangedError`, and nothing is written. A file that cannot be
    written (a full disk, a folder that is read-only, a name too long) is a
    `FileWriteError` naming it. Only a regular file is ever replaced
    (`replaceable`): a character device, a FIFO or `/dev/stdout` is written
    in place, a folder or any other node refused.
    """
    try:
        _write(path, text, newline, was)
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise FileWriteError(f"{path}: cannot write it: {reason}") from e


def _write(path: Path, text: str | bytes, newline: str, was: bytes | None) -> None:
    data = text if isinstance(text, bytes) else text.replace("\n", newline).encode("utf-8")
    if not replaceable(path):
        _write_to_node(path, data)
        return
    target = path.resolve() if path.is_symlink() else path
    ensure_writable(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stray_temporaries(target)
    if target.exists() and target.stat().st_nlink > 1:
        _ensure_holds(target, was)
        _write_in_place(target, data)
        return
    mode = target.stat().st_mode & 0o777 if target.exists() else _default_mode()
    fd, tmp = tempfile.mkstemp(
        prefix=f"{_temporary_prefix(target)}{os.getpid()}-", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        _ensure_holds(target, was)
        if was is None or not _exchanged(tmp, target, was):
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


_TEMP_MARK = "ntdd-"
_NAME_KEPT = 120  # of a file's name in its temporary's: a name near 255 bytes still has one


def _temporary_prefix(target: Path) -> str:
    return f".{target.name[:_NAME_KEPT]}.{_TEMP_MARK}"


def _exchanged(tmp: str, target: Path, was: bytes) -> bool:
    """Put *tmp* in *target*'s place only if *target* still holds *was*, atomically where
    the system can swap two names (Linux's `renameat2(RENAME_EXCHANGE)`); False where it
    cannot, and the caller renames as before.

    Checking and then renaming leaves a window in which an editor's save lands and is
    replaced unseen. Swapping instead leaves the file displaced under the temporary's
    name, to be read: if it is not *was*, a save came in between, and it is put back.
    """
    if not _swap(tmp, target):
        return False
    try:
        same = Path(tmp).read_bytes() == was
    except OSError:
        same = False
    if not same:
        _swap(tmp, target)  # the save goes back where it was; ours is removed by the caller
        raise _changed(target)
    os.unlink(tmp)
    return True


@functools.cache
def _renameat2() -> Any:
    """libc's renameat2, where there is one."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    return function


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _swap(a: str | Path, b: str | Path) -> bool:
    """Swap the files named *a* and *b* in one step; False where the system cannot."""
    function = _renameat2()
    if function is None:
        return False
    done = function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(done == 0)


def _ensure_holds(target: Path, was: bytes | None) -> None:
    if was is not None and target.read_bytes() != was:
        raise _changed(target)


def _changed(target: Path) -> FileChangedError:
    return FileChangedError(
        f"{target}: changed on disk while ntdd was working on it (saved from Jupyter?); "
        "nothing was changed: save it, then run ntdd again"
    )


def _write_in_place(target: Path, data: bytes) -> None:
    """A file with more than one hard link is rewritten, not replaced: a rename would
    leave its other names holding the old content."""
    with target.open("r+b") as f:
        f.write(data)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


def ensure_writable(path: Path) -> None:
    """Refuse, before anything is written, a file that `write_atomic` would refuse."""
    target = path.resolve() if path.is_symlink() else path
    if target.exists() and _read_only(target):
        raise ReadOnlyError(f"{path}: read-only; not writing it (make it writable first)")


def _remove_stray_temporaries(target: Path) -> None:
    """Temporary files of a run that was killed mid-write: its process is gone."""
    prefix = _temporary_prefix(target)
    for stray in target.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid = stray.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                stray.unlink()


def _read_only(path: Path) -> bool:
    """Marked read-only (no write bit for its owner), or not writable by us."""
    return not path.stat().st_mode & stat.S_IWUSR or not os.access(path, os.W_OK)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, and belongs to someone else
        return True
    return True


def line_ending(path: Path) -> str:
    """The line ending a text file uses: CRLF if it has one, else LF."""
    try:
        with path.open("rb") as f:
            return "\r\n" if b"\r\n" in f.read(65536) else "\n"
    except OSError:
        return "\n"


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def relative_notebook_path(notebook: Path, module_dir: Path) -> str:
    """How a module in *module_dir* names its notebook: a relative POSIX path."""
    return Path(os.path.relpath(os.path.abspath(notebook), os.path.abspath(module_dir))).as_posix()
