"""The specification: on every notebook here, ntdd and a real Jupyter kernel agree.

For each test of a notebook, whether it raised when a kernel ran the notebook
top to bottom (see `oracle.py`) must be what `pytest --ntdd`, and the
exported module under plain pytest, say. The notebooks are the samples,
the third-party corpus (every code cell turned into a test, so that each
test depends on the cells and tests above it), and tricky notebooks written
here. When a difference is found, add the notebook that shows it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import CORPUS, HAVE_TORCH, SAMPLES, code, export, make_notebook
from oracle import as_tests, kernel_verdicts, ntdd_verdicts

from ntdd.format.paths import module_path

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning"),
]

TRICKY: dict[str, list[Any]] = {
    "rebinding": [
        "X = [3.0, 4.0]\ntotal = 0\nnet = 'first'",
        "# TEST: sees the first net\nassert net == 'first'",
        "net = 'second'",
        "# TEST: normalise\nnorm = sum(v * v for v in X) ** 0.5\nX = [v / norm for v in X]",
        "# TEST: counts\ntotal += 1\nassert total == 1",
        "# TEST: sees the rebound X\nassert abs(X[0] - 0.6) < 1e-9\nassert net == 'second'",
        "# TEST\ndef test_a_function_at_its_cell():\n    assert net == 'second'",
        "net = 'third'\ntotal = 10",
        "# TEST: below the rebinding\nassert net == 'third' and total == 10",
    ],
    "models_and_gradients": [
        "import torch\nfrom torch import nn\ntorch.manual_seed(0)\n"
        "net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))\nX = torch.rand(2, 4)",
        "# TEST: the first net\nassert net(X).shape == (2, 1)",
        "net = nn.Sequential(nn.LazyLinear(3))",
        "# TEST: the net of this cell\nassert net(X).shape == (2, 3)",
        "x = torch.arange(4.0, requires_grad=True)\ny = 2 * torch.dot(x, x)\ny.backward()",
        "# TEST: the first gradient\nassert torch.equal(x.grad, 4 * x)",
        "x.grad.zero_()\ny = x.sum()\ny.backward()",
        "# TEST: the gradient after zero_\nassert torch.equal(x.grad, torch.ones(4))",
        "# TEST: moves X\nX = X.to('cpu').double()\nassert X.dtype == torch.float64",
        "# TEST: sees the moved X\nassert X.dtype == torch.float64",
    ],
    "kernel_features": [
        "import asyncio, os\nasync def twice(v):\n    await asyncio.sleep(0)\n    return 2 * v\n"
        "two = await twice(1)",
        "# TEST: awaits\nfour = await twice(two)\nassert four == 4",
        "%%capture out\nprint('captured')",
        "# TEST: captured\nassert out.stdout == 'captured\\n'",
        "%timeit -n 1 -r 1 sum(range(3))\n%env NTDD_ORACLE=yes",
        "# TEST: the environment\nassert os.environ['NTDD_ORACLE'] == 'yes'",
        "# TEST: main\nassert __name__ == '__main__'",
        "# TEST: display\nh = display('x', display_id=True)\nh.update('y')",
        "# TEST: star import\nfrom math import *\nassert pi > 3",
        "# TEST: annotated\nlimit: int = 3\nassert limit == 3",
        "# TEST: return\nreturn 1",
        "import pickle\nclass Point:\n    def __init__(self, x):\n        self.x = x",
        "# TEST: pickles\nassert pickle.loads(pickle.dumps(Point(2))).x == 2",
        "if __name__ == '__main__':\n    guarded = True",
        "# TEST: the main guard ran\nassert guarded",
    ],
    "failures_mid_notebook": [
        "x = 1\nlog = []",
        "# TEST: fails half-way\nx = 2\nassert False\nx = 3",
        "# TEST: sees what ran\nassert x == 2",
        "# TEST: first\nlog.append(1)",
        "# TEST\ndef test_a():\n    log.append('a')\n    assert log == [1, 'a']\n\n"
        "def test_b():\n    assert log == [1, 'a']",
        "# TEST: after the functions\nassert log == [1, 'a']",
        code("raise RuntimeError('expected')", tags=["raises-exception"]),
        "# TEST: past an expected error\nassert x == 2",
        "# NTDD: skip\nraise RuntimeError('never run')",
        "# TEST: past a skipped cell\nassert x == 2",
        "y = 1 / 0",
        "# TEST: below a broken cell\nassert x == 2",
    ],
    "magics_that_run": [
        "%%writefile checks.py\nran = 1\nassert ran == 2",
        "%%writefile good.py\ngood = 2\n\ndef helper():\n    return good",
        "%%writefile exits.py\nimport sys\nsys.exit(3)",
        "x = 1",
        "# TEST: a script that raises\n%run checks.py",
        "# TEST: a script's names\n%run good.py\nassert helper() == good == 2",
        "# TEST: a script that exits\n%run exits.py",
        "# TEST: an exit ignored\n%run -e exits.py",
        "# TEST: a profiled assert\n%prun -q assert x == 2",
        "# TEST: a profiled statement\n%prun y = x + 1\nassert y == 2",
        "# TEST: not expanded\n%time s = '{x}'\nassert s == '{x}'",
        "# TEST: an alias\n%mkdir -p made\nimport os\nassert os.path.isdir('made')",
    ],
    "a_check_below_the_tests": [
        "x = 1",
        "# TEST: x is one\nassert x == 1",
        "# TEST: later @skip\nassert False",
        "y = x + 1",
        "assert y == 3, 'the plain check at the end fails'",
    ],
    "cells_below_the_tests_that_pass": [
        "x = 1",
        "# TEST: x is one\nassert x == 1",
        "x += 1\nassert x == 2",
    ],
    "warning_filters_last": [
        "import warnings\nwarnings.simplefilter('error', UserWarning)",
        "# TEST: raised here\nwarnings.warn('first')",
        "# TEST: and below\nwarnings.warn('second')",
        "# TEST: caught\ntry:\n    warnings.warn('third')\nexcept UserWarning:\n    pass",
    ],
    "logging_basic_config": [
        "import io, logging\nstream = io.StringIO()\n"
        "logging.basicConfig(stream=stream, level=logging.INFO, format='%(message)s')",
        "# TEST: its handler\nlogging.info('hello')\nassert stream.getvalue() == 'hello\\n'",
        "# TEST: its level\nassert logging.getLogger().level == logging.INFO",
    ],
    "a_running_event_loop": [
        "import asyncio\nloop = asyncio.get_running_loop()\n"
        "async def work():\n    await asyncio.sleep(0)\n    return 1",
        "# TEST: the same loop\nassert asyncio.get_running_loop() is loop",
        "# TEST: a task\ntask = asyncio.ensure_future(work())",
        "# TEST: ran between cells\nassert task.done() and task.result() == 1",
        "# TEST: asyncio.run refused\nc = work()\n"
        "try:\n    asyncio.run(c)\nfinally:\n    c.close()",
    ],
    "caught_assertion_messages": [
        "x = 1",
        "# TEST: message\ntry:\n    assert x == 2, 'custom'\nexcept AssertionError as e:\n"
        "    assert str(e) == 'custom' and e.args == ('custom',)",
        "# TEST: bare\ntry:\n    assert x == 2\n"
        "except AssertionError as e:\n    assert e.args == ()",
    ],
    "imports_after_chdir": [
        "import os\nos.makedirs('sub', exist_ok=True)\n"
        "with open('sub/only_here.py', 'w') as f:\n    f.write('VALUE = 7')\n%cd sub",
        "# TEST: from sub\nimport only_here\nassert only_here.VALUE == 7",
    ],
    "future_annotations": [
        "from __future__ import annotations",
        "def f(x: Undefined) -> None:\n    pass",
        "# TEST: strings\nassert f.__annotations__['x'] == 'Undefined'",
        "# TEST: its own\ndef g(y: Nowhere):\n    pass\nassert g.__annotations__['y'] == 'Nowhere'",
    ],
}
if not HAVE_TORCH:
    del TRICKY["models_and_gradients"]

NotebookCase = Callable[[Path], Path]


def _from_cells(cells: list[Any]) -> NotebookCase:
    def write(folder: Path) -> Path:
        path = folder / "nb.ipynb"
        nbformat.write(make_notebook(cells), str(path))
        return path

    return write


def _copied(source: Path, every: int | None) -> NotebookCase:
    def write(folder: Path) -> Path:
        if (source.parent / "data").is_dir():
            shutil.copytree(source.parent / "data", folder / "data")
        nb = nbformat.read(str(source), as_version=4)
        path = folder / source.name
        nbformat.write(as_tests(nb, every) if every else nb, str(path))
        return path

    return write


def _torch_free(path: Path) -> bool:
    return HAVE_TORCH or "torch" not in path.read_text(encoding="utf-8")


CASES: dict[str, NotebookCase] = {
    **{f"tricky/{name}": _from_cells(cells) for name, cells in TRICKY.items()},
    **{f"sample/{p.stem}": _copied(p, None) for p in sorted(SAMPLES.glob("*.ipynb"))},
    **{
        f"every-cell-a-test/{p.stem}": _copied(p, 1)
        for p in sorted([*SAMPLES.glob("*.ipynb"), *(CORPUS / "good").glob("*.ipynb")])
        if _torch_free(p)
    },
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_ntdd_and_a_kernel_agree_on_every_test(case: str, pytester: pytest.Pytester) -> None:
    path = CASES[case](pytester.path)
    kernel = kernel_verdicts(path)
    assert kernel, "the notebook has tests to compare"
    collected = ntdd_verdicts(pytester.inline_run("-p", "no:cacheprovider", "--ntdd", str(path)))
    assert collected == kernel
    assert export(path) == 0
    module = module_path(path)
    exported = ntdd_verdicts(pytester.inline_run("-p", "no:cacheprovider", str(module)))
    assert exported == kernel
