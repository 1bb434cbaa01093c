"""The figures a cell made, shown at its end as a kernel's inline backend shows them.

ipykernel runs matplotlib with `matplotlib-inline`: after each cell its
`flush_figures` displays every open pyplot figure (`image/png` by default,
as `InlineBackend.figure_formats` says) and closes it. While a report
records a cell, the figures go to the cell's outputs through the notebook's
shell with the formatters the inline backend registers on a kernel's shell
(`set_up`, as `InlineBackend`'s settings say at the time: a figure shown
mid-cell by `plt.show()`, through IPython's `display`, gets them too);
`process_wide.close_figures` then closes them. Where nothing records the cell,
each is still drawn for its errors, not for its pixels (`unread_figures`): a
figure that cannot be drawn fails its cell in a kernel, with or without a
report. Nothing is imported for a cell when pyplot is not.

Each `image/png` of a figure carries what the figure shows in its metadata
(`figure_summary`), for the output check of a notebook ntdd wrote back.
"""

from __future__ import annotations

import copy
import sys
import warnings
from typing import Any

from ntdd.runtime import cell_outputs, figure_summary, unread_figures
from ntdd.runtime.process_wide import INLINE, backend


def show_open(namespace: dict[str, Any]) -> None:
    """Each open figure as a `display_data` of the cell being recorded; where nothing
    records the cell, drawn for its errors only (`unread_figures`), since `flush_figures`
    draws it in a kernel and what drawing raises is the cell's error there (none open,
    or another backend chosen: nothing)."""
    outputs = cell_outputs.current()
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or backend() not in (INLINE, "inline"):
        return
    figures = [pyplot.figure(number) for number in pyplot.get_fignums()]
    if not figures:
        return
    factory = namespace.get("get_ipython")
    if factory is None:
        return
    shell = factory()
    from matplotlib_inline.backend_inline import _fetch_figure_metadata

    for figure in figures:
        data, metadata = shell.display_like_a_kernel(figure)
        if outputs is None:
            continue
        extra = _fetch_figure_metadata(figure)  # type: ignore[no-untyped-call]
        outputs.display(data, {**metadata, **(extra or {})})


def set_up(shell: Any) -> None:
    """The figure formatters `configure_inline_support` puts on a kernel's shell, as
    `InlineBackend`'s settings say now: a kernel's `%config InlineBackend.figure_formats`
    changes them for the figures shown after (nothing to do before pyplot is imported,
    or with another backend).

    What `set_matplotlib_formats` chose stays until the settings change, as in a
    kernel, where it chooses after the backend's set-up and the settings' change
    chooses again."""
    if "matplotlib.pyplot" not in sys.modules or backend() not in (INLINE, "inline"):
        return
    settings = inline_settings()
    wanted = (settings.figure_formats, settings.print_figure_kwargs)
    if shell.__dict__.get("_ntdd_figure_formats") == wanted:
        return
    shell._ntdd_figure_formats = copy.deepcopy(wanted)  # first: `select` reads the formatter
    from IPython.core.pylabtools import select_figure_formats

    select_figure_formats(shell, settings.figure_formats, **settings.print_figure_kwargs)
    formatters = shell.display_formatter.formatters
    unread_figures.wrap_printers(formatters)  # first: a figure's summary is for its PNG
    _summarised(formatters["image/png"])


def _summarised(formatter: Any) -> None:
    """The `image/png` a figure is drawn to, with what it shows in its metadata
    (`figure_summary`): drawn first, since drawing makes its tick labels."""
    from matplotlib.figure import Figure

    drawn = formatter.type_printers.get(Figure)
    if drawn is None:  # no png chosen (`figure_formats = {"svg"}`)
        return

    def draw(figure: Any) -> Any:
        result = drawn(figure)
        data, metadata = result if isinstance(result, tuple) else (result, None)
        if data is None:
            return result
        try:
            shown = figure_summary.summary(figure)
        except Exception:  # a figure it cannot read: compared by its pixels, as a kernel's
            return result
        return data, {**(metadata or {}), figure_summary.KEY: {"figure": shown}}

    formatter.for_type(Figure, draw)


def inline_settings() -> Any:
    """matplotlib-inline's `InlineBackend` settings, made where they were not: a kernel
    makes them as it starts, where the deprecation traitlets warns of is not the cell's."""
    from matplotlib_inline.config import InlineBackend

    if InlineBackend.initialized():
        return InlineBackend.instance()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return InlineBackend.instance()
