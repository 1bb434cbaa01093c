"""Where an installed distribution came from, so that CI installs the same one.

pip records it in the distribution's `direct_url.json` (PEP 610) unless the
distribution came from an index: a VCS URL at the commit installed, an
archive (a wheel or an sdist) by URL or file, or a local folder (a checkout,
editable or not). `origin_of` turns that record into what a runner can
install, and says why; it is pure, so that each case is tested without
installing anything. A file or folder on this machine is out of a runner's
reach unless it lies inside the repository; a checkout is reached through
its git remote, at its commit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from ntdd.errors import NtddError
from ntdd.repository.git import Checkout, checkout_of

RELEASE = "release"  # from an index, at a version
URL = "url"  # a PEP 508 direct reference: `name @ URL`
PATH = "path"  # a file or folder inside the repository, by its path there
GIVEN = "given"  # what the user passed, as given

# What to do instead when the distribution installed here is out of a runner's reach.
PASS_NTDD_FROM = (
    "pass --ntdd-from SPEC: a git URL at a commit, a wheel's URL or path in the repository"
)
_SCP = re.compile(r"^(?:[\w.-]+@)?(?P<host>[\w.-]+):(?P<path>(?!/).+)$")  # git@host:o/r.git
_BUILT_FROM = re.compile(r"\+(?:.*\.)?g(?P<commit>[0-9a-f]{7,40})(?:\.|$)")  # +g3530aaf60.d2026…
_NAMED = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<rest>(?:\s*(?:[<>=!~;@]|$)).*)$")


@dataclass(frozen=True)
class Origin:
    """How CI installs the distribution, and the note that says why."""

    form: str  # RELEASE, URL, PATH or GIVEN
    target: str  # the version, the URL, the repository path, or the spec given
    note: str
    warning: bool = False  # the one installed here is out of a runner's reach
    source: str = ""  # where the one installed here came from, when out of a runner's reach

    def requirement(self, name: str, extras: Sequence[str] = ()) -> str:
        """A pip requirement for it, with *extras*: `ntdd[nbval]==0.1.0`."""
        wanted = f"[{','.join(extras)}]" if extras else ""
        if self.form == RELEASE:
            return f"{name}{wanted}=={self.target}"
        if self.form == URL:
            return f"{name}{wanted} @ {self.target}"
        if self.form == PATH:
            return f"{_as_path(self.target)}{wanted}"
        return with_extras(self.target, name, extras)


def with_extras(spec: str, name: str, extras: Sequence[str]) -> str:
    """*spec*, any pip requirement, with *extras* added where it has none of its own:
    `ntdd==0.2`, `ntdd @ URL`, a URL (`git+https://…`), or a path (`dist/x.whl`)."""
    wanted = f"[{','.join(extras)}]" if extras else ""
    named = _NAMED.match(spec.strip())
    if "[" in spec or not wanted:
        return spec
    if named and named["name"].lower().replace("_", "-") == name.lower():
        return f"{named['name']}{wanted}{named['rest']}"
    if "://" in spec or re.match(r"^\w+\+", spec):
        return f"{name}{wanted} @ {spec}"
    return f"{_as_path(spec)}{wanted}"


def given(spec: str) -> Origin:
    return Origin(GIVEN, spec, f"installs ntdd from {spec} (--ntdd-from)")


def installed_origin(name: str, root: Path) -> Origin:
    """How a runner installs *name* as this environment has it."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        found = distribution(name)
    except PackageNotFoundError:  # pragma: no cover - ntdd runs this
        return Origin(RELEASE, "", f"installs {name} from PyPI")
    record = found.read_text("direct_url.json")
    try:
        direct_url = json.loads(record) if record else None
    except ValueError:
        direct_url = None
    return installable(name, origin_of(name, found.version, direct_url, root, checkout_of))


def origin_of(
    name: str,
    version: str,
    direct_url: Mapping[str, Any] | None,
    root: Path,
    checkout: Callable[[Path], Checkout | None],
    instead: str = PASS_NTDD_FROM,
) -> Origin:
    """How a runner installs *name* as installed here; *root* is the repository's top
    folder, *checkout* tells a folder's git state, *instead* what to do where no runner
    can reach it."""
    if direct_url is None:
        return Origin(RELEASE, version, f"installs {name} {version} from PyPI, as installed here")
    url = str(direct_url.get("url", ""))
    if "vcs_info" in direct_url:
        return _vcs(name, version, url, direct_url, instead)
    local = _local_path(url)
    if local is None:
        return Origin(URL, url, f"installs {name} from {url}, as installed here")
    inside = _inside(local, root)
    if inside is not None:
        what = "folder" if "dir_info" in direct_url else "file"
        where = f"the {what} {inside} in the repository" if inside != "." else "the repository"
        return Origin(PATH, inside, f"installs {name} from {where}, as installed here")
    if "dir_info" in direct_url:
        return _from_checkout(name, version, local, checkout(local), instead)
    built = _built_checkout(name, version, local, checkout(local.parent))
    if built is not None:
        return built
    hint = f"commit it into the repository, or {instead}"
    return _out_of_reach(name, version, f"the file {local}", hint)


def _built_checkout(name: str, version: str, archive: Path, git: Checkout | None) -> Origin | None:
    """A wheel or sdist built in a checkout (`dist/` of it) from the commit checked out
    there, as its version says (`+g<commit>`): that commit, from the checkout's remote."""
    commit = built_from(version)
    if commit is None or git is None or git.remote is None or not git.commit.startswith(commit):
        return None
    remote = runner_url(git.remote)
    if remote is None:
        return None
    note = (
        f"installs {name} from {remote} at commit {git.commit[:12]}: the commit the file "
        f"installed here ({archive}) was built from"
    )
    if not git.pushed:
        note += f"; warning: no branch of {remote} holds that commit yet: push it"
    return Origin(URL, f"git+{remote}@{git.commit}", note, warning=not git.pushed)


def _vcs(name: str, version: str, url: str, direct_url: Mapping[str, Any], instead: str) -> Origin:
    info = direct_url["vcs_info"]
    commit = str(info.get("commit_id", ""))
    if _local_path(url) is not None or not commit:
        return _out_of_reach(name, version, f"the repository {url}", instead)
    target = f"{info.get('vcs', 'git')}+{url}@{commit}" + _subdirectory(direct_url)
    note = f"installs {name} from {url} at commit {commit[:12]}, as installed here"
    return Origin(URL, target, note)


def _from_checkout(
    name: str, version: str, folder: Path, git: Checkout | None, instead: str
) -> Origin:
    if git is None or git.remote is None:
        why = "a folder that is no git checkout" if git is None else "a checkout with no remote"
        return _out_of_reach(name, version, f"{why} ({folder})", instead)
    remote = runner_url(git.remote)
    if remote is None:
        return _out_of_reach(name, version, f"{folder}, whose remote is {git.remote}", instead)
    note = (
        f"installs {name} from {remote} at commit {git.commit[:12]}: the commit of the "
        f"checkout installed here ({folder})"
    )
    if git.dirty:
        note += "; its uncommitted changes are not on the runner"
    if not git.pushed:
        note += f"; warning: no branch of {remote} holds that commit yet: push it"
    return Origin(URL, f"git+{remote}@{git.commit}", note, warning=not git.pushed)


def _out_of_reach(name: str, version: str, where: str, instead: str) -> Origin:
    note = (
        f"warning: {name} here was installed from {where}, which a runner cannot reach; "
        f"the workflow installs the release {name}=={version} from PyPI instead ({instead})"
    )
    return Origin(RELEASE, version, note, warning=True, source=where)


def released(version: str) -> bool:
    """Whether an index can hold *version*: PyPI refuses a local version label
    (`0.dev566+g3530aaf60`, a build from a checkout), as PEP 440 asks of public indexes."""
    return bool(version) and "+" not in version


def built_from(version: str) -> str | None:
    """The commit a local build names in its version (hatch-vcs and setuptools-scm write
    `+g<commit>`), abbreviated as it names it; None where it names none."""
    found = _BUILT_FROM.search(version)
    return found["commit"] if found else None


def installable(name: str, found: Origin, instead: str = PASS_NTDD_FROM) -> Origin:
    """*found*, where a runner can install it: a release of a version no index can hold
    (a local build, out of a runner's reach) is refused with what to pass instead, where
    the workflow would fail at its install."""
    if found.form != RELEASE or released(found.target):
        return found
    where = f"installed from {found.source}" if found.source else "no record of where from"
    raise NtddError(_local_build(name, found.target, where, instead))


def _local_build(name: str, version: str, where: str, instead: str) -> str:
    commit = built_from(version)
    hint = (
        f"; it was built from commit {commit}: `--ntdd-from 'git+https://…/{name}.git@{commit}'` "
        "installs that commit from a repository a runner can reach that holds it"
        if commit
        else ""
    )
    return (
        f"{name} here is {version}, a local build ({where}), which no index holds and a "
        f"runner cannot reach; not writing a workflow whose install would fail: {instead}{hint}"
    )


def runner_url(remote: str) -> str | None:
    """A git remote as a runner can fetch it: scp-like `git@host:o/r` as https; None for
    a folder on this machine."""
    scp = _SCP.match(remote)
    if scp and "://" not in remote:
        return f"https://{scp['host']}/{scp['path']}"
    if remote.startswith(("https://", "http://", "ssh://", "git://")):
        return remote
    return None


def _local_path(url: str) -> Path | None:
    parts = urlsplit(url)
    if parts.scheme == "file":
        return Path(url2pathname(unquote(parts.path)))
    return Path(url) if not parts.scheme and url else None


def _inside(path: Path, root: Path) -> str | None:
    try:
        below = path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    return below.as_posix()


def _subdirectory(direct_url: Mapping[str, Any]) -> str:
    sub = direct_url.get("subdirectory")
    return f"#subdirectory={sub}" if sub else ""


def _as_path(target: str) -> str:
    """A path pip reads as a path, not a name: `./dist/x.whl`."""
    if target == "." or target.startswith(("/", "./", "../")) or os.path.isabs(target):
        return target
    return f"./{target}"
