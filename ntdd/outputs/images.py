"""Two `image/png` outputs compared by what they show, not byte for byte.

A figure re-rendered rarely repeats its bytes (PNG metadata, compression,
antialiasing), and another matplotlib or FreeType draws it a pixel or two
larger or smaller. Yet a figure whose data all moved (`0.5 + sin x` ->
`3.5 + sin x`) can differ in its tick labels alone: matplotlib scales the
axes to the data, so the curve sits on the same pixels. So two checks:

1. **What the figure shows.** Where ntdd drew both (a notebook it wrote
   back), each `image/png` carries a record of its figure in its metadata
   (`ntdd.runtime.figure_summary`: the texts of each axes, titles, labels,
   tick labels, legend, as they read, and a digest of its data). Records
   that differ fail the check and say what changed. A kernel's saved figure
   has none, and is judged by its pixels alone.
2. **The pixels.** Sizes more than 2 pixels apart fail. Otherwise the two
   are aligned (the common size, placed where they match best), and a pixel
   *differs* when its colour is more than 64 of 255 levels, on some
   channel, from every pixel within 2 pixels of its place in the other
   image (each image checked against the other, transparency laid on
   white): antialiasing, text redrawn by another FreeType, a feature moved
   a pixel or two count for nothing. The *distance* is the share of
   differing pixels in the worst 32x32 square of the figure, in percent, not
   across the whole figure: a rewritten tick label counts against the
   square it sits in, where it vanished among a whole figure's pixels. (A
   label changed in one digit, `0.1` -> `3.1`, can match within the reach
   and count for nothing: the record catches it.)

The default tolerance, 1.25 (12 pixels of a 32x32 square), comes from
`benchmarks/figure_check.py` on the 80 matplotlib figures of the corpus
notebooks (`benchmarks/RESULTS.md`, "Figures"): redrawn by matplotlib 3.9
(FreeType 2.6) and 3.11 (FreeType 2.14), 66 of them a pixel or two apart in
size, 75 pass (the whole-figure check before passed 11); laid out 1 or 2
pixels taller or 1 shorter, 232 of 240 (33); every plotted value moved, so
that only the tick labels change, 0 of 59 (2); doubled, 3 of 59 (4).

A one-letter change of a title or a legend passes on pixels (10 of 10):
the record catches it, where ntdd saved the figure. A cell's tolerance
(`#| image-tolerance: 3`) loosens the pixels; one above the default says
the figure may change (it draws random data), and the records are not
compared either.

Pillow and numpy are imported only when images are compared: they are not
ntdd's dependencies (matplotlib brings both).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ntdd.defaults import DEFAULT_IMAGE_TOLERANCE

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Pixels = NDArray[np.int16]  # height x width x RGB, 0..255, transparency laid on white

DEFAULT_TOLERANCE: float = DEFAULT_IMAGE_TOLERANCE  # percent of a square: see the docstring
_STEP = 64  # levels of 255 a channel must differ by, beyond the neighbourhood's range
_REACH = 2  # pixels a feature may move and still match
_SLACK = 2  # pixels two sizes may differ by, in width and in height, and be aligned
_SQUARE = 32  # side of the squares the distance is the worst of
_RECORD = "ntdd"  # metadata["image/png"][_RECORD]["figure"]: what the figure shows
_TIMES = "\N{MULTIPLICATION SIGN}"
_MIME = "image/png"
_SHOWN = 80  # characters of a text shown in a difference


@dataclass(frozen=True)
class ImageDifference:
    """How a saved figure compares with the fresh one: what it shows, sizes, a distance."""

    saved_size: tuple[int, int]  # (width, height)
    fresh_size: tuple[int, int]
    distance: float | None  # percent of the worst square; None when the sizes are too far apart
    tolerance: float
    changes: tuple[str, ...] = ()  # what the figures' records say changed

    @property
    def same(self) -> bool:
        """True when nothing recorded changed, the sizes are within 2 pixels and the
        distance is within the tolerance."""
        return not self.changes and self.distance is not None and self.distance <= self.tolerance

    def describe(self) -> str:
        """One line (a line per change) for a failure message: which check failed, with
        its numbers."""
        if self.changes:
            return f"{_MIME} differs in what it shows:\n" + "\n".join(
                f"  {change}" for change in self.changes
            )
        if self.distance is None:
            return (
                f"{_MIME} differs in size: saved {_size(self.saved_size)}, "
                f"fresh {_size(self.fresh_size)}"
            )
        distance, tolerance = _numbers(self.distance, self.tolerance)
        if self.same:
            return (
                f"{_MIME} is the same: perceptual distance {distance} <= tolerance {tolerance} "
                f"({_size(self.saved_size)})"
            )
        return (
            f"{_MIME} differs: perceptual distance {distance} > tolerance {tolerance} "
            f"({distance}% of the pixels of a {_SQUARE}{_TIMES}{_SQUARE} square differ)"
        )


def compare_png(
    saved: str,
    fresh: str,
    tolerance: float = DEFAULT_TOLERANCE,
    saved_metadata: object = None,
    fresh_metadata: object = None,
) -> ImageDifference:
    """Compare two `image/png` outputs, base64 as nbformat stores them (newlines allowed),
    with their outputs' metadata, where ntdd's records of the figures are.

    Raises ValueError naming the side whose data is no readable PNG, and
    ImportError when Pillow or numpy is missing, for the caller to report.
    """
    if not tolerance >= 0:  # NaN too: it would make every figure differ, silently
        raise ValueError(f"an image tolerance must be a number >= 0, not {tolerance!r}")
    ours, theirs = _pixels(saved, "saved"), _pixels(fresh, "fresh")
    saved_size, fresh_size = _width_height(ours), _width_height(theirs)
    changes: tuple[str, ...] = ()
    if tolerance <= DEFAULT_TOLERANCE:  # a looser one says the figure may change
        changes = record_changes(_record(saved_metadata), _record(fresh_metadata))
    pair = _aligned(ours, theirs)
    if pair is None:
        return ImageDifference(saved_size, fresh_size, None, tolerance, changes)
    distance = _worst_square(_differing(*pair))
    return ImageDifference(saved_size, fresh_size, distance, tolerance, changes)


def record_changes(saved: dict[str, Any] | None, fresh: dict[str, Any] | None) -> tuple[str, ...]:
    """What two figures' records say changed, a line each; nothing where either has none."""
    if saved is None or fresh is None:
        return ()
    changes = [
        _change(name, saved.get(key), fresh.get(key))
        for key, name in (("suptitle", "the figure's title"), ("texts", "the figure's texts"))
        if saved.get(key) != fresh.get(key)
    ]
    was, now = saved.get("axes") or [], fresh.get("axes") or []
    if len(was) != len(now):
        changes.append(f"axes: saved {len(was)}, fresh {len(now)}")
    for n, (one, other) in enumerate(zip(was, now, strict=False), 1):  # counts said above
        if not isinstance(one, dict) or not isinstance(other, dict):
            continue
        where = f"axes {n} of {len(was)}" if len(was) > 1 else "axes"
        for key, name in _AXES_TEXTS:
            if one.get(key) != other.get(key):
                changes.append(_change(f"{where}: {name}", one.get(key), other.get(key)))
        if one.get("data") != other.get("data"):
            changes.append(f"{where}: the plotted data differ")
    return tuple(changes)


_AXES_TEXTS = (
    ("title", "title"),
    ("xlabel", "x label"),
    ("ylabel", "y label"),
    ("xticks", "x tick labels"),
    ("yticks", "y tick labels"),
    ("legend", "legend"),
    ("texts", "texts"),
)


def _record(metadata: object) -> dict[str, Any] | None:
    """The figure's record in an output's metadata, or None (a kernel saved it)."""
    if not isinstance(metadata, dict):
        return None
    mine = metadata.get(_MIME, {})
    found = mine.get(_RECORD, {}).get("figure") if isinstance(mine, dict) else None
    if not isinstance(found, dict) and isinstance(metadata.get(_RECORD), dict):
        found = metadata[_RECORD].get("figure")
    return found if isinstance(found, dict) else None


def _change(name: str, saved: Any, fresh: Any) -> str:
    return f"{name}: saved {_shown(saved)}, fresh {_shown(fresh)}"


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    text = ", ".join(map(repr, value)) if isinstance(value, list) else repr(value)
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 1]}\N{HORIZONTAL ELLIPSIS}"


def difference_png(saved: str, fresh: str) -> str | None:
    """A base64 PNG of where the two differ, for the report: the saved figure faded to
    grey (as aligned with the fresh one), with the differing pixels in red. None when
    the sizes are too far apart or either side is no readable PNG: the report then shows
    the two images alone."""
    try:
        pair = _aligned(_pixels(saved, "saved"), _pixels(fresh, "fresh"))
    except ValueError:
        return None
    if pair is None:
        return None
    import numpy as np
    from PIL import Image

    ours = pair[0]
    grey = ours.mean(axis=2, keepdims=True)
    faded = np.repeat(255 - (255 - grey) // 4, 3, axis=2).astype(np.uint8)
    faded[_differing(*pair)] = (220, 0, 0)
    buffer = io.BytesIO()
    Image.fromarray(faded, "RGB").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _pixels(data: str, side: str) -> Pixels:
    """One side decoded to RGB on white; ValueError, naming the side, when it cannot be."""
    try:
        import numpy as np
        from PIL import Image
    except ImportError as e:
        raise ImportError(
            f"comparing {_MIME} outputs needs Pillow and numpy (matplotlib brings both): {e}"
        ) from e
    try:
        if not isinstance(data, str):
            raise TypeError(f"expected base64 text, got {type(data).__name__}")
        raw = base64.b64decode(data)
        with Image.open(io.BytesIO(raw)) as image:
            if image.format != "PNG":
                raise ValueError(f"it is {image.format or 'an unknown format'}, not PNG")
            image.load()
            rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        rgb = Image.alpha_composite(white, rgba).convert("RGB")
    # Pillow raises many kinds on a bad file (OSError, SyntaxError, EOFError, its
    # DecompressionBombError), base64 binascii.Error: each says this side's data is bad.
    except Exception as e:
        raise ValueError(f"{side} {_MIME} is not a readable PNG: {e}") from e
    return np.asarray(rgb, dtype=np.int16)


def _differing(ours: Pixels, theirs: Pixels) -> NDArray[np.bool_]:
    """The pixels of either image that match nothing near their place in the other."""
    return _unmatched(ours, theirs) | _unmatched(theirs, ours)


def _unmatched(image: Pixels, other: Pixels) -> NDArray[np.bool_]:
    """Pixels of *image* more than `_STEP` outside *other*'s range within `_REACH` pixels."""
    import numpy as np

    low, high = _window(other, np.minimum), _window(other, np.maximum)
    beyond = np.maximum(low - image, image - high)
    result: NDArray[np.bool_] = beyond.max(axis=2) > _STEP
    return result


def _aligned(ours: Pixels, theirs: Pixels) -> tuple[Pixels, Pixels] | None:
    """The two cut to their common size, the larger one where it matches the smaller best
    (the least mean difference, of at most 3x3 places); None when the sizes are more
    than `_SLACK` pixels apart. A figure drawn a pixel taller gains it at the top, the
    bottom or between its parts: the best place lines up most of it, and the distance's
    reach covers the rest."""
    import numpy as np

    (h1, w1), (h2, w2) = ours.shape[:2], theirs.shape[:2]
    if abs(h1 - h2) > _SLACK or abs(w1 - w2) > _SLACK:
        return None
    height, width = min(h1, h2), min(w1, w2)
    best: tuple[float, Pixels, Pixels] | None = None
    for y1 in range(h1 - height + 1):
        for x1 in range(w1 - width + 1):
            for y2 in range(h2 - height + 1):
                for x2 in range(w2 - width + 1):
                    one = ours[y1 : y1 + height, x1 : x1 + width]
                    other = theirs[y2 : y2 + height, x2 : x2 + width]
                    cost = float(np.abs(one - other).mean()) if one.size else 0.0
                    if best is None or cost < best[0]:
                        best = (cost, one, other)
    assert best is not None
    return best[1], best[2]


def _worst_square(differing: NDArray[np.bool_]) -> float:
    """The share of differing pixels in the `_SQUARE`-sided square (on a grid from the top
    left) where it is largest, in percent of the square."""
    import numpy as np

    height, width = differing.shape
    rows, columns = -(-height // _SQUARE), -(-width // _SQUARE)
    grid = np.zeros((rows * _SQUARE, columns * _SQUARE), dtype=np.int32)
    grid[:height, :width] = differing
    counts = grid.reshape(rows, _SQUARE, columns, _SQUARE).sum(axis=(1, 3))
    return 100.0 * float(counts.max()) / _SQUARE**2 if counts.size else 0.0


def _window(image: Pixels, pick: np.ufunc) -> Pixels:
    """Each pixel's channel-wise min or max over the square within `_REACH` of it."""
    import numpy as np

    height, width = image.shape[:2]
    span = 2 * _REACH + 1
    padded = np.pad(image, ((_REACH, _REACH), (_REACH, _REACH), (0, 0)), mode="edge")
    rows = padded[0:height]
    for dy in range(1, span):  # separable: down the columns, then along the rows
        rows = pick(rows, padded[dy : dy + height])
    result = rows[:, 0:width]
    for dx in range(1, span):
        result = pick(result, rows[:, dx : dx + width])
    return result


def _width_height(pixels: Pixels) -> tuple[int, int]:
    return int(pixels.shape[1]), int(pixels.shape[0])


def _size(size: tuple[int, int]) -> str:
    return f"{size[0]}{_TIMES}{size[1]}"


def _numbers(distance: float, tolerance: float) -> tuple[str, str]:
    """Both numbers with enough digits that a distance just past the tolerance does
    not read as equal to it ("0.1 > tolerance 0.1")."""
    shown = f"{tolerance:g}"
    for digits in range(2, 8):
        text = f"{distance:.{digits}g}"
        if (text == shown) == (distance == tolerance):
            return text, shown
    return f"{distance!r}", shown
