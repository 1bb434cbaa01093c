"""The workflow file `ntdd init` writes: `templates/workflow.yml.j2` filled with its options.

Nothing is looked up while rendering: `WorkflowOptions` holds every decision
(`workflow.plan`). Here are only what the YAML spells: the `paths:` that start
the workflow, GitHub's filter characters escaped, and the pattern (`ntdd list
--depends-on`) of the changes that test every notebook.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

import jinja2

from ntdd.errors import ForeignFileError
from ntdd.notebook.files import write_atomic
from ntdd.pipeline.templates import template_dir
from ntdd.repository.installs import TORCH_CPU_INDEX
from ntdd.repository.workflow import DURATIONS_FILE, WorkflowOptions

WORKFLOW_TEMPLATE = "workflow.yml.j2"
_GLOB_SPECIAL = frozenset("*?+[!\\")  # what a backslash escapes in a paths: filter

# Files whose change can change any notebook's outcome, by name, anywhere in
# the repository: dependencies and lock files, and pytest and ntdd configuration.
DEPENDENCY_FILES = (
    "requirements*.txt",
    "requirements*.in",
    "constraints*.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "pdm.lock",
    "uv.lock",
    "environment.yml",
    "environment.yaml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "conftest.py",
    "pytest.ini",
    "tox.ini",
)


def render_workflow(options: WorkflowOptions) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        autoescape=False,  # the output is YAML, not HTML
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["prefix"] = lambda text, prefix: prefix + text
    env.filters["sh"] = shlex.quote  # a word for bash, whatever a requirement holds
    template = env.get_template(WORKFLOW_TEMPLATE)
    return template.render(
        o=options,
        i=options.installs,
        torch_index=TORCH_CPU_INDEX,
        paths=trigger_paths(options),
        dependencies=dependency_pattern(options.workflow_name, options.sources),
        durations=DURATIONS_FILE,
        reuse_key=reuse_cache_key(options),
        gh=_github_expression,
    )


def trigger_paths(options: WorkflowOptions) -> list[str]:
    """The `paths:` that start the workflow; none (every change) for notebooks, or
    modules, at the top."""
    if "." in (options.notebooks, *options.module_folders):
        return []
    return [
        f"{glob_escape(options.notebooks)}/**",
        *(f"{glob_escape(folder)}/**" for folder in options.module_folders),
        *(glob_escape(path) + ("**" if path.endswith("/") else "") for path in options.sources),
        *(glob_escape(path) + ("**" if path.endswith("/") else "") for path in options.data),
        *(f"**/{name}" for name in DEPENDENCY_FILES),
        glob_escape(f".github/workflows/{options.workflow_name}"),
    ]


def reuse_cache_key(options: WorkflowOptions) -> str:
    """The prefix of the cache key that keeps `--ntdd-reuse`'s store (`ntdd init --reuse`):
    the runner's OS, the Python, the dependency files' hash, and the shard. ntdd keys
    each notebook's entry by all it depends on; this keeps one cache per environment, so
    that a runner restores the store of the run most like its own."""
    files = ", ".join(f"'**/{name}'" for name in DEPENDENCY_FILES)
    shard = f"-shard-{_github_expression('matrix.shard')}" if options.shards > 1 else ""
    return (
        f"ntdd-reuse-{_github_expression('runner.os')}-py{options.python}-"
        f"{_github_expression(f'hashFiles({files})')}{shard}"
    )


def glob_escape(path: str) -> str:
    """*path* as a `paths:` filter that matches it alone: GitHub's filters read `*`,
    `?`, `+`, `[`, `!` (and `\\`) as patterns unless a backslash escapes them, so that
    `C++ labs` or `!drafts` unescaped would match no edit of theirs."""
    return "".join(f"\\{c}" if c in _GLOB_SPECIAL else c for c in path)


def dependency_pattern(workflow_name: str, sources: Sequence[str] = ()) -> str:
    """A regular expression (`ntdd list --depends-on`) for the changes that test every
    notebook: the files in `DEPENDENCY_FILES`, the workflow, and *sources*, the
    repository's code the notebooks run (a folder, ending with `/`, and what it holds)."""
    names = "|".join(_glob_as_regex(name) for name in DEPENDENCY_FILES)
    code = "".join(f"|^{re.escape(s)}" + ("" if s.endswith("/") else "$") for s in sources)
    return f"(^|/)({names})$|^{_glob_as_regex(f'.github/workflows/{workflow_name}')}${code}"


def write_workflow(path: Path, text: str, force: bool = False) -> Path:
    """Write the workflow to *path*; an existing file is replaced only with *force*."""
    if path.exists() and not force:
        raise ForeignFileError(f"{path}: exists; not overwriting it (use --force)")
    write_atomic(path, text)
    return path


def _glob_as_regex(glob: str) -> str:
    """A file-name glob (`*` only) as an ERE: `*` stays within one folder."""
    special = set(".[]()+?{}|^$\\")
    return "".join("[^/]*" if c == "*" else f"\\{c}" if c in special else c for c in glob)


def _github_expression(text: str) -> str:
    return "${{ " + text + " }}"
