"""Rendering: golden modules for the samples, and cell source carried over exactly."""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import nbformat
import pytest
from conftest import ROOT, SAMPLES, code, make_notebook, write_notebook

from ntdd.commands.cli import main
from ntdd.errors import TemplateError
from ntdd.format.module import FORMAT, parse_header, parse_regions, region_sha, without_version
from ntdd.notebook.read import read_notebook
from ntdd.pipeline.plan import make_plan
from ntdd.pipeline.render import pystr, render_module
from ntdd.values import Notebook


def render(tmp_path: Path, cells: list[object]) -> str:
    path = write_notebook(tmp_path / "nb.ipynb", cells)
    return render_module(make_plan(read_notebook(path)), version="TEST")


def test_the_committed_sample_modules_are_what_export_writes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """They are the golden files: review their diff after a template change, and
    regenerate them with `ntdd export sample_notebooks`."""
    assert main(["export", "--check", str(SAMPLES)]) == 0, capsys.readouterr().out


HOSTILE_CELLS = [
    "s = '''{{ not jinja }} {% neither %} {# nor #}'''\nassert '{{' in s",
    's = "\\\\n is a backslash and an n"\nassert len(s) == 21',
    "s = '''line one\nline two'''\nassert s.count(chr(10)) == 1",
    's = """\n    indented inside a string\n"""\nassert s.startswith("\\n    indented")',
    "s = 'it''s' + \"quote\" + r'\\raw' + f'{1 + 1}'\nassert s.endswith('2')",
    "x = 1 + \\\n    2\nassert x == 3",
    "if True:\n\tx = 1\nassert x == 1",
    "s = '''ends with a quote\"'''\nassert s[-1] == '\"'",
]


@pytest.mark.parametrize("body", HOSTILE_CELLS)
def test_hostile_test_cells_are_carried_over_exactly(tmp_path: Path, body: str) -> None:
    source = "# TEST: hostile\n" + body
    text = render(tmp_path, ["x = 0", source])
    module = ast.parse(text)
    test = next(
        n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "test_hostile"
    )
    declared, *body = test.body  # the cell's names, declared global so they land in the notebook
    assert isinstance(declared, ast.Global)
    assert ast.dump(ast.Module(body=body, type_ignores=[])) == ast.dump(ast.parse(source))


@pytest.mark.parametrize("body", HOSTILE_CELLS)
def test_hostile_setup_cells_are_carried_over_exactly(tmp_path: Path, body: str) -> None:
    text = render(tmp_path, [body, "# TEST\nassert True"])
    call = next(
        n.value
        for n in ast.parse(text).body
        if isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and getattr(n.value.func, "attr", "") == "setup"
    )
    assert ast.literal_eval(call.args[2]) == body


@pytest.mark.parametrize(
    "value",
    ["", "x", "a\nb", 'ends with "', "has '''", 'has """', "back\\slash\n", "\x00nul\n", "\ud800"],
)
def test_pystr_reads_back_exactly(value: str) -> None:
    assert ast.literal_eval(pystr(value)) == value


def test_multi_line_setup_is_written_readably(tmp_path: Path) -> None:
    text = render(tmp_path, ["import math\nradius = 2", "# TEST\nassert radius"])
    assert '"""\\\nimport math\nradius = 2"""' in text


def test_the_header_records_source_version_and_hash(tmp_path: Path) -> None:
    text = render(tmp_path, ["x = 1", "# TEST\nassert x"])
    header = parse_header(text)
    assert header is not None
    assert (header.notebook, header.version) == ("nb.ipynb", "TEST")
    assert header.content_hash.startswith("sha256:")
    assert "generated — edit the notebook or use `ntdd sync`" in text.splitlines()[0]


def test_outputs_and_execution_counts_do_not_change_the_module(tmp_path: Path) -> None:
    nb = make_notebook(["x = 1", "# TEST\nassert x"])
    first = render_module(make_plan(_read(tmp_path, nb)))
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="hi")]
    nb.cells[0].execution_count = 7
    assert render_module(make_plan(_read(tmp_path, nb))) == first


def _read(tmp_path: Path, nb: object) -> Notebook:
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    return read_notebook(path)


def test_each_test_region_records_the_hash_of_its_text(tmp_path: Path) -> None:
    text = render(tmp_path, ["x = 1", "# TEST: a\nassert x", "# TEST\ndef test_b():\n    assert x"])
    tests = [r for r in parse_regions(text) if r.kind == "test"]
    assert [r.index for r in tests] == [2, 3]
    assert all(r.sha == region_sha(r.text) for r in tests)


def test_a_cell_of_only_comments_is_an_empty_test(tmp_path: Path) -> None:
    text = render(tmp_path, ["# TEST: to do\n# nothing yet"])
    assert "pass  # ntdd: the cell has no statements" in text


def test_a_template_of_ones_own_is_used(tmp_path: Path) -> None:
    template = tmp_path / "mine.py.j2"
    template.write_text(
        '{% include "_header.py.j2" %}\n# my own layout, {{ cells | length }} cells\n'
        "import pytest\nfrom ntdd.runtime.notebook_runtime import NotebookRuntime\n"
        "__ntdd__ = NotebookRuntime(globals(), notebook={{ notebook_relpath | pystr }})\n"
        '{% for test in cells if test.kind == "test" %}\n\n{% include "_test.py.j2" %}\n'
        "{% endfor %}\n"
    )
    nb = write_notebook(tmp_path / "nb.ipynb", ["# TEST\nassert True"])
    text = render_module(make_plan(read_notebook(nb)), template=template)
    assert "# my own layout, 1 cells" in text


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("import os\n", "must start with the ntdd header"),
        ('{% include "_header.py.j2" %}\ndef broken(:\n', "rendered invalid Python"),
        ('{% include "_header.py.j2" %}\n{{ no_such_variable }}\n', "failed to render"),
    ],
)
def test_a_broken_template_is_a_clear_error(tmp_path: Path, template: str, message: str) -> None:
    path = tmp_path / "bad.py.j2"
    path.write_text(template)
    nb = write_notebook(tmp_path / "nb.ipynb", [code("# TEST\nassert True")])
    with pytest.raises(TemplateError, match=message):
        render_module(make_plan(read_notebook(nb)), template=path)


def test_a_change_to_the_rendering_bumps_the_format() -> None:
    """Users' committed modules count as current while the format number and templates
    are the same; so a change to what ntdd renders must bump `module_format.FORMAT`.

    tests/format_probe.ipynb holds every construct the format renders, and is never
    edited, so only a change to the rendering changes its module. After a deliberate
    change: bump FORMAT, re-export the samples, and record the new digest in
    tests/rendering.json.
    """
    recorded = json.loads((ROOT / "tests" / "rendering.json").read_text())
    probe = ROOT / "tests" / "format_probe.ipynb"
    text = render_module(make_plan(read_notebook(probe)), version="0")
    lines = without_version(text).split("\n")  # the templates have a fingerprint of their own:
    kept = [line for line in lines if not line.startswith(("# ntdd-render:", "# ntdd-frame:"))]
    now = {"format": FORMAT, "probe": hashlib.sha256("\n".join(kept).encode()).hexdigest()}
    if now["format"] == recorded["format"]:
        assert now["probe"] == recorded["probe"], "the rendering changed: bump FORMAT"
    else:
        pytest.fail(f"FORMAT is {FORMAT}: record it in tests/rendering.json: {json.dumps(now)}")


def test_planning_parses_each_cell_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan decides everything about a cell from one parse of its source (a notebook
    of many long cells is planned at each collection)."""
    cells = [
        "import math\nx = 1",
        "# TEST\ndef test_a():\n    assert x == 1\n\ndef helper():\n    return math.pi",
        "# TEST: b\nassert x == 1",
    ]
    notebook = read_notebook(write_notebook(tmp_path / "nb.ipynb", cells))
    parsed: list[str] = []
    real_parse, real_compile = ast.parse, compile

    def parse(source: object, *args: object, **kwargs: object) -> object:
        parsed.append(source if isinstance(source, str) else "")
        return real_parse(source, *args, **kwargs)  # type: ignore[call-overload]

    def compile_(source: object, *args: object, **kwargs: object) -> object:
        flags = args[2] if len(args) > 2 else kwargs.get("flags", 0)
        if not int(flags) & ast.PyCF_ONLY_AST:  # type: ignore[call-overload]  # ast.parse's own
            parsed.append(source if isinstance(source, str) else "")
        return real_compile(source, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(ast, "parse", parse)
    monkeypatch.setattr("builtins.compile", compile_)
    make_plan(notebook)
    assert [parsed.count(source) for source in cells] == [1, 1, 1]
