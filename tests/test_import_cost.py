"""What a `pytest --ntdd` run imports: only what the path it takes needs.

Each import a run can do without costs every run its CPU (Jinja's 50 ms, the
planner's, tomllib's, numpy.random's 10 ms), so the gain cannot silently
regress: these runs happen in a child process, whose `sys.modules` a conftest
writes down as the run ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ntdd.runtime.shell_magics import _assigns
from ntdd.settings.pyproject import find_pyproject

PROBE = """
import sys


def pytest_unconfigure(config):
    with open("modules.txt", "w", encoding="utf-8") as f:
        f.write("\\n".join(sorted(sys.modules)))
"""


def modules_of_a_run(pytester: pytest.Pytester, *args: str) -> set[str]:
    """The modules a child `pytest --ntdd` imported, module cache on."""
    pytester.makeconftest(PROBE)
    pytester.runpytest_subprocess("-p", "no:randomly", "--ntdd", *args)
    return set((pytester.path / "modules.txt").read_text(encoding="utf-8").split())


CACHED_ONLY = {"jinja2", "ntdd.pipeline.render", "ntdd.pipeline.plan", "ntdd.pipeline.end"}


@pytest.mark.slow
def test_a_notebook_collected_from_the_module_cache_imports_neither_jinja_nor_the_planner(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: x\nassert x == 1"])
    cold = modules_of_a_run(pytester, "nb.ipynb")
    assert cold >= CACHED_ONLY  # the first run renders: the probe sees what it imports
    warm = modules_of_a_run(pytester, "nb.ipynb")
    assert not CACHED_ONLY & warm


@pytest.mark.slow
def test_a_one_line_assignment_cell_is_no_automagic_without_importing_ipython(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """`x = 1` could be a magic's call for IPython's automagic (`cd data` is); its
    `=` says it is not, and IPython's import (50 ms) is not needed to read it."""
    notebook(["x = 1", "y = x + 1", "# TEST: y\nassert y == 2"])
    modules_of_a_run(pytester, "nb.ipynb")  # cold: the module is rendered and cached
    assert "IPython" not in modules_of_a_run(pytester, "nb.ipynb")
    notebook(["x = 1", "pwd", "# TEST: y\nassert x == 1"])  # an automagic: IPython reads it
    assert "IPython" in modules_of_a_run(pytester, "nb.ipynb")


SHOWN = "class Shown:\n    def __repr__(self):\n        return 'shown'"


@pytest.mark.slow
def test_values_shown_by_their_repr_need_no_ipython(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """A cell's last value whose formats are its repr (a tensor, a tuple of them) is
    shown without IPython's formatters and their 50 ms; one with a `_repr_html_` loads them."""
    notebook([SHOWN, "Shown()", "(Shown(), [1, Shown], {'a': Shown()})", "# TEST\nassert 1"])
    modules_of_a_run(pytester, "nb.ipynb")  # cold: the module is rendered and cached
    assert "IPython" not in modules_of_a_run(pytester, "nb.ipynb")
    notebook([SHOWN + "\n    def _repr_html_(self):\n        return '<b>'", "Shown()", "# TEST\n1"])
    assert "IPython" in modules_of_a_run(pytester, "nb.ipynb")


ASSIGNMENTS = ["x = 1", "x == 1", "x , y = 1, 2", "x\t= 1", "é = 1", "x\u2003= 1", "x =", "x,"]
ASSIGNMENTS += ["1 = x"]
OTHERS = ["x.y = 1", "x* = 1", "x *= 2", "cd data", "pwd", "x", "%x = 1", " x = 1"]


@pytest.mark.parametrize("line", ASSIGNMENTS)
def test_a_name_then_an_equals_sign_or_comma_is_python_as_ipython_reads_it(line: str) -> None:
    assert _assigns(line) and _line_info_assigns(line)


@pytest.mark.parametrize("line", OTHERS)
def test_any_other_line_is_left_to_ipythons_reading(line: str) -> None:
    assert not _assigns(line)


@given(st.text(alphabet=st.sampled_from("xé1_ =,.*%\t\u2003!?;/"), max_size=8))
def test_a_line_read_as_python_is_python_for_ipython_too(line: str) -> None:
    assert not _assigns(line) or _line_info_assigns(line)


def _line_info_assigns(line: str) -> bool:
    from IPython.core.splitinput import LineInfo

    info = LineInfo(line)
    return bool(info.ifun) and not info.pre_char and info.the_rest[:1] in ("=", ",")


@pytest.mark.slow
def test_a_run_without_a_pyproject_toml_does_not_import_tomllib(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST: x\nassert x == 1"])
    if find_pyproject(pytester.path) is not None:
        pytest.skip("a pyproject.toml above the test's folder: ntdd and pytest read it")
    assert "tomllib" not in modules_of_a_run(pytester, "nb.ipynb")
    (pytester.path / "pyproject.toml").write_text("[tool.ntdd]\n", encoding="utf-8")
    assert "tomllib" in modules_of_a_run(pytester, "nb.ipynb")  # the probe sees it when read


@pytest.mark.slow
def test_numpy_random_is_imported_by_the_notebook_that_uses_it_not_by_ntdd(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    """numpy loads `numpy.random` on first use; putting a notebook's process state back
    (its generators among it) must not be that use, for the next notebook or at exit."""
    pytest.importorskip("numpy")
    imports = "import sys\nimport numpy\nx = numpy.zeros(2)"
    notebook([imports, "# TEST\nassert 'numpy.random' not in sys.modules"], name="a.ipynb")
    notebook([imports, "# TEST\nassert 'numpy.random' not in sys.modules"], name="b.ipynb")
    draws = "import numpy\nvalue = numpy.random.rand()"
    notebook([draws, "# TEST\nassert 0 <= value < 1"], name="c.ipynb")
    pytester.makeconftest(PROBE)
    only_zeros = pytester.runpytest_subprocess("-p", "no:randomly", "--ntdd", "a.ipynb", "b.ipynb")
    only_zeros.assert_outcomes(passed=2)
    assert "numpy.random" not in _written(pytester.path)
    drawing = pytester.runpytest_subprocess("-p", "no:randomly", "--ntdd", "c.ipynb", "a.ipynb")
    drawing.assert_outcomes(passed=1, failed=1)  # the probe of a.ipynb sees c's import
    assert "numpy.random" in _written(pytester.path)


def _written(folder: Path) -> set[str]:
    return set((folder / "modules.txt").read_text(encoding="utf-8").split())
