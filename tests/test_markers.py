"""The marker grammar: which cells are tests, with what names and marks."""

from __future__ import annotations

import pytest

from ntdd.notebook.markers import (
    MarkerError,
    expects_exception,
    format_test_line,
    is_test_cell,
    parse_test_marker,
    skip_reason,
    with_mark,
)
from ntdd.values import Cell, Mark


def cell(source: str, tags: tuple[str, ...] = (), cell_type: str = "code") -> Cell:
    return Cell(index=3, cell_type=cell_type, source=source, id="abc", tags=tags)


@pytest.mark.parametrize(
    "source",
    ["# TEST", "# TEST: input shape", "#TEST", "# TEST @slow", "\n\n  # TEST: after blanks\nx"],
)
def test_these_cells_are_tests(source: str) -> None:
    assert is_test_cell(cell(source))


@pytest.mark.parametrize(
    "source",
    ["# TESTING the model", "x = 1\n# TEST", "# test", "print('# TEST')", "# TESTS", ""],
)
def test_these_cells_are_not(source: str) -> None:
    assert not is_test_cell(cell(source))


def test_a_markdown_cell_is_never_a_test() -> None:
    assert not is_test_cell(cell("# TEST", cell_type="markdown"))


@pytest.mark.parametrize(
    ("line", "title", "marks"),
    [
        ("# TEST", "", ()),
        ("# TEST: input shape", "input shape", ()),
        ("# TEST: big batch @slow", "big batch", (Mark("slow"),)),
        (
            '# TEST: big batch @slow @xfail("issue 12")',
            "big batch",
            (Mark("slow"), Mark("xfail", (), (("reason", "'issue 12'"),))),
        ),
        ('# TEST @skip("no data")', "", (Mark("skip", (), (("reason", "'no data'"),)),)),
        ("# TEST: gpu path @cuda", "gpu path", (Mark("cuda"),)),
        ("# TEST: t @timeout(5)", "t", (Mark("timeout", ("5",)),)),
        (
            '# TEST: x @xfail(strict=False, reason="a (b) c")',
            "x",
            (Mark("xfail", (), (("strict", "False"), ("reason", "'a (b) c'"))),),
        ),
        (
            '# TEST: lists @parametrize("n", [1, 2]) @xfail(raises=ZeroDivisionError)',
            "lists",
            (
                Mark("parametrize", ("'n'", "[1, 2]")),
                Mark("xfail", (), (("raises", "ZeroDivisionError"),)),
            ),
        ),
        ("# TEST: mail user@example.com", "mail user@example.com", ()),
        ("# TEST: größe prüfen", "größe prüfen", ()),
    ],
)
def test_the_marker_line_gives_title_and_marks(
    line: str, title: str, marks: tuple[Mark, ...]
) -> None:
    marker = parse_test_marker(cell(line + "\nassert True"))
    assert marker.title == title
    assert marker.marks == marks


@pytest.mark.parametrize(
    "line",
    [
        '# TEST: x @xfail("unclosed',
        "# TEST: x @slow junk",
        "# TEST: x @skip(reason=some_name)",
        "# TEST: x @xfail(raises=torch.cuda.OutOfMemoryError)",
    ],
)
def test_a_malformed_mark_is_an_error(line: str) -> None:
    with pytest.raises(MarkerError):
        parse_test_marker(cell(line))


def test_tags_add_the_same_marks() -> None:
    marker = parse_test_marker(cell("# TEST: t", ("ntdd-xfail", "ntdd-slow", "ntdd-cuda", "other")))
    assert [m.name for m in marker.marks] == ["xfail", "slow", "cuda"]


def test_a_mark_on_the_line_wins_over_the_same_tag() -> None:
    marker = parse_test_marker(cell('# TEST: t @xfail("why")', ("ntdd-xfail",)))
    assert marker.marks == (Mark("xfail", (), (("reason", "'why'"),)),)


@pytest.mark.parametrize(
    "line",
    [
        "# TEST",
        "# TEST: a title",
        "# TEST: t @slow @xfail(reason='why', strict=True)",
        "# TEST @parametrize('n', [1, 2]) @xfail(raises=(ValueError, TypeError))",
    ],
)
def test_the_test_line_is_written_back_as_it_reads(line: str) -> None:
    marker = parse_test_marker(cell(line))
    assert format_test_line(marker.title, marker.marks) == line


@pytest.mark.parametrize(
    ("source", "tags", "reason"),
    [
        ("# NTDD: skip\ntrain()", (), "# NTDD: skip"),
        ("# ntdd: SKIP - downloads\nfetch()", (), "# NTDD: skip"),
        ("fetch()", ("ntdd-skip",), "tag ntdd-skip"),
        ("fetch()", ("skip-execution",), "tag skip-execution"),
        ("# NBVAL_SKIP\nfetch()", (), "# NBVAL_SKIP"),
        ("import os\n# NBVAL_SKIP\nfetch()", (), "# NBVAL_SKIP"),
        ("x = 1", (), None),
        ("# NTDD: skipping is not this", (), None),
    ],
)
def test_skipped_setup_cells(source: str, tags: tuple[str, ...], reason: str | None) -> None:
    assert skip_reason(cell(source, tags)) == reason


@pytest.mark.parametrize(
    ("source", "tags", "expected"),
    [
        ("1/0", ("raises-exception",), True),
        ("1/0", ("nbval-raises-exception",), True),
        ("# NBVAL_RAISES_EXCEPTION\n1/0", (), True),
        ("1/0", (), False),
    ],
)
def test_setup_cells_marked_to_raise(source: str, tags: tuple[str, ...], expected: bool) -> None:
    assert expects_exception(cell(source, tags)) is expected


@pytest.mark.parametrize(
    ("source", "marked"),
    [
        ("# TEST\nassert x", "# TEST @full_run\nassert x"),
        (
            "# TEST: it learned @slow  \r\nassert x\r\n",
            "# TEST: it learned @slow @full_run\r\nassert x\r\n",
        ),
        ('#TEST:fit @xfail("why")\nassert 1', '#TEST:fit @xfail("why") @full_run\nassert 1'),
        ("#| slow\n\n# TEST: a@b\nx", "#| slow\n\n# TEST: a@b @full_run\nx"),
        ("  # TEST: indented", "  # TEST: indented @full_run"),
    ],
)
def test_a_mark_is_added_at_the_end_of_the_test_line_every_other_byte_kept(
    source: str, marked: str
) -> None:
    assert with_mark(source, "full_run") == marked
    before, after = parse_test_marker(cell(source)), parse_test_marker(cell(marked))
    assert after.title == before.title
    assert set(after.marks) == {*before.marks, Mark("full_run")}  # a directive's last


@pytest.mark.parametrize("source", ["x = 1", "", "# Test: not one\nassert x"])
def test_a_mark_is_added_to_test_cells_only(source: str) -> None:
    with pytest.raises(MarkerError, match="not a test cell"):
        with_mark(source, "full_run")
