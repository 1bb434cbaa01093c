"""Markdown appended to a summary file: `--report` and `--summary` (`$GITHUB_STEP_SUMMARY`)."""

from __future__ import annotations

from pathlib import Path

from ntdd.errors import NtddError


def append_to(path: Path, text: str, option: str) -> None:
    """Append Markdown to a summary (`$GITHUB_STEP_SUMMARY`); one that cannot be written
    is bad input, said in one line."""
    from ntdd.notebook.files import append_to_file, check_results_file

    check_results_file(path, option)  # a notebook given where the file was meant, or a folder
    try:
        append_to_file(path, text.encode("utf-8", "backslashreplace"))
    except OSError as e:
        reason = (e.strerror or type(e).__name__).lower()
        raise NtddError(f"{path}: cannot write it: {reason}") from e
