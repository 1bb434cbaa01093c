"""`python -m ntdd.faults.threads REQUEST`: runs at another thread count, in a new process.

`forked.threads_apart` starts it: a new process has started no OpenMP pool,
so the runs it forks may use more than one thread (see there). It makes one
run of each variant asked for (the clean notebook, or a fault) under one
seed, and prints their outcomes as one line of JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ntdd.faults.forked import serve_forks
from ntdd.faults.results import as_dict
from ntdd.faults.trials import RunOne


def main(argv: list[str]) -> int:
    request: dict[str, Any] = json.loads(argv[0])
    variants, seed, threads = request["variants"], request["seed"], request["threads"]

    def each(run: RunOne) -> list[Any]:
        return [[as_dict(part) for part in run(v, seed, threads)] for v in variants]

    found = serve_forks(Path(request["notebook"]), request["args"], each)
    if found is None:
        print("forking is not safe here", file=sys.stderr)
        return 1
    print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
