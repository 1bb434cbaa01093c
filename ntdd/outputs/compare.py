"""Two cells' outputs compared as nbval compares them, and figures by what they show.

nbval's rules, kept so that a project moves over without editing a notebook:
streams of the same name are joined (a line rewritten after `\\r` kept as a
terminal shows it); each output is flattened into its fields (a stream's name, an
error's `ename` and `evalue`, each MIME type of its data); the fields nbval
never compares are left out (`SKIPPED`: metadata, tracebacks, execution
counts, widget model ids, images); then the two sides must have the same
fields, the same number of values for each, and equal values, after the
cleaning (`cleaning`) of each text. Unlike nbval, a `image/png` is compared
too, by what it shows and its pixels (`images`), and every
field that differs is said, not only the first.

A stream a run kept as its tail (a cell that printed more than a run keeps),
on either side, is compared whole: by the length and SHA-256 of what was
printed (`ntdd.notebook.streams`), never tail against tail.
"""

from __future__ import annotations

import difflib
import pprint
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ntdd.notebook import streams

# What nbval does not compare (its `skip_compare`, images included: nbval compares them
# byte for byte only with nbdime installed; here `image/png` is compared apart).
SKIPPED = frozenset(
    {
        "metadata",
        "traceback",
        "prompt_number",
        "output_type",
        "name",
        "execution_count",
        "transient",
        "application/vnd.jupyter.widget-view+json",
        "image/png",
        "image/jpeg",
    }
)
IMAGE = "image/png"
IMAGES_OFF = -1.0  # an image tolerance that leaves figures out, as nbval does
_SHOWN_LINES = 60  # of a diff, before the rest is counted
_CARRIAGE_RETURN = re.compile(r"^.*\r(?=[^\n])", re.MULTILINE)  # nbval's


@dataclass(frozen=True)
class FigurePair:
    """A saved figure and the fresh one that differs from it, for the report."""

    saved: str  # base64 PNG, as nbformat stores it
    fresh: str
    verdict: str  # why they differ, in one line


@dataclass(frozen=True)
class Comparison:
    """What differs between a cell's saved and fresh outputs; nothing when they agree."""

    differences: tuple[str, ...] = ()  # each readable: the field, then a diff
    figures: tuple[FigurePair, ...] = ()

    @property
    def same(self) -> bool:
        return not self.differences


def compare_outputs(
    saved: Iterable[dict[str, Any]],
    fresh: Iterable[dict[str, Any]],
    clean: Callable[[str], str] = lambda text: text,
    image_tolerance: float | None = None,
    saved_whole: Mapping[str, Any] | None = None,
    fresh_whole: Mapping[str, Any] | None = None,
) -> Comparison:
    """Compare *fresh* outputs with *saved* ones; *clean* is applied to every text first.

    *image_tolerance* is the largest perceptual distance that still counts as
    the same figure (`images.DEFAULT_TOLERANCE` when None); `float("inf")`
    compares figures by size only, `IMAGES_OFF` not at all. *saved_whole* and
    *fresh_whole* sum up the streams each side holds as a tail, by name
    (`streams.WholeStream.summary`).
    """
    saved, fresh = list(saved), list(fresh)
    ours, theirs = _fields(saved, clean), _fields(fresh, clean)
    long = _long_streams(saved, fresh, saved_whole or {}, fresh_whole or {})
    differences: list[str] = []
    for key in [*ours, *(k for k in theirs if k not in ours)]:
        if key in long:
            differences.extend([long[key]] if long[key] else [])
        elif key not in theirs:
            differences.append(_one_side(key, ours[key], "saved outputs", "the fresh ones"))
        elif key not in ours:
            differences.append(_one_side(key, theirs[key], "fresh outputs", "the saved ones"))
        elif len(ours[key]) != len(theirs[key]):
            differences.append(_counts(key, ours[key], theirs[key]))
        else:
            for was, now in zip(ours[key], theirs[key], strict=True):
                if was != now:
                    differences.append(f"{key} differs:\n{_diff(was, now)}")
                    break
    images = _images(saved, fresh, image_tolerance)
    differences.extend(pair.verdict for pair in images)
    return Comparison(tuple(differences), tuple(p for p in images if p.saved and p.fresh))


def coalesced(outputs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streams of one name joined into the first, a line rewritten after `\\r` kept as
    shown (nbval's `coalesce_streams`): how a cell's printing was split is not its output."""
    joined: list[dict[str, Any]] = []
    streams: dict[str, dict[str, Any]] = {}
    for output in outputs:
        if output.get("output_type") != "stream":
            joined.append(output)
            continue
        name = output.get("name", "stdout")
        if name in streams:
            streams[name]["text"] += output.get("text", "")
        else:
            streams[name] = {**output, "text": output.get("text", "")}
            joined.append(streams[name])
    for stream in streams.values():  # nbval's `\b` handling never runs: none here either
        stream["text"] = _CARRIAGE_RETURN.sub("", stream["text"])
    return joined


def _fields(outputs: Iterable[dict[str, Any]], clean: Callable[[str], str]) -> dict[str, list[Any]]:
    """Each field's values, in output order: a stream as its name, the rest flattened."""
    fields: dict[str, list[Any]] = {}
    for output in coalesced(outputs):
        if output.get("output_type") == "stream":
            output = {output.get("name", "stdout"): output.get("text", "")}
        for key, value in output.items():
            if key in SKIPPED:
                continue
            if key == "data" and isinstance(value, dict):
                for mime, data in value.items():
                    if mime not in SKIPPED:
                        fields.setdefault(mime, []).append(_cleaned(data, clean))
            else:
                fields.setdefault(key, []).append(_cleaned(value, clean))
    return fields


@dataclass(frozen=True)
class _Stream:
    """One side's stream, as held, and what is known of it whole."""

    text: str
    short: bool  # held as its tail
    length: int | None
    sha256: str | None  # None: unknown

    @classmethod
    def of(cls, text: str, recorded: Any) -> _Stream:
        """A tail's summary is the one recorded beside it; a stream held whole is summed up
        here (a mark left beside outputs Jupyter saved since is not read)."""
        if not streams.shortened(text):
            summary = streams.summary_of(text)
            return cls(text, False, summary["length"], summary["sha256"])
        known = recorded if isinstance(recorded, dict) else {}
        length, sha = known.get("length"), known.get("sha256")
        return cls(
            text,
            True,
            length if isinstance(length, int) else None,
            sha if isinstance(sha, str) else None,
        )

    def said(self, side: str) -> str:
        size = f"{self.length:,} characters" if self.length is not None else "of unknown length"
        kept = f", held as {len(self.text):,} with what was left out noted" if self.short else ""
        return f"  {side}: {size}{kept}"


def _long_streams(
    saved: list[dict[str, Any]],
    fresh: list[dict[str, Any]],
    saved_whole: Mapping[str, Any],
    fresh_whole: Mapping[str, Any],
) -> dict[str, str]:
    """The streams of both sides that one side holds as a tail, by name: what differs
    between them, compared whole by length and SHA-256 ("" where they are the same)."""
    ours, theirs = _stream_texts(saved), _stream_texts(fresh)
    held = [n for n in ours if n in theirs]
    found: dict[str, str] = {}
    for name in held:
        if not (name in fresh_whole or streams.shortened(ours[name] + theirs[name])):
            continue
        was = _Stream.of(ours[name], saved_whole.get(name))
        now = _Stream.of(theirs[name], fresh_whole.get(name))
        same = was.sha256 is not None and (was.sha256, was.length) == (now.sha256, now.length)
        found[name] = "" if same else _long_difference(name, was, now)
    return found


def _stream_texts(outputs: list[dict[str, Any]]) -> dict[str, str]:
    return {
        output.get("name", "stdout"): output.get("text", "")
        for output in coalesced(outputs)
        if output.get("output_type") == "stream" and isinstance(output.get("text", ""), str)
    }


def _long_difference(name: str, was: _Stream, now: _Stream) -> str:
    """Why two streams, one or both held as a tail, are not known to be the same."""
    both = was.short and now.short
    sides = (
        "the saved and the fresh streams were"
        if both
        else f"the {'saved' if was.short else 'fresh'} stream was"
    )
    lines = [
        f"{name} differs: {sides} longer than a run keeps whole, so the two were compared "
        "by the length and SHA-256 of all that was printed (before any sanitizing or "
        "normalising):",
        was.said("saved"),
        now.said("fresh"),
    ]
    if was.short and was.sha256 is None:
        lines.append(
            "  the saved stream was written back shortened, and the cell's `ntdd` metadata "
            "holds no digest of the whole: it cannot be compared (write the notebook back "
            "again, or run it in Jupyter and save it)"
        )
    elif now.sha256 is None:
        lines.append("  a line of the fresh stream was too long to digest: it cannot be compared")
    else:
        ends = [_last_lines(s.text) for s in (was, now)]
        if ends[0] == ends[1]:
            lines.append("  they end alike: the difference is in what was left out")
        else:
            lines.append(f"  how they end:\n{_diff(*ends)}")
    return "\n".join(lines)


def _last_lines(text: str, count: int = 20) -> str:
    return "".join(text.splitlines(keepends=True)[-count:])


def _cleaned(value: Any, clean: Callable[[str], str]) -> Any:
    return clean(value) if isinstance(value, str) else value


def _images(
    saved: Iterable[dict[str, Any]], fresh: Iterable[dict[str, Any]], tolerance: float | None
) -> list[FigurePair]:
    """Each saved figure beside the fresh one in its place, where they differ."""
    ours, theirs = _pngs(saved), _pngs(fresh)
    if (not ours and not theirs) or tolerance == IMAGES_OFF:
        return []
    if len(ours) != len(theirs):
        verdict = f"{IMAGE}: the saved outputs hold {len(ours)} figure(s), the fresh {len(theirs)}"
        return [FigurePair("", "", verdict)]
    from ntdd.outputs import images

    found: list[FigurePair] = []
    for n, ((was, was_meta), (now, now_meta)) in enumerate(zip(ours, theirs, strict=True), 1):
        where = f"{IMAGE} (figure {n} of {len(ours)})"
        try:
            kept = images.DEFAULT_TOLERANCE if tolerance is None else tolerance
            difference = images.compare_png(was, now, kept, was_meta, now_meta)
        except (ValueError, ImportError) as e:
            found.append(FigurePair("", "", f"{where}: {e}"))
            continue
        if not difference.same:
            said = difference.describe().removeprefix(f"{IMAGE} ")  # "differs: …"
            found.append(FigurePair(was, now, f"{where} {said}"))
    return found


def _pngs(outputs: Iterable[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each figure, with its output's metadata (where ntdd keeps what the figure shows)."""
    return [
        (data[IMAGE], output.get("metadata"))
        for output in outputs
        if isinstance(data := output.get("data"), dict) and isinstance(data.get(IMAGE), str)
    ]


def _one_side(key: str, values: list[Any], has: str, lacks: str) -> str:
    shown = "\n".join(_indented(_text(v)) for v in values)
    return f"{key}: the {has} have it, {lacks} do not:\n{shown}"


def _counts(key: str, saved: list[Any], fresh: list[Any]) -> str:
    lines = [f"{key}: {len(saved)} saved output(s), {len(fresh)} fresh:"]
    lines += ["  saved:", *(_indented(_text(v), "    ") for v in saved)]
    lines += ["  fresh:", *(_indented(_text(v), "    ") for v in fresh)]
    return "\n".join(lines)


def _diff(saved: Any, fresh: Any) -> str:
    """A unified diff of the saved value (`-`) against the fresh one (`+`)."""
    was, now = _text(saved).splitlines(), _text(fresh).splitlines()
    lines = list(difflib.unified_diff(was, now, "saved", "fresh", n=2, lineterm=""))
    if not lines:  # they differ in what splitting lines hides (a final newline, `\r`)
        lines = [f"- {saved!r}", f"+ {fresh!r}"]
    if len(lines) > _SHOWN_LINES:
        lines = [*lines[:_SHOWN_LINES], f"… {len(lines) - _SHOWN_LINES} more lines of diff"]
    return "\n".join(_indented(line) for line in lines)


def _text(value: Any) -> str:
    if isinstance(value, str):
        long = len(value) >= 2000 and "\n" not in value  # base64, say: its start will do
        return f"{value[:80]}… ({len(value)} characters)" if long else value
    return pprint.pformat(value, width=88)


def _indented(text: str, indent: str = "  ") -> str:
    return "\n".join(f"{indent}{line}" for line in text.splitlines() or [""])
