"""Generated notebooks, judged by a real kernel: ntdd must give its verdict on each test.

Each notebook is a seeded draw of snippets from the library below, which probe
scoping, magics (automagic, a notebook's own, magics in functions), IPython's
machinery (`get_ipython()`, events, dunders), display, warning filters,
logging, a running event loop, caught asserts, imports after a chdir, future
flags and `def test_*` cells; not the differences the docs list (those have tests of
their own in test_kernel_parity_b.py). A snippet's names carry a prefix of its own, so snippets
combine freely. The default suite draws a few notebooks; a large draw is run
by hand:

    NTDD_GENERATED_NOTEBOOKS=200 pytest tests/test_generated_parity.py -m slow
    NTDD_GENERATED_SEED=7 ...   # another draw
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import nbformat
import pytest
from conftest import code, make_notebook
from oracle import covers_every_test_cell, kernel_verdicts, ntdd_verdicts

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning"),
]

COUNT = int(os.environ.get("NTDD_GENERATED_NOTEBOOKS", "3"))
SEED = int(os.environ.get("NTDD_GENERATED_SEED", "2026"))
SNIPPETS_PER_NOTEBOOK = 5

# Each snippet: cells whose `§` stands for the snippet's own prefix.
SNIPPETS: list[list[str]] = [
    ["§_x = 1", "# TEST\nassert §_x == 1"],
    ["§_x = 1", "# TEST\n§_x += 1\nassert §_x == 2", "# TEST\nassert §_x == 2"],
    ["# TEST\n§_y = 3\nassert False", "# TEST\nassert §_y == 3"],
    ["§_v = 1 / 0", "# TEST\nassert True"],
    ["def §_f():\n    %time §_z = 1\n    return §_z", "# TEST\n§_f()"],
    [
        "def §_g():\n    §_w = 2\n    %timeit -n 1 -r 1 §_w + 1\n    return §_w",
        "# TEST\nassert §_g() == 2",
    ],
    ["# TEST\n%time §_t = 5\nassert §_t == 5"],
    ["pwd", "# TEST\nassert True"],
    ["§_pwd = 1\npwd", "# TEST\nassert §_pwd == 1"],
    ["ls", "# TEST\nassert True"],
    [
        "from IPython.core.magic import register_line_magic\n"
        "@register_line_magic\ndef §_m(line):\n    return line * 2",
        "# TEST\nassert %§_m ab == 'abab'",
        "# TEST\n§_r = %§_m ab\nassert §_r == 'abab'",
    ],
    [
        "§_seen = []\nget_ipython().events.register('pre_run_cell', lambda info: §_seen.append(1))",
        "# TEST\nassert §_seen",
    ],
    ["# TEST\nimport types\nassert isinstance(__builtins__, types.ModuleType)"],
    ["# TEST\nassert __doc__ is None"],
    ["# TEST\nassert __name__ == '__main__'"],
    [
        "class §_C:\n    n = 0\n    def __repr__(self):\n        §_C.n += 1\n        return 'c'",
        "§_C()",
        "# TEST\nassert §_C.n == 1",
        "# TEST\ndisplay(§_C())\nassert §_C.n == 2",
    ],
    [
        "class §_B:\n    def _repr_html_(self):\n        raise ValueError('html')",
        "# TEST\ndisplay(§_B())",
        "# TEST\ndisplay(§_B(), raw=True)",
    ],
    [
        "\n# TEST\nimport math\ndef §_h():\n    return math.pi\n"
        "def test_§_h():\n    assert §_h() > 3"
    ],
    ["# TEST\nimport asyncio\nawait asyncio.sleep(0)\n§_a = 1\nassert §_a == 1"],
    ["# TEST\nfrom math import *\nassert pi > 3"],
    ["§_l = [i for i in range(3)]", "# TEST\nassert sum(§_l) == 3"],
    ["class §_D:\n    def __repr__(self):\n        raise ValueError('repr')", "# TEST\n§_D()"],
    ["# TEST\n§_k = 1\n§_k", "# TEST\nfrom math import *\n§_k"],
    ["# TEST\nfor §_i in range(3):\n    pass\nassert §_i == 2", "# TEST\nassert §_i == 2"],
    ["# TEST\ndef test_§_a():\n    assert 1\n\ndef test_§_b():\n    assert 0"],
    # round 1's causes: warning filters, logging, a running loop, caught asserts, imports
    # after a chdir, future flags
    [
        "import warnings\nclass §_W(UserWarning):\n    pass\nwarnings.simplefilter('error', §_W)",
        "# TEST\ntry:\n    warnings.warn('w', §_W)\n    §_raised = False\n"
        "except §_W:\n    §_raised = True\nassert §_raised",
    ],
    [
        "import io, logging\n§_buf = io.StringIO()\n"
        "logging.basicConfig(stream=§_buf, level=logging.INFO, force=True)",
        "logging.info('§ logged')",
        "# TEST\nassert '§ logged' in §_buf.getvalue()",
    ],
    [
        "import asyncio\n§_loop = asyncio.get_running_loop()\n"
        "§_task = asyncio.ensure_future(asyncio.sleep(0, result=7))",
        "# TEST\nassert await §_task == 7",
        "# TEST\nassert asyncio.get_running_loop() is §_loop",
    ],
    [
        "# TEST\ntry:\n    assert 1 == 2, 'custom'\nexcept AssertionError as §_e:\n"
        "    assert str(§_e) == 'custom'"
    ],
    [
        "import os\nos.makedirs('§_pkg', exist_ok=True)\n"
        "with open('§_pkg/§_mod.py', 'w') as §_f:\n    §_f.write('VALUE = 3')\nos.chdir('§_pkg')",
        "import §_mod",
        "# TEST\nassert §_mod.VALUE == 3",
    ],
    [
        "from __future__ import annotations",
        "def §_ann(x: §_Undefined) -> None:\n    pass",
        "# TEST\nassert §_ann.__annotations__['x'] == '§_Undefined'",
    ],
]
RAISES = [  # a setup cell marked to raise, and what a later cell reads of it
    [
        code("raise KeyError('§')", tags=["raises-exception"]),
        "import sys\n§_last = sys.last_type",
        "# TEST\nassert §_last is KeyError",
    ],
]


def generated_notebook(number: int, seed: int = SEED) -> list[object]:
    """The cells of generated notebook *number*: the same for the same seed."""
    draw = random.Random(f"{seed}-{number}")
    cells: list[object] = []
    for n, snippet in enumerate(draw.choices(SNIPPETS + RAISES, k=SNIPPETS_PER_NOTEBOOK)):
        prefix = f"s{n}"
        for cell in snippet:
            if isinstance(cell, str):
                cells.append(cell.replace("§", prefix))
            else:
                source = cell.source.replace("§", prefix)  # type: ignore[attr-defined]
                metadata = cell.metadata  # type: ignore[attr-defined]
                cells.append(nbformat.v4.new_code_cell(source, metadata=metadata))  # a new id
    return cells


@pytest.mark.parametrize("number", range(COUNT))
def test_a_generated_notebook_gets_a_kernels_verdicts(
    number: int, pytester: pytest.Pytester
) -> None:
    path = Path(pytester.path) / f"generated_{number}.ipynb"
    nbformat.write(make_notebook(generated_notebook(number)), str(path))
    kernel = kernel_verdicts(path)
    assert covers_every_test_cell(path, kernel), kernel
    run = pytester.inline_run("-p", "no:cacheprovider", "-p", "no:randomly", "--ntdd", str(path))
    assert ntdd_verdicts(run) == kernel
