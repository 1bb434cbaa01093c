"""The one resolver: each setting from the command line, the ini, `[tool.ntdd]`, its default.

`settings_for(config)` builds the run's `Settings` the first time ntdd needs
them (at `pytest_configure` when the command line or the ini asks for ntdd,
else when ntdd wakes for a module it generated) and keeps them in
`config.stash`. A setting takes its value from the first place that gives
one: the command line, then the ini file, then `[tool.ntdd]`, then its
row's default (test-only parameters merge name by name, in the same order).
A value that does not parse is a usage error naming where it came from:
`ntdd: --ntdd-timeout: ...`, `ntdd: ini ntdd_timeout: ...`,
`ntdd: /repo/pyproject.toml [tool.ntdd]: ...`.

A setting that refines another (smoke mode's caps, the output checks') is
read only when that one is on. Other plugins' options that ntdd's depend on
(nbval's) are read here too. And the combinations that would silently
change what a file says are refused here, each in one line that names both
options as the user gave them and the way out (`refusal`).
"""

from __future__ import annotations

from typing import Any

import pytest

from ntdd.config import Smoke
from ntdd.errors import ConfigError
from ntdd.outputs.cleaning import Cleaning
from ntdd.parameters import Parameters
from ntdd.settings.parsers import PARSERS, Given
from ntdd.settings.pyproject import Project, read_project
from ntdd.settings.table import BY_NAME, is_set
from ntdd.settings.typed import SETTINGS, File, OutputChecking, Settings, Writing

NBVAL = (("nbval", "--nbval"), ("nbval_lax", "--nbval-lax"))  # nbval's checks of outputs
WRITE_COPIES = "write copies with --ntdd-write-notebooks DIR"


def settings_for(config: pytest.Config) -> Settings:
    """The run's settings: resolved the first time they are needed, then kept."""
    found = config.stash.get(SETTINGS, None)
    if found is None:
        found = config.stash[SETTINGS] = resolve(config)
    return found


def resolve(config: pytest.Config) -> Settings:
    """The settings, from every place that gives them; a usage error for a bad value or a
    combination refused."""
    try:
        resolver = _Resolver(config)
        settings = resolver.settings()
        refused = refusal(settings, resolver.nbval())
    except ConfigError as e:
        raise pytest.UsageError(f"ntdd: {e}") from e
    if refused:
        raise pytest.UsageError(f"ntdd: {refused}")
    return settings


class _Resolver:
    """Reads each setting from the first place that gives it, and says where that was."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.here = config.invocation_params.dir  # a path on the command line is relative to it
        self.ini_base = config.inipath.parent if config.inipath else config.rootpath
        self.project: Project = read_project(config.rootpath)
        self.sources: dict[str, str] = {}

    def settings(self) -> Settings:
        outputs = self._outputs()
        # An output check given on the command line implies `--ntdd`.
        enabled = bool(self.value("enabled")) or self._flag("outputs") or self._flag("outputs_lax")
        timeout = self.value("timeout")
        template = self.value("template")
        if template is not None and not template.is_file():
            raise ConfigError(f"{self.sources['template']}: {template}: no such file")
        report = self._given("report", pyproject=enabled)  # `[tool.ntdd] report`: `--ntdd` runs
        return Settings(
            enabled=enabled,
            devices=self.value("devices"),
            timeout=timeout or None,  # 0: no limit
            notebook_timeout=self.value("notebook_timeout") or None,  # 0: no budget
            parameters=self._parameters(),
            template=template,
            smoke=self._smoke(),
            # Every notebook whose outputs are checked runs to its end, tests or none.
            run_untested=bool(self.value("run_untested")) or outputs is not None,
            skip_eval_false=bool(self.value("skip_eval_false")),
            outputs=outputs,
            shard=self.value("shard"),
            durations=self._file(self._given("durations")),
            store_durations=self._file(self._given("store_durations")),
            summary=self._file(self._given("summary")),
            slow_cells=self.value("slow_cells"),
            slow_cells_min=self.value("slow_cells_min"),
            report=self._file(report),
            writing=self._writing(),
            threads=self.value("threads"),
            reuse=self._file(self._given("reuse")),
            sources=tuple(self.sources.items()),
        )

    def value(self, name: str) -> Any:
        """Setting *name*, parsed from the first place that gives it; its default if none."""
        return self._parsed(self._given(name), name)

    def nbval(self) -> list[str]:
        """nbval's own output checks, where the command line asks for them."""
        return [flag for dest, flag in NBVAL if self.config.getoption(dest, None)]

    def _given(self, name: str, pyproject: bool = True) -> Given | None:
        """The first place that gives *name*: the command line, the ini, `[tool.ntdd]`."""
        return next(iter(self._places(name, pyproject)), None)

    def _places(self, name: str, pyproject: bool = True) -> list[Given]:
        """Every place that gives *name*, the first first."""
        row = BY_NAME[name]
        places = []
        if row.flag is not None and is_set(value := self.config.getoption(row.dest)):
            places.append(Given(value, row.flag, self.here, name, row.flag))
        if row.ini is not None and is_set(value := self.config.getini(row.ini)):
            where = f"ini {row.ini}"
            places.append(Given(value, where, self.ini_base, name, where))
        found = self.project.given(name) if pyproject else None
        return [*places, found] if found is not None else places

    def _parsed(self, given: Given | None, name: str) -> Any:
        if given is None:
            return BY_NAME[name].default
        self.sources[name] = given.said
        return PARSERS[BY_NAME[name].parse](given)

    def _flag(self, name: str) -> bool:
        """Whether the command line gives the switch *name*."""
        return bool(self.config.getoption(BY_NAME[name].dest))

    def _file(self, given: Given | None) -> File | None:
        if given is None:
            return None
        path = self._parsed(given, given.name)
        return File(path, str(given.value), given.said)

    def _parameters(self) -> Parameters:
        """Every place's test-only parameters, merged name by name: the command line's over
        the ini's over `[tool.ntdd]`'s."""
        merged = Parameters()
        for given in reversed(self._places("parameters")):
            parsed: Parameters = PARSERS[BY_NAME["parameters"].parse](given)
            if parsed.common or parsed.by_notebook:
                self.sources["parameters"] = given.said  # the first place that gives any
            merged = parsed.over(merged)
        return merged

    def _smoke(self) -> Smoke | None:
        if not self.value("smoke"):
            return None
        return Smoke(
            batches=self.value("smoke_batches"),
            epochs=self.value("smoke_epochs"),
            examples=self.value("smoke_examples"),
            names=self.value("smoke_names"),
            min_seconds=self.value("smoke_min_seconds"),
        )

    def _outputs(self) -> OutputChecking | None:
        """`--ntdd-outputs`, `--ntdd-outputs-lax`, else `[tool.ntdd] outputs`, and how."""
        strict, lax = self._flag("outputs"), self._flag("outputs_lax")
        if strict or lax:
            for name, on in (("outputs", strict), ("outputs_lax", lax)):
                if on:
                    self.sources[name] = str(BY_NAME[name].flag)
        else:
            given = self.project.given("outputs")
            if given is None:
                return None
            strict = self._parsed(given, "outputs")
        nbvals = self.config.getoption("nbval_sanitize_with", None)  # nbval's, read as ours
        sanitize = self._given("outputs_sanitize_with", pyproject=False)
        if sanitize is None and nbvals:
            flag = "--nbval-sanitize-with"
            sanitize = Given(nbvals, flag, self.here, "outputs_sanitize_with", flag)
        sanitize = sanitize or self.project.given("outputs_sanitize_with")
        return OutputChecking(
            strict=strict,
            cleaning=Cleaning(
                patterns=self._parsed(sanitize, "outputs_sanitize_with") or (),
                normalisers=self.value("outputs_normalize"),
                digits=self.value("outputs_float_digits"),
            ),
            image_tolerance=self.value("outputs_image_tolerance"),
        )

    def _writing(self) -> Writing | None:
        folder = self.value("write_notebooks")
        in_place = bool(self.value("overwrite"))
        incomplete = bool(self.value("write_incomplete"))
        if folder is None and not in_place:
            return None
        option = self.sources["write_notebooks" if folder is not None else "overwrite"]
        return Writing(folder, option, incomplete)


def refusal(settings: Settings, nbval: list[str]) -> str | None:
    """Why these settings cannot be one run's, in one line naming both options as the user
    gave them and the way out; None where they can."""
    said = settings.said
    outputs = said("outputs") or said("outputs_lax")
    if said("outputs") and said("outputs_lax"):
        return f"{said('outputs')} and {said('outputs_lax')}: choose one"
    if settings.outputs is not None and nbval:
        return (
            f"{outputs} checks outputs as {nbval[0]} does, without a kernel: together each "
            f"cell would be checked twice; drop {nbval[0]} (its markers and "
            "--nbval-sanitize-with are read all the same)"
        )
    if settings.outputs is not None and settings.smoke is not None:
        return (
            f"{outputs} with {said('smoke')}: a smoke run's outputs are not the notebook's "
            "(its trainings cut short), and would be checked against those it saved; check "
            "outputs in a run without smoke mode"
        )
    if settings.outputs is not None and (
        settings.parameters.common or settings.parameters.by_notebook
    ):
        return (
            f"{outputs} with {said('parameters')}: the outputs of parameters the notebook's "
            "own cells do not set would be checked against those it saved; check outputs in "
            "a run without test-only parameters"
        )
    if said("write_notebooks") and said("overwrite"):
        return f"{said('write_notebooks')} and {said('overwrite')}: give one of them"
    if settings.reuse is not None and settings.writing is not None:
        return (
            f"{said('reuse')} with {settings.writing.option}: a reused notebook does not run, "
            "so it would not be written; write notebooks in a run without "
            f"{said('reuse')}"
        )
    if said("write_incomplete") and settings.writing is None:
        return (
            f"{said('write_incomplete')} writes with --ntdd-write-notebooks DIR or --ntdd-overwrite"
        )
    writing = settings.writing
    if writing is not None and writing.folder is None:  # each notebook written over
        if settings.smoke is not None:
            return (
                f"{writing.option} with {said('smoke')}: each notebook would be written over "
                f"with a smoke run's outputs, its trainings cut short; {WRITE_COPIES} (they "
                "say they are a smoke run's), or overwrite in a run without smoke mode"
            )
        if settings.parameters.common or settings.parameters.by_notebook:
            return (
                f"{writing.option} with {said('parameters')}: each notebook would be written "
                "over with the outputs of parameters its own cells do not set; "
                f"{WRITE_COPIES} (they say which), or overwrite in a run without test-only "
                "parameters"
            )
    return _one_file_twice(settings)


def _one_file_twice(settings: Settings) -> str | None:
    """Two options that name one file, where one would write over what the other writes
    (or reads): the summary, the report, the durations recorded and read. Recording the
    durations into the file that balances this run is their use."""
    files = [settings.summary, settings.report, settings.store_durations, settings.durations]
    named = [file for file in files if file is not None]
    for index, first in enumerate(named):
        for second in named[index + 1 :]:
            recorded_and_read = first is settings.store_durations and second is settings.durations
            if not recorded_and_read and first.path.resolve() == second.path.resolve():
                return (
                    f"{first.said} and {second.said} both name {second.given}: one would "
                    "write over what the other says; give each its own file"
                )
    return None
