"""Kernel parity, round 3: the causes found on real notebooks nobody here wrote (nbdev
projects' API notebooks, book chapters, teaching notebooks), each cut to a few cells.

Each case once gave a verdict a kernel's Run All does not: cells marked `#| eval: false`
(nbdev's and Quarto's, which a kernel runs), `display` as a builtin that library code
calls, a bare test cell whose callee binds names in its caller's frame, IPython's own
completer on `get_ipython()`, a `from __future__` import in the middle of a cell,
leftover pyplot figures, and (from the generated stress draw) a running event loop in a
notebook whose code never names asyncio. The isolation cases run several notebooks in one
session and compare each with a kernel of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import export, make_notebook
from oracle import assert_ntdd_agrees_with_a_kernel, kernel_verdicts, ntdd_run_by_notebook

from ntdd.runtime import steps

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")

CASES: dict[str, list[Any]] = {
    "eval_false_runs_as_in_run_all": [
        "x = 1",
        "#| eval: false\nimport json",
        "# TEST: a later test needs what it imported\nassert json.dumps(x) == '1'",
        "#| eval: false\n# TEST: a test so marked runs too\nassert x == 1",
        "#| eval: false\nraise RuntimeError('nbdev_export() outside a project')",
    ],
    "display_is_a_builtin": [
        "import types\nlib = types.ModuleType('lib')\n"
        "exec('def link(text):\\n    display(text)\\n    return len(text)', lib.__dict__)",
        "# TEST: library code calls display without importing it\nassert lib.link('ab') == 2",
        "# TEST: get_ipython too\nexec('shell = get_ipython()', lib.__dict__)\n"
        "assert lib.shell is get_ipython()",
    ],
    "a_callee_binds_in_its_callers_frame": [
        "import sys\ndef make(name, value):\n    sys._getframe(1).f_locals[name] = value",
        "# TEST: binds where a kernel binds\nmake('made', 3)\nassert made == 3",
        "# TEST: and the cells below see it\nassert made == 3",
        "# TEST: rebinds\nmake('made', 4)\nassert made == 4",
    ],
    "ipythons_completer_on_the_shell": [
        "from IPython.core.completer import IPCompleter, provisionalcompleter\n"
        # jedi left out: its completions of names depend on its caches and the machine's load
        "completer = IPCompleter(shell=get_ipython(), namespace=globals(), use_jedi=False)",
        "# TEST: magics complete\nwith provisionalcompleter():\n"
        "    found = [c.text for c in completer.completions('%tim', 4)]\nassert '%time' in found",
        "# TEST: names complete\nwith provisionalcompleter():\n"
        "    found = [c.text for c in completer.completions('compl', 5)]\n"
        "assert 'completer' in found",
    ],
    "a_future_import_mid_cell": [
        "x = 1\nfrom __future__ import annotations\ndef f(a: Undefined) -> None:\n    pass",
        "# TEST: the cell ran\nassert f.__annotations__['a'] == 'Undefined'",
        "# TEST: and so does a test cell's\ny = 2\nfrom __future__ import annotations\n"
        "def g(b: Nowhere):\n    pass\nassert g.__annotations__['b'] == 'Nowhere'",
    ],
    "a_backend_of_its_own_keeps_its_figures": [
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "fig = plt.figure()\nax = fig.add_subplot(projection='polar')",
        "points = plt.scatter([1, 2], [3, 4])",
        "# TEST: the figure above's axes\nassert plt.gca().name == 'polar'",
    ],
    "figures_close_after_each_cell": [
        "import matplotlib.pyplot as plt\nfig = plt.figure()\n"
        "ax = fig.add_subplot(projection='polar')",
        "points = plt.scatter([1, 2], [3, 4])",
        "# TEST: a new figure's axes\nassert plt.gca().name == 'rectilinear'\n"
        "assert len(plt.get_fignums()) == 1",
        "# TEST: the figure made above still saves\nimport io\nfig.savefig(io.BytesIO())",
    ],
    "no_figure_is_open_after_the_cell_that_made_it": [  # the inline backend shows and closes
        "import matplotlib.pyplot as plt\nlines = plt.plot([1, 2])",
        "# TEST: none open below it\nassert plt.get_fignums() == []",
        "fig = plt.gcf()\nnumber = fig.number\nplt.show()",
        "# TEST: gcf's closed too\nassert plt.get_fignums() == []\n"
        "plt.gcf()\nassert plt.get_fignums() == [number]",
    ],
    "a_running_loop_where_the_notebook_never_names_asyncio": [
        "aio = __import__('async' + 'io')  # as library code reaches it\n"
        "loop = aio.get_running_loop()",
        "# TEST: a cell that does not await runs in it\nassert aio.get_running_loop() is loop",
        "# TEST: a task made there\ntask = aio.ensure_future(aio.sleep(0, result=3))",
        "# TEST: ran between the cells\nassert task.done() and task.result() == 3",
    ],
    "sympy_printing_reads_the_shells_colors": [  # get_ipython() a builtin: sympy sees a shell
        "import sympy\nsympy.init_printing()\nx = sympy.Symbol('x')",
        "# TEST: prints as in a kernel\nassert str(x**2) == 'x**2'",
    ],
    # A figure that cannot be drawn: a kernel shows the error where it is shown; ntdd, which
    # records nothing without a report, lays it out without its pixels and fails there too.
    "figures_that_cannot_be_drawn_where_they_are_shown": [
        "import matplotlib.pyplot as plt\nfrom IPython.display import display",
        "# TEST: shown mid-cell\nplt.plot([1, 2]); plt.title('$\\\\frac{$')\nplt.show()",
        "# TEST: displayed\nfig = plt.figure(); plt.title('$\\\\frac{$'); plt.close(fig)\n"
        "display(fig)",
        "# TEST: the last value\nfig",
        "# TEST: a figure without axes is not drawn\nempty = plt.figure()\n"
        "empty.text(0.5, 0.5, '$\\\\frac{$'); plt.close(empty)\nempty",
        "# TEST: closed before it is shown\nplt.plot([1, 2]); plt.title('$\\\\frac{$')\n"
        "plt.close()",
        "# TEST: a good figure\nplt.plot([1, 3]); plt.title('$x^2$')\nplt.show()",
        "# TEST: as svg, as d2l chooses\n"
        "from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
        "set_matplotlib_formats('svg')\ndisplay(fig)",
    ],
    # A figure left open at a cell's end: the inline backend's `flush_figures` draws it, and
    # what drawing raises is the cell's error, with or without anything recording outputs.
    "a_setup_cell_leaves_a_figure_that_cannot_be_drawn": [
        "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.title('$\\\\frac{$')",
        "# TEST: below it\nassert True",
    ],
    "test_cells_leave_figures_that_cannot_be_drawn": [
        "import matplotlib.pyplot as plt\nfrom matplotlib.ticker import FuncFormatter",
        "# TEST: a broken title\nplt.plot([1, 2]); plt.title('$\\\\frac{$')",
        "# TEST: a tick formatter that raises\nfig, ax = plt.subplots(); ax.plot([1, 2])\n"
        "def bad(x, pos):\n    raise ValueError('no label')\n"
        "ax.xaxis.set_major_formatter(FuncFormatter(bad))",
        "# TEST: closed by the cell itself\nplt.plot([1, 2]); plt.title('$\\\\frac{$')\n"
        "plt.close()",
        "# TEST: a good figure\nplt.plot([1, 3]); plt.title('$x^2$')",
    ],
    "a_raw_string_regex": [
        "import re\npattern = r'(\\d+)\\s'",
        "# TEST: finds\nassert re.findall(pattern, 'a 12 b 3 ') == ['12', '3']",
    ],
}


def _write(folder: Path, cells: list[Any], name: str = "nb.ipynb") -> Path:
    path = folder / name
    nbformat.write(make_notebook(cells), str(path))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_ntdd_and_a_kernel_agree(case: str, pytester: pytest.Pytester) -> None:
    assert_ntdd_agrees_with_a_kernel(pytester, _write(pytester.path, CASES[case]))


# -- several notebooks in one session ---------------------------------------------------

LIBRARY = (  # a library that patches a class as it is imported, as fastcore.xtras patches Path
    "import pathlib\n\ndef twice(self):\n    return 2 * len(self.name)\n\n"
    "pathlib.PurePath.twice = twice\n"
)
FIRST = [  # a notebook that patches the library's class with its own function (nbdev's @patch)
    "import os, sys\nsys.path.insert(0, os.path.abspath('../lib'))\nimport patcher, pathlib",
    "factor = 2\ndef twice(self):\n    return factor * len(self.name)\n"
    "pathlib.PurePath.twice = twice",
    "import builtins\nbuiltins.left_behind = 'by the first notebook'",
    "import matplotlib.pyplot as plt\nplt.rcParams['lines.linewidth'] = 7\n"
    "fig = plt.figure()\nax = fig.add_subplot(projection='polar')",
    "# TEST: its own patch\nassert pathlib.PurePath('ab').twice() == 4",
    "# TEST: its rcParams\nassert plt.rcParams['lines.linewidth'] == 7",
]
SECOND = [  # one that uses the library, builtins and pyplot as a fresh kernel has them
    "import os, sys\nsys.path.insert(0, os.path.abspath('../lib'))\nimport patcher, pathlib",
    "# TEST: the patched method works\nassert pathlib.PurePath('abc').twice() == 6",
    "# TEST: builtins as a kernel has them\nimport builtins\n"
    "assert not hasattr(builtins, 'left_behind')\nassert callable(display)",
    "import matplotlib.pyplot as plt\npoints = plt.scatter([1, 2], [3, 4])",
    "# TEST: a figure of its own\nassert plt.gca().name == 'rectilinear'",
    "# TEST: matplotlib's rcParams\nassert plt.rcParams['lines.linewidth'] == 1.5",
]


def _session(pytester: pytest.Pytester) -> list[Path]:
    (pytester.path / "lib").mkdir()
    (pytester.path / "lib" / "patcher.py").write_text(LIBRARY)
    folder = pytester.path / "notebooks"
    folder.mkdir()
    return [_write(folder, FIRST, "a_first.ipynb"), _write(folder, SECOND, "b_second.ipynb")]


def _by_notebook(pytester: pytest.Pytester, paths: list[Path]) -> dict[str, dict[str, bool]]:
    """Notebook file name -> test name -> whether it raised, from one `pytest --ntdd` of
    all *paths*, in a process of its own (they import matplotlib: see
    `oracle.ntdd_run`)."""
    return ntdd_run_by_notebook(pytester, "--ntdd", *map(str, paths))


@pytest.mark.slow
def test_a_notebook_after_another_gets_the_verdict_it_gets_alone(
    pytester: pytest.Pytester,
) -> None:
    """Each in a kernel of its own, then both in one `pytest --ntdd`: the same verdicts."""
    paths = _session(pytester)
    alone = {path.name: kernel_verdicts(path) for path in paths}
    assert not any(alone["b_second.ipynb"].values()), alone
    assert _by_notebook(pytester, paths) == alone


@pytest.mark.slow
def test_a_notebook_after_another_starts_as_in_a_fresh_kernel(pytester: pytest.Pytester) -> None:
    """The same, without the kernels: the second notebook passes after the first."""
    paths = _session(pytester)
    assert _by_notebook(pytester, paths) == {
        "a_first.ipynb": {"test_its_own_patch": False, "test_its_rcparams": False},
        "b_second.ipynb": {
            "test_the_patched_method_works": False,
            "test_builtins_as_a_kernel_has_them": False,
            "test_a_figure_of_its_own": False,
            "test_matplotlib_s_rcparams": False,
        },
    }


# -- what a kernel's shell has and ntdd's does not ------------------------------------------


def test_what_the_shell_lacks_is_said_by_name(pytester: pytest.Pytester) -> None:
    path = _write(
        pytester.path,
        [
            "shell = get_ipython()",
            "# TEST: a kernel's attribute\nshell.history_manager",
            "# TEST: one no shell has\nassert not hasattr(shell, 'no_such_part')",
            "# TEST: the magics manager's\nshell.magics_manager.lazy_magics",
        ],
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--ntdd", str(path))
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*NotUnderNtdd: get_ipython().history_manager is not available under ntdd*",
            "*get_ipython().magics_manager.lazy_magics is not available under ntdd*",
        ]
    )


def test_a_raw_string_regex_in_a_cell_says_nothing(pytester: pytest.Pytester) -> None:
    """Written into the module's string literal as it is, `\\d` was an invalid escape."""
    path = _write(pytester.path, ["import re\npattern = r'(\\d+)'", "# TEST\nassert pattern"])
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "no:randomly", "--ntdd", str(path), "-W", "default"
    )
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*invalid escape sequence*")
    assert export(path) == 0
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "-W", "default")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*invalid escape sequence*")


@pytest.mark.parametrize("compiled_again", [False, True], ids=["exec", "module code"])
def test_a_callee_binds_in_the_notebook_both_ways(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, compiled_again: bool
) -> None:
    """The function's own code run with the namespace as its frame's locals (up to 3.12),
    or the cell's statements compiled again as module code (3.13's frames write to
    themselves): both bind where a kernel binds, and report the cell's lines."""
    monkeypatch.setattr(steps, "LOCALS_OF_THE_FRAME", compiled_again)
    path = _write(
        pytester.path,
        [
            *CASES["a_callee_binds_in_its_callers_frame"],
            "# TEST: fails\nmade += 1\nassert made == 6",
        ],
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", "--ntdd", str(path))
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*in notebook nb.ipynb, cell 5 (id *), line 3: assert made == 6"])
