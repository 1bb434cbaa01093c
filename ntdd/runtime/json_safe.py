"""A recorded output as a kernel would send it: plain JSON data, whatever the cell made.

A kernel turns each message into JSON before it leaves the kernel
(jupyter_client's `json_default`: numpy numbers and arrays, bytes, dates),
cleans what JSON has no form for (NaN and the infinities as their reprs,
keys that are not strings), and sends the text as UTF-8 with lone
surrogates escaped, which the notebook reads back with a replacement
character. ntdd does the same where a cell's outputs are recorded, so that
nothing downstream (xdist's execnet, the notebooks written back, the report
page, the output checks) can meet an output it cannot encode. An object
with no JSON form at all is shown by its repr, with a note that says so.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_UNESCAPED = re.compile("[\ud800-\udc7f\udd00-\udfff]")  # surrogates that escape no byte


def json_safe(value: Any, notes: list[str]) -> Any:
    """*value* as a kernel's message layer sends it: JSON data of plain Python types; each
    object shown by its repr instead is noted in *notes*."""

    def default(obj: Any) -> Any:
        from jupyter_client.jsonutil import json_default

        try:
            return json_default(obj)
        except TypeError:
            shown = repr(obj)
            notes.append(f"{type(obj).__name__} has no JSON form: shown as {_short(shown)}")
            return shown

    try:
        text = json.dumps(value, default=default, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):  # NaN, infinities, keys: cleaned as jupyter_client does
        try:
            text = json.dumps(_cleaned(value), default=default, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):  # a structure that holds itself
            shown = repr(value)
            notes.append(f"{type(value).__name__} has no JSON form: shown as {_short(shown)}")
            text = json.dumps(shown, ensure_ascii=False)
    return json.loads(_as_sent(text))


def outputs_safe(outputs: list[dict[str, Any]], notes: list[str]) -> list[dict[str, Any]]:
    """A cell's outputs made JSON-safe one by one; an output that holds an object shown by
    its repr says so in its metadata (`ntdd.notes`), where a reader of the notebook sees it."""
    safe = []
    for output in outputs:
        found: list[str] = []
        output = json_safe(output, found)
        if found and isinstance(output.get("metadata"), dict):
            output["metadata"] = {**output["metadata"], "ntdd": {"notes": found}}
        notes += found
        safe.append(output)
    return safe


def text_safe(text: str) -> str:
    """*text* as a notebook reads it back from a kernel: a lone surrogate (a file name
    Python could not decode) replaced, the rest as it was."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _as_sent(text)
    return text


def _as_sent(text: str) -> str:
    """UTF-8 as a kernel sends it (surrogates escaped to their bytes), read as the
    notebook reads it (bytes that are no UTF-8 become U+FFFD)."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte escapes to: replaced before it is sent
        data = _UNESCAPED.sub("\ufffd", text).encode("utf-8", "surrogateescape")
    return data.decode("utf-8", "replace")


def _cleaned(value: Any) -> Any:
    """What `json.dumps` refused, cleaned as jupyter_client's `json_clean` cleans it:
    NaN and the infinities as their reprs, every key a string; the rest left to `default`."""
    if isinstance(value, float) and not isinstance(value, bool):
        return repr(value) if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(key): _cleaned(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cleaned(item) for item in value]
    return value


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
