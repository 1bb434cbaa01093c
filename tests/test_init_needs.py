"""What the workflow `ntdd init` writes installs for the notebooks: the repository's own
dependency files, else the notebooks' imports at the versions installed here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ntdd.repository.dependencies import declared
from ntdd.repository.local_code import code_sources
from ntdd.repository.named_files import named_paths, names
from ntdd.repository.notebook_imports import cell_imports
from ntdd.repository.origin import Origin
from ntdd.repository.pins import Pins, resolve
from ntdd.repository.requirements import requirement_lines
from ntdd.values import Cell


def cells(*sources: str, kind: str = "code") -> list[Cell]:
    return [Cell(i, kind, source) for i, source in enumerate(sources, 1)]


def test_the_imports_of_code_cells_by_their_top_level_names() -> None:
    found = cell_imports(
        cells(
            "import numpy as np, os.path\nfrom sklearn.svm import SVC",
            "%matplotlib inline\nimport matplotlib.pyplot as plt",  # magics transformed
            "def load():\n    import pandas\n    return pandas",  # inside a function too
            "from . import sibling\nfrom __future__ import annotations",
            "import this is not python",  # passed over, as pytest --ntdd reports it
        )
        + cells("import markdown_is_not_code", kind="markdown")
    )
    assert found.modules == ("numpy", "os", "sklearn", "matplotlib", "pandas", "__future__")


def test_the_packages_an_install_line_names() -> None:
    found = cell_imports(
        cells(
            '%pip install -q "pandas<3" tqdm -r requirements.txt --index-url https://x.org/simple',
            "!pip install seaborn==0.13 ./local/pkg && echo done",
            "!python -m pip install -U rich",
            "!ls pip install not-an-install",
        )
    )
    assert found.installed == ("pandas<3", "tqdm", "seaborn==0.13", "rich")


DISTRIBUTIONS = {
    "numpy": ["numpy"],
    "yaml": ["PyYAML"],
    "torch": ["torch"],
    "torchvision": ["torchvision"],
    "ntdd": ["ntdd"],
    "google": ["protobuf", "google-auth"],
    "ghost": ["ghost-dist"],  # mapped, but not installed here
}
VERSIONS = {
    "numpy": "2.1.0",
    "PyYAML": "6.0.2",
    "torch": "2.5.1+cu124",
    "torchvision": "0.20.1+cpu",
    "ntdd": "0.1.0",
    "protobuf": "5.0",
    "google-auth": "2.3",
    "tqdm": "4.66.0",
}


def pins(imported: dict[str, str], named: Sequence[str] = (), **kw: object) -> Pins:
    return resolve(imported, named, DISTRIBUTIONS, VERSIONS.get, **kw)  # type: ignore[arg-type]


def test_imports_resolve_to_distributions_pinned_at_the_versions_here() -> None:
    found = pins({"yaml": "a.ipynb", "numpy": "a.ipynb", "google": "b.ipynb", "ntdd": "a.ipynb"})
    assert found.requirements == (
        "google-auth==2.3",
        "numpy==2.1.0",
        "protobuf==5.0",
        "PyYAML==6.0.2",
    )
    assert found.unresolved == () and found.torch == ()  # ntdd: installed by its own line


def test_the_torch_family_is_kept_apart_without_its_local_build_label() -> None:
    found = pins({"torch": "a.ipynb", "torchvision": "a.ipynb", "numpy": "a.ipynb"})
    assert found.torch == ("torch==2.5.1", "torchvision==0.20.1")
    assert found.requirements == ("numpy==2.1.0",)


def test_an_import_nothing_installed_here_provides_is_unresolved_naming_its_notebook() -> None:
    found = pins({"missing": "nbs/a.ipynb", "ghost": "nbs/b.ipynb", "numpy": "nbs/a.ipynb"})
    assert found.unresolved == (("missing", "nbs/a.ipynb"), ("ghost", "nbs/b.ipynb"))
    assert found.requirements == ("numpy==2.1.0",)


def test_a_package_an_install_line_names_is_installed_and_covers_its_import() -> None:
    found = pins({"seaborn": "a.ipynb"}, ["seaborn>=0.13", "tqdm"])
    assert found.requirements == ("seaborn>=0.13", "tqdm==4.66.0")  # as written; pinned here
    assert found.unresolved == ()


def test_a_distribution_installed_from_a_url_is_installed_from_it() -> None:
    url = "git+https://example.org/yaml.git@abc"
    warned = "warning: PyYAML here was installed from /src/yaml, which a runner cannot reach"

    def origin(name: str) -> Origin | None:
        if name == "numpy":
            return Origin("url", url, "as installed here")
        return Origin("release", "6.0.2", warned, warning=True) if name == "PyYAML" else None

    found = pins({"numpy": "a.ipynb", "yaml": "a.ipynb"}, origin=origin)
    assert found.requirements == (f"numpy @ {url}", "PyYAML==6.0.2")
    assert found.warnings == (warned,)


def test_requirement_lines_leave_out_comments_and_options() -> None:
    text = "# pinned\n-r base.txt\ntorch==2.5.1  # cpu\n\nnumpy>=1 --hash=sha256:00\n"
    assert requirement_lines(text) == ["torch==2.5.1", "numpy>=1"]


def test_the_dependency_files_a_repository_has(tmp_path: Path) -> None:
    (tmp_path / "nbs").mkdir()
    assert not declared(tmp_path, "nbs").any
    (tmp_path / "nbs" / "requirements.txt").write_text("torchvision\npandas\n")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "course"\nversion = "1"\ndependencies = ["torch>=2", "numpy"]\n'
    )
    found = declared(tmp_path, "nbs")
    assert found.requirements == "nbs/requirements.txt" and found.package == "pyproject.toml"
    assert found.torch == ("torchvision", "torch>=2")
    (tmp_path / "environment.yml").write_text(
        "name: course\nchannels: [conda-forge]\ndependencies:\n  - python=3.11\n  - pytorch\n"
    )
    assert declared(tmp_path, "nbs").conda_names == ("python", "pytorch")


@pytest.mark.parametrize("text", ["[tool.black]\nline-length = 99\n", "not toml = ["])
def test_a_pyproject_without_a_project_installs_nothing(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    assert declared(tmp_path, ".").package is None


# -- what the notebooks depend on outside their folder ---------------------------


def test_the_paths_a_notebook_names_are_read_from_its_folder_as_a_kernel_opens_them() -> None:
    named = named_paths(
        "nbs/ch1/fit.ipynb",
        cells(
            "import os, pathlib, sys\nsys.path.append('..')\nos.chdir('../..')",  # where it is
            "rows = open('../../data/train.csv')\nlabels = pathlib.Path('..') / 'labels.csv'",
            "cfg = os.path.join('..', '..', 'configs', 'model.yaml')",
            "%cd ../../..\nsplit = f'../../data/splits/{name}.csv'\npngs = '../../figs/*.png'",
            "url = 'https://example.com/x.csv'\netc = '/etc/passwd'\nup = '../../../x.csv'",
        ),
    )
    for path in ("data/train.csv", "nbs/labels.csv", "configs/model.yaml"):
        assert path in named
    assert "data/splits" in named and "figs" in named  # the folder before the pattern
    assert not {"nbs", "nbs/ch1", ".", "etc/passwd", "x.csv"} & set(named)
    assert not any(p.startswith(("..", "/")) or "://" in p for p in named)
    assert names("data/splits/new.csv", named) and not names("data/other.csv", named)


def test_the_code_a_notebook_runs_is_the_installed_package_and_the_modules_it_imports(
    tmp_path: Path,
) -> None:
    for name in ("src/course/__init__.py", "helpers.py", "nbs/local.py", "scripts/x.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("import shared\n" if name == "helpers.py" else "")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "util.py").write_text("")
    (tmp_path / "data").mkdir()  # no Python in it: `import data` is no module of the repository
    imports = [("nbs/fit.ipynb", ("helpers", "local", "numpy", "data"))]
    assert code_sources(tmp_path, None, imports) == ("helpers.py", "nbs/local.py", "shared/")
    assert code_sources(tmp_path, "pyproject.toml", [])[0] == "src/"
    (tmp_path / "src" / "course" / "__init__.py").unlink()
    (tmp_path / "src" / "course").rmdir()
    (tmp_path / "src").rmdir()
    (tmp_path / "course").mkdir()
    (tmp_path / "course" / "__init__.py").write_text("")
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools]\npackage-dir = {"" = "lib"}\n')
    (tmp_path / "lib").mkdir()
    assert code_sources(tmp_path, "pyproject.toml", []) == ("lib/", "course/", "helpers.py")
