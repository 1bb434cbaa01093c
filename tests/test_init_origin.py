"""Where the workflow `ntdd init` writes installs ntdd from: where this ntdd came from."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import write_notebook

from ntdd.commands.cli import main
from ntdd.errors import NtddError
from ntdd.repository import origin as origins
from ntdd.repository.git import Checkout, checkout_of
from ntdd.repository.origin import (
    Origin,
    given,
    installable,
    installed_origin,
    origin_of,
    runner_url,
)

ROOT = Path("/home/me/course")
COMMIT = "0123456789abcdef0123456789abcdef01234567"
EXTRAS = ["nbval", "jupytext"]


def origin(direct_url: dict[str, object] | None, checkout: Checkout | None = None) -> Origin:
    return origin_of("ntdd", "0.3.1", direct_url, ROOT, lambda folder: checkout)


def test_a_release_from_an_index_is_installed_at_its_version() -> None:
    found = origin(None)
    assert found.requirement("ntdd", EXTRAS) == "ntdd[nbval,jupytext]==0.3.1"
    assert found.note == "installs ntdd 0.3.1 from PyPI, as installed here"
    assert not found.warning


def test_a_vcs_install_is_installed_from_its_url_at_its_commit() -> None:
    found = origin(
        {
            "url": "https://github.com/ntdd-dev/ntdd.git",
            "vcs_info": {"vcs": "git", "commit_id": COMMIT, "requested_revision": "main"},
        }
    )
    assert found.requirement("ntdd", EXTRAS) == (
        f"ntdd[nbval,jupytext] @ git+https://github.com/ntdd-dev/ntdd.git@{COMMIT}"
    )
    assert "at commit 0123456789ab" in found.note


def test_a_vcs_install_of_a_subdirectory_keeps_it() -> None:
    found = origin(
        {
            "url": "https://example.org/mono.git",
            "vcs_info": {"vcs": "git", "commit_id": COMMIT},
            "subdirectory": "python/ntdd",
        }
    )
    assert found.target == f"git+https://example.org/mono.git@{COMMIT}#subdirectory=python/ntdd"


def test_an_archive_by_url_is_installed_from_that_url() -> None:
    url = "https://example.org/ntdd-0.3.1-py3-none-any.whl"
    found = origin({"url": url, "archive_info": {"hash": "sha256=00"}})
    assert found.requirement("ntdd", EXTRAS) == f"ntdd[nbval,jupytext] @ {url}"


def test_a_wheel_inside_the_repository_is_installed_by_its_path_there() -> None:
    found = origin({"url": f"file://{ROOT}/wheels/ntdd-0.3.1-py3-none-any.whl", "archive_info": {}})
    assert found.requirement("ntdd", EXTRAS) == (
        "./wheels/ntdd-0.3.1-py3-none-any.whl[nbval,jupytext]"
    )
    assert found.note == (
        "installs ntdd from the file wheels/ntdd-0.3.1-py3-none-any.whl in the repository, "
        "as installed here"
    )


def test_a_wheel_elsewhere_on_this_machine_is_out_of_reach_and_said_so() -> None:
    found = origin({"url": "file:///tmp/ntdd-0.3.1-py3-none-any.whl", "archive_info": {}})
    assert found.warning
    assert found.requirement("ntdd", EXTRAS) == "ntdd[nbval,jupytext]==0.3.1"
    assert found.note.startswith(
        "warning: ntdd here was installed from the file /tmp/ntdd-0.3.1-py3-none-any.whl, "
        "which a runner cannot reach; the workflow installs the release ntdd==0.3.1"
    )
    assert "commit it into the repository, or pass --ntdd-from SPEC" in found.note


def test_a_checkout_with_a_remote_is_installed_from_the_remote_at_its_commit() -> None:
    checkout = Checkout("git@github.com:me/ntdd.git", COMMIT, dirty=True)
    found = origin({"url": "file:///home/me/src/ntdd", "dir_info": {"editable": True}}, checkout)
    assert found.requirement("ntdd", EXTRAS) == (
        f"ntdd[nbval,jupytext] @ git+https://github.com/me/ntdd.git@{COMMIT}"
    )
    assert found.note == (
        "installs ntdd from https://github.com/me/ntdd.git at commit 0123456789ab: the commit "
        "of the checkout installed here (/home/me/src/ntdd); its uncommitted changes are not "
        "on the runner"
    )
    assert not found.warning


def test_a_checkout_whose_commit_no_remote_branch_holds_says_push_it() -> None:
    checkout = Checkout("https://github.com/me/ntdd.git", COMMIT, pushed=False)
    found = origin({"url": "file:///home/me/src/ntdd", "dir_info": {}}, checkout)
    assert found.warning and found.note.endswith(
        "warning: no branch of https://github.com/me/ntdd.git holds that commit yet: push it"
    )


@pytest.mark.parametrize(
    ("checkout", "why"),
    [
        (None, "a folder that is no git checkout (/home/me/src/ntdd)"),
        (Checkout(None, COMMIT), "a checkout with no remote (/home/me/src/ntdd)"),
        (Checkout("/srv/git/ntdd", COMMIT), "/home/me/src/ntdd, whose remote is /srv/git/ntdd"),
    ],
    ids=["no checkout", "no remote", "a remote on this machine"],
)
def test_a_folder_a_runner_cannot_reach_is_said_with_what_to_pass(
    checkout: Checkout | None, why: str
) -> None:
    found = origin({"url": "file:///home/me/src/ntdd", "dir_info": {"editable": True}}, checkout)
    assert found.warning and found.form == "release"
    assert f"installed from {why}, which a runner cannot reach" in found.note
    assert "pass --ntdd-from SPEC" in found.note


def test_the_repository_itself_is_installed_as_dot() -> None:
    found = origin({"url": f"file://{ROOT}", "dir_info": {"editable": True}})
    assert found.requirement("ntdd", EXTRAS) == ".[nbval,jupytext]"


@pytest.mark.parametrize(
    ("spec", "requirement"),
    [
        ("ntdd==0.4", "ntdd[nbval,jupytext]==0.4"),
        ("ntdd", "ntdd[nbval,jupytext]"),
        (f"ntdd @ git+https://x.org/n.git@{COMMIT}", f"ntdd[nbval,jupytext] @ git+https://x.org/n.git@{COMMIT}"),
        (f"git+https://x.org/n.git@{COMMIT}", f"ntdd[nbval,jupytext] @ git+https://x.org/n.git@{COMMIT}"),
        ("wheels/ntdd-0.4-py3-none-any.whl", "./wheels/ntdd-0.4-py3-none-any.whl[nbval,jupytext]"),
        ("ntdd[nbval]==0.4", "ntdd[nbval]==0.4"),  # its own extras: as given
    ],
)  # fmt: skip
def test_ntdd_from_gets_the_extras_the_job_needs(spec: str, requirement: str) -> None:
    assert given(spec).requirement("ntdd", EXTRAS) == requirement


@pytest.mark.parametrize(
    ("remote", "url"),
    [
        ("git@github.com:me/ntdd.git", "https://github.com/me/ntdd.git"),
        ("https://gitlab.com/me/ntdd.git", "https://gitlab.com/me/ntdd.git"),
        ("/srv/git/ntdd.git", None),
        ("file:///srv/git/ntdd.git", None),
    ],
)
def test_a_remote_is_what_a_runner_can_fetch(remote: str, url: str | None) -> None:
    assert runner_url(remote) == url


# -- through ntdd init -----------------------------------------------------------


def git(folder: Path, *args: str) -> None:
    command = ["git", "-c", "user.name=ntdd", "-c", "user.email=ntdd@example.invalid", *args]
    subprocess.run(command, cwd=folder, check=True, capture_output=True)


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "course"
    write_notebook(root / "nbs" / "a.ipynb", ["x = 1", "# TEST\nassert x == 1"])
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-gpg-sign", "-m", "a")
    monkeypatch.chdir(root)
    return root


def install_line(workflow: str, job: str = "notebooks") -> str:
    steps = yaml.safe_load(workflow)["jobs"][job]["steps"]
    install = next(s["run"] for s in steps if s.get("name") == "Install")
    return next(line for line in install.splitlines() if "ntdd" in line)


def test_init_says_where_it_installs_ntdd_from_and_ntdd_from_overrides_it(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"git+https://github.com/ntdd-dev/ntdd.git@{COMMIT}"
    assert main(["init", "--dry-run", "--ntdd-from", spec, "--gpu-runner", "gpu"]) == 0
    printed = capsys.readouterr()
    assert install_line(printed.out) == (
        "python -m pip install 'ntdd[jupytext,nbconvert] @ "
        f"git+https://github.com/ntdd-dev/ntdd.git@{COMMIT}'"
    )
    assert install_line(printed.out, "gpu").endswith(f"'ntdd[jupytext] @ {spec}'")
    assert f"ntdd: installs ntdd from {spec} (--ntdd-from)\n" in printed.err


LOCAL = "0.dev566+g3530aaf60"  # a build from a checkout (hatch-vcs): no index holds it


def installed_as(monkeypatch: pytest.MonkeyPatch, version: str, record: str | None) -> None:
    """This ntdd as if installed at *version*, pip's record of where from saying *record*."""
    import importlib.metadata

    real = importlib.metadata.distribution("ntdd")

    class Installed:
        def __init__(self) -> None:
            self.version = version

        def read_text(self, name: str) -> str | None:
            return record if name == "direct_url.json" else real.read_text(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Installed())
    monkeypatch.setattr(origins, "installed_origin", installed_origin)  # conftest's: undone


@pytest.mark.parametrize(
    "record",
    [
        json.dumps({"url": "file:///tmp/dist/ntdd-0.dev566+g3530aaf60-py3-none-any.whl",
                    "archive_info": {}}),
        json.dumps({"url": "file:///tmp/nowhere-ntdd", "dir_info": {"editable": True}}),
        None,
    ],
    ids=["a wheel elsewhere", "a checkout with no remote", "no record"],
)  # fmt: skip
def test_init_refuses_a_local_build_no_runner_can_install_and_says_what_to_pass(
    course: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    record: str | None,
) -> None:
    """It wrote `pip install 'ntdd[…]==0.dev566+g3530aaf60'`, from PyPI, with a warning:
    a version no index has, so the workflow failed at its install."""
    installed_as(monkeypatch, LOCAL, record)
    assert main(["init", "--dry-run"]) == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    error = printed.err.strip()
    assert error.startswith(f"ntdd: error: ntdd here is {LOCAL}, a local build (")
    assert "which no index holds and a runner cannot reach" in error
    assert "pass --ntdd-from SPEC" in error
    assert (
        "it was built from commit 3530aaf60: `--ntdd-from 'git+https://…/ntdd.git@3530aaf60'`"
        in error
    )
    assert main(["init", "--dry-run", "--ntdd-from", "git+https://x.org/ntdd.git@3530aaf60"]) == 0


def test_a_release_out_of_reach_is_still_installed_from_pypi_with_a_warning() -> None:
    found = origin({"url": "file:///tmp/ntdd-0.3.1-py3-none-any.whl", "archive_info": {}})
    assert installable("ntdd", found) is found
    local = origin_of("ntdd", LOCAL, {"url": "file:///tmp/x.whl", "archive_info": {}}, ROOT,
                      lambda folder: None)  # fmt: skip
    with pytest.raises(NtddError, match=r"installed from the file /tmp/x\.whl"):
        installable("ntdd", local)


def test_a_wheel_built_in_a_checkout_is_installed_from_its_remote_at_that_commit() -> None:
    """A wheel in `dist/` of the checkout it was built from: its version names the
    commit, and the checkout's remote holds it."""
    commit = "3530aaf60" + "0" * 31
    checkout = Checkout("git@github.com:me/ntdd.git", commit)
    wheel = {"url": f"file:///home/me/src/ntdd/dist/ntdd-{LOCAL}-py3-none-any.whl",
             "archive_info": {}}  # fmt: skip
    found = origin_of("ntdd", LOCAL, wheel, ROOT, lambda folder: checkout)
    assert found.requirement("ntdd", EXTRAS) == (
        f"ntdd[nbval,jupytext] @ git+https://github.com/me/ntdd.git@{commit}"
    )
    assert "the commit the file installed here" in found.note and not found.warning
    elsewhere = Checkout("git@github.com:me/ntdd.git", "f" * 40)  # checked out since
    moved = origin_of("ntdd", LOCAL, wheel, ROOT, lambda folder: elsewhere)
    with pytest.raises(NtddError, match="a local build"):
        installable("ntdd", moved)


def test_init_installs_a_wheel_committed_in_the_repository_by_its_path(
    course: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As if this ntdd were installed from that wheel: pip's record of it says so."""
    import importlib.metadata

    monkeypatch.setattr(origins, "installed_origin", installed_origin)  # conftest's: undone

    wheel = course / "wheels" / "ntdd-0.1.0-py3-none-any.whl"
    record = json.dumps({"url": wheel.as_uri(), "archive_info": {}})
    real = importlib.metadata.distribution("ntdd")

    class FromWheel:
        version = real.version

        def read_text(self, name: str) -> str | None:
            return record if name == "direct_url.json" else real.read_text(name)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: FromWheel())
    assert main(["init", "--dry-run", "--no-nbval"]) == 0
    printed = capsys.readouterr()
    assert install_line(printed.out) == (
        "python -m pip install './wheels/ntdd-0.1.0-py3-none-any.whl[jupytext,nbconvert]'"
    )
    assert (
        "ntdd: installs ntdd from the file wheels/ntdd-0.1.0-py3-none-any.whl in the repository"
    ) in printed.err


@pytest.mark.parametrize("spec", ["", "ntdd\n==1"])
def test_a_bad_ntdd_from_is_bad_input(
    course: Path, capsys: pytest.CaptureFixture[str], spec: str
) -> None:
    assert main(["init", "--dry-run", "--ntdd-from", spec]) == 2
    assert f"--ntdd-from {spec!r}: expected a pip requirement" in capsys.readouterr().err


def test_a_checkouts_state_is_read_from_git(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "remote", "add", "origin", "git@github.com:me/ntdd.git")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "--no-gpg-sign", "-m", "a")
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert checkout_of(tmp_path / "src") == Checkout(
        "git@github.com:me/ntdd.git", head, dirty=False, pushed=False
    )
    (tmp_path / "src" / "a.py").write_text("x = 2\n")
    found = checkout_of(tmp_path)
    assert found is not None and found.dirty
    assert checkout_of(tmp_path.parent / "nowhere") is None
