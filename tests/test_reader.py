"""Reading notebooks: every format version, and one clear reason for every bad file."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from conftest import CORPUS, make_notebook

from ntdd.errors import NotebookReadError
from ntdd.notebook.read import read_notebook


def write_json(path: Path, obj: object) -> Path:
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


@pytest.mark.parametrize("minor", [0, 1, 2, 3, 4, 5])
def test_it_reads_every_nbformat_4_minor(tmp_path: Path, minor: int) -> None:
    nb = make_notebook(["x = 1", "# TEST\nassert x == 1"])
    nb.nbformat_minor = minor
    for cell in nb.cells:
        if minor < 5:
            cell.pop("id", None)
    path = write_json(tmp_path / "nb.ipynb", nb)
    notebook = read_notebook(path)
    assert [c.source for c in notebook.cells] == ["x = 1", "# TEST\nassert x == 1"]
    assert all((c.id is None) == (minor < 5) for c in notebook.cells)


def test_it_upgrades_nbformat_3(tmp_path: Path) -> None:
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": ""},
        "worksheets": [
            {
                "cells": [
                    {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": []},
                    {"cell_type": "markdown", "source": "# Title"},
                    {"cell_type": "code", "input": ["# TEST\n", "assert x"], "outputs": []},
                ],
                "metadata": {},
            }
        ],
    }
    notebook = read_notebook(write_json(tmp_path / "old.ipynb", v3))
    assert [(c.cell_type, c.source) for c in notebook.cells] == [
        ("code", "x = 1"),
        ("markdown", "# Title"),
        ("code", "# TEST\nassert x"),
    ]


def test_source_may_be_a_list_of_lines_or_a_string(tmp_path: Path) -> None:
    nb = make_notebook(["a = 1\nb = 2"])
    nb.cells[0].source = ["a = 1\n", "b = 2"]
    nb.cells.append(nbformat.v4.new_code_cell("c = 3"))
    notebook = read_notebook(write_json(tmp_path / "nb.ipynb", nb))
    assert [c.source for c in notebook.cells] == ["a = 1\nb = 2", "c = 3"]


def test_tags_and_ids_are_read(tmp_path: Path) -> None:
    nb = make_notebook(["x = 1"])
    nb.cells[0].metadata["tags"] = ["ntdd-skip", "other"]
    nb.cells[0].id = "abc-123"
    cell = read_notebook(write_json(tmp_path / "nb.ipynb", nb)).cells[0]
    assert cell.tags == ("ntdd-skip", "other")
    assert cell.id == "abc-123"
    assert cell.label == "cell 1 (id abc-123)"


def test_unknown_cell_types_raw_cells_and_duplicate_ids_are_tolerated(tmp_path: Path) -> None:
    nb = make_notebook(["x = 1", "y = 2"])
    nb.cells[1].id = nb.cells[0].id
    nb.cells.append(nbformat.v4.new_raw_cell("raw text"))
    nb.cells.append({"cell_type": "heading", "level": 1, "source": "Old", "metadata": {}})
    notebook = read_notebook(write_json(tmp_path / "nb.ipynb", nb))
    assert [c.cell_type for c in notebook.cells] == ["code", "code", "raw", "heading"]


BAD_FILES = {
    "empty": (b"", "empty file, not a notebook"),
    "whitespace": (b"  \n", "empty file, not a notebook"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00", "binary file, not a notebook"),
    "latin-1": ('{"cells": "caf\xe9"}'.encode("latin-1"), "not UTF-8 text"),
    "truncated": (b'{"cells": [{"cell_type": "code", "sou', "truncated JSON"),
    "bad json": (b'{"cells": [}', "not valid JSON: Expecting value at line 1, column 12"),
    "merge conflict": (
        b'{\n<<<<<<< HEAD\n "cells": [],\n=======\n "cells": [1],\n>>>>>>> branch\n}',
        "git merge-conflict markers at line 2",
    ),
    "json list": (b"[1, 2]", "JSON list, not a notebook"),
    "json object": (b'{"name": "x"}', "JSON object with no 'nbformat' or 'cells'"),
    "no version": (b'{"cells": []}', "'nbformat' is None, expected a version number"),
    "future version": (b'{"nbformat": 5, "cells": []}', "nbformat 5 is newer"),
    "cells not a list": (b'{"nbformat": 4, "cells": {}}', "'cells' is dict, expected a list"),
    "cell not an object": (b'{"nbformat": 4, "cells": [3]}', "cell 1 is int, expected an object"),
    "no cell type": (b'{"nbformat": 4, "cells": [{"source": ""}]}', "cell 1 has no 'cell_type'"),
    "bad source": (
        b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 7}]}',
        "cell 1: 'source' must be a string or a list of strings",
    ),
    "bad tags": (
        b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": "",'
        b' "metadata": {"tags": "x"}}]}',
        "cell 1: 'metadata.tags' must be a list of strings",
    ),
    "v3 without worksheets": (
        b'{"nbformat": 3, "nbformat_minor": 0, "metadata": {}}',
        "nbformat 3 notebook without worksheets of cells",
    ),
    "R notebook": (
        b'{"nbformat": 4, "cells": [], "metadata": {"kernelspec": {"language": "R"}}}',
        "a 'R' notebook; ntdd runs Python notebooks",
    ),
}


@pytest.mark.parametrize("kind", BAD_FILES, ids=list(BAD_FILES))
def test_a_bad_file_gets_one_clear_reason_naming_it(tmp_path: Path, kind: str) -> None:
    content, reason = BAD_FILES[kind]
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(NotebookReadError) as excinfo:
        read_notebook(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}: ")
    assert reason in message
    assert "\n" not in message


def test_a_missing_file_a_directory_and_a_symlink_loop_are_named(tmp_path: Path) -> None:
    (tmp_path / "dir.ipynb").mkdir()
    loop = tmp_path / "loop.ipynb"
    loop.symlink_to(loop)
    expected = {
        tmp_path / "missing.ipynb": "no such file or directory",
        tmp_path / "dir.ipynb": "is a directory",
        loop: "too many levels of symbolic links",
    }
    for path, reason in expected.items():
        with pytest.raises(NotebookReadError, match=reason):
            read_notebook(path)


def test_an_unreadable_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "secret.ipynb"
    path.write_text("{}")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)  # root could read a chmod 000 file
    with pytest.raises(NotebookReadError, match=r"secret\.ipynb: cannot be read: permission"):
        read_notebook(path)


CORPUS_BAD = {
    "d2l-pytorch-colab__mf-empty.ipynb": "empty file",
    "nbformat__test3_no_worksheets.ipynb": "without worksheets",
    "nbformat__test3_worksheet_with_no_cells.ipynb": "without worksheets",
    "nbformat__v4_5_invalid_metadata.ipynb": "'metadata.tags' must be a list of strings",
    "nbformat__no_min_version.ipynb": "a 'plaintext' notebook",
}


@pytest.mark.parametrize("name", CORPUS_BAD)
def test_broken_notebooks_from_the_wild_are_refused_with_a_reason(name: str) -> None:
    with pytest.raises(NotebookReadError, match=CORPUS_BAD[name]):
        read_notebook(CORPUS / "bad" / name)


def test_every_good_notebook_of_the_corpus_reads() -> None:
    for path in sorted((CORPUS / "good").glob("*.ipynb")):
        notebook = read_notebook(path)
        assert notebook.cells, path
