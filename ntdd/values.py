"""The frozen values passed between the pipeline stages: a notebook's cells and its plan.

notebook (reader) -> Notebook -> plan -> Plan -> render -> module source.
Nothing here does I/O or imports pytest. (Not named `model`: in a PyTorch
tool that word means an `nn.Module`.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

# The fixture a test names to run once per device: planning finds it, the runtime gives it.
DEVICE = "device"


@dataclass(frozen=True)
class Cell:
    """One notebook cell, as ntdd needs it."""

    index: int  # as a person counts in Jupyter: 1 is the first cell; every cell counts
    cell_type: str
    source: str
    id: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How messages name the cell: ``cell 3 (id 1a2b3c)``."""
        return f"cell {self.index}" + (f" (id {self.id})" if self.id else "")


@dataclass(frozen=True)
class Notebook:
    """A notebook read from disk: its path, cells and format version."""

    path: Path
    cells: tuple[Cell, ...]
    nbformat: int = 4
    nbformat_minor: int = 5


@dataclass(frozen=True)
class Mark:
    """A pytest mark on a test: ``@slow``, ``@xfail("why")``, ``@cuda``.

    Arguments are source text (``"'why'"``, ``"ZeroDivisionError"``): a mark
    is written back exactly as read, and marks with lists still hash.
    """

    name: str
    args: tuple[str, ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()


class TestKind(Enum):
    """How a test cell becomes code in the module."""

    __test__ = False  # not a pytest test class

    STATEMENTS = "statements"  # bare statements wrapped in one function
    FUNCTIONS = "functions"  # `def test_*` kept as written, at module level
    CELL = "cell"  # bare statements that mean something else in a function: run as a cell
    BROKEN = "broken"  # cannot be compiled: one test that fails with the reason


@dataclass(frozen=True)
class SetupCell:
    """A code cell that builds the state the tests use."""

    cell: Cell
    code: str  # the cell's source, magics included (transformed when it runs)
    assigns_device: bool = False  # assigns the notebook's `device` variable
    expects_exception: bool = False  # marked to raise (`raises-exception` tag)
    inert: bool = False  # only comments, installs and display magics: nothing runs under test
    eval_false: bool = False  # `#| eval: false`: run, unless the run skips such cells


@dataclass(frozen=True)
class TestCell:
    """A `# TEST` cell and the test functions it becomes."""

    __test__ = False

    cell: Cell
    kind: TestKind
    code: str  # Python source of the cell, IPython syntax transformed
    names: tuple[str, ...]  # test function names, in order
    marks: tuple[Mark, ...] = ()
    title: str = ""  # the name written after `# TEST:`
    uses_device: frozenset[str] = frozenset()  # which of `names` use the device
    device_args: frozenset[str] = frozenset()  # ... of those, take it as an argument
    renames: tuple[tuple[str, str], ...] = ()  # (as written, as emitted) to keep names unique
    problem: str = ""  # why a BROKEN cell cannot run, or why a CELL cannot be a function
    assigned: tuple[str, ...] = ()  # names a STATEMENTS cell binds: declared global
    global_after: int = 0  # the cell line after which that declaration goes (its docstring)
    is_async: bool = False  # awaits at its top level
    empty: bool = False  # comments only: the wrapping function needs a `pass`
    own_marks: bool = False  # a cell of functions whose every test has decorators of its own
    binds: frozenset[str] = frozenset()  # names a cell of functions binds at its top level
    reads_at_import: frozenset[str] = frozenset()  # ... and those its top level reads as it runs


@dataclass(frozen=True)
class SkippedCell:
    """A setup cell excluded from test runs, and why."""

    cell: Cell
    reason: str


@dataclass(frozen=True)
class ParametersCell:
    """Where test-only parameters go in (papermill's convention), and their values."""

    index: int  # the cell tagged `parameters`, or the first code cell
    after: bool  # after that cell (it is tagged), or before it (none is)
    values: tuple[tuple[str, str], ...] = ()  # (name, literal source)


@dataclass(frozen=True)
class EndTest:
    """The test that runs the cells below the notebook's last test, as Run All runs them.

    Without it, a cell after the last test (a final `assert`, a crash) would
    never run under test, and the run would pass where Run All raises.
    """

    __test__ = False

    name: str
    after: int  # the notebook's last code cell
    cells: tuple[int, ...]  # the setup cells it is there for: below every test sure to run
    marks: tuple[Mark, ...] = ()  # those every test cell has, that would leave a test out


@dataclass(frozen=True)
class Plan:
    """Everything the renderer needs to write one test module."""

    notebook: Notebook
    setup: tuple[SetupCell, ...]
    tests: tuple[TestCell, ...]
    skipped: tuple[SkippedCell, ...] = ()
    content_hash: str = ""
    warnings: tuple[str, ...] = field(default=())
    parameters: ParametersCell | None = None
    end: EndTest | None = None

    @property
    def uses_device(self) -> bool:
        return any(t.uses_device for t in self.tests)

    @property
    def test_names(self) -> tuple[str, ...]:
        return tuple(name for t in self.tests for name in t.names)
