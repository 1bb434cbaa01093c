"""Property tests: any cell source and any marker name give a valid, faithful module."""

from __future__ import annotations

import ast
import keyword
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ntdd.cells import wrapping
from ntdd.cells.cell_code import normalize_newlines
from ntdd.format.module import parse_regions
from ntdd.format.names import NameRegistry, identifier_from_title
from ntdd.format.paths import module_path
from ntdd.pipeline.plan import make_plan
from ntdd.pipeline.render import render_module
from ntdd.values import Cell, Notebook, TestCell, TestKind

# Examples per property: NTDD_EXAMPLES (150 by default); for any Python source drawn from
# the grammar, each of which costs far more, NTDD_GRAMMAR_EXAMPLES (40 by default).
SETTINGS = settings(
    max_examples=int(os.environ.get("NTDD_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# The grammar's draws are large and filtered by design, and the health checks that say
# so judge the strategy, not ntdd: on a loaded machine they fail a run at random.
GRAMMAR_SETTINGS = settings(
    SETTINGS,
    max_examples=int(os.environ.get("NTDD_GRAMMAR_EXAMPLES", "40")),
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)

# -- cell sources with everything that could break a template or a quoting ----

NASTY = ["{{", "}}", "{%", "%}", "{#", "#}", "\\", "'", '"', "'''", '"""', "\t", "ü", "→", "${x}"]
text = st.lists(st.sampled_from([*NASTY, "a", " ", "\n", "0", "é"]), max_size=8).map("".join)
identifiers = st.from_regex(r"[a-zA-Zäöüßéñ_][a-zA-Z0-9äöüßéñ_]{0,6}", fullmatch=True).filter(
    lambda s: s.isidentifier() and not keyword.iskeyword(s) and not s.startswith("__")
)


@st.composite
def string_literal(draw: st.DrawFn) -> str:
    value = draw(text)
    form = draw(st.sampled_from(["repr", "raw", "triple", "fstring", "bytes"]))
    if form == "raw":
        literal = f"r{value!r}"
    elif form == "triple":
        literal = f"'''{value}'''"
    elif form == "fstring":
        literal = "f" + repr(value.replace("{", "{{").replace("}", "}}")) + " + f'{1 + 1}'"
    elif form == "bytes":
        literal = repr(value.encode("utf-8"))
    else:
        literal = repr(value)
    return literal


@st.composite
def statement(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["assign", "comment", "block", "dunder", "continued", "assert"]))
    name = draw(identifiers)
    if kind == "assign":
        return f"{name} = {draw(string_literal())}"
    if kind == "comment":
        return f"# {draw(text).replace(chr(10), ' ')}"
    if kind == "block":
        indent = draw(st.sampled_from(["\t", "    ", "  "]))
        return f"if {name!s} := True:\n{indent}{name}_ = {draw(string_literal())}"
    if kind == "dunder":
        return "assert isinstance(__name__, str)\nwhere = __file__"
    if kind == "continued":
        return f"{name} = 1 + \\\n    2"
    return f"assert {draw(string_literal())} is not None, {draw(string_literal())}"


@st.composite
def cell_source(draw: st.DrawFn) -> str:
    lines = draw(st.lists(statement(), min_size=1, max_size=6))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    source = newline.join("\n".join(lines).split("\n"))
    try:
        ast.parse(source)
    except SyntaxError:
        assume(False)
    return source


def notebook(*sources: str) -> Notebook:
    cells = tuple(Cell(i, "code", s, f"c{i}") for i, s in enumerate(sources))
    return Notebook(Path("/nb/hostile.ipynb"), cells)


def function_named(module: ast.Module, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    return next(
        n
        for n in module.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name
    )


def cell_body(text: str, test: TestCell) -> list[ast.stmt]:
    """The statements a wrapped cell became, less the `global` line ntdd adds."""
    body = function_named(ast.parse(text), test.names[0]).body
    if test.assigned:
        added = body[1 if wrapping.docstring_end(ast.parse(test.code)) else 0]
        assert isinstance(added, ast.Global) and added.names == list(test.assigned)
        body = [statement for statement in body if statement is not added]
    return body


@SETTINGS
@given(cell_source())
@pytest.mark.slow
def test_a_wrapped_cell_keeps_its_exact_ast(source: str) -> None:
    cell = "# TEST: hostile\n" + source
    plan = make_plan(notebook("x = 1", cell))
    text = render_module(plan)
    if plan.tests[0].kind is TestKind.CELL:
        call = function_named(ast.parse(text), plan.tests[0].names[0]).body[0]
        assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
        assert ast.literal_eval(call.value.args[2]) == normalize_newlines(cell)
        return
    assert same_body(cell_body(text, plan.tests[0]), cell)


def same_body(body: list[ast.stmt], cell: str) -> bool:
    """The function body is the cell; a cell of only comments gets a `pass`."""
    expected = ast.parse(cell).body or [ast.Pass()]
    return ast.dump(ast.Module(body=body, type_ignores=[])) == ast.dump(
        ast.Module(body=expected, type_ignores=[])
    )


@SETTINGS
@given(cell_source())
@pytest.mark.slow
def test_a_cell_of_functions_keeps_its_exact_ast(source: str) -> None:
    cell = "# TEST\n" + source + "\n\ndef test_it():\n    assert True"
    text = render_module(make_plan(notebook(cell)))
    region = next(r for r in parse_regions(text) if r.kind == "test")
    assert ast.dump(ast.parse(region.text)) == ast.dump(ast.parse(normalize_newlines(cell)))


def python_sources() -> st.SearchStrategy[str]:
    """Any Python source, from the grammar; built when a test first draws one, not when
    every worker collects this module (a second and a half)."""
    import hypothesmith

    return hypothesmith.from_grammar()


@pytest.mark.slow
@GRAMMAR_SETTINGS
@given(st.deferred(python_sources))
def test_any_valid_python_cell_gives_a_module_that_compiles(source: str) -> None:
    assume(source.strip())
    plan = make_plan(notebook("# TEST: any\n" + source, "# TEST: other\nassert True"))
    text = render_module(plan)
    module = ast.parse(text)
    first, second = plan.tests
    assert second.problem == ""  # one cell's trouble never spills over
    assert module.body
    if first.kind is not TestKind.STATEMENTS:
        return  # a cell that cannot be a function body runs as a cell, or fails alone
    assert same_body(cell_body(text, first), "# TEST: any\n" + source)


# -- names ------------------------------------------------------------------------

titles = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "..", "../..", "a/b", "a\\b", "class", "None", "3d", "🔥", "test", " "]),
    st.sampled_from(["\x00", "\x85", "\u2028", "\x0c", "\ud800", "\t@slow", "@xfail(", "#}"]),
)


@pytest.mark.slow
@SETTINGS
@given(titles)
def test_any_title_gives_a_valid_identifier_or_none(title: str) -> None:
    name = identifier_from_title(title)
    assert name == "" or (name.isidentifier() and not keyword.iskeyword(name))
    assert name == "" or name.startswith("test")
    assert "/" not in name and "\\" not in name and "." not in name


@pytest.mark.slow
@SETTINGS
@given(st.lists(titles, min_size=1, max_size=8))
def test_any_titles_give_unique_collectable_tests(titles_: list[str]) -> None:
    sources = [f"# TEST: {t}\nassert True" for t in titles_ if "\n" not in t and "\r" not in t]
    assume(sources)
    plan = make_plan(notebook(*sources))
    module = ast.parse(render_module(plan))
    defined = [n.name for n in module.body if isinstance(n, ast.FunctionDef)]
    defined = [name for name in defined if name.startswith("test")]
    assert len(defined) == len(set(defined)) == len(sources)


@SETTINGS
@given(st.text(min_size=1, max_size=20).filter(lambda s: "/" not in s and "\x00" not in s))
def test_no_notebook_name_writes_outside_the_output_folder(stem: str) -> None:
    out = Path("/out/dir")
    target = module_path(Path("/nbs") / f"{stem}.ipynb", out)
    assert target.parent == out
    assert target.name.endswith(".py") and target.stem.isidentifier()


def test_the_registry_never_hands_out_a_name_twice() -> None:
    registry = NameRegistry()
    names = [registry.claim("test_x") for _ in range(50)]
    assert len(set(names)) == 50


@pytest.mark.parametrize("bad", ["from os import *", "from __future__ import annotations"])
def test_module_level_only_code_fails_alone(bad: str) -> None:
    cells = [f"# TEST: a\n{bad}", f"# TEST\n{bad}\ndef test_b():\n    pass", "# TEST: c\nassert 1"]
    plan = make_plan(notebook(*cells))
    module = ast.parse(render_module(plan))
    future = bad.startswith("from __future__")  # `import *` is fine at module level
    # A cell below a future import runs as notebook code, compiled with its flags.
    assert [t.problem != "" for t in plan.tests] == [True, future, future]
    assert function_named(module, "test_a")


@pytest.mark.parametrize("odd", ["\ud800", "\x00", "\x85", "\u2028"])
def test_characters_python_cannot_read_fail_alone(odd: str) -> None:
    """A JSON notebook can hold them; the module still compiles and names the cell."""
    plan = make_plan(
        notebook(f"s = '{odd}'", f"# TEST: odd\nassert '{odd}'", "# TEST: fine\nassert 1")
    )
    module = ast.parse(render_module(plan))
    assert function_named(module, "test_fine")
    readable = odd in ("\x85", "\u2028")  # Python reads these inside a string literal
    assert (plan.tests[0].problem == "") is readable
