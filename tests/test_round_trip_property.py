"""Property: any edit of a module's test regions, or of the notebook, is synced exactly or refused.

After `ntdd sync`, either the notebook holds exactly the edit, re-export
reproduces the edited module (its hashes aside; a `# TEST` line carries the
marks edited in as decorators), and `--check` passes; or sync refused and
neither file changed a byte.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import make_notebook
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ntdd.commands.cli import main
from ntdd.format.module import GLOBAL_NOTE

pytestmark = pytest.mark.slow

# 150 examples by default; NTDD_ROUND_TRIP_EXAMPLES=1000 for a deeper search.
EXAMPLES = settings(
    max_examples=int(os.environ.get("NTDD_ROUND_TRIP_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

CELLS = [
    "import math\nvalues = [1, 2, 3]",
    "# TEST: the sum\ntotal = sum(values)\nassert total == 6",
    "scale = 2",
    "# TEST: scaled @slow\n'''Doubled values.'''\nassert [v * scale for v in values][0] == 2",
    "# TEST\ndef test_square():\n    '''Squares.'''\n    assert math.sqrt(4) == 2\n\n"
    "# %% ntdd setup: cell 1, id s1\ndef helper():\n    return 1",  # a marker line pasted in
    "# TEST: a cell that asserts nothing",
]
HASH_LINE = re.compile(r"^# ntdd-(hash|frame|version): .*$|, sha [0-9a-f]+$", re.M)


def quietly(*argv: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(list(argv))


def normal(text: str) -> str:
    """A module's text, its recorded hashes and version aside."""
    return HASH_LINE.sub("", text)


Edit = Callable[[str], str]


def _replace(old: str, new: str) -> Edit:
    return lambda text: text.replace(old, new, 1)


MODULE_EDITS: list[tuple[str, Edit]] = [
    ("add an assert", _replace("    assert total == 6", "    assert total == 6\n    assert total")),
    (
        "add a comment",
        _replace("    assert total == 6", "    # checked by hand\n    assert total == 6"),
    ),
    ("edit a docstring", _replace("'''Squares.'''", "'''Square roots, really.'''")),
    ("add a mark", _replace("def test_the_sum():", "@pytest.mark.slow\ndef test_the_sum():")),
    (
        "add a mark with a list",
        _replace(
            "def test_the_sum():", "@pytest.mark.parametrize('n', [1, 2])\ndef test_the_sum():"
        ),
    ),
    (
        "add a mark with an exception",
        _replace(
            "def test_the_sum():",
            "@pytest.mark.xfail(raises=ZeroDivisionError)\ndef test_the_sum():",
        ),
    ),
    ("drop a mark", _replace("@pytest.mark.slow\n", "")),
    (
        "add a function",
        _replace("    return 1", "    return 1\n\n\ndef test_more():\n    assert helper() == 1"),
    ),
    ("delete the test line", _replace("    # TEST: the sum\n", "")),
    ("a comment above", _replace("def test_the_sum():", "# above\ndef test_the_sum():")),
    ("rename a wrapped test", _replace("def test_the_sum():", "def test_a_sum():")),
    ("edit the frame", _replace("import pytest\n", "import pytest\nimport os\n")),
    ("edit a setup cell", _replace("scale = 2", "scale = 3")),
    ("empty a body", _replace("    assert total == 6", "    pass")),
    ("tabs", _replace("    assert total == 6", "\tassert total == 6")),
    (
        "assign a new name",
        _replace("    assert total == 6", "    other = total\n    assert other == 6"),
    ),
    ("drop the only assignment", _replace("    total = sum(values)\n", "")),
    (
        "paste a marker line",
        _replace("    return 1", "    return 1\n\n\n# %% ntdd test: cell 2, sha 0123456789ab"),
    ),
]


def _notebook_edit(kind: str) -> Callable[[dict[str, object]], None]:
    def apply(notebook: dict[str, object]) -> None:
        cells = notebook["cells"]
        assert isinstance(cells, list)
        if kind == "add a setup cell":
            cells.insert(1, _cell("extra = 1"))
        elif kind == "add a test cell":
            cells.insert(2, _cell("# TEST: added\nassert True"))
        elif kind == "remove a test cell":
            del cells[1]
        elif kind == "move a test cell":
            cells.append(cells.pop(1))
        elif kind == "change a test cell":
            cells[1]["source"] = "# TEST: the sum\ntotal = sum(values)\nassert total > 5"
        elif kind == "drop the ids":
            notebook["nbformat_minor"] = 4
            for cell in cells:
                cell.pop("id", None)

    return apply


NOTEBOOK_EDITS = [
    "add a setup cell",
    "add a test cell",
    "remove a test cell",
    "move a test cell",
    "change a test cell",
    "drop the ids",
]


def _cell(source: str) -> dict[str, object]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


@EXAMPLES
@given(
    module_edits=st.lists(st.sampled_from(MODULE_EDITS), max_size=3, unique_by=lambda e: e[0]),
    notebook_edits=st.lists(st.sampled_from(NOTEBOOK_EDITS), max_size=2, unique=True),
    ids=st.booleans(),
    prefer=st.sampled_from([None, "module", "notebook"]),
)
def test_a_sync_is_exact_or_refused(
    module_edits: list[tuple[str, Edit]],
    notebook_edits: list[str],
    ids: bool,
    prefer: str | None,
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        nb = Path(folder) / "nb.ipynb"
        notebook = make_notebook(CELLS)
        if not ids:
            _notebook_edit("drop the ids")(notebook)
        nb.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        assert quietly("export", str(nb)) == 0
        module = nb.with_name("test_nb.py")
        exported = module.read_text()
        edited = exported
        for _, edit in module_edits:
            edited = edit(edited)
        module.write_text(edited)
        raw = json.loads(nb.read_text())
        for kind in notebook_edits:
            _notebook_edit(kind)(raw)
        nb.write_text(json.dumps(raw, indent=1, ensure_ascii=False) + "\n")
        before = (nb.read_bytes(), module.read_bytes())
        code = quietly("sync", str(nb), *(["--prefer", prefer] if prefer else []))
        if code != 0:
            assert code in (1, 2)
            assert (nb.read_bytes(), module.read_bytes()) == before, "a refused sync changed a file"
            return
        assert quietly("export", "--check", str(nb)) == 0, "sync left the pair disagreeing"
        if edited != exported and not notebook_edits and prefer != "notebook":
            _assert_the_edit_came_back(edited, module.read_text())


def _assert_the_edit_came_back(edited: str, synced: str) -> None:
    """The synced module is the edited one, its hashes aside; only `# TEST` lines may
    differ, where they now carry the marks that were edited in as decorators, and
    `global` lines, which declare what the edited cell assigns now."""
    ours, theirs = normal(edited).split("\n"), normal(synced).split("\n")
    ours, theirs = (
        [a for a in ours if GLOBAL_NOTE not in a],
        [b for b in theirs if GLOBAL_NOTE not in b],
    )
    assert len(ours) == len(theirs), "the module's lines changed"
    for a, b in zip(ours, theirs, strict=True):
        if a != b:
            assert a.strip().startswith("# TEST") and b.strip().startswith("# TEST"), (a, b)


SAVES = int(os.environ.get("NTDD_SAVE_RACES", "40"))


@pytest.mark.parametrize("ids", [True, False], ids=["ids", "no ids"])
def test_a_save_during_sync_never_moves_the_edit(ids: bool) -> None:
    """Jupyter saves the notebook (a cell inserted above) while sync runs: the edit
    lands in its own cell, or sync refuses and leaves the save as it is."""
    rounds = random.Random(25)
    outcomes = {True: 0, False: 0}
    for _ in range(SAVES):
        with tempfile.TemporaryDirectory() as folder:
            nb = Path(folder) / "nb.ipynb"
            notebook = make_notebook(CELLS)
            if not ids:
                _notebook_edit("drop the ids")(notebook)
            nb.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            assert quietly("export", str(nb)) == 0
            module = nb.with_name("test_nb.py")
            module.write_text(
                module.read_text().replace("    assert total == 6", "    assert total")
            )
            saved = json.loads(nb.read_text())
            _notebook_edit("add a setup cell")(saved)
            save = threading.Thread(
                target=_save, args=(nb, json.dumps(saved, indent=1) + "\n", _delay(rounds))
            )
            save.start()
            code = quietly("sync", str(nb))
            save.join()
            after = ["".join(c["source"]) for c in json.loads(nb.read_text())["cells"]]
            saved_sources = [c["source"] for c in saved["cells"]]
            edited = [_edited(source) for source in saved_sources]
            assert code in (0, 1)
            # The save replaced the file last (whatever sync wrote before it is gone), or
            # sync wrote its edit into the save, into the cell it belongs to.
            assert after in (saved_sources, edited) if code == 0 else after == saved_sources
            outcomes[after == edited] += 1
    assert outcomes[True], "no sync ever ran after the save: the race was never run"


def _delay(rounds: random.Random) -> float:
    """Seconds before the save: up to 50 ms, most of them short, so that saves land before,
    during and after a sync, however fast sync is on the machine."""
    return rounds.random() ** 3 / 20


def _edited(source: str) -> str:
    return source.replace("assert total == 6", "assert total") if "the sum" in source else source


def _save(path: Path, text: str, after: float) -> None:
    """What Jupyter does on save: the whole file replaced, at once."""
    time.sleep(after)
    temporary = path.with_name(".saving.ipynb")
    temporary.write_text(text)
    os.replace(temporary, path)
