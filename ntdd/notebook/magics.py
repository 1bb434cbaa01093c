"""Which IPython magics ntdd runs under test and which it drops.

Decided once for planning (a dropped magic is reported when the notebook is
read) and for running (the shell answers only the runnable ones).
"""

from __future__ import annotations

# Magics that only shape a front-end's display or an editing session.
DISPLAY_ONLY = frozenset(
    {
        "matplotlib", "pylab", "config", "load_ext", "reload_ext", "unload_ext",
        "autoreload", "aimport", "xmode", "precision", "pprint", "colors", "who",
        "whos", "who_ls", "history", "notebook", "html", "HTML", "javascript", "js",
        "markdown", "latex", "svg", "autosave", "qtconsole", "connect_info", "autoawait",
        "page", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource", "pfile",
    }
)  # fmt: skip
# Magics that would change the environment under test; never run.
NEVER_RUN = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
# Magics run by IPython's own implementation, in the notebook's namespace.
RUNNABLE = frozenset(
    {
        "time", "timeit", "capture",  # ExecutionMagics
        "pwd", "cd", "env", "set_env", "pushd", "popd", "dirs", "dhist", "sx", "system",
        "writefile", "bookmark",  # OSMagics
        "script", "bash", "sh", "perl", "ruby", "python", "python2", "python3", "pypy",
    }
)  # fmt: skip
_ESCAPES = frozenset({"system", "getoutput"})  # `!cmd` and `x = !cmd`


def unsupported(names: tuple[str, ...]) -> list[str]:
    """What to say about the magics among *names* that ntdd does not run."""
    notes = []
    for name in names:
        if name.startswith("%"):
            notes.append(
                f"`%{name}` is not on the cell's first line, so it is no cell magic: "
                "the cell stops there with a UsageError, as in a kernel"
            )
        elif name not in RUNNABLE | DISPLAY_ONLY | _ESCAPES:
            notes.append(f"magic {name!r} will be dropped under test")
    return notes


def run_nothing(names: tuple[str, ...]) -> bool:
    """Whether a cell of only these magics does nothing under test (installs, display)."""
    return all(name in NEVER_RUN | DISPLAY_ONLY for name in names)
