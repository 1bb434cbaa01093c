"""The release: its workflow publishes only what it built and checked, from a version
tag, by trusted publishing; the tag's version must have its changelog section.

What the build and smoke jobs make of a tagged checkout is run in
tests/test_packaging.py; actionlint checks the workflow in tests/test_workflows.py.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT
from gha import load_job, run_script

RELEASE = ROOT / ".github" / "workflows" / "release.yml"
CHANGELOG = ROOT / "CHANGELOG.md"
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>.+))?$", re.MULTILINE)


def workflow() -> dict[Any, Any]:
    return dict(yaml.safe_load(RELEASE.read_text()))


def steps(job: str) -> dict[str, dict[str, Any]]:
    return {s.get("name", s.get("uses", "")): s for s in load_job(RELEASE, job)["steps"]}


def runs(job: str) -> str:
    return "\n".join(s["run"] for s in steps(job).values() if "run" in s)


def test_it_runs_on_a_version_tag_and_nothing_else() -> None:
    # PyYAML reads the bare key `on` as True.
    assert workflow()[True] == {"push": {"tags": ["v*"]}}


def test_only_the_publish_job_can_get_an_id_token_and_only_in_the_pypi_environment() -> None:
    jobs = workflow()["jobs"]
    assert workflow()["permissions"] == {"contents": "read"}
    assert jobs["publish"]["permissions"] == {"id-token": "write"}
    assert jobs["publish"]["environment"]["name"] == "pypi"
    others = {name: job.get("permissions") for name, job in jobs.items() if name != "publish"}
    assert others == {"build": None, "smoke": None}


def test_it_publishes_what_it_built_after_the_smoke_run_passed() -> None:
    jobs = workflow()["jobs"]
    assert jobs["smoke"]["needs"] == "build"
    assert sorted(jobs["publish"]["needs"]) == ["build", "smoke"]
    upload = steps("build")["actions/upload-artifact@v4"]["with"]
    assert upload["name"] == "dist" and upload["path"] == "dist/"
    for job in ("smoke", "publish"):
        assert steps(job)["actions/download-artifact@v4"]["with"] == {
            "name": "dist",
            "path": "dist/",
        }
    publish = jobs["publish"]["steps"][-1]
    assert publish["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "with" not in publish  # no token, no password: trusted publishing
    assert not any("build" in s.get("run", "") for s in jobs["publish"]["steps"])


def test_it_builds_once_from_the_tags_history_and_checks_with_twine() -> None:
    checkout = steps("build")["actions/checkout@v4"]["with"]
    assert checkout["fetch-depth"] == 0  # hatch-vcs reads the tag
    assert "python -m build\n" in runs("build")
    assert "python -m build" not in runs("smoke")
    assert steps("build")["Check the distributions"]["run"] == "twine check --strict dist/*"


def test_the_smoke_run_uses_the_wheel_in_a_fresh_environment_away_from_the_checkout() -> None:
    script = runs("smoke")
    assert 'python -m venv "$RUNNER_TEMP/venv"' in script
    assert '"$RUNNER_TEMP/venv/bin/python" -m pip install --quiet dist/ntdd-*.whl numpy' in script
    assert 'cd "$smoke"' in script
    assert "python -m pytest -p no:cacheprovider --ntdd data_prep.ipynb" in script
    assert "ntdd export data_prep.ipynb -o exported" in script
    assert "ntdd export --check data_prep.ipynb" in script


# -- the tag and the changelog --------------------------------------------------


def check_tag(tag: str, changelog: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """The build job's check of *tag*, run in *folder* against *changelog*."""
    (folder / "CHANGELOG.md").write_text(changelog)
    script = steps("build")["Check the tag against the changelog"]["run"]
    output = folder / "output.txt"
    output.write_text("")
    return run_script(script, folder, {"GITHUB_REF_NAME": tag, "GITHUB_OUTPUT": str(output)})


DATED = "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2027-03-04\n\n- A change.\n"


def test_a_tag_whose_version_has_a_dated_section_passes_the_check(tmp_path: Path) -> None:
    done = check_tag("v1.2.0", DATED, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "output.txt").read_text() == "version=1.2.0\n"


@pytest.mark.parametrize(
    ("tag", "changelog"),
    [
        ("v1.2.1", DATED),
        ("v1.2", DATED),
        ("v1.2.0rc1", DATED),
        ("v1.2.0", DATED.replace("1.2.0", "1x2y0")),
        ("v1.2.0", DATED.replace("## [1.2.0]", "### [1.2.0]")),
    ],
    ids=["another version", "a prefix of it", "a pre-release of it", "dots", "not a section"],
)
def test_a_tag_without_its_section_is_refused_naming_what_to_write(
    tag: str, changelog: str, tmp_path: Path
) -> None:
    done = check_tag(tag, changelog, tmp_path)
    assert done.returncode == 1
    assert f"no section '## [{tag[1:]}] - YYYY-MM-DD' for the tag {tag}" in done.stdout
    assert (tmp_path / "output.txt").read_text() == ""  # no version for the build


def test_a_section_not_yet_dated_is_refused(tmp_path: Path) -> None:
    done = check_tag("v1.2.0", DATED.replace("2027-03-04", "unreleased"), tmp_path)
    assert done.returncode == 1 and "date the release's section" in done.stdout


def test_the_changelog_keeps_a_changelogs_shape() -> None:
    """`[Unreleased]` first, then each version, newest first, dated (the coming
    release may say `unreleased` until release day), each with its link."""
    text = CHANGELOG.read_text()
    headings = [(m["version"], m["date"]) for m in HEADING.finditer(text)]
    assert headings[0] == ("Unreleased", None)
    releases = headings[1:]
    assert releases, "no release section"
    for number, (version, date) in enumerate(releases):
        assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", version), version
        dated = date is not None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", date)
        assert dated or (number == 0 and date == "unreleased"), (version, date)
    versions = [tuple(map(int, re.findall(r"\d+", v)[:3])) for v, _ in releases]
    assert versions == sorted(set(versions), reverse=True)
    links = dict(re.findall(r"^\[([^\]]+)\]: (https://\S+)$", text, re.MULTILINE))
    assert links.keys() == {v for v, _ in headings}
    assert links["Unreleased"].endswith(f"/compare/v{releases[0][0]}...HEAD")


def test_dating_the_coming_release_is_all_its_tag_needs(tmp_path: Path) -> None:
    """Release day: `unreleased` becomes the date in the newest section's heading,
    and the check passes the tag it names; not before."""
    text = CHANGELOG.read_text()
    (version, date), *_ = [(m["version"], m["date"]) for m in HEADING.finditer(text)][1:]
    tag = f"v{version}"
    if date == "unreleased":
        assert check_tag(tag, text, tmp_path).returncode == 1
        text = text.replace(f"## [{version}] - unreleased", f"## [{version}] - 2027-01-02")
    done = check_tag(tag, text, tmp_path)
    assert done.returncode == 0, done.stdout


# -- what the docs tell users to install -----------------------------------------

# A console line that installs ntdd from an index: `$ pip install ntdd`, `'ntdd[torch]'`;
# not from the repository (`'ntdd @ git+…'`) nor a wheel (`dist/ntdd-*.whl`).
FROM_AN_INDEX = re.compile(r"^\$ (?:python3? -m )?pip install (?!.*@)['\"]?ntdd\b", re.MULTILINE)


def test_the_docs_install_ntdd_from_pypi_only_once_it_is_released() -> None:
    """Until the newest section of the changelog is dated, `pip install ntdd` finds
    no distribution, and no page says to run it; from release day on, the README does."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    telling = {p.name for p in pages if FROM_AN_INDEX.search(p.read_text(encoding="utf-8"))}
    (_, date), *_ = [(m["version"], m["date"]) for m in HEADING.finditer(CHANGELOG.read_text())][1:]
    if date == "unreleased":
        assert telling == set()
    else:
        assert "README.md" in telling
