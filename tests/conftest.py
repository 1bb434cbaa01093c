"""Shared helpers: build notebooks in test code, run them both ways ntdd offers."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from ntdd.commands.cli import main as ntdd_main
from ntdd.format.paths import module_path

HAVE_TORCH = importlib.util.find_spec("torch") is not None
# The notebooks here are tiny; torch's thread pools only fight each other when
# xdist workers and kernels share two cores (a 3 s cell took 90 s that way).
os.environ.setdefault("OMP_NUM_THREADS", "1")


def _warm_up() -> None:
    """What pytester's in-process runs must not import themselves, imported up front."""
    if HAVE_TORCH:
        # pytester's in-process runs drop modules imported during a run; torch
        # cannot be imported twice in one process, so it is imported up front,
        # and so are the hundreds of modules its first optimizer step imports.
        import torch

        weight = torch.nn.Parameter(torch.zeros(1))
        weight.sum().backward()
        torch.optim.SGD([weight], lr=0.1).step()
    # The same goes for plugins that pytest loads in every in-process run: held
    # here, they are imported once instead of once per run.
    _import_ntdd()
    for plugin in (
        "nbval.plugin",
        "nbmake.pytest_plugin",
        "xdist.plugin",
        "pytest_cov.plugin",
        "hypothesis",
        # The Jupyter tests build IPython's shell in-process: its classes must
        # be the ones every later import sees, not a run's that pytester dropped.
        "IPython.core.interactiveshell",
        "IPython.core.magics",
    ):
        with contextlib.suppress(ImportError):
            importlib.import_module(plugin)


def _import_ntdd() -> None:
    """Every module of ntdd, and Jinja, imported up front and held.

    An in-process run imports the plugin's modules that the test process has not, and
    pytester drops them as the run ends: each run imported some ninety of them again,
    a second of CPU per test. Held here, the runs share them, as the runs of one
    process share them outside the tests (the magic's repeated runs in a kernel)."""
    import ntdd

    with contextlib.suppress(ImportError):
        importlib.import_module("jinja2")
    for module in pkgutil.walk_packages(ntdd.__path__, "ntdd."):
        if module.name != "ntdd.__main__":
            with contextlib.suppress(ImportError):
                importlib.import_module(module.name)
    _NTDD_CACHES.extend(
        value
        for name, module in list(sys.modules.items())
        if name == "ntdd" or name.startswith("ntdd.")
        for value in vars(module).values()
        if callable(getattr(value, "cache_clear", None))
        and getattr(value, "__module__", None) == name
    )


# ntdd's functools caches, emptied before each test: a run in a fresh process starts
# with none, and a test's inner runs must not see another test's entries.
_NTDD_CACHES: list[Any] = []


@pytest.fixture(autouse=True)
def _fresh_ntdd_caches() -> None:
    for cached in _NTDD_CACHES:
        cached.cache_clear()


def pytest_configure(config: pytest.Config) -> None:
    """Warm up where tests run: not in xdist's controller, which runs none (and which
    would hold its workers back by the seconds torch takes to import)."""
    # pytester points HOME at each test's own folder, where matplotlib would build
    # its font cache again in every run that plots, and warn on the cell's stderr
    # when that takes over 5 s (as it does on a loaded machine): one cache for all.
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
    if cache is not None and "MPLCONFIGDIR" not in os.environ:
        os.environ["MPLCONFIGDIR"] = str(cache.mkdir("matplotlib"))
    controller = bool(getattr(config.option, "numprocesses", None))
    if not controller or "PYTEST_XDIST_WORKER" in os.environ:
        _warm_up()


@pytest.fixture(scope="session", autouse=True)
def ntdd_installed_from_a_release() -> Iterator[None]:
    """`ntdd init` run as where ntdd came from PyPI, at a release: this checkout may be a
    local build (`0.dev566+g…`) that no runner can install, which init refuses
    (`tests/test_init_origin.py` tests where ntdd came from); the other tests of init are
    about the repository it looks at, whatever checkout runs them."""
    from ntdd.repository import origin

    def released(name: str, root: Path) -> origin.Origin:
        return origin.origin_of(name, "0.1.0", None, root, origin.checkout_of)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(origin, "installed_origin", released)
        yield


ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_notebooks"
CORPUS = ROOT / "tests" / "corpus"  # third-party notebooks, with SOURCES.md

requires_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs the torch extra")


def code(source: str, tags: Sequence[str] = (), **meta: Any) -> Any:
    cell = new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    cell.metadata.update(meta)
    return cell


def md(source: str) -> Any:
    return new_markdown_cell(source)


def raw(source: str) -> Any:
    return new_raw_cell(source)


def make_notebook(cells: Sequence[Any]) -> Any:
    """A v4.5 notebook; plain strings are code cells."""
    return new_notebook(cells=[code(c) if isinstance(c, str) else c for c in cells])


def write_notebook(path: Path, cells: Sequence[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(make_notebook(cells), str(path))
    return path


@pytest.fixture
def notebook(pytester: pytest.Pytester) -> Callable[..., Path]:
    """Write a notebook of the given cells into the pytester folder."""

    def write(cells: Sequence[Any], name: str = "nb.ipynb") -> Path:
        return write_notebook(pytester.path / name, cells)

    return write


def line_of(path: Path, text: str) -> int:
    """The 1-based line of the file *path* that holds *text*: where a tool reading
    reports (an annotation, coverage, an editor) must point."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def sha(path: Path) -> str:
    """A file's SHA-256, to tell that its bytes did not change."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def nb(tmp_path: Path) -> Path:
    """A notebook of one setup cell and one passing test, in tmp_path."""
    return write_notebook(tmp_path / "nb.ipynb", ["x = 1", "# TEST: x is one\nassert x == 1"])


# -- xdist groups ----------------------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under `--dist loadgroup`, a test's `xdist_group` as the suffix of its node id.

    pytest-xdist writes it into `item._nodeid`, which pytest 9.2's structured node ids
    no longer read (pytest-xdist#1386): the groups were silently ignored, so tests that
    share a module's expensive fixture each paid for it on another worker. Written
    here where pytest keeps the id, until pytest-xdist does it itself.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import coerce_node_id
    except ImportError:  # an older pytest, where pytest-xdist's own suffix works
        return
    for item in items:
        groups = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if groups and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(sorted(groups))}")


# -- pytest runs inside the tests -------------------------------------------------
#
# A machine may have any pytest plugins installed (pytest-randomly, pytest-timeout,
# pytest-benchmark...): pytest loads them into every run, and an inner run that
# picks one up reorders, times or warns differently, which this suite's
# `filterwarnings = error` turns into failures. So inner runs load no plugin from
# entry points: ntdd's own is loaded through PYTEST_PLUGINS, as every machine with
# ntdd installed has it, and a test that needs another plugin names it in
# `run(..., plugins=[...])`. Both variables are inherited by child processes: by
# `runpytest_subprocess`, by xdist's workers, by kernels, by scripts a test starts.


def plugin_env(*plugins: str) -> dict[str, str]:
    """The environment under which pytest loads ntdd's plugin, the *plugins*
    (module names, such as "xdist.plugin") and no other."""
    return {
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_PLUGINS": ",".join(("ntdd.plugin", *plugins)),
    }


@contextlib.contextmanager
def isolated_plugins() -> Iterator[None]:
    """Inner pytest runs started inside this block load ntdd's plugin and no other."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in plugin_env().items():
            patch.setenv(name, value)
        yield


@pytest.fixture(autouse=True)
def _isolated_plugins() -> Iterator[None]:
    with isolated_plugins():
        yield


def run(
    pytester: pytest.Pytester, *args: str, plugins: Sequence[str] = (), subprocess: bool = False
) -> pytest.RunResult:
    """pytest on *args*, in pytester's folder, with ntdd's plugin and *plugins* only.

    *plugins* are plugins' entry point names ("xdist", "nbval", "pytest_cov").
    *subprocess* runs pytest in a child process: for what only a process can
    contain (`os._exit`, file-descriptor capture, xdist's workers).
    """
    options = ["-p", "no:cacheprovider"]
    for plugin in plugins:
        options += ["-p", plugin]
    if subprocess:
        return pytester.runpytest_subprocess(*options, *args)
    return pytester.runpytest(*options, *args)


def export(path: Path, *args: str) -> int:
    return ntdd_main(["export", str(path), *args])


@pytest.fixture(params=["exported", "collected"])
def run_notebook(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> Callable[..., Any]:
    """Run a notebook's tests as `ntdd export` + pytest, or as `pytest --ntdd`.

    Both must behave alike; tests that use this fixture check both.
    """

    def run_one_way(name: str = "nb.ipynb", *args: str) -> pytest.RunResult:
        path = pytester.path / name
        if request.param == "exported":
            assert export(path) == 0
            module = module_path(path)
            return run(pytester, str(module), *args)
        return run(pytester, "--ntdd", str(path), *args)

    return run_one_way
