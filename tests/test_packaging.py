"""What users install: the version, the templates, the entry points, the wheel's contents."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import entry_points, version
from pathlib import Path

import pytest
from conftest import ROOT

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


@pytest.mark.slow
def test_the_wheel_ships_the_templates_inside_the_package(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (wheel,) = tmp_path.glob("ntdd-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "ntdd/templates/module.py.j2" in names
    assert "ntdd/py.typed" in names
    assert not any(n.startswith(("templates/", "tests/", "sample_notebooks/")) for n in names)
