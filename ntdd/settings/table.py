"""Every setting of ntdd, declared once: one `Row` each, in `ROWS`.

A row names the setting, the places it can be given (a pytest flag, an ini
key, a `[tool.ntdd]` key), the parser that reads its value, its default and
its help. `add_options` makes pytest's options and ini keys from the rows
(`ntdd.plugin.pytest_addoption`); `ntdd.settings.resolve` reads them; the
reference page is held to them (`tests/test_docs.py`).

Every pytest run imports this module: it imports nothing but `ntdd.defaults`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ntdd.defaults import (
    DEFAULT_DEVICES,
    DEFAULT_FLOAT_DIGITS,
    DEFAULT_IMAGE_TOLERANCE,
    DEFAULT_SMOKE_BATCHES,
    DEFAULT_SMOKE_EPOCHS,
    DEFAULT_SMOKE_EXAMPLES,
    DEFAULT_SMOKE_MIN_SECONDS,
    DEFAULT_SMOKE_NAMES,
    DEFAULT_TIMEOUT,
)

GROUP = ("ntdd", "ntdd: notebooks as test suites")


class Row(NamedTuple):
    """One setting: where it can be given, how its value is read, what it is by default.

    A named tuple, not a dataclass: making a dataclass costs every pytest run milliseconds.
    """

    name: str  # the setting's name; the `Settings` field that holds it, where one does
    parse: str  # its parser, by name (`ntdd.settings.parsers.PARSERS`)
    flag: str | None = None  # its pytest option, e.g. `--ntdd-timeout`
    metavar: str | None = None  # what the flag takes; None: a switch, on when given
    repeat: bool = False  # the flag may be given more than once, each value kept
    help: str = ""  # the flag's line in `pytest --help`
    dest_: str | None = None  # the flag's dest, where it is not the flag's own name
    ini: str | None = None  # its ini key
    ini_type: str = "string"  # as pytest's `parser.addini` types it
    ini_help: str = ""
    pyproject: str | None = None  # its key in `[tool.ntdd]`
    default: Any = None  # its value where nothing gives one

    @property
    def dest(self) -> str:
        """Where pytest keeps the flag's value (`config.option.<dest>`)."""
        assert self.flag is not None
        return self.dest_ or self.flag.removeprefix("--").replace("-", "_")


def _smoke_cap(name: str, what: str, default: int) -> Row:
    return Row(
        f"smoke_{name}",
        "count",
        flag=f"--ntdd-smoke-{name}",
        metavar="N",
        help=f"in smoke mode, the most {what}; default {default} (ini: ntdd_smoke_{name})",
        ini=f"ntdd_smoke_{name}",
        ini_help=f"smoke mode: the most {what}",
        pyproject=f"smoke_{name}",
        default=default,
    )


# In the order `pytest --help` lists them.
ROWS: tuple[Row, ...] = (
    Row(
        "enabled",
        "switch",
        flag="--ntdd",
        dest_="ntdd",
        help="collect .ipynb files and run their `# TEST` cells (ini: ntdd = true)",
        ini="ntdd",
        ini_type="bool",
        ini_help="collect notebooks, as --ntdd does",
        default=False,
    ),
    Row(
        "timeout",
        "seconds",
        flag="--ntdd-timeout",
        metavar="SECONDS",
        help="fail a notebook test that runs longer, setup included; default "
        f"{DEFAULT_TIMEOUT:g}, 0 for none (ini: ntdd_timeout)",
        ini="ntdd_timeout",
        ini_help="seconds per notebook test, setup included",
        pyproject="timeout",
        default=DEFAULT_TIMEOUT,
    ),
    Row(
        "notebook_timeout",
        "budget",
        flag="--ntdd-notebook-timeout",
        metavar="SECONDS",
        help="fail a notebook whose cells and tests together run longer: the test running "
        "then and every test of the notebook after it; off by default, 0 or none for none "
        "(ini: ntdd_notebook_timeout)",
        ini="ntdd_notebook_timeout",
        ini_help="seconds per notebook, all its cells and tests together",
        pyproject="notebook_timeout",
    ),
    Row(
        "devices",
        "devices",
        flag="--ntdd-devices",
        metavar="LIST",
        help="devices that tests using `device` run on: cpu, cuda, cuda:N, mps; "
        "default cpu,cuda (ini: ntdd_devices)",
        ini="ntdd_devices",
        ini_help="devices for `device` tests, e.g. cpu,cuda",
        pyproject="devices",
        default=DEFAULT_DEVICES,
    ),
    Row(
        "parameters",
        "parameters",
        flag="--ntdd-param",
        metavar="NAME=VALUE",
        repeat=True,
        dest_="ntdd_params",
        help="override a notebook's `parameters` cell under test, e.g. num_epochs=1; "
        "a Python literal; repeat for more (ini: ntdd_parameters)",
        ini="ntdd_parameters",
        ini_type="args",
        ini_help="test-only parameters, e.g. num_epochs=1 lr=0.1",
        pyproject="parameters",
    ),
    Row(
        "run_untested",
        "switch",
        flag="--ntdd-run-untested",
        help="run each notebook without `# TEST` cells as one test, "
        "test_notebook_runs_to_the_end: it passes when Run All would "
        "(ini: ntdd_run_untested)",
        ini="ntdd_run_untested",
        ini_type="bool",
        ini_help="run notebooks without tests, one test each",
        pyproject="run_untested",
        default=False,
    ),
    Row(
        "skip_eval_false",
        "switch",
        flag="--ntdd-skip-eval-false",
        help="leave out the cells marked `#| eval: false`, as nbdev_test and Quarto do; "
        "by default they run, as in a kernel's Run All (ini: ntdd_skip_eval_false)",
        ini="ntdd_skip_eval_false",
        ini_type="bool",
        ini_help="leave out the cells marked `#| eval: false`",
        pyproject="skip_eval_false",
        default=False,
    ),
    Row(
        "shard",
        "shard",
        flag="--ntdd-shard",
        metavar="K/N",
        help="run the K-th of N disjoint shards; a notebook (a file) is never split",
    ),
    Row(
        "durations",
        "file",
        flag="--ntdd-durations",
        metavar="FILE",
        help="balance shards by the seconds recorded in FILE, not by test count "
        "(ini: ntdd_durations)",
        ini="ntdd_durations",
        ini_help="durations file that balances --ntdd-shard",
    ),
    Row(
        "store_durations",
        "file",
        flag="--ntdd-store-durations",
        metavar="FILE",
        help="record each notebook's (each file's) seconds in FILE, for --ntdd-durations",
    ),
    Row(
        "threads",
        "threads",
        flag="--ntdd-threads",
        metavar="N",
        help="under -n, each worker's torch and BLAS threads (OMP_NUM_THREADS, "
        "MKL_NUM_THREADS, OPENBLAS_NUM_THREADS); default auto: the cores it has to itself, "
        "unless the environment sets them (ini: ntdd_threads)",
        ini="ntdd_threads",
        ini_help="torch and BLAS threads per xdist worker: N or auto",
        pyproject="threads",
    ),
    Row(
        "slow_cells",
        "count",
        flag="--ntdd-slow-cells",
        metavar="N",
        help="after the run, list the N slowest notebook cells, setup and test: notebook, "
        "cell number and id, seconds; off by default (ini: ntdd_slow_cells)",
        ini="ntdd_slow_cells",
        ini_help="list the N slowest notebook cells after the run",
        pyproject="slow_cells",
    ),
    Row(
        "slow_cells_min",
        "seconds",
        flag="--ntdd-slow-cells-min",
        metavar="SECONDS",
        help="list only cells that took at least SECONDS (with --ntdd-slow-cells); "
        "default 0 (ini: ntdd_slow_cells_min)",
        ini="ntdd_slow_cells_min",
        ini_help="the least seconds a cell --ntdd-slow-cells lists took",
        pyproject="slow_cells_min",
        default=0.0,
    ),
    Row(
        "summary",
        "file",
        flag="--ntdd-summary",
        metavar="FILE",
        help='append a Markdown summary of the results to FILE (e.g. "$GITHUB_STEP_SUMMARY")',
    ),
    Row(
        "report",
        "file",
        flag="--ntdd-report",
        metavar="FILE",
        help="write the run as one HTML page to FILE: the notebooks, each test cell marked "
        "with its verdict ([tool.ntdd] report; needs ntdd[nbconvert])",
        pyproject="report",
    ),
    Row(
        "smoke",
        "switch",
        flag="--ntdd-smoke",
        help="smoke mode: DataLoaders yield few batches a pass and training loops run few "
        "times; tests marked @full_run are skipped (ini: ntdd_smoke)",
        ini="ntdd_smoke",
        ini_type="bool",
        ini_help="run notebooks in smoke mode",
        pyproject="smoke",
        default=False,
    ),
    _smoke_cap("batches", "batches a DataLoader yields per pass", DEFAULT_SMOKE_BATCHES),
    _smoke_cap(
        "epochs", "times a training loop runs (and the --ntdd-smoke-names)", DEFAULT_SMOKE_EPOCHS
    ),
    _smoke_cap(
        "examples",
        "examples a Dataset yields a pass to a training loop that iterates it itself",
        DEFAULT_SMOKE_EXAMPLES,
    ),
    Row(
        "smoke_names",
        "names",
        flag="--ntdd-smoke-names",
        metavar="LIST",
        help="in smoke mode, names whose integer values (`max_epochs=10`) are capped like "
        f"epochs; default {','.join(DEFAULT_SMOKE_NAMES)} (ini: ntdd_smoke_names)",
        ini="ntdd_smoke_names",
        ini_help="smoke mode: names capped like epochs",
        pyproject="smoke_names",
        default=DEFAULT_SMOKE_NAMES,
    ),
    Row(
        "smoke_min_seconds",
        "seconds",
        flag="--ntdd-smoke-min-seconds",
        metavar="SECONDS",
        help="in smoke mode, cut a training loop or a DataLoader's pass only where the rest "
        "of it would take this long, from its first passes; 0 cuts every one; default "
        f"{DEFAULT_SMOKE_MIN_SECONDS:g} (ini: ntdd_smoke_min_seconds)",
        ini="ntdd_smoke_min_seconds",
        ini_help="smoke mode: the least a cut must save, in seconds",
        pyproject="smoke_min_seconds",
        default=DEFAULT_SMOKE_MIN_SECONDS,
    ),
    Row(
        "write_notebooks",
        "folder",
        flag="--ntdd-write-notebooks",
        metavar="DIR",
        help="write each notebook as it ran (its cells' fresh outputs and execution counts) "
        "into DIR, at its path under the rootdir; only notebooks whose run completed",
    ),
    Row(
        "overwrite",
        "switch",
        flag="--ntdd-overwrite",
        help="write each notebook as it ran over the notebook itself, as nbmake --overwrite "
        "does; only notebooks whose run completed and that did not change meanwhile",
        default=False,
    ),
    Row(
        "write_incomplete",
        "switch",
        flag="--ntdd-write-incomplete",
        help="with --ntdd-write-notebooks or --ntdd-overwrite, also write notebooks whose "
        "run did not complete, with the outputs it had",
        default=False,
    ),
    Row(
        "outputs",
        "outputs",
        flag="--ntdd-outputs",
        help="check every code cell's fresh outputs against those saved in the notebook, as "
        '--nbval does, in this run (implies --ntdd; [tool.ntdd] outputs = "strict")',
        pyproject="outputs",
    ),
    Row(
        "outputs_lax",
        "switch",
        flag="--ntdd-outputs-lax",
        help="check the outputs of the cells marked # NBVAL_CHECK_OUTPUT only, as "
        '--nbval-lax does (implies --ntdd; [tool.ntdd] outputs = "lax")',
        default=False,
    ),
    Row(
        "outputs_sanitize_with",
        "sanitize_file",
        flag="--ntdd-outputs-sanitize-with",
        metavar="FILE",
        help="regex/replace pairs applied to outputs before they compare, in nbval's "
        "sanitize-file format (--nbval-sanitize-with is read too)",
        pyproject="outputs_sanitize_with",
    ),
    Row(
        "outputs_normalize",
        "normalisers",
        flag="--ntdd-outputs-normalize",
        metavar="LIST",
        help="normalisers for brittle outputs: addresses, timestamps, durations, tqdm, "
        "floats, or all; default none, as nbval",
        pyproject="outputs_normalize",
        default=frozenset(),
    ),
    Row(
        "outputs_float_digits",
        "digits",
        flag="--ntdd-outputs-float-digits",
        metavar="N",
        help=f"significant digits the floats normaliser keeps; default {DEFAULT_FLOAT_DIGITS}",
        pyproject="outputs_float_digits",
        default=DEFAULT_FLOAT_DIGITS,
    ),
    Row(
        "outputs_image_tolerance",
        "image_tolerance",
        flag="--ntdd-outputs-image-tolerance",
        metavar="X",
        help="the largest perceptual distance between a saved figure and the fresh one "
        f"that passes (default {DEFAULT_IMAGE_TOLERANCE:g}), size (compare sizes only) or off "
        "(not compared, as nbval); a cell sets its own with `#| image-tolerance: X`",
        pyproject="outputs_image_tolerance",
        default=DEFAULT_IMAGE_TOLERANCE,
    ),
    Row(
        "reuse",
        "folder",
        flag="--ntdd-reuse",
        metavar="DIR",
        help="reuse a notebook's verdicts from an earlier run kept in DIR when nothing that "
        "can change them changed (its bytes, the files it imports or names, the options, "
        "ntdd, Python, the installed packages); off by default (ini: ntdd_reuse)",
        ini="ntdd_reuse",
        ini_help="folder of verdicts a later run reuses, as --ntdd-reuse",
        pyproject="reuse",
    ),
    # `[tool.ntdd]` only: `ntdd export`'s, and a template `pytest --ntdd` renders with too.
    Row("output", "path", pyproject="output"),
    Row("template", "path", pyproject="template"),
)

BY_NAME = {row.name: row for row in ROWS}
PYPROJECT_KEYS = frozenset(row.pyproject for row in ROWS if row.pyproject)


def add_options(parser: Any) -> None:
    """pytest's options and ini keys, one of each a row gives, in the rows' order."""
    group = parser.getgroup(*GROUP)
    for row in ROWS:
        if row.flag is not None:
            if row.metavar is None:
                group.addoption(
                    row.flag, action="store_true", default=None, dest=row.dest, help=row.help
                )
            elif row.repeat:
                group.addoption(
                    row.flag,
                    action="append",
                    default=[],
                    dest=row.dest,
                    metavar=row.metavar,
                    help=row.help,
                )
            else:
                group.addoption(row.flag, dest=row.dest, metavar=row.metavar, help=row.help)
        if row.ini is not None:
            # Unset, a bool is None and a string "": the next place decides.
            default: object = {"bool": None, "string": "", "args": []}[row.ini_type]
            parser.addini(row.ini, row.ini_help, type=row.ini_type, default=default)


def is_set(value: object) -> bool:
    """Whether a flag's or an ini key's value was given: pytest gives None, "" or []
    for one that was not (a switch given is True; an ini bool given may be False)."""
    return value is not None and value != "" and value != []


def asked(config: Any) -> bool:
    """Whether the command line or the ini file gives any of ntdd's settings: if not,
    ntdd sleeps until a module it generated is collected, and reads nothing more."""
    return any(
        (row.flag is not None and is_set(config.getoption(row.dest)))
        or (row.ini is not None and is_set(config.getini(row.ini)))
        for row in ROWS
    )
