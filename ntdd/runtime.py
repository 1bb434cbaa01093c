"""What a generated test module runs: the notebook's setup, per device, in its globals.

A generated module *is* the notebook's namespace. Its setup cells run in order
in the module's globals, as a kernel runs them, the first time a test needs
them: once per device, never once per test. Tests then read notebook names as
globals. When the module's last test ends, the namespace is released.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ntdd.containment import ctrl_c_pressed
from ntdd.magics import NotebookShell, display
from ntdd.source import DEVICE, source_lines, to_python

#: Devices that `device` tests run on; the plugin sets it from `--ntdd-devices`.
DEVICES: tuple[str, ...] = tuple(
    d.strip() for d in os.environ.get("NTDD_DEVICES", "cpu,cuda").split(",") if d.strip()
)

#: Called with (namespace, device) after each successful setup; `ntdd faults`
#: injects its faults here, into the namespace and never into the notebook.
AFTER_SETUP: list[Callable[[dict[str, Any], str], None]] = []


class SetupError(Exception):
    """A setup cell raised: every test of the notebook errors with its traceback."""


@dataclass(frozen=True)
class SetupCode:
    """One setup cell, as the module carries it."""

    index: int
    id: str | None
    code: str
    assigns_device: bool = False
    expects_exception: bool = False


class NotebookRuntime:
    """Runs one notebook's setup in the namespace of its generated module."""

    def __init__(self, namespace: dict[str, Any], notebook: str, uses_device: bool = False):
        self.namespace = namespace
        self.uses_device = uses_device
        module_file = namespace.get("__file__") or "."
        self.notebook = (Path(module_file).parent / notebook).resolve()
        self.display_path = _relative_to_cwd(self.notebook)  # now: tests change the cwd
        self.devices = DEVICES or ("cpu",)
        self._cells: list[SetupCode] = []
        self._pristine: dict[str, Any] | None = None
        self._current: str | None = None  # device the namespace was set up for
        self._failures: dict[str, BaseException] = {}
        self._running = ""

    def setup(
        self,
        index: int,
        cell_id: str | None,
        code: str,
        assigns_device: bool = False,
        expects_exception: bool = False,
    ) -> None:
        """Register a setup cell; it runs when the first test needs it."""
        self._cells.append(SetupCode(index, cell_id, code, assigns_device, expects_exception))

    # -- devices ---------------------------------------------------------

    def device(self, name: str) -> Any:
        """The value a `device` test gets: a `torch.device`, or the name without torch."""
        reason = device_unavailable(name)
        if reason:
            pytest.skip(f"{name}: {reason}")
        return device_value(name)

    def needs(self, name: str) -> pytest.MarkDecorator:
        """`@cuda` in a marker: skip the test, with the reason, where there is no CUDA."""
        reason = device_unavailable(name)
        return pytest.mark.skipif(bool(reason), reason=f"needs {name}: {reason}")

    def broken(self, index: int, cell_id: str | None, problem: str) -> None:
        """The body of a test cell that cannot run: fail, naming the cell and why."""
        ident = f" (id {cell_id})" if cell_id else ""
        pytest.fail(f"{self.display_path}: cell {index}{ident}: {problem}", pytrace=False)

    # -- running ---------------------------------------------------------

    def test(self, request: pytest.FixtureRequest) -> Iterator[None]:
        """Around each test: the setup for its device, in the notebook's folder.

        A generator for the module's autouse fixture (`yield from`), so that
        no context-manager frames stand between a failure and its cell.
        """
        __tracebackhide__ = True
        callspec = getattr(request.node, "callspec", None)
        params = callspec.params if callspec is not None else {}
        device = str(params.get(DEVICE, self.devices[0]))
        with self.in_notebook_dir():
            self.ensure(device)
            yield

    @contextlib.contextmanager
    def in_notebook_dir(self) -> Iterator[None]:
        """The notebook's folder as cwd and first on sys.path, as in a kernel; restored."""
        folder = str(self.notebook.parent)
        saved_cwd = os.getcwd()
        sys.path.insert(0, folder)
        try:
            os.chdir(folder)
            yield
        finally:
            os.chdir(saved_cwd)
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)

    def ensure(self, device: str) -> None:
        """Run the setup for *device* unless the namespace already holds it."""
        __tracebackhide__ = True
        if device in self._failures:
            raise SetupError(
                f"{self.notebook.name}: setup failed for device {device!r}; "
                "the traceback is shown for the first test that needed it"
            )
        if self._current == device:
            return
        self.reset()
        try:
            self._run_setup(device)
        except (Exception, SystemExit, KeyboardInterrupt) as e:
            if isinstance(e, KeyboardInterrupt) and ctrl_c_pressed():
                raise
            where = self._running
            self.reset()
            self._failures[device] = e
            raise SetupError(f"{where} raised {type(e).__name__}: {e}") from e
        self._current = device
        for hook in AFTER_SETUP:
            hook(self.namespace, device)

    def reset(self) -> None:
        """Back to the namespace the module had after import: no notebook state."""
        if self._pristine is None:
            self._pristine = dict(self.namespace)
        self.namespace.clear()
        self.namespace.update(self._pristine)
        self._current = None

    def release(self) -> None:
        """Drop the notebook's state once its last test ended, freeing its memory."""
        self.reset()
        self._failures.clear()

    def _run_setup(self, device: str) -> None:
        __tracebackhide__ = True
        ns = self.namespace
        ns["get_ipython"] = _shell_factory(ns, lambda: self._running or self.display_path)
        ns["display"] = display
        if self.uses_device:
            ns[DEVICE] = device_value(device)
        for cell in self._cells:
            self._running = self.cell_filename(cell.index, cell.id)
            code = self._compile(cell)
            try:
                if cell.assigns_device:
                    exec(code, ns, PinnedDevice(ns, device))
                else:
                    exec(code, ns)
            except Exception as e:
                if not cell.expects_exception:
                    raise
                print(f"{self._running}: raised {type(e).__name__} as marked", file=sys.stderr)
        self._running = ""

    def _compile(self, cell: SetupCode) -> Any:
        """Compile a setup cell under its own name; IPython syntax is transformed first."""
        filename = self.cell_filename(cell.index, cell.id)
        lines = source_lines(cell.code)
        linecache.cache[filename] = (len(cell.code), None, lines, filename)
        try:
            return compile(cell.code, filename, "exec", dont_inherit=True)
        except SyntaxError as error:
            try:
                python = to_python(cell.code)
            except SyntaxError:
                raise error from None
            return compile(python.code, filename, "exec", dont_inherit=True)

    def cell_filename(self, index: int, cell_id: str | None) -> str:
        """How tracebacks name a setup cell: `nb.ipynb (setup cell 3, id 1a2b)`.

        No angle brackets: pytest hides frames of files named `<...>`, and these
        frames are the ones a reader needs to see.
        """
        ident = f", id {cell_id}" if cell_id else ""
        return f"{self.display_path} (setup cell {index}{ident})"

    def __repr__(self) -> str:
        return f"<NotebookRuntime {self.display_path}>"


class PinnedDevice(MutableMapping[str, Any]):
    """Module-level names of a setup cell, with `device` pinned to the device under test.

    The usual `device = torch.device("cuda" if ... else "cpu")` then builds the
    model on the device the test runs for. Every other name goes straight to
    the module's globals, so functions defined in the cell see them.
    """

    def __init__(self, namespace: dict[str, Any], device: str) -> None:
        self._ns = namespace
        self._device = device

    def __getitem__(self, key: str) -> Any:
        return self._ns[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._ns[key] = pin_device(value, self._device) if key == DEVICE else value

    def __delitem__(self, key: str) -> None:
        del self._ns[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ns)

    def __len__(self) -> int:
        return len(self._ns)


def pin_device(value: Any, device: str) -> Any:
    """*value* moved to *device* if it names a device (a string or `torch.device`)."""
    if isinstance(value, str):
        return device
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.device):
        return torch.device(device)
    return value


def device_value(name: str) -> Any:
    try:
        import torch
    except ImportError:
        return name
    return torch.device(name)


def device_unavailable(name: str) -> str:
    """Why *name* cannot be used here, or "" when it can."""
    if name == "cpu":
        return ""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if name == "meta":
        return ""
    backend = getattr(torch, name, None) or getattr(torch.backends, name, None)
    available = getattr(backend, "is_available", None)
    if available is None:
        return f"torch has no {name!r} backend"
    return "" if available() else f"torch.{name}.is_available() is False"


def _relative_to_cwd(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def _shell_factory(ns: dict[str, Any], where: Any) -> Any:
    shell = NotebookShell(ns, where)
    return lambda: shell
