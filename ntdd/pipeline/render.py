"""Plan -> module source, through the Jinja templates in `templates/`.

The rendered source is the product: `ntdd export` writes it and
`pytest --ntdd` imports it. Each rendering is compiled before it is returned,
and each string literal is checked to read back as the exact cell source.
"""

from __future__ import annotations

import ast
import functools
import re
import warnings
from pathlib import Path
from typing import Any

import jinja2

from ntdd._version import __version__
from ntdd.cells import cell_code
from ntdd.errors import TemplateError
from ntdd.format import module as fmt
from ntdd.notebook import markers
from ntdd.notebook.files import relative_notebook_path
from ntdd.pipeline.templates import MODULE_TEMPLATE, module_templates, template_dir
from ntdd.values import ParametersCell, Plan, TestCell, TestKind


def render_module(
    plan: Plan,
    module_dir: Path | None = None,
    template: Path | None = None,
    version: str | None = None,
    in_memory: bool = False,
) -> str:
    """Render the test module for *plan*, as if written into *module_dir*.

    *module_dir* only decides how the header and the runtime find the
    notebook (a path relative to the module); it defaults to the notebook's
    own folder, which is where `pytest --ntdd` places its in-memory module.
    One pass: the plan has made sure each cell compiles in its place. A module
    for a file gets the hashes `sync` and `--check` read, and is compiled
    once to prove the template; an *in_memory* module, which pytest compiles
    right away, gets neither.
    """

    folder = module_dir if module_dir is not None else plan.notebook.path.parent
    name = template.name if template else MODULE_TEMPLATE
    search = (str(template.parent),) if template else ()
    context = _context(plan, folder, version or __version__, template)
    try:
        text = _environment(search).get_template(name).render(context)
    except jinja2.TemplateError as e:
        raise TemplateError(f"template {name!r} failed to render: {e}") from e
    text = text.rstrip("\n") + "\n"
    text = fmt.finish(text) if in_memory else fmt.stamp_hashes(text)
    _check_rendered(text, name, plan, compiled=in_memory)
    return text


def pystr(value: str | None) -> str:
    """A Python literal that reads back as exactly *value*, as readable as possible."""
    if value is None:
        return "None"
    for candidate in _literal_candidates(value):
        try:
            if _reads_back(candidate, value):
                candidate.encode("utf-8")
                return candidate
        except (SyntaxError, ValueError, UnicodeEncodeError):
            continue
    return ascii(value)


def _reads_back(candidate: str, value: str) -> bool:
    """Whether *candidate* reads back as *value*, without a warning: a cell's raw-string
    regex (`r'(\\d+)'`) in a plain literal would be an invalid escape sequence, which
    Python warns about as the module compiles, where a kernel says nothing."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        same = ast.literal_eval(candidate) == value
    return same and not said


def _literal_candidates(value: str) -> list[str]:
    if "\n" not in value:
        return [repr(value)]
    escaped = value.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if escaped.endswith('"'):
        escaped = escaped[:-1] + '\\"'
    if _MARKER_LIKE.search(value):  # no line of a literal may read as a region marker
        return ['"""\\\n' + _MARKER_LIKE.sub(r"\\x23", escaped) + '"""', repr(value)]
    return [f'"""\\\n{value}"""', f"'''\\\n{value}'''", f'"""\\\n{escaped}"""', repr(value)]


_MARKER_LIKE = re.compile(rf"^(?={re.escape(fmt.MARKER_START)})#", re.M)


@functools.cache
def _environment(search: tuple[str, ...]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*search, str(template_dir())]),
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["pystr"] = pystr
    env.filters["docstring"] = docstring_text
    return env


def docstring_text(value: str) -> str:
    """Text that cannot end or break the docstring it is written into."""
    escaped = value.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in escaped)


def _context(plan: Plan, module_dir: Path, version: str, template: Path | None) -> dict[str, Any]:
    nb = plan.notebook.path
    relpath = relative_notebook_path(nb, module_dir)
    fingerprint = fmt.render_fingerprint(module_templates(template))
    header = fmt.Header(relpath, version, plan.content_hash, render=fingerprint)
    return {
        "header": fmt.header_text(header),
        "notebook_name": nb.name,
        "notebook_relpath": relpath,
        "uses_device": plan.uses_device,
        "cells": _cells(plan),
        "end": _end_view(plan),
    }


def _end_view(plan: Plan) -> dict[str, Any] | None:
    """What the module's last test needs: the cells below the notebook's tests, run."""
    end = plan.end
    if end is None:
        return None
    marks = [fmt.mark_expression(m) for m in end.marks]
    return {
        "marker": fmt.end_marker(end.after),
        "decorators": marks + ([fmt.USES_DEVICE] if plan.uses_device else []),
        "name": end.name,
        "cells": _cell_list(end.cells),
        "alone": not plan.tests,  # a notebook without tests, run as one (--ntdd-run-untested)
    }


def _cell_list(indices: tuple[int, ...]) -> str:
    """`cell 7`, `cells 7 and 9`, `cells 7, 8 and 9`: cells named in a docstring."""
    words = [str(n) for n in indices]
    if len(words) == 1:
        return f"cell {words[0]}"
    return f"cells {', '.join(words[:-1])} and {words[-1]}"


def _cells(plan: Plan) -> list[dict[str, Any]]:
    """Every code cell's region, in notebook order: the module reads as the notebook."""
    cells: list[dict[str, Any]] = []
    for s in plan.setup:
        options = ", assigns_device=True" if s.assigns_device else ""
        options += ", expects_exception=True" if s.expects_exception else ""
        options += ", eval_false=True" if s.eval_false else ""
        cells.append(
            {
                "kind": "setup",
                "index": s.cell.index,
                "id": s.cell.id,
                "marker": fmt.marker("setup", s.cell.index, s.cell.id),
                "code": s.code,
                "options": options,
            }
        )
    for k in plan.skipped:
        cells.append(
            {
                "kind": "skipped",
                "index": k.cell.index,
                "marker": fmt.marker("skipped", k.cell.index, k.cell.id),
                "reason": k.reason,
            }
        )
    cells += [_test_view(t) for t in plan.tests]
    if plan.parameters is not None:
        cells.append(_parameters_view(plan.parameters))
    return sorted(cells, key=lambda r: (int(r["index"]), int(r.get("order", 0))))


def _parameters_view(parameters: ParametersCell) -> dict[str, Any]:
    """Test-only parameters, right after the cell tagged `parameters` (or before the first)."""
    return {
        "kind": "parameters",
        "index": parameters.index,
        "order": 1 if parameters.after else -1,
        "marker": fmt.parameters_marker(parameters.index, parameters.after),
        "call": fmt.parameters_call(parameters.index, parameters.after, parameters.values),
    }


def _comment(line: str) -> str:
    """A cell's line as a comment that cannot break the module (no NUL, no surrogates)."""
    return "".join(ch if ch.isprintable() or ch == "\t" else ascii(ch)[1:-1] for ch in line)


def _test_view(test: TestCell) -> dict[str, Any]:
    """What `_test.py.j2` needs to write one test cell."""
    code = test.code.rstrip()
    view: dict[str, Any] = {
        "kind": "test",
        "test_kind": test.kind.value,
        "index": test.cell.index,
        "id": test.cell.id,
        "name": test.names[0],
        "marker": fmt.marker("test", test.cell.index, test.cell.id),
        "code": code,
        "problem": test.problem,
        "first_line": "    " + _comment(markers.first_line(test.cell.source)),
    }
    marks = [fmt.mark_expression(m) for m in test.marks]
    if test.kind is TestKind.FUNCTIONS:
        users = [n for n in test.names if n in test.uses_device and n not in test.device_args]
        view["tail"] = fmt.marks_tail(test.names, marks, users)
        return view
    view["decorators"] = marks + ([fmt.USES_DEVICE] if test.uses_device else [])
    view["async"] = test.is_async and test.kind is TestKind.STATEMENTS
    if test.kind is TestKind.CELL:
        view["note"] = fmt.cell_code_note(code, test.problem)
        return view
    assigned = test.assigned if test.kind is TestKind.STATEMENTS else ()
    empty = test.kind is TestKind.STATEMENTS and test.empty
    view["body"] = fmt.wrapped_body(code, assigned, test.global_after, empty)
    return view


def _check_rendered(text: str, template: str, plan: Plan, compiled: bool) -> None:
    """The rendering must carry the header that `sync` relies on, and be Python
    (unless it is about to be *compiled* anyway)."""
    if not fmt.is_generated(text):
        raise TemplateError(
            f"template {template!r} must start with the ntdd header "
            '({% include "_header.py.j2" %})'
        )
    try:
        if not compiled:
            with cell_code.quiet_syntax_warnings():
                compile(text, f"<ntdd module for {plan.notebook.path}>", "exec", dont_inherit=True)
    except SyntaxError as e:
        raise TemplateError(
            f"template {template!r} rendered invalid Python for {plan.notebook.path} "
            f"at line {e.lineno}: {e.msg}"
        ) from e
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise TemplateError(
            f"{plan.notebook.path}: a test cell holds a character that cannot be written "
            f"as UTF-8 ({e.object[e.start : e.end]!r})"
        ) from e
