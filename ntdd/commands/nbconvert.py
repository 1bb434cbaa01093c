"""`jupyter nbconvert --to ntdd`: the same module `ntdd export` writes, with its guards.

Registered under the `nbconvert.exporters` entry point, which also puts
"ntdd tests" in Jupyter's "Save and Export Notebook As" menu. It renders
through `make_plan` and `render_module`, as `ntdd export` does, and refuses
what export refuses: a notebook without tests, a file ntdd did not write in
the way, a module with edits not yet synced. `--output NAME` names the
module; by default it is `test_<notebook>.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.exporters import Exporter
from nbconvert.utils.exceptions import ConversionException

from ntdd.errors import NtddError
from ntdd.format.paths import module_name
from ntdd.modules.existing import ensure_ours, ensure_unedited, read_existing
from ntdd.notebook.read import parse_notebook
from ntdd.pipeline import build_module
from ntdd.values import Plan


class NtddExporter(Exporter):
    """Export a notebook's `# TEST` cells as a pytest module, `test_<name>.py`."""

    export_from_notebook = "ntdd tests"
    output_mimetype = "text/x-python"

    def _file_extension_default(self) -> str:
        return ".py"

    def from_notebook_node(  # type: ignore[override]  # the output is text, not a notebook
        self, nb: Any, resources: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        nb_copy, resources = super().from_notebook_node(nb, resources, **kw)
        meta = resources.get("metadata") or {}
        folder = Path(meta.get("path") or ".")
        name = meta.get("name") or "notebook"
        notebook = folder / f"{name}.ipynb"
        stem = self._module_stem(resources, name, notebook)
        target = (self._output_dir() or folder) / f"{stem}.py"
        try:
            plan, text = self._render(nb_copy, notebook, target)
        except NtddError as e:
            problem = str(e)
        else:
            problem = ""
        if problem:
            self._fail(problem)
        for warning in plan.warnings:
            self.log.warning("ntdd: %s", warning)
        resources["unique_key"] = stem
        resources["output_extension"] = ".py"
        return text, resources

    def _render(self, nb: Any, notebook: Path, target: Path) -> tuple[Plan, str]:
        """The module for *notebook*, if export would write it to *target*."""
        plan, text = build_module(
            parse_notebook(nb, notebook), module_dir=target.parent, render_empty=False
        )
        if text is None:
            raise NtddError(f"{notebook}: no test cells; nothing to export")
        existing = read_existing(target)
        if existing is not None and existing != text:
            ensure_ours(target, existing, notebook)
            ensure_unedited(target, existing)
        return plan, text

    def _module_stem(self, resources: dict[str, Any], name: str, notebook: Path) -> str:
        """`--output NAME` where given (nbconvert puts it in `unique_key`), else `test_<name>`."""
        given = resources.get("unique_key")
        if isinstance(given, str) and given and given != name:
            return given.removesuffix(".py")
        return Path(module_name(notebook)).stem

    def _output_dir(self) -> Path | None:
        """Where `--output-dir` sends the module, so its header points back correctly."""
        build_directory = self.config.get("FilesWriter", {}).get("build_directory")
        return Path(build_directory) if build_directory else None

    def _fail(self, message: str) -> Any:
        """One line, as `ntdd export` says it; nbconvert itself would add a traceback.

        Run from the `jupyter nbconvert` command, the app exits with status 1;
        anywhere else (Jupyter's export menu), a ConversionException says why.
        """
        from nbconvert.nbconvertapp import NbConvertApp

        if NbConvertApp.initialized():
            self.log.error("ntdd: error: %s", message)
            NbConvertApp.instance().exit(1)
        raise ConversionException(message)
