"""One `pytest --ntdd` run of a notebook, in full or in smoke mode, in a child process.

The child is the user's own pytest, started as they would start it (their
ini, their `[tool.ntdd]`, their conftest and plugins), in its own session so
that an interrupt ends it and its workers, with `-p no:randomly` (the
notebook's order) and no cache written. Each test's verdict is read from the
JUnit XML it writes (`verdicts`), and its CPU is the children's user and
system time, read from the OS before and after. A full run is a full run
whatever the project says: `-o ntdd_smoke=false` outranks `[tool.ntdd]
smoke = true`, and a full run that still says smoke mode is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntdd.errors import NtddError
from ntdd.marking.verdicts import Verdict, read_junit
from ntdd.notebook.files import path_argument

SMOKE_SAID = "ntdd: smoke mode"  # its header, and its summary (the header is gone under -q)
_TAIL = 3000  # characters of a run's output shown where it could not run


@dataclass(frozen=True)
class Settings:
    """What the runs are given: the user's devices, timeout and test-only parameters."""

    devices: str | None = None
    timeout: str | None = None
    params: tuple[str, ...] = ()

    def pytest_args(self) -> list[str]:
        args = ["--ntdd-devices", self.devices] if self.devices else []
        args += ["--ntdd-timeout", self.timeout] if self.timeout else []
        for param in self.params:
            args += ["--ntdd-param", param]
        return args

    def faults_args(self) -> list[str]:
        args = ["--devices", self.devices] if self.devices else []
        return args + (["--timeout", self.timeout] if self.timeout else [])


@dataclass(frozen=True)
class Run:
    """One run: each test's verdict by its id (`test_x`, `test_x[cpu]`), and its CPU."""

    smoke: bool
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    cpu: float | None = None  # seconds of user and system time; None where not measured


def run_tests(notebook: Path, smoke: bool, settings: Settings) -> Run:
    """The notebook's tests, once, in a child pytest; `NtddError` where pytest could not run."""
    with tempfile.TemporaryDirectory(prefix="ntdd-mark-") as folder:
        junit = Path(folder) / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", "--ntdd", "-p", "no:randomly",
            "-p", "no:cacheprovider", f"--junit-xml={junit}",
            "-o", f"ntdd_smoke={'true' if smoke else 'false'}",
            *(["--ntdd-smoke"] if smoke else []), *settings.pytest_args(),
            path_argument(notebook),
        ]  # fmt: skip
        code, output, errors, cpu = _child(command, Path(folder))
        mode = "smoke run" if smoke else "full run"
        if code not in (0, 1) or not junit.is_file():
            said = (output + errors).strip()[-_TAIL:]
            raise NtddError(f"{notebook}: pytest could not make its {mode} (exit {code}):\n{said}")
        if not smoke and SMOKE_SAID in output:
            raise NtddError(
                f"{notebook}: its full run ran in smoke mode: `--ntdd-smoke` is among the "
                "project's pytest addopts; take it out of addopts (keep `smoke = true` in "
                "[tool.ntdd], which the full run overrides)"
            )
        return Run(smoke, read_junit(junit), cpu)


def run_faults(notebook: Path, smoke: bool, settings: Settings) -> dict[str, Any]:
    """`ntdd faults --json` on the notebook, in full or in smoke mode: its notebook's report."""
    with tempfile.TemporaryDirectory(prefix="ntdd-mark-") as folder:
        command = [
            sys.executable, "-m", "ntdd", "faults", "--json", *settings.faults_args(),
            *(["--smoke"] if smoke else []), path_argument(notebook),
        ]  # fmt: skip
        code, output, errors, _ = _child(command, Path(folder))
    mode = "in smoke mode" if smoke else "in full"
    try:
        report = json.loads(output)
    except ValueError:
        report = None
    if code not in (0, 1) or not isinstance(report, dict) or not report.get("notebooks"):
        said = errors.strip()[-_TAIL:]
        raise NtddError(f"{notebook}: `ntdd faults` could not run {mode} (exit {code}):\n{said}")
    found: dict[str, Any] = report["notebooks"][0]
    return found


def _child(command: Sequence[str], folder: Path) -> tuple[int, str, str, float | None]:
    """Run *command* in its own session: its exit code, its stdout and its stderr (through
    files in *folder*), and the CPU it and its children used."""
    out_path, err_path = folder / "stdout.txt", folder / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err, _cpu() as used:
        child = subprocess.Popen(
            command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True
        )
        try:
            code = child.wait()
        except BaseException:  # an interrupt: the child and its workers end too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
            child.wait()
            raise
    read = [p.read_text(encoding="utf-8", errors="replace") for p in (out_path, err_path)]
    return code, read[0], read[1], used[0]


@contextlib.contextmanager
def _cpu() -> Iterator[list[float | None]]:
    """The user and system seconds the children waited for inside the block used."""
    used: list[float | None] = [None]
    try:
        import resource
    except ImportError:  # not on this OS: the CPU goes unmeasured
        yield used
        return
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield used
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
