"""Every case of the bad-input corpus gets its defined outcome, and nothing is lost.

Outcomes: an unreadable case is exit 2 with one line naming the file (CLI)
and one collection error for that file while the rest runs (pytest); an
unusual but valid case simply works.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import CORPUS, run, sha

from ntdd.commands.cli import main

ERROR, TESTS, NO_TESTS = "error", "tests", "no tests"

#: case -> (outcome, the reason, or the number of tests)
EXPECTED: dict[str, tuple[str, str | int]] = {
    "own/truncated.ipynb": (ERROR, "truncated JSON"),
    "own/merge_conflict.ipynb": (ERROR, "git merge-conflict markers at line 6"),
    "own/empty.ipynb": (ERROR, "empty file, not a notebook"),
    "own/binary.ipynb": (ERROR, "binary file, not a notebook"),
    "own/json_not_a_notebook.ipynb": (ERROR, "JSON object with no 'nbformat' or 'cells'"),
    "own/json_list.ipynb": (ERROR, "JSON list, not a notebook"),
    "own/v3.ipynb": (TESTS, 1),
    **{f"own/v4_{minor}.ipynb": (TESTS, 1) for minor in range(6)},
    "own/duplicate_ids.ipynb": (TESTS, 1),
    "own/source_list_and_string.ipynb": (TESTS, 1),
    "own/unknown_cell_type_and_raw.ipynb": (TESTS, 1),
    "own/magics_and_unicode_names.ipynb": (TESTS, 2),
    "bad/d2l-pytorch-colab__mf-empty.ipynb": (ERROR, "empty file, not a notebook"),
    # Another language's notebook without tests is passed over, as pytest --ntdd does.
    "bad/nbformat__no_min_version.ipynb": (NO_TESTS, ""),
    "bad/nbformat__test3_no_worksheets.ipynb": (ERROR, "without worksheets"),
    "bad/nbformat__test3_worksheet_with_no_cells.ipynb": (ERROR, "without worksheets"),
    "bad/nbformat__v4_5_invalid_metadata.ipynb": (ERROR, "'metadata.tags' must be a list"),
    "bad/nbformat__invalid.ipynb": (NO_TESTS, ""),
    "bad/nbformat__invalid_cell_id.ipynb": (NO_TESTS, ""),
    "bad/nbformat__invalid_unique_cell_id.ipynb": (NO_TESTS, ""),
    "bad/nbformat__v4_5_no_cell_id.ipynb": (NO_TESTS, ""),
    "bad/nbclient__Skip_Exceptions.ipynb": (NO_TESTS, ""),
    "bad/nbmake__import_errs.ipynb": (NO_TESTS, ""),
    "bad/nbval__exceptions.ipynb": (NO_TESTS, ""),
    **{f"good/{p.name}": (NO_TESTS, "") for p in sorted((CORPUS / "good").glob("*.ipynb"))},
    **{f"untested/{p.name}": (NO_TESTS, "") for p in sorted((CORPUS / "untested").glob("*.ipynb"))},
    **{f"real/{p.name}": (NO_TESTS, "") for p in sorted((CORPUS / "real").glob("*.ipynb"))},
    # the plot-heavy chapters of the benchmarks; d2l's starts with `!pip install d2l==1.0.3`
    **{
        f"plots/{p.name}": (NO_TESTS, "installs never run under test" if "d2l" in p.name else "")
        for p in sorted((CORPUS / "plots").glob("*.ipynb"))
    },
    # the faults oracle's training chapters: their tests are added to copies (tests/fault_cases.py);
    # d2l-pytorch-colab's start with `!pip install d2l==1.0.3`, which export says it leaves out
    # (d2l-pytorch's, an older port, install nothing)
    **{
        f"training/{p.name}": (
            NO_TESTS,
            "installs never run under test" if p.name.startswith("d2l-pytorch-colab") else "",
        )
        for p in sorted((CORPUS / "training").glob("*.ipynb"))
    },
    # built by `generated` below
    "generated/big_output.ipynb": (TESTS, 1),
    "generated/many_cells.ipynb": (TESTS, 500),
    "generated/loop.ipynb": (ERROR, "too many levels of symbolic links"),
}


def test_every_corpus_file_has_an_expected_outcome() -> None:
    on_disk = {p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.ipynb")}
    assert on_disk == {k for k in EXPECTED if not k.startswith("generated/")}


# Each folder of third-party notebooks and the SOURCES.md that attributes them, as their
# licences ask: a copy added without its line there is a licence broken.
ATTRIBUTED = {
    "good": "SOURCES.md",
    "bad": "SOURCES.md",
    "untested": "untested/SOURCES.md",
    "training": "training/SOURCES.md",
    "real": "real/SOURCES.md",
    "plots": "plots/SOURCES.md",
}


@pytest.mark.parametrize("folder", sorted(ATTRIBUTED))
def test_every_third_party_notebook_is_attributed_in_its_sources(folder: str) -> None:
    sources = (CORPUS / ATTRIBUTED[folder]).read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip() for line in sources.splitlines() if line.startswith("| ")}
    on_disk = {p.name for p in (CORPUS / folder).glob("*.ipynb")}
    assert on_disk - rows == set()


def generated(folder: Path) -> Path:
    """The cases too big or too odd to commit."""
    folder.mkdir(parents=True, exist_ok=True)
    big = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("# TEST\nassert x")]
    )
    big.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * 20_000_000)]
    nbformat.write(big, str(folder / "big_output.ipynb"))
    cells = [  # ids given: 5,000 random 8-digit ids meet twice in about one run in 300
        nbformat.v4.new_code_cell(
            f"# TEST: t{i}\nassert v{i - 1} == {i - 1}" if i % 10 == 9 else f"v{i} = {i}",
            id=f"cell-{i}",
        )
        for i in range(5000)
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(folder / "many_cells.ipynb"))
    (folder / "loop.ipynb").symlink_to("loop.ipynb")
    (folder / "folder.ipynb").mkdir()  # a folder named like a notebook
    return folder


# `corpus` is built once for the module: under xdist (--dist loadgroup) its tests
# share a worker, or each worker would build it.
pytestmark = pytest.mark.xdist_group("corpus")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for part in ("own", "good", "bad", "untested", "real", "training", "plots"):
        shutil.copytree(CORPUS / part, root / part)
    generated(root / "generated")
    return root


@pytest.mark.parametrize("case", sorted(EXPECTED))
@pytest.mark.slow
def test_the_cli_gives_each_case_its_outcome(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    outcome, detail = EXPECTED[case]
    code = main(["export", str(corpus / case), "-o", str(tmp_path)])
    out, err = capsys.readouterr()
    if outcome == ERROR:
        assert code == 2
        assert err.count("\n") == 1 and "Traceback" not in err
        assert err.startswith(f"ntdd: error: {corpus / case}: ")
        assert str(detail) in err
    elif outcome == NO_TESTS:
        assert code == 1  # and no error: warnings at most (an install the plan will drop)
        assert all(line.startswith("ntdd: warning: ") for line in err.splitlines()), err
        assert str(detail) in err, err
        assert "no test cells; nothing written" in out
    else:
        assert code == 0, err
        assert f"({detail} test" in out


def test_a_folder_named_like_a_notebook_is_searched_not_read(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", str(corpus / "generated" / "folder.ipynb")]) == 1
    assert "no notebooks found" in capsys.readouterr().err


@pytest.mark.slow
def test_pytest_gives_each_case_its_outcome_in_one_run(
    corpus: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    unreadable = corpus / "generated" / "unreadable.ipynb"
    unreadable.write_text(json.dumps(nbformat.v4.new_notebook()))
    real_read = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "unreadable.ipynb":
            raise PermissionError(13, "Permission denied", str(self))  # root reads chmod 000
        return real_read(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = run(pytester, "--ntdd", str(corpus), "-W", "ignore")
    unreadable.unlink()
    errors = sorted(k for k, (o, _) in EXPECTED.items() if o == ERROR)  # the link loop too
    tests = sum(int(n) for o, n in EXPECTED.values() if o == TESTS)
    result.assert_outcomes(passed=tests, errors=len(errors) + 1)
    text = result.stdout.str()
    collecting = [line for line in result.outlines if "ERROR collecting" in line]
    for case in [*errors, "generated/unreadable.ipynb"]:
        assert sum(f"/{case} " in line for line in collecting) == 1, case
    assert "cannot be read: permission denied" in text
    assert "INTERNALERROR" not in text


@pytest.mark.slow
def test_no_command_changes_a_byte_of_any_notebook(
    corpus: Path, tmp_path: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashes of every corpus notebook, before and after every command but sync's writes."""

    def hashes() -> dict[str, str]:
        return {str(p): sha(p) for p in corpus.rglob("*.ipynb") if p.is_file()}

    before = hashes()
    out = tmp_path / "modules"
    main(["export", str(corpus), "-o", str(out)])
    main(["export", "--check", str(corpus), "-o", str(out)])
    main(["sync", str(corpus / "own"), "-o", str(out)])  # in sync: writes nothing
    main(["faults", str(corpus / "own" / "v4_5.ipynb")])
    monkeypatch.chdir(tmp_path)
    main(["init"])
    run(pytester, "--ntdd", str(corpus), "-W", "ignore")
    run(pytester, str(out), "-W", "ignore")
    assert hashes() == before
