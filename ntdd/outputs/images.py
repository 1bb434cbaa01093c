"""Two `image/png` outputs compared by what they show, not byte for byte.

A figure re-rendered rarely repeats its bytes (PNG metadata, compression,
antialiasing), so the check is: the same pixel size, then a *perceptual
distance* within a tolerance. The distance is **the percentage of pixels whose
colour differs by more than 64 of 255 levels, on some channel, from every pixel
within 2 pixels of the same place in the other image** (each image checked
against the other, transparency laid on white). So antialiasing, text or ticks
moved by a pixel or two and faint noise count for nothing, while a line that
is moved, recoloured, added or removed counts for all the pixels it covers.

A tolerance of 1 lets 1% of the pixels differ. The default, 0.1, comes from
rendering real matplotlib figures (`bbox_inches="tight"`, as `%matplotlib
inline` saves them, at dpi 100 and 72) and measuring:

| the fresh figure, beside the saved one                   | distance    |
| -------------------------------------------------------- | ----------- |
| re-rendered; drawn on a transparent background           | 0           |
| everything, or the tick labels only, moved 1 or 2 px     | 0           |
| line width 1.5 -> 1.6 or 2.0; marker `o` -> `s`          | 0           |
| Gaussian colour noise, sigma 8 of 255                    | 0           |
| title "Loss" -> "Loss."; "Loss" -> "Lass"                | 0 - 0.01    |
| matplotlib 3.9 (FreeType 2.6) -> 3.11 (FreeType 2.14) *  | 0 - 0.022   |
| text drawn without antialiasing                          | 0.03 - 0.04 |
| a line 2-3 px higher; one of its 50 points 1.0 higher    | 0.01 - 0.07 |
| title "Loss" -> "Loss (train)"                           | 0.11 - 0.12 |
| one line of 18, in a 3x3 grid of panels, recoloured      | 0.19        |
| one line recoloured (C0 -> C2); markers added to it      | 0.21 - 0.49 |
| one of two lines removed                                 | 0.64 - 0.69 |
| everything moved 3 px                                    | 0.77 - 1.0  |
| `plt.plot(x, x)` -> `plt.plot(x, x + 0.3)`               | 1.1 - 1.4   |

(*) once aligned: the two versions save a figure a pixel or two apart in
size, which fails the size check whatever the tolerance.

A 1.5-point line across a 640x480 figure covers about 0.4% of its pixels: the
default fails a whole line changed with a margin of two or more, and passes
the rendering noise measured with a margin of 2.5 or more. Lower a cell's
tolerance (`#| image-tolerance: 0.05`) to catch one moved point of a line;
raise it where a figure draws random data. Whatever the tolerance, a feature
moved by 2 pixels at most, or recoloured by 64 levels at most on every
channel, counts for nothing. A 640x480 pair takes about 40 ms.

Pillow and numpy are imported only when images are compared: they are not
ntdd's dependencies (matplotlib brings both).
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ntdd.defaults import DEFAULT_IMAGE_TOLERANCE

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Pixels = NDArray[np.int16]  # height x width x RGB, 0..255, transparency laid on white

DEFAULT_TOLERANCE: float = DEFAULT_IMAGE_TOLERANCE  # percent of pixels: see the docstring
_STEP = 64  # levels of 255 a channel must differ by, beyond the neighbourhood's range
_REACH = 2  # pixels a feature may move and still match
_TIMES = "\N{MULTIPLICATION SIGN}"
_MIME = "image/png"


@dataclass(frozen=True)
class ImageDifference:
    """How a saved figure compares with the fresh one: sizes, then a distance."""

    saved_size: tuple[int, int]  # (width, height)
    fresh_size: tuple[int, int]
    distance: float | None  # percent of pixels that differ; None when the sizes differ
    tolerance: float

    @property
    def same(self) -> bool:
        """True when both have one size and the distance is within the tolerance."""
        return (
            self.saved_size == self.fresh_size
            and self.distance is not None
            and self.distance <= self.tolerance
        )

    def describe(self) -> str:
        """One line for a failure message: which check failed, with its numbers."""
        if self.saved_size != self.fresh_size or self.distance is None:
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
            f"({distance}% of {_size(self.saved_size)} pixels differ)"
        )


def compare_png(saved: str, fresh: str, tolerance: float = DEFAULT_TOLERANCE) -> ImageDifference:
    """Compare two `image/png` outputs, base64 as nbformat stores them (newlines allowed).

    Raises ValueError naming the side whose data is no readable PNG, and
    ImportError when Pillow or numpy is missing, for the caller to report.
    """
    if not tolerance >= 0:  # NaN too: it would make every figure differ, silently
        raise ValueError(f"an image tolerance must be a number >= 0, not {tolerance!r}")
    ours, theirs = _pixels(saved, "saved"), _pixels(fresh, "fresh")
    saved_size, fresh_size = _width_height(ours), _width_height(theirs)
    if saved_size != fresh_size:
        return ImageDifference(saved_size, fresh_size, None, tolerance)
    differing = _differing(ours, theirs)
    distance = 100.0 * float(differing.mean()) if differing.size else 0.0
    return ImageDifference(saved_size, fresh_size, distance, tolerance)


def difference_png(saved: str, fresh: str) -> str | None:
    """A base64 PNG of where the two differ, for the report: the saved figure faded to
    grey, with the pixels the distance counts in red. None when the sizes differ or
    either side is no readable PNG: the report then shows the two images alone."""
    try:
        ours, theirs = _pixels(saved, "saved"), _pixels(fresh, "fresh")
    except ValueError:
        return None
    if ours.shape != theirs.shape:
        return None
    import numpy as np
    from PIL import Image

    grey = ours.mean(axis=2, keepdims=True)
    faded = np.repeat(255 - (255 - grey) // 4, 3, axis=2).astype(np.uint8)
    faded[_differing(ours, theirs)] = (220, 0, 0)
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
