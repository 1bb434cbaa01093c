"""How every `ntdd` subcommand ends: its exit code, and one line on stderr for an error.

Exit codes: 0 done; 1 nothing to do, a check failed, or a sync was refused;
2 bad input (a file that is not a notebook, a foreign file in the way, a bad
option).
"""

from __future__ import annotations

import sys
import traceback

OK, NOTHING_TO_DO, BAD_INPUT = 0, 1, 2
FAULTS_MISSED = 1  # `ntdd faults`: the exit policy is not met


def print_error(error: BaseException, debug: bool) -> None:
    """`ntdd: error: …` on stderr; with *debug*, the traceback above it."""
    if debug:
        traceback.print_exception(error)
    print(f"ntdd: error: {error}", file=sys.stderr)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")
