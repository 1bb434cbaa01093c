"""What git says of a work tree: its top folder, its files, and the commit checked out.

Each question is one git command run in the folder asked about; outside a
work tree, or on a machine without git, the answer is None (or nothing), and
the caller counts files on disk instead.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Checkout:
    """A git work tree: its remote's URL, the commit checked out, and its state."""

    remote: str | None
    commit: str
    dirty: bool = False  # tracked files differ from the commit
    pushed: bool = True  # a remote branch holds the commit


def git_top(root: Path) -> Path | None:
    """The top folder of the git work tree holding *root*, or None outside one."""
    done = _git(root, "rev-parse", "--show-toplevel")
    return Path(done.strip()).resolve() if done is not None else None


def checkout_of(folder: Path) -> Checkout | None:
    """The git state of the work tree holding *folder*: the remote its branch tracks (else
    `origin`, else the only one), the commit, and whether it is dirty or unpushed."""
    commit = _git(folder, "rev-parse", "HEAD")
    if commit is None:
        return None
    upstream = (_git(folder, "rev-parse", "--abbrev-ref", "@{upstream}") or "").strip()
    remotes = (_git(folder, "remote") or "").split()
    name = upstream.split("/")[0] if upstream else "origin" if "origin" in remotes else None
    name = name or (remotes[0] if len(remotes) == 1 else None)
    remote = (_git(folder, "config", "--get", f"remote.{name}.url") or "").strip() if name else ""
    dirty = bool((_git(folder, "status", "--porcelain", "--untracked-files=no") or "").strip())
    holders = (_git(folder, "branch", "-r", "--contains", commit.strip()) or "").strip()
    return Checkout(remote or None, commit.strip(), dirty, pushed=bool(holders))


def stored_with_lfs(root: Path, files: list[str]) -> tuple[str, ...]:
    """Those of *files* that `.gitattributes` stores with Git LFS (`filter=lfs`): a
    checkout without LFS holds their pointers, a few lines of text, instead."""
    if not files:
        return ()
    try:
        done = subprocess.run(
            ["git", "check-attr", "-z", "--stdin", "filter"],
            cwd=root,
            input=b"".join(os.fsencode(f) + b"\0" for f in files),
            capture_output=True,
        )
    except OSError:
        return ()
    fields = done.stdout.split(b"\0")  # path, attribute, value; each NUL-ended
    found = (
        os.fsdecode(fields[i]) for i in range(0, len(fields) - 2, 3) if fields[i + 2] == b"lfs"
    )
    return tuple(found) if done.returncode == 0 else ()


def git_files(root: Path, *which: str) -> set[str] | None:
    """`git ls-files` with the options *which* (`--cached`: the files git tracks), as
    paths relative to *root*; None outside a work tree."""
    out = _git(root, "ls-files", "-z", *which)
    return None if out is None else {p for p in out.split("\0") if p}


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, encoding="utf-8"
        )
    except OSError:
        return None  # no git on this machine
    return done.stdout if done.returncode == 0 else None
