"""`-n N`: each xdist worker's torch and BLAS threads, the cores it has to itself.

Every worker imports torch (and numpy's BLAS) anew, and each library starts a
thread per core: two workers on two cores run four busy threads that take
turns, and a training step takes many times as long. Before the workers
start, the controller gives each local (`popen`) worker the thread variables
that torch, OpenMP, MKL and OpenBLAS read when they load: cores ÷ workers,
at least 1. A user who set any of them, or `--ntdd-threads`, decides instead;
a notebook's own `torch.set_num_threads` still wins within it. The count is
no test input: a verdict does not depend on it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import pytest

from ntdd.settings.typed import settings_of

# What torch (intra-op), OpenMP, MKL and OpenBLAS read for their thread counts at load.
VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


class Plan(NamedTuple):
    """What each worker gets, and the line that says so."""

    threads: int | None  # None: the workers keep the environment's own settings
    line: str


def cores() -> int:
    """The cores this process may run on: its CPU affinity (a container's cpuset), not the
    machine's count."""
    counted = getattr(os, "process_cpu_count", None)  # Python 3.13
    if counted is not None:
        return int(counted() or 1)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def plan(workers: int, available: int, environ: Mapping[str, str], option: int | None) -> Plan:
    """Threads per worker: the option's, else none where the user set a variable, else
    cores ÷ workers (at least 1)."""
    on = f"ntdd: {workers} workers on {available} cores"
    if option is not None:
        return Plan(option, f"{on}: {_each(option)} for torch and BLAS (--ntdd-threads)")
    given = [name for name in VARIABLES if environ.get(name)]
    if given:
        return Plan(None, f"{on}: torch and BLAS threads as {', '.join(given)} set them")
    threads = max(1, available // max(1, workers))
    return Plan(
        threads,
        f"{on}: {_each(threads)} for torch and BLAS ({', '.join(VARIABLES)}); "
        "set --ntdd-threads to change",
    )


def _each(threads: int) -> str:
    return f"{threads} thread{'s' if threads != 1 else ''} each"


class WorkerThreads:
    """On the xdist controller: sets each local worker's thread variables as it starts."""

    def __init__(self, option: int | None) -> None:
        self.option = option

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[Any]) -> None:
        local = [spec for spec in specs if getattr(spec, "popen", False)]
        if not local:
            return  # workers on other machines: their cores are not ours to count
        chosen = plan(len(local), cores(), os.environ, self.option)
        if chosen.threads is not None:
            for spec in local:
                ours = dict.fromkeys(VARIABLES, str(chosen.threads))
                # `--tx popen//env:OMP_NUM_THREADS=4` is the user's too; the option wins over it.
                spec.env.update(ours if self.option is not None else {**ours, **spec.env})
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(chosen.line)


def worker_threads(config: pytest.Config) -> WorkerThreads | None:
    """The plugin for a run with xdist's workers, on its controller; None elsewhere."""
    if hasattr(config, "workerinput") or not config.pluginmanager.has_plugin("xdist"):
        return None
    return WorkerThreads(settings_of(config).threads)
