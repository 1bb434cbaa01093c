"""What a matplotlib figure shows, as JSON: kept beside its `image/png` in the outputs.

A figure's pixels say little about its data: matplotlib scales the axes to
fit what is plotted, so a curve whose values all moved (`0.5 + sin x` ->
`3.5 + sin x`) is drawn on the same pixels, and only the tick labels, a
few dozen pixels, tell. ntdd runs the cell and holds the figure itself, so
it records what the figure says, in the output's metadata under
`image/png` -> `ntdd` -> `figure`: each axes' texts (titles, axis labels,
tick labels, legend, annotations) as they read, and a digest of the data it
plots (lines, collections, patches, images). A notebook written back by ntdd
keeps it, and its check compares the two records (`ntdd.outputs.images`)
before the pixels: what changed is named, and a redraw by another
matplotlib, a pixel taller, is no difference. A kernel's saved figures have
none: they are compared by their pixels alone.

The data are digested as float32 (about 7 significant digits), so noise in
the last bits of a float64 does not count; a value on a rounding edge may
still flip, as with the floats normaliser. Style (colours, widths, markers)
is not recorded: the pixels show it.
"""

from __future__ import annotations

import hashlib
from typing import Any

KEY = "ntdd"  # the figure's record sits at metadata["image/png"][KEY]["figure"]


def summary(figure: Any) -> dict[str, Any]:
    """What *figure* shows, once it has been drawn (its tick labels are made as it is)."""
    record: dict[str, Any] = {}
    texts = [t.get_text() for t in figure.texts if t.get_visible() and t.get_text()]
    suptitle = getattr(figure, "_suptitle", None)
    if suptitle is not None and suptitle.get_visible() and suptitle.get_text():
        record["suptitle"] = suptitle.get_text()
    if texts:
        record["texts"] = texts
    record["axes"] = [_axes(axes) for axes in figure.axes if axes.get_visible()]
    return record


def _axes(axes: Any) -> dict[str, Any]:
    """One axes: its texts as they read, and its data's digest."""
    found: dict[str, Any] = {}
    titles = [axes.get_title(loc) for loc in ("left", "center", "right")]
    if any(titles):
        found["title"] = [t for t in titles if t]
    for name, axis in (("x", axes.xaxis), ("y", axes.yaxis)):
        if not axis.get_visible():
            continue
        label = axis.get_label_text()
        if label:
            found[f"{name}label"] = label
        ticks = _tick_labels(axis)
        if ticks:
            found[f"{name}ticks"] = ticks
    legend = axes.get_legend()
    if legend is not None and legend.get_visible():
        found["legend"] = [t.get_text() for t in legend.get_texts()]
    texts = [t.get_text() for t in axes.texts if t.get_visible() and t.get_text()]
    if texts:
        found["texts"] = texts
    found["data"] = _digest(axes)
    return found


def _tick_labels(axis: Any) -> list[str]:
    """The major tick labels drawn: those of ticks within the axis' view (matplotlib
    labels one tick beyond each end too, and draws neither)."""
    low, high = sorted(axis.get_view_interval())
    margin = (high - low) * 1e-9
    return [
        tick.label1.get_text()
        for tick in axis.get_major_ticks()
        if low - margin <= tick.get_loc() <= high + margin
        and tick.label1.get_visible()
        and tick.label1.get_text()
    ]


def _digest(axes: Any) -> str:
    """A short digest of the data *axes* plots, in data coordinates (so the figure's
    size or dpi changes nothing)."""
    import numpy as np

    digest = hashlib.sha256()

    def add(kind: str, values: Any) -> None:
        try:
            array = np.asarray(values, dtype=np.float32)
        except (TypeError, ValueError):
            array = np.asarray([], dtype=np.float32)
        digest.update(f"{kind}{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())

    for line in axes.lines:
        if line.get_visible():
            add("line", line.get_xydata())
    for collection in axes.collections:
        if not collection.get_visible():
            continue
        add("offsets", collection.get_offsets())
        for path in collection.get_paths():
            add("path", path.vertices)
        array = collection.get_array()
        if array is not None:
            add("values", np.ma.filled(np.ma.asarray(array, dtype=float), np.nan))
    for patch in axes.patches:
        if patch.get_visible():
            add("patch", patch.get_patch_transform().transform(patch.get_path().vertices))
    for image in axes.images:
        if image.get_visible():
            add("image", np.ma.filled(np.ma.asarray(image.get_array(), dtype=float), np.nan))
            add("extent", image.get_extent())
    return digest.hexdigest()[:16]
