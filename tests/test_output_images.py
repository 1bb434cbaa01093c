"""Figures compared by what they show: real matplotlib renders, as a notebook saves them.

Each figure is drawn on its own `Figure` with the Agg canvas, never pyplot, so no
test touches pyplot's global figures; saved with `bbox_inches="tight"`, as
`%matplotlib inline` saves them.
"""

from __future__ import annotations

import base64
import functools
import io
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

from ntdd.outputs.images import DEFAULT_TOLERANCE, compare_png, difference_png

matplotlib = pytest.importorskip("matplotlib")
figure = pytest.importorskip("matplotlib.figure")
backend_agg = pytest.importorskip("matplotlib.backends.backend_agg")
np = pytest.importorskip("numpy")
Image = pytest.importorskip("PIL.Image")


@functools.cache
def render(
    offset: float = 0.0,
    colour: str = "C0",
    second_line: bool = True,
    size: tuple[float, float] = (6.4, 4.8),
    text_antialiased: bool = True,
    transparent: bool = False,
) -> str:
    """A loss plot as a notebook saves it: base64 PNG text, with nbformat's newlines."""
    with matplotlib.rc_context({"text.antialiased": text_antialiased}):
        fig = figure.Figure(figsize=size, dpi=100)
        backend_agg.FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        x = np.linspace(0, 10, 50)
        ax.plot(x, x + offset, color=colour, lw=1.5, label="train")
        if second_line:
            ax.plot(x, 3 * np.sqrt(x), color="C1", lw=1.5, label="valid")
        ax.set_title("Loss")
        ax.set_xlabel("epoch")
        ax.legend()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight", transparent=transparent)
    return base64.encodebytes(buffer.getvalue()).decode("ascii")


def pixels(data: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB"))


def encoded(rgb: np.ndarray, kind: str = "PNG") -> str:
    buffer = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(buffer, format=kind)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def test_the_same_figure_re_rendered_is_the_same() -> None:
    saved, fresh = render(), render.__wrapped__()  # two renders, not one string twice
    found = compare_png(saved, fresh)
    assert found.same
    assert found.distance == 0
    assert found.saved_size == found.fresh_size == pixels(saved).shape[1::-1]
    assert found.tolerance == DEFAULT_TOLERANCE


@pytest.mark.parametrize(
    "changed",
    [
        pytest.param({"offset": 0.3}, id="plot(x, x) -> plot(x, x + 0.3)"),
        pytest.param({"colour": "C2"}, id="a line recoloured"),
        pytest.param({"second_line": False}, id="a line removed"),
    ],
)
def test_a_changed_line_differs(changed: dict[str, Any]) -> None:
    found = compare_png(render(), render(**changed))
    assert found.saved_size == found.fresh_size  # the same size: the distance decides
    assert found.distance is not None
    assert found.distance > 2 * DEFAULT_TOLERANCE  # with a margin, as measured
    assert not found.same
    message = found.describe()
    assert message.startswith("image/png differs: perceptual distance ")
    assert f"> tolerance {DEFAULT_TOLERANCE:g}" in message


def test_rendering_noise_is_the_same_figure() -> None:
    """Everything moved a pixel, faint colour noise: each is the figure a different
    renderer would draw, and none is a change. (Text drawn without antialiasing is
    not within the default: 4.4, as a changed tick label is.)"""
    saved = render()
    rgb = pixels(saved).astype(float)
    moved = np.full_like(rgb, 255)
    moved[1:, 1:] = rgb[:-1, :-1]
    noisy = np.clip(rgb + np.random.default_rng(0).normal(0, 4, rgb.shape), 0, 255)
    for fresh in (encoded(moved), encoded(noisy)):
        found = compare_png(saved, fresh)
        assert found.same, found.describe()
    assert compare_png(saved, render(transparent=True)).distance == 0  # laid on white


def test_a_different_size_is_not_compared_and_says_both_sizes() -> None:
    found = compare_png(render(), render(size=(8.0, 6.0)))
    assert found.saved_size != found.fresh_size
    assert found.distance is None
    assert not found.same
    (w1, h1), (w2, h2) = found.saved_size, found.fresh_size
    assert found.describe() == (
        f"image/png differs in size: saved {w1}\N{MULTIPLICATION SIGN}{h1}, "
        f"fresh {w2}\N{MULTIPLICATION SIGN}{h2}"
    )
    assert not compare_png(render(), render(size=(8.0, 6.0)), float("inf")).same


def test_a_tolerance_passed_in_is_honoured() -> None:
    saved, fresh = render(), render(colour="C2")
    distance = compare_png(saved, fresh).distance
    assert distance is not None and distance > DEFAULT_TOLERANCE
    assert compare_png(saved, fresh, tolerance=distance).same  # within: <=
    assert compare_png(saved, fresh, tolerance=2 * distance).same
    assert compare_png(saved, fresh, tolerance=float("inf")).same  # sizes only
    tight = compare_png(saved, fresh, tolerance=distance * 0.99)
    assert not tight.same
    assert tight.tolerance == distance * 0.99
    assert compare_png(saved, render(), tolerance=0.0).same  # equal figures pass even at 0


@pytest.mark.parametrize("tolerance", [-1.0, float("nan")])
def test_a_tolerance_that_is_no_distance_is_refused(tolerance: float) -> None:
    with pytest.raises(ValueError, match="tolerance must be a number >= 0"):
        compare_png(render(), render(), tolerance)


def encoded_bytes(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _jpeg() -> str:
    return encoded(pixels(render()), kind="JPEG")


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(lambda: "not base64 at all!", id="not base64"),
        pytest.param(lambda: "é" * 8, id="not ascii"),
        pytest.param(lambda: base64.b64encode(b"plain text, no image").decode(), id="not image"),
        pytest.param(lambda: encoded_bytes(base64.b64decode(render())[:2000]), id="truncated"),
        pytest.param(_jpeg, id="a JPEG"),
    ],
)
@pytest.mark.parametrize("side", ["saved", "fresh"])
def test_an_unreadable_png_is_a_value_error_naming_its_side(
    side: str, bad: Callable[[], str]
) -> None:
    data = bad()
    pair = (data, render()) if side == "saved" else (render(), data)
    with pytest.raises(ValueError, match=rf"^{side} image/png is not a readable PNG: "):
        compare_png(*pair)
    assert difference_png(*pair) is None


def test_the_difference_image_marks_where_they_differ() -> None:
    saved, fresh = render(), render(colour="C2")
    drawn = difference_png(saved, fresh)
    assert drawn is not None
    image = Image.open(io.BytesIO(base64.b64decode(drawn)))
    assert image.format == "PNG"
    assert image.size == compare_png(saved, fresh).saved_size
    rgb = np.asarray(image.convert("RGB")).astype(int)
    red = (rgb[..., 0] > 200) & (rgb[..., 1] < 50) & (rgb[..., 2] < 50)
    share = 100 * red.mean()
    # the pixels counted: the distance is their share of the worst square, never less
    assert 0 < share <= compare_png(saved, fresh).distance
    assert red.any()

    same = difference_png(saved, render.__wrapped__())
    assert same is not None
    quiet = np.asarray(Image.open(io.BytesIO(base64.b64decode(same))).convert("RGB")).astype(int)
    assert not ((quiet[..., 0] > 200) & (quiet[..., 1] < 50)).any()  # nothing marked
    assert quiet.min() > 150  # the saved figure, faded


def test_the_difference_image_is_none_when_the_sizes_differ() -> None:
    assert difference_png(render(), render(size=(8.0, 6.0))) is None


def test_the_module_imports_without_pillow_or_numpy_and_says_what_comparing_needs() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["numpy"] = None  # an import of either now fails, as if missing
        sys.modules["PIL"] = None
        from ntdd.outputs import images
        try:
            images.compare_png("", "")
        except ImportError as e:
            print(e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "needs Pillow and numpy (matplotlib brings both)" in done.stdout
