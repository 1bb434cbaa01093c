"""A figure shown where nothing reads it: drawn for its errors, not for its pixels.

A kernel draws a figure that is displayed (`plt.show()`, `display(fig)`,
a figure as a cell's last value) because a front-end shows it: IPython's
`print_figure` lays the figure out, works out its tight bounding box, then
draws it again into a PNG or SVG. Under ntdd nobody sees it unless a report,
a written-back notebook or an output check records the cell's outputs; a
run that records nothing still needs what drawing raises (a broken mathtext
label, a norm that cannot scale, an artist's own `draw`), since that is the
cell's error in a kernel. So a figure whose display goes nowhere runs the
first pass of `print_figure`, the layout drawn without its output
(`Figure.draw_without_rendering`) and the tight box where the inline backend
crops, and stops there: the pixels and their encoding, most of the cost, are
left out. What only the renderer's own drawing raises (an Agg path too long
to rasterise) is the difference.

Only IPython's own figure printers (`print_figure`, `retina_figure`, as the
inline backend, `%config InlineBackend.figure_formats` or
`set_matplotlib_formats` registers them) are checked this way; and only while
a display nobody reads formats (`unread`): notebook code asking the formatter
for a figure's PNG itself gets it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

# The formatters IPython's `select_figure_formats` registers figure printers in.
FIGURE_MIMES = ("image/png", "image/svg+xml", "image/jpeg", "application/pdf")

_unread: contextvars.ContextVar[bool] = contextvars.ContextVar("ntdd_unread", default=False)


@contextlib.contextmanager
def unread() -> Iterator[None]:
    """The figures formatted in this block are checked, not drawn: nothing reads them."""
    token = _unread.set(True)
    try:
        yield
    finally:
        _unread.reset(token)


def wrap_printers(formatters: dict[str, Any]) -> None:
    """Each of IPython's figure printers in *formatters* made to check, not draw, a figure
    shown where nothing reads it (those registered since the last call: a notebook's
    `set_matplotlib_formats` registers its own)."""
    pylabtools = sys.modules.get("IPython.core.pylabtools")
    if pylabtools is None:  # nothing has registered a figure printer
        return
    drawers = (pylabtools.print_figure, pylabtools.retina_figure)
    for mime in FIGURE_MIMES:
        formatter = formatters.get(mime)
        printers = getattr(formatter, "type_printers", None)
        if not printers:
            continue
        for kind, printer in list(printers.items()):
            if isinstance(printer, functools.partial) and printer.func in drawers:
                printers[kind] = _checked_when_unread(printer)


def _checked_when_unread(printer: functools.partial[Any]) -> Callable[[Any], Any]:
    keywords = dict(printer.keywords)

    def draw(figure: Any) -> Any:
        if _unread.get():
            check(figure, keywords.get("bbox_inches", "tight"))
            return None
        return printer(figure)

    return draw


def check(figure: Any, bbox_inches: Any) -> None:
    """What `print_figure` raises for *figure* before it draws its pixels: nothing for an
    empty figure (IPython draws none), else the layout drawn without output, and the
    tight box where the figure is cropped to it."""
    if not figure.axes and not figure.lines:
        return
    figure.draw_without_rendering()
    if bbox_inches == "tight":
        figure.get_tightbbox()
