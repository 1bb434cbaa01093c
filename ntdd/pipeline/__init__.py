"""Notebook -> plan -> rendered module: the pipeline every front end calls.

`plan` decides once which cells are setup and which are tests, with their
names and marks (and `end`, whether the cells below the tests need a test of
their own); `render` turns a plan into module text through the Jinja
templates in one pass. `build_module` composes read, plan and render; export,
drift, sync, the pytest collector, the nbconvert exporter and the kernel
extension all go through it.

May import: the shared modules, ntdd.cells, ntdd.notebook, ntdd.format. Never pytest or torch.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from ntdd.parameters import Values
from ntdd.values import Notebook, Plan


class BuiltModule(NamedTuple):
    """A notebook's plan, and the module it renders to (None: no tests, not rendered)."""

    plan: Plan
    text: str | None


def build_module(
    notebook: Path | Notebook,
    parameters: Values = (),
    module_dir: Path | None = None,
    template: Path | None = None,
    in_memory: bool = False,
    render_empty: bool = True,
    run_untested: bool = False,
) -> BuiltModule:
    """Read (unless given a `Notebook` read some other way), plan and render *notebook*.

    *module_dir*, *template* and *in_memory* are `render_module`'s. A plan
    without tests is rendered only when *render_empty* asks for it: export
    writes no module for such a notebook, while a collected one still needs
    its (empty) module. *run_untested* is `make_plan`'s: a notebook without
    tests gets the one test that runs it to its end.
    """
    # Imported here: the pytest side imports this package for its templates' folder
    # (`pipeline.templates`), and a run whose notebooks are all cached plans none.
    from ntdd.notebook.read import read_notebook
    from ntdd.pipeline.plan import make_plan

    read = notebook if isinstance(notebook, Notebook) else read_notebook(notebook)
    plan = make_plan(read, parameters, run_untested)
    if not plan.tests and plan.end is None and not render_empty:
        return BuiltModule(plan, None)
    from ntdd.pipeline.render import render_module  # Jinja loads only to render

    return BuiltModule(plan, render_module(plan, module_dir, template, in_memory=in_memory))
