"""The figures a cell made, shown at its end as a kernel's inline backend shows them.

ipykernel runs matplotlib with `matplotlib-inline`: after each cell its
`flush_figures` displays every open pyplot figure (`image/png` by default,
as `InlineBackend.figure_formats` says) and closes it. While a report
records a cell, the figures go to the cell's outputs through the notebook's
shell with the formatters the inline backend registers on a kernel's shell;
`process_wide.close_figures` then closes them, as it does without a report.
Nothing is imported for a cell when pyplot is not.
"""

from __future__ import annotations

import sys
from typing import Any

from ntdd.runtime import cell_outputs
from ntdd.runtime.process_wide import INLINE, backend


def show_open(namespace: dict[str, Any]) -> None:
    """Each open figure as a `display_data` of the cell being recorded (none open, or
    another backend chosen: nothing)."""
    outputs = cell_outputs.current()
    pyplot = sys.modules.get("matplotlib.pyplot")
    if outputs is None or pyplot is None or backend() not in (INLINE, "inline"):
        return
    figures = [pyplot.figure(number) for number in pyplot.get_fignums()]
    if not figures:
        return
    factory = namespace.get("get_ipython")
    if factory is None:
        return
    shell = factory()
    _register_formats(shell)
    from matplotlib_inline.backend_inline import _fetch_figure_metadata

    for figure in figures:
        data, metadata = shell.display_like_a_kernel(figure)
        extra = _fetch_figure_metadata(figure)  # type: ignore[no-untyped-call]
        outputs.display(data, {**metadata, **(extra or {})})


def _register_formats(shell: Any) -> None:
    """The figure formatters `configure_inline_support` puts on a kernel's shell."""
    if getattr(shell, "_ntdd_figure_formats", None) is not None:
        return
    from IPython.core.pylabtools import select_figure_formats
    from matplotlib_inline.config import InlineBackend

    config = InlineBackend.instance()
    select_figure_formats(shell, config.figure_formats, **config.print_figure_kwargs)
    shell._ntdd_figure_formats = set(config.figure_formats)
