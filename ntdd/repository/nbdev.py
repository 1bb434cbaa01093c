"""What `ntdd init` tells an nbdev project about its `#| eval: false` cells.

nbdev_test leaves them out; ntdd runs them, as a kernel's Run All does,
unless `skip_eval_false` under `[tool.ntdd]` says otherwise.
"""

from __future__ import annotations

from pathlib import Path

from ntdd.errors import NtddError


def nbdev_note(root: Path) -> str | None:
    """What `ntdd init` suggests to an nbdev project (nbdev's keys in settings.ini, or
    nbdev in pyproject.toml) that has not chosen how its `#| eval: false` cells run."""
    from ntdd.settings.pyproject import load_config

    settings, pyproject = root / "settings.ini", root / "pyproject.toml"
    found = settings.is_file() and _reads(settings, ("lib_name", "nbs_path"))
    found = found or (pyproject.is_file() and _reads(pyproject, ("nbdev",)))
    if not found:
        return None
    try:
        if load_config(root).skip_eval_false is not None:
            return None
    except NtddError:
        return None
    return (
        "an nbdev project: its `#| eval: false` cells (such as the `nbdev_export()` that ends "
        "its notebooks) run under test, as a kernel's Run All runs them; to leave them out, "
        "as nbdev_test does, add `skip_eval_false = true` under [tool.ntdd] in pyproject.toml"
    )


def _reads(path: Path, words: tuple[str, ...]) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return all(word in text for word in words)
