"""The marker grammar: which cells are tests, their names and marks.

    # TEST                               a test named from its position
    # TEST: input shape                  a test named test_input_shape
    # TEST: big batch @slow @xfail("issue 12")
    # NTDD: skip                         a setup cell that is not run under test

Cell tags say the same: `ntdd-skip`, `ntdd-xfail`, `ntdd-slow`, `ntdd-cuda`,
and `ntdd-<word>` for any mark. Quarto's and nbdev's `#|` directives at the top
of a cell are read too: `#| eval: false` is nbdev's and Quarto's "not run"
for their own runners, which a kernel's Run All runs all the same (ntdd runs
it too, unless a run skips such cells: `eval_false`), and a bare flag in
nbdev's `tst_flags` style (`#| slow`) is a mark. This module is the grammar's
only home: it parses the `# TEST` line and writes it back (`format_test_line`,
and `with_mark`, which adds one mark to a cell's line).
"""

from __future__ import annotations

import ast
import builtins
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from ntdd.cells.cell_code import normalize_newlines
from ntdd.values import Cell, Mark

_TEST_LINE = re.compile(r"#\s*TEST(?=$|[\s:@])\s*:?(?P<rest>.*)$")
_LIKE_TEST_LINE = re.compile(r"#\s*tests?\b", re.IGNORECASE)  # what a person may mean by one
_SKIP_LINE = re.compile(r"#\s*NTDD\s*:\s*skip\b", re.IGNORECASE)
_MARK_START = re.compile(r"(?:^|(?<=\s))@(?P<word>[^\W\d]\w*)")
_NBVAL_SKIP = "# NBVAL_SKIP"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # as `normalize_newlines` reads them
_DIRECTIVE = re.compile(r"#\|\s*(?P<key>[\w-]+)\s*(?::\s*(?P<value>.*?))?\s*$")
# Directives that shape documents, not tests: never marks.
_DOCUMENT_DIRECTIVES = frozenset(
    {
        "export", "exports", "exporti", "exec_doc", "hide", "hide_input", "hide_output",
        "skip_showdoc", "echo", "include", "output", "warning", "error", "eval",
        "default_exp", "code-fold", "code-summary", "label", "filter_stream",
        "collapse_input", "collapse_output", "fig-cap", "tbl-cap", "classes",
    }
)  # fmt: skip
_FALSE = frozenset({"false", "no", "off", "0"})
EVAL_FALSE = "#| eval: false"
TAG_PREFIX = "ntdd-"
SKIP_TAGS = frozenset({"ntdd-skip", "skip-execution", "nbval-skip"})
RAISES_TAGS = frozenset({"raises-exception", "nbval-raises-exception"})


class MarkerError(ValueError):
    """A `# TEST` line whose marks cannot be parsed."""


@dataclass(frozen=True)
class TestMarker:
    """What a `# TEST` line and the cell's tags say about a test cell."""

    __test__ = False

    title: str
    marks: tuple[Mark, ...]


def _lines(source: str) -> list[str]:
    """Lines as Python reads them (`str.splitlines` also breaks at \\x85, \\u2028...)."""
    return normalize_newlines(source).split("\n")


def first_line(source: str) -> str:
    """The first line of a cell that is neither blank nor a `#|` directive, stripped."""
    lines = _lines(source)
    at = test_line_index(lines)
    return lines[at].strip() if at is not None else ""


def test_line_index(lines: list[str]) -> int | None:
    """Where a cell's `# TEST` line would be: past blank lines and `#|` directives."""
    for n, line in enumerate(lines):
        if line.strip() and not _DIRECTIVE.match(line.strip()):
            return n
    return None


def directives(source: str) -> dict[str, str | None]:
    """The `#|` directives at the top of a cell: {"eval": "false", "slow": None}."""
    found: dict[str, str | None] = {}
    for line in _lines(source):
        if not line.strip():
            continue
        match = _DIRECTIVE.match(line.strip())
        if match is None:
            break
        found[match["key"]] = match["value"]
    return found


def not_evaluated(source: str) -> bool:
    """`#| eval: false`, as Quarto and nbdev write it: their runners leave the cell out.

    A kernel runs it (the line is a comment), and so does ntdd, unless the
    run skips such cells (`--ntdd-skip-eval-false`): the runtime decides.
    """
    value = directives(source).get("eval")
    return value is not None and value.strip().strip("'\"").lower() in _FALSE


def directive_marks(source: str) -> tuple[Mark, ...]:
    """Marks a test cell's directives give it: a bare flag is a mark (`#| eval: false`
    is none: whether it skips is the run's choice)."""
    found = directives(source)
    marks: list[Mark] = []
    for key, value in found.items():
        if value is None and key.isidentifier() and key not in _DOCUMENT_DIRECTIVES:
            marks.append(Mark(key))
    return tuple(marks)


def is_test_cell(cell: Cell) -> bool:
    return cell.cell_type == "code" and _TEST_LINE.match(first_line(cell.source)) is not None


def near_miss(cell: Cell) -> str | None:
    """Why a code cell that looks meant as a test is not one; None when it does not look so.

    `# Test:`, `# TESTS:`, `#test` and a `# TEST` line behind an invisible
    character (a pasted byte order mark) all run as setup cells. Said at
    collection and export, so that a misspelled marker is not a test that
    silently never runs; but only of a cell made of checks (`assert`s, testing
    calls), which could be meant as a test: teaching notebooks head ordinary
    cells with `# Test mul() function` or `# Test cases`.
    """
    if cell.cell_type != "code" or is_test_cell(cell):
        return None
    line = first_line(cell.source)
    hidden = _invisible_prefix(line)
    visible = line[len(hidden) :]
    if not _LIKE_TEST_LINE.match(visible):
        return None
    if not hidden and not _made_of_checks(cell.source):
        return None
    if hidden and _TEST_LINE.match(visible):
        names = ", ".join(f"U+{ord(ch):04X} {unicodedata.name(ch, '')}".rstrip() for ch in hidden)
        return (
            f"the first line {visible!r} starts with an invisible character ({names}), so the "
            "cell is not a test; Jupyter raises SyntaxError on it too: delete the character"
        )
    return (
        f"the first line {line!r} looks like a test marker but is not one, so the cell is a "
        "setup cell, not a test; a test cell's first line is `# TEST` or `# TEST: name`"
    )


def _made_of_checks(source: str) -> bool:
    from ntdd.cells.cell_code import to_python
    from ntdd.cells.checks import is_check

    try:
        return is_check(to_python(source).tree)
    except SyntaxError:
        return False


def _invisible_prefix(line: str) -> list[str]:
    """The format characters (byte order mark, zero-width space…) a line starts with."""
    hidden: list[str] = []
    for ch in line:
        if unicodedata.category(ch) != "Cf":
            break
        hidden.append(ch)
    return hidden


def skip_reason(cell: Cell) -> str | None:
    """Why a setup cell is not run under test, or None when it runs."""
    if _SKIP_LINE.match(first_line(cell.source)):
        return "# NTDD: skip"
    if "skip" in nbval_comments(cell.source):
        return _NBVAL_SKIP
    tags = SKIP_TAGS.intersection(cell.tags)
    return f"tag {sorted(tags)[0]}" if tags else None


def expects_exception(cell: Cell) -> bool:
    """A setup cell marked, as nbval and nbclient mark them, to raise on purpose."""
    return bool(RAISES_TAGS.intersection(cell.tags)) or "raises" in nbval_comments(cell.source)


# nbval's comment markers (a comment line that is the word alone, however many `#`s) and
# its tags (the word in lower case, `_` as `-`), and what each says of the cell.
_NBVAL_WORDS = {
    "NBVAL_IGNORE_OUTPUT": ("check", False),
    "PYTEST_VALIDATE_IGNORE_OUTPUT": ("check", False),  # nbval's older spelling
    "NBVAL_CHECK_OUTPUT": ("check", True),
    "NBVAL_RAISES_EXCEPTION": ("raises", True),
    "NBVAL_SKIP": ("skip", True),
}
_NBVAL_TAGS = {
    **{word.lower().replace("_", "-"): said for word, said in _NBVAL_WORDS.items()},
    "raises-exception": ("raises", True),
}


def nbval_comments(source: str) -> dict[str, bool]:
    """What nbval's comment markers in *source* say: `check`, `raises`, `skip`; the
    last of two conflicting markers wins, as in nbval."""
    found: dict[str, bool] = {}
    for line in _lines(source):
        line = line.strip()
        if line.startswith("#"):
            said = _NBVAL_WORDS.get(line.lstrip("#").strip())
            if said is not None:
                found[said[0]] = said[1]
    return found


def nbval_options(cell: Cell) -> dict[str, bool]:
    """What nbval reads of a cell: its tags, then its comment markers over them."""
    found = dict(_NBVAL_TAGS[tag] for tag in cell.tags if tag in _NBVAL_TAGS)
    return {**found, **nbval_comments(cell.source)}


def parse_test_marker(cell: Cell) -> TestMarker:
    """Parse the `# TEST` line and tags of a test cell; `MarkerError` if malformed."""
    match = _TEST_LINE.match(first_line(cell.source))
    if match is None:
        raise MarkerError(f"{cell.label} is not a test cell")
    title, marks = _split_marks(match["rest"])
    seen = {m.name for m in marks}
    for mark in (*tag_marks(cell), *directive_marks(cell.source)):
        if mark.name not in seen:
            marks += (mark,)
            seen.add(mark.name)
    for mark in marks:
        _check_mark_arguments(mark)
    return TestMarker(title, marks)


def _check_mark_arguments(mark: Mark) -> None:
    """Marks ntdd acts on take the arguments it can use."""
    if mark.name != "timeout":
        return
    seconds = _value(mark.args[0]) if len(mark.args) == 1 and not mark.kwargs else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        given = ", ".join([*mark.args, *(f"{k}={v}" for k, v in mark.kwargs)])
        raise MarkerError(f"@timeout takes a number of seconds > 0, got @timeout({given})")


def _value(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except ValueError:
        return None


def tag_marks(cell: Cell) -> tuple[Mark, ...]:
    """The marks a test cell's `ntdd-<word>` tags give it."""
    return tuple(
        Mark(tag[len(TAG_PREFIX) :])
        for tag in cell.tags
        if tag.startswith(TAG_PREFIX) and tag[len(TAG_PREFIX) :].isidentifier()
    )


def _split_marks(rest: str) -> tuple[str, tuple[Mark, ...]]:
    first = _MARK_START.search(rest)
    if first is None:
        return rest.strip(), ()
    title, text = rest[: first.start()].strip(), rest[first.start() :]
    marks: list[Mark] = []
    pos = 0
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        match = _MARK_START.match(text, pos)
        if match is None:
            raise MarkerError(f"expected '@mark' at {text[pos:]!r}")
        mark, pos = _parse_mark(text, match["word"], match.end())
        marks.append(mark)
    return title, tuple(marks)


def _parse_mark(text: str, word: str, pos: int) -> tuple[Mark, int]:
    """Parse `@word` and its optional `(literal args)` starting at *pos*."""
    if not text.startswith("(", pos):
        return Mark(word), pos
    for end in (i for i, ch in enumerate(text) if ch == ")" and i > pos):
        try:
            call = ast.parse(f"_{text[pos : end + 1]}", mode="eval").body
        except SyntaxError:
            continue
        assert isinstance(call, ast.Call)
        return mark_from_call(word, call), end + 1
    raise MarkerError(f"unbalanced arguments in @{word}{text[pos:]}")


def mark_from_call(word: str, call: ast.Call) -> Mark:
    """A mark from its call's arguments: literals, or built-in exceptions (`raises=`).

    Arguments are kept as source text, written the one way `ast.unparse`
    writes them, so that a mark reads back as it was written and hashes.
    """
    if any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        raise MarkerError(f"@{word} takes literal arguments only")
    args = tuple(_argument(word, a) for a in call.args)
    kwargs = tuple((k.arg, _argument(word, k.value)) for k in call.keywords if k.arg)
    if word in ("skip", "xfail") and len(args) == 1 and _is_string(call.args[0]):
        # A lone string is the reason: `@xfail("issue 12")`.
        return Mark(word, (), (("reason", args[0]), *kwargs))
    return Mark(word, args, kwargs)


def _argument(word: str, node: ast.expr) -> str:
    if not _literal_or_exceptions(node):
        raise MarkerError(
            f"@{word} takes literals and built-in exception names only, got {ast.unparse(node)!r}"
        )
    return ast.unparse(node)


def _literal_or_exceptions(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        found = getattr(builtins, node.id, None)
        return isinstance(found, type) and issubclass(found, BaseException)
    if isinstance(node, ast.Tuple) and any(isinstance(e, ast.Name) for e in node.elts):
        return all(_literal_or_exceptions(e) for e in node.elts)
    try:
        ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def format_marks(marks: Iterable[Mark]) -> str:
    """Marks as the `# TEST` line writes them: `@slow @xfail(reason='why')`."""
    out = []
    for m in marks:
        args = [*m.args, *(f"{k}={v}" for k, v in m.kwargs)]
        out.append(f"@{m.name}" + (f"({', '.join(args)})" if args else ""))
    return " ".join(out)


def format_test_line(title: str, marks: Iterable[Mark]) -> str:
    """The `# TEST` line for *title* and *marks*: the inverse of `parse_test_marker`."""
    written = format_marks(marks)
    return " ".join(part for part in ("# TEST" + (f": {title}" if title else ""), written) if part)


def with_mark(source: str, name: str) -> str:
    """*source*, a test cell's, with `@name` at the end of its `# TEST` line; every other
    byte as it was (the line's title, its marks and its spelling, the other lines, their
    line breaks). `MarkerError` where the source is no test cell's, or its line does not
    parse."""
    lines = _lines(source)
    at = test_line_index(lines)
    match = _TEST_LINE.match(lines[at].strip()) if at is not None else None
    if at is None or match is None:
        raise MarkerError("not a test cell: it has no `# TEST` line")
    title, marks = _split_marks(match["rest"])
    breaks = list(_LINE_BREAK.finditer(source))
    start = breaks[at - 1].end() if at else 0
    end = breaks[at].start() if at < len(breaks) else len(source)
    line = source[start:end]
    added = line.rstrip() + f" @{name}"
    again = _TEST_LINE.match(added.strip())
    if again is None or _split_marks(again["rest"]) != (title, (*marks, Mark(name))):
        added = line[: len(line) - len(line.lstrip())] + format_test_line(
            title, (*marks, Mark(name))
        )
    return source[:start] + added + source[end:]
