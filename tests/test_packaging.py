"""What users install: the version, the templates, the entry points, the wheel's contents."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from importlib.metadata import entry_points, version
from pathlib import Path

import pytest
from conftest import ROOT
from gha import JobRun, run_job

import ntdd
from ntdd.format.module import render_fingerprint
from ntdd.pipeline import templates
from ntdd.pipeline.templates import MODULE_TEMPLATE, template_dir


def test_version_comes_from_the_installed_metadata() -> None:
    assert ntdd.__version__ == version("ntdd")


def test_the_templates_are_found() -> None:
    folder = template_dir()
    assert {MODULE_TEMPLATE, "_header.py.j2", "_test.py.j2"} <= {p.name for p in folder.iterdir()}


def test_the_workflow_template_is_no_part_of_the_modules_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changing CI must not make every exported module stale."""
    copy = shutil.copytree(templates.template_dir(), tmp_path / "templates")
    monkeypatch.setattr(templates, "template_dir", lambda: copy)

    def fingerprint() -> str:
        return render_fingerprint(templates.module_templates())

    before = fingerprint()
    (copy / "workflow.yml.j2").write_text("name: changed\n")
    assert fingerprint() == before
    (copy / "_test.py.j2").write_text("changed\n")
    assert fingerprint() != before


def test_the_plugin_console_script_and_exporter_are_registered() -> None:
    assert "ntdd.plugin" in {ep.value for ep in entry_points(group="pytest11")}
    assert "ntdd.commands.cli:main" in {ep.value for ep in entry_points(group="console_scripts")}
    exporters = {ep.name: ep.value for ep in entry_points(group="nbconvert.exporters")}
    assert exporters["ntdd"] == "ntdd.commands.nbconvert:NtddExporter"


def test_rendering_never_imports_pytest_or_torch() -> None:
    sample = str(ROOT / "sample_notebooks" / "tiny_classifier.ipynb")
    code = (
        "import sys; from ntdd.pipeline.plan import make_plan;"
        "from ntdd.notebook.read import read_notebook;"
        "from ntdd.pipeline.render import render_module;"
        f"render_module(make_plan(read_notebook({sample!r})));"
        "print(sorted(m for m in ('pytest', 'torch', 'nbformat') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# -- the release's sdist and wheel, built as .github/workflows/release.yml builds them --

RELEASE = ROOT / ".github" / "workflows" / "release.yml"
TAG = "v9.8.7"  # no release's: this version can come from nowhere but the tag
# What a working tree collects that no distribution may hold (all of it ignored by git).
CLUTTER = (
    ".venv/pyvenv.cfg",
    "ntdd/__pycache__/values.cpython-311.pyc",
    "benchmarks/results/latest.md",
    ".pytest_cache/README.md",
    ".mypy_cache/3.11/ntdd.json",
    "build/generated/test_data_prep.py",
    "site/index.html",
)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=ntdd", "-c", "user.email=ntdd@example.invalid", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def copy_checkout(dest: Path) -> list[str]:
    """The files git would commit from this checkout (tracked, and new ones it does
    not ignore), copied into *dest*; their names."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout")
    names = [n for n in git(ROOT, "ls-files", "-co", "--exclude-standard", "-z").split("\0") if n]
    names = [n for n in names if (ROOT / n).is_file()]  # not those deleted and not yet staged
    for name in names:
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    return names


@dataclass(frozen=True)
class Release:
    """The checkout, tagged, and what the release workflow's jobs did with it."""

    repo: Path
    files: list[str]  # the checkout's files, as copied
    build: JobRun
    smoke: JobRun

    @property
    def wheel(self) -> zipfile.ZipFile:
        (path,) = (self.repo / "dist").glob("*.whl")
        return zipfile.ZipFile(path)

    @property
    def sdist(self) -> list[str]:
        """The sdist's file names, below its top folder."""
        (path,) = (self.repo / "dist").glob("*.tar.gz")
        with tarfile.open(path) as archive:
            return [m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()]


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    """This checkout committed and tagged in a repository of its own, with clutter
    beside it and a changelog section for the tag, then the release workflow's build
    and smoke jobs run on it as GitHub runs them on a tag push."""
    root = tmp_path_factory.mktemp("release")
    repo = root / "ntdd"
    files = copy_checkout(repo)
    changelog = repo / "CHANGELOG.md"
    section = f"## [Unreleased]\n\n## [{TAG[1:]}] - 2026-01-02\n"
    changelog.write_text(changelog.read_text().replace("## [Unreleased]\n", section, 1))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", "a release")
    git(repo, "tag", TAG)
    for name in CLUTTER:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("clutter\n")
    on_tag = {"GITHUB_REF_NAME": TAG}
    build = run_job(RELEASE, "build", repo=repo, temp=root / "build", event="push", env=on_tag)
    # The fresh environment has ntdd and no other plugin: pytest loads it by its entry point.
    autoload = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "", "PYTEST_PLUGINS": ""}
    smoke = run_job(
        RELEASE, "smoke", repo=repo, temp=root / "smoke", event="push", env=on_tag | autoload
    )
    return Release(repo, files, build, smoke)


@pytest.mark.slow
@pytest.mark.xdist_group("release")
def test_a_version_tag_builds_that_version(release: Release) -> None:
    assert sorted(p.name for p in (release.repo / "dist").iterdir()) == [
        "ntdd-9.8.7-py3-none-any.whl",
        "ntdd-9.8.7.tar.gz",
    ]
    metadata = HeaderParser().parsestr(release.wheel.read("ntdd-9.8.7.dist-info/METADATA").decode())
    assert metadata["Version"] == "9.8.7"
    # Installed, ntdd says so too (the smoke job checks `ntdd --version`).
    python = release.smoke.temp / "venv" / "bin" / "python"
    code = "import ntdd; print(ntdd.__version__)"
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "9.8.7\n"


@pytest.mark.slow
@pytest.mark.xdist_group("release")
def test_the_wheel_holds_the_package_with_its_templates_and_nothing_else(
    release: Release,
) -> None:
    names = release.wheel.namelist()
    assert {n.split("/")[0] for n in names} == {"ntdd", "ntdd-9.8.7.dist-info"}
    package = {n for n in names if n.startswith("ntdd/")}
    expected = {n for n in release.files if n.startswith("ntdd/")}
    expected |= {f"ntdd/{n}" for n in release.files if n.startswith("templates/")}
    assert package == expected  # no cache, no stray file
    assert {"ntdd/templates/module.py.j2", "ntdd/py.typed"} <= package
    assert "ntdd-9.8.7.dist-info/licenses/LICENSE" in names


@pytest.mark.slow
@pytest.mark.xdist_group("release")
def test_the_sdist_holds_the_checkouts_files_and_none_of_its_clutter(release: Release) -> None:
    sdist = release.sdist
    assert sorted(sdist) == sorted([*release.files, "PKG-INFO"])
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "templates/_test.py.j2",
    ):
        assert needed in sdist
    assert not set(CLUTTER) & set(sdist)


@pytest.mark.slow
@pytest.mark.xdist_group("release")
def test_the_metadata_names_the_licence_and_passes_twine_check(release: Release) -> None:
    assert "Check the distributions" in release.build.ran  # twine check --strict dist/*
    metadata = HeaderParser().parsestr(release.wheel.read("ntdd-9.8.7.dist-info/METADATA").decode())
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["Project-URL"] == "Homepage, https://github.com/ntdd-dev/ntdd"
    # PyPI shows the README away from the repository: its links lead to GitHub.
    description = metadata.get_payload()
    assert description.startswith("# ntdd — notebooks as test suites\n")
    assert "](https://github.com/ntdd-dev/ntdd/blob/main/docs/running.md)" in description
    assert re.findall(r"\]\((?!https://)", description) == []


@pytest.mark.slow
@pytest.mark.xdist_group("release")
def test_the_installed_wheel_runs_a_sample_notebooks_tests_without_torch(
    release: Release,
) -> None:
    """`ntdd export --check`, `pytest --ntdd` and an exported module, in a fresh
    environment away from the checkout, as the smoke job runs them."""
    assert release.smoke.ran == [
        "Install the wheel into a fresh virtual environment",
        "Run a sample notebook's tests with the installed wheel",
    ]
    python = release.smoke.temp / "venv" / "bin" / "python"
    torch = "import importlib.util; print(importlib.util.find_spec('torch'))"
    done = subprocess.run([str(python), "-c", torch], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None"
    exported = (release.smoke.temp / "smoke" / "exported" / "test_data_prep.py").read_text()
    assert "# ntdd-version: 9.8.7\n" in exported  # the header records the tag's version


@pytest.mark.slow
def test_a_tree_without_git_history_builds_as_a_development_version(tmp_path: Path) -> None:
    """An archive or a copy of the tree, with no tags to read: it still builds and
    installs, below every release."""
    tree = tmp_path / "ntdd"
    copy_checkout(tree)
    done = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(tree)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in (tmp_path / "dist").iterdir()] == ["ntdd-0.dev0-py3-none-any.whl"]
