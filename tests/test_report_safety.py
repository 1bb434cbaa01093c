"""A notebook in a pull request writes into `--ntdd-report`'s page: whatever kind of output
it shows, it cannot redirect the reader, restyle the verdicts, take the place of the
page's header or cells, or leave CSS as text in the page."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jinja2
import pytest
from conftest import md
from report_page import chromium, needs_chromium, report_of
from test_report import Body
from test_report_edges import cell_html

TEMPLATE = Path(__file__).parent.parent / "templates" / "report" / "index.html.j2"
FORBIDDEN = {"meta", "style", "script", "link", "base", "form", "input", "iframe", "object"}


def hostile(target: str) -> str:
    """What a notebook could write to take the page over: a redirect, a style sheet, a
    script, and a heading wearing the page's id and classes."""
    return (
        '<meta http-equiv="refresh" content="0; url=elsewhere.html">'
        "<style>.ntdd-badge { background: #2e7d32 !important }</style>"
        "<script>document.title = 'taken'</script>"
        f'<h1 id="{target}" class="ntdd-totals ntdd-green">1 passed</h1>'
    )


def display_cell(mimetype: str, payload: Any, metadata: Any = None) -> str:
    return f"display({{{mimetype!r}: {payload!r}}}, raw=True, metadata={metadata!r})"


def mimetypes_nbconvert_shows() -> list[str]:
    """The MIME types nbconvert's HTML exporter picks an output's form from."""
    from nbconvert import HTMLExporter

    config = HTMLExporter(template_name="lab").default_config  # type: ignore[no-untyped-call]
    return list(config["NbConvertBase"]["display_data_priority"])


def payload(mimetype: str, target: str) -> Any:
    if mimetype.endswith("+json"):  # a widget's view: JSON, which nbconvert writes in a script
        return {"model_id": f"</script>{hostile(target)}", "version_major": 2}
    if mimetype in ("image/png", "image/jpeg"):  # base64, which nbconvert writes into src
        return f'R0lGOD">{hostile(target)}'
    return hostile(target)


class Page(HTMLParser):
    """Each element of the page's body: its tag, its attributes, and whether it is the
    page's own (in its header, or one of its cells' or headings' own elements)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.classes: list[str] = []
        self.styled: list[str] = []  # tags with a style attribute
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        self.ids += [found["id"]] if "id" in found else []
        self.classes += found.get("class", "").split()
        if "style" in found:
            self.styled.append(tag)


def test_every_kind_of_output_nbconvert_can_show_is_cleaned_or_escaped(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    kinds = mimetypes_nbconvert_shows()
    target = f"nb-1-cell-{len(kinds) + 2}"  # the failing test's cell
    cells = [display_cell(kind, payload(kind, target)) for kind in kinds]
    # An image's size, which nbconvert wrote into the tag unquoted.
    size = {"image/png": {"width": "1 style=position:fixed;inset:0 id=" + target}}
    cells.append(display_cell("image/png", "R0lGOD", size))
    notebook([*cells, "# TEST: fails\nassert False"])
    html = report_of(pytester, "nb.ipynb")
    tags = Body(html).tags
    assert not {tag for tag, _ in tags} & FORBIDDEN
    page = Page(html[html.index("<body") :])
    assert page.ids.count(target) == 1 and page.classes.count("ntdd-totals") == 1
    assert page.styled == []  # the page's cells wrote no style attribute
    assert all(attrs["src"].startswith("data:") for tag, attrs in tags if tag == "img")
    for n, kind in enumerate(kinds, 1):  # each form shows its text, escaped or cleaned
        if kind.startswith("text/"):
            assert "1 passed" in cell_html(html, f"nb-1-cell-{n}"), kind


def blocks(env: jinja2.Environment, name: str) -> tuple[set[str], str | None]:
    """The blocks a template defines, and the template it extends."""
    assert env.loader is not None
    tree = env.parse(env.loader.get_source(env, name)[0])
    found = {block.name for block in tree.find_all(jinja2.nodes.Block)}
    parent = tree.find(jinja2.nodes.Extends)
    return found, parent.template.value if parent is not None else None  # type: ignore[attr-defined]


def test_the_page_writes_each_kind_of_output_itself_none_as_nbconvert_does() -> None:
    """A kind of output nbconvert's lab template shows (each `data_*` block, the blocks
    its `data_priority` picks from) is shown by ntdd's template: a block nbconvert adds
    fails here until the page shows it safely."""
    from nbconvert import HTMLExporter

    env = HTMLExporter(template_name="lab").environment  # type: ignore[no-untyped-call]
    theirs: set[str] = set()
    name: str | None = "index.html.j2"
    while name is not None:
        found, name = blocks(env, name)
        theirs |= found
    shown = {b for b in theirs if b.startswith("data_")} - {"data_priority"}
    assert {"data_html", "data_mermaid", "data_widget_view", "data_png"} <= shown
    ours, _ = blocks(
        jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATE.parent)), TEMPLATE.name
    )
    assert shown - ours == set()


def test_an_outputs_and_a_markdown_cells_ids_and_classes_are_not_the_pages(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    heading = '<h1 id="nb-1-cell-4" class="ntdd-totals ntdd-green">1 passed</h1>'
    notebook(
        [
            md(f"{heading}\n\n## Section\n\nSee [the section](#Section)."),
            "x = 1",
            f"from IPython.display import HTML\nHTML({heading!r})",
            "# TEST: fails\nassert x == 2",
        ]
    )
    html = report_of(pytester, "nb.ipynb")
    page = Page(html[html.index("<body") :])
    assert page.ids.count("nb-1-cell-4") == 1  # the failing cell's, which the list links to
    assert '<div class="ntdd-cell ntdd-test" id="nb-1-cell-4"' in html
    assert '<a href="#nb-1-cell-4">nb.ipynb::test_fails</a>' in html
    assert page.classes.count("ntdd-totals") == 1 and page.classes.count("ntdd-green") == 0
    assert html.count('<h1 id="user-content-nb-1-cell-4">1 passed</h1>') == 2
    # A notebook's own links still reach its own headings.
    markdown = cell_html(html, "nb-1-cell-1")
    assert 'id="user-content-Section"' in markdown
    assert 'href="#user-content-Section"' in markdown


# pandas' DataFrame._repr_html_ for DataFrame({"a": [1, 2], "b": ["x", "y"]}).
DATAFRAME = """<div>
<style scoped>
    .dataframe tbody tr th:only-of-type {
        vertical-align: middle;
    }

    .dataframe tbody tr th {
        vertical-align: top;
    }

    .dataframe thead th {
        text-align: right;
    }
</style>
<table border="1" class="dataframe">
  <thead>
    <tr style="text-align: right;">
      <th></th>
      <th>a</th>
      <th>b</th>
    </tr>
  </thead>
  <tbody>
    <tr>
      <th>0</th>
      <td>1</td>
      <td>x</td>
    </tr>
    <tr>
      <th>1</th>
      <td>2</td>
      <td>y</td>
    </tr>
  </tbody>
</table>
</div>"""


def test_a_dataframe_shows_its_table_not_its_css(notebook: Any, pytester: pytest.Pytester) -> None:
    (pytester.path / "frame.html").write_text(DATAFRAME)
    notebook(
        [
            "from pathlib import Path\nfrom IPython.display import HTML\n"
            "HTML(Path('frame.html').read_text())",
            "# TEST\nassert True",
        ]
    )
    cell = cell_html(report_of(pytester, "nb.ipynb"), "nb-1-cell-1")
    assert '<table class="dataframe">' in cell
    assert "<th>a</th>" in cell and "<td>y</td>" in cell
    assert "vertical-align" not in cell and "style" not in cell


def policy_of(html: str) -> dict[str, list[str]]:
    found = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)
    assert found is not None
    directives = (d.split() for d in found.group(1).split(";") if d.strip())
    return {name: sources for name, *sources in directives}


class HeadStyles(HTMLParser):
    """The text of each `<style>` of the page's head, as a browser reads it."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.texts: list[str] = []
        self._in: str | None = None
        self.feed(html[: html.index("</head>")])

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._in = "" if tag == "style" else self._in

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self._in += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._in is not None:
            self.texts.append(self._in)
            self._in = None


def sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_policy_allows_the_pages_own_style_sheets_and_no_other(
    notebook: Any, pytester: pytest.Pytester
) -> None:
    notebook(["x = 1", "# TEST\nassert x"])
    html = report_of(pytester, "nb.ipynb")
    policy = policy_of(html)
    own = HeadStyles(html).texts
    assert len(own) >= 3  # JupyterLab's, the highlighting's, ntdd's
    assert sorted(policy["style-src"]) == sorted(sha256(text) for text in own)
    assert policy["default-src"] == ["'none'"]


# -- in a real browser ---------------------------------------------------------

MEASURE = """
const style = (selector, property) => getComputedStyle(document.querySelector(selector))[property];
document.body.setAttribute("data-measured", JSON.stringify({
  badge: style('.ntdd-badge[data-ntdd-outcome="failed"]', "backgroundColor"),
  totals: style(".ntdd-header .ntdd-totals", "color"),
  target: document.getElementById("nb-1-cell-4").className,
  frame: style(".dataframe tbody th", "verticalAlign"),
  css: document.body.innerText.includes("vertical-align"),
  boxed: (() => {
    const overlay = document.querySelector(".jp-Dialog").getBoundingClientRect();
    const output = document.querySelector(".jp-Dialog").closest(".jp-OutputArea-output");
    const box = output.getBoundingClientRect();
    return overlay.top >= box.top && overlay.bottom <= box.bottom;
  })(),
}));
"""
# A style sheet in the body, as if one had got past the cleaner: the policy applies it not.
SLIPPED = "<style>.ntdd-badge { background: #2e7d32 !important }</style>"


def measured(page: Path) -> Path:
    """A copy of *page* that measures itself: the page's policy, with only this script
    allowed, by its hash."""
    html = page.read_text(encoding="utf-8")
    html = html.replace("default-src 'none';", f"default-src 'none'; script-src {sha256(MEASURE)};")
    copy = page.with_name("measured.html")
    copy.write_text(html.replace("</body>", f"{SLIPPED}<script>{MEASURE}</script></body>"))
    return copy


@pytest.mark.slow
@needs_chromium
def test_in_chromium_no_output_redirects_restyles_or_takes_a_cells_place(
    notebook: Any, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    (pytester.path / "elsewhere.html").write_text("<p>taken elsewhere</p>")
    (pytester.path / "frame.html").write_text(DATAFRAME)
    notebook(
        [
            display_cell("text/vnd.mermaid", "graph TD; A-->B\n" + hostile("nb-1-cell-4")),
            f"from IPython.display import HTML\nHTML({hostile('nb-1-cell-4')!r})",
            "from pathlib import Path\nHTML(Path('frame.html').read_text())",
            "# TEST: fails\nassert False",
            # JupyterLab's dialog: a full-size overlay, over the cell's verdicts unless boxed.
            "HTML('<div class=\"jp-Dialog\"><h1>all green</h1></div>')",
        ]
    )
    report_of(pytester, "nb.ipynb")
    page = measured(pytester.path / "report.html")
    dom = chromium(page, tmp_path, "--dump-dom", "--virtual-time-budget=3000")
    assert "taken elsewhere" not in dom  # no refresh was followed
    found = re.search(r'data-measured="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    assert seen["badge"] == "rgb(198, 40, 40)"  # report.css's red, not the notebook's green
    assert seen["totals"] == "rgb(198, 40, 40)"
    assert seen["target"] == "ntdd-cell ntdd-test"
    # The DataFrame as Jupyter shows it: pandas' rules applied, none of its CSS as text.
    assert seen["frame"] == "middle" and seen["css"] is False
    assert seen["boxed"] is True  # an output paints within its own box
