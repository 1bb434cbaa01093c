"""`jupyter nbconvert --to ntdd`: the same module `ntdd export` writes.

Registered under the `nbconvert.exporters` entry point, which also puts
"ntdd tests" in Jupyter's "Save and Export Notebook As" menu. It renders
through `make_plan` and `render_module`, exactly as `ntdd export` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbconvert.exporters import Exporter
from nbconvert.utils.exceptions import ConversionException

from ntdd.errors import NtddError
from ntdd.paths import module_path
from ntdd.plan import make_plan
from ntdd.reader import parse_notebook
from ntdd.render import render_module


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
        notebook = folder / f"{meta.get('name') or 'notebook'}.ipynb"
        try:
            plan = make_plan(parse_notebook(nb_copy, notebook))
            if not plan.tests:
                raise NtddError(f"{notebook}: no test cells; nothing to export")
            text = render_module(plan, module_dir=self._output_dir() or folder)
        except NtddError as e:
            raise ConversionException(str(e)) from e
        for warning in plan.warnings:
            self.log.warning("ntdd: %s", warning)
        resources["unique_key"] = module_path(notebook).stem
        resources["output_extension"] = ".py"
        return text, resources

    def _output_dir(self) -> Path | None:
        """Where `--output-dir` sends the module, so its header points back correctly."""
        build_directory = self.config.get("FilesWriter", {}).get("build_directory")
        return Path(build_directory) if build_directory else None
