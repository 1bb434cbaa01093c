"""Which IPython magics ntdd runs under test, which do nothing, and which cannot run.

Decided once for planning (the notes given when a notebook is read) and for
running (what the shell does with each). Under test a magic either runs with
IPython's own implementation, does nothing (it only shapes a display or an
editing session), is dropped with a note (an install: the environment under
test is the one given), or cannot run: in a `# TEST` cell that fails the
test, since the cell's code did not run; in a setup cell it is dropped with
a note.
"""

from __future__ import annotations

import functools
import getopt
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

# Magics that only shape a front-end's display or an editing session.
DISPLAY_ONLY = frozenset(
    {
        "matplotlib", "pylab", "config", "load_ext", "reload_ext", "unload_ext",
        "autoreload", "aimport", "xmode", "precision", "pprint", "colors", "who",
        "whos", "who_ls", "history", "notebook", "html", "HTML", "javascript", "js",
        "markdown", "latex", "svg", "autosave", "qtconsole", "connect_info", "autoawait",
        "page", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource", "pfile",
        "pycat", "load", "loadpy", "lsmagic", "magic", "quickref", "tb", "pdb",
        "automagic", "autocall", "doctest_mode", "gui", "logstart", "logstop", "logon",
        "logoff", "logstate", "clear", "less", "more", "man",
    }
)  # fmt: skip
# ntdd's own line magic, `%ntdd [-k EXPR] ...`: under test, the run it would start is
# the one running, so it does nothing, as `%load_ext ntdd` does.
OWN = "ntdd"
# Magics that would change the environment under test; never run.
NEVER_RUN = frozenset({"pip", "conda", "mamba", "micromamba", "uv"})
# Magics run by IPython's own implementation, in the notebook's namespace.
RUNNABLE = frozenset(
    {
        "time", "timeit", "capture", "run", "prun",  # ExecutionMagics
        "pwd", "cd", "env", "set_env", "pushd", "popd", "dirs", "dhist", "sx", "system",
        "writefile", "bookmark", "!",  # OSMagics
        "script", "bash", "sh", "perl", "ruby", "python", "python2", "python3", "pypy",
    }
)  # fmt: skip
# Other names IPython gives some magics (`%%file` is `%%writefile`).
ALIASES = {"file": "writefile", "hist": "history", "SVG": "svg", "ed": "edit", "rep": "recall"}
# Options a magic always gets under test: `%prun`'s report is printed, never paged.
UNDER_TEST = {"prun": "-q"}
ESCAPES = frozenset({"system", "getoutput"})  # `!cmd` and `x = !cmd`
INSTALLS = "installs never run under test"
UNKNOWN = "not a magic ntdd runs"
_RUN_OPTIONS = "nidtN:b:pD:l:rs:T:em:G"  # IPython's own, for `%run`
_CANNOT_RUN = {
    "debug": "it starts the interactive debugger",
    "edit": "it opens an editor",
}
_RUN_CANNOT = {
    "-d": "`%run -d` starts the interactive debugger",
    "-p": "`%run -p` shows its profile in a pager",
}
# Commands that install or remove packages: `!pip install x` is `%pip install x`.
_INSTALLERS = {
    "pip": {"install", "uninstall"},
    "conda": {"install", "update", "upgrade", "remove", "uninstall", "create"},
    "uv": {"add", "remove", "sync"},
}
# Options given before the subcommand that take the next word as their value (pip's
# general options; `--opt=value` is one word anyway).
_VALUE_OPTIONS = frozenset(
    {
        "--python", "--log", "--log-file", "--local-log", "--keyring-provider", "--proxy",
        "--retries", "--timeout", "--exists-action", "--trusted-host", "--cert",
        "--client-cert", "--cache-dir", "--use-feature", "--use-deprecated",
    }
)  # fmt: skip
_PIP = re.compile(r"pip(\d+(\.\d+)?)?(\.exe)?")
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?")
_SHELL_OPERATORS = re.compile(r"&&|\|\||[;|&\n]")


def name_of(name: str) -> str:
    """The magic's own name: `file` is `writefile`."""
    return ALIASES.get(name, name)


def known_line_magic(name: str) -> bool:
    """Whether IPython knows *name* as a line magic that ntdd does not run itself."""
    return name in DISPLAY_ONLY or name in NEVER_RUN or name in _CANNOT_RUN


def needs(name: str, line: str) -> tuple[str, ...]:
    """The modules a display-only magic imports in a kernel, which fails there without
    them: `%load_ext x` imports x; `%matplotlib` imports matplotlib, and its `widget`
    backend ipympl. Under test such a magic does nothing, but fails as a kernel would."""
    words = line.split()
    if name in ("load_ext", "reload_ext") and words and words[0] != OWN:
        return (words[0],)
    if name in ("matplotlib", "pylab"):
        backend = next((w for w in words if not w.startswith("-")), "")
        return ("matplotlib", "ipympl") if backend in ("widget", "ipympl") else ("matplotlib",)
    return ()


def does_nothing(name: str, prefix: str = "%") -> bool:
    """Whether the magic *name* (a line magic, or with *prefix* `%%` a cell magic) does
    nothing under test."""
    return name_of(name) in DISPLAY_ONLY or (prefix == "%" and name == OWN)


def is_install(name: str, line: str) -> bool:
    """`%pip install x`, and `!pip install x` (`!uv pip install`, `!python -m pip ...`)."""
    return name in NEVER_RUN or (name in ESCAPES and installs(line))


def cannot_run(name: str, line: str) -> str | None:
    """Why ntdd cannot run the magic *name* with *line* under test; None where it can.

    Installs and display-only magics are not asked about: they do not run,
    by design, and the test goes on.
    """
    name = name_of(name)
    if name == "run":
        return _run_problem(line)
    if name in RUNNABLE or name in ESCAPES or name in shell_aliases():
        return None
    return _CANNOT_RUN.get(name, UNKNOWN)


def _run_problem(line: str) -> str | None:
    try:
        options, _ = getopt.getopt(shlex.split(line), _RUN_OPTIONS)
    except (getopt.GetoptError, ValueError):
        return None  # IPython's own `%run` says what is wrong with it
    return next((_RUN_CANNOT[o] for o, _ in options if o in _RUN_CANNOT), None)


@functools.cache
def shell_aliases() -> dict[str, str]:
    """IPython's default aliases of shell commands: `%ls` runs `ls -F --color`."""
    from IPython.core.alias import default_aliases

    return dict(default_aliases())


def installs(command: str) -> bool:
    """Whether a shell command installs or removes packages, in any of its parts."""
    return any(_installs(part) for part in _SHELL_OPERATORS.split(command))


def _installs(part: str) -> bool:
    try:
        words = shlex.split(part)
    except ValueError:  # an unclosed quote: read it as words anyway
        words = part.split()
    words = _command_words(words)
    if len(words) >= 2 and words[0] == "uv" and words[1] == "pip":
        words = ["pip", *words[2:]]
    if not words:
        return False
    tool = "pip" if _PIP.fullmatch(words[0]) else words[0]
    tool = "conda" if tool in ("mamba", "micromamba") else tool
    return _subcommand(words[1:]) in _INSTALLERS.get(tool, set())


def _subcommand(words: list[str]) -> str:
    """The first word that is no option nor an option's value: `pip --timeout 60 -q install`."""
    rest = iter(words)
    for word in rest:
        if word in _VALUE_OPTIONS:
            next(rest, None)
        elif not word.startswith("-"):
            return word
    return ""


def _command_words(words: list[str]) -> list[str]:
    """The words of a command without `VAR=value` and `sudo` before it, and with
    `python -m` (`{sys.executable} -m`) read as the module it runs."""
    while words and ("=" in words[0] or words[0] == "sudo"):
        words = words[1:]
    if words:
        words = [os.path.basename(words[0]), *words[1:]]
    if len(words) >= 3 and _PYTHON.fullmatch(words[0]) and words[1] == "-m":
        words = words[2:]
    return words


@dataclass(frozen=True)
class MagicCall:
    """A magic or shell escape in a cell, as IPython's transformer calls it."""

    name: str  # "timeit"; "system" for `!cmd`, "getoutput" for `x = !cmd`
    line: str = ""  # what follows the name (an escape's command); "" where not a literal
    prefix: str = "%"  # "%", "%%" or "!"

    @property
    def spelled(self) -> str:
        """As the notebook writes it, near enough: `%run -d x.py`, `!pip install x`."""
        if self.prefix == "!":
            return f"!{self.line}"
        return f"{self.prefix}{self.name} {self.line}".rstrip()


def notes(calls: Iterable[MagicCall], in_test: bool) -> list[str]:
    """What to say, when a notebook is read, about the magics that will not run."""
    found = []
    for call in calls:
        name, line = call.name, call.line
        if name.startswith("%"):
            found.append(
                f"`%{name}` is not on the cell's first line, so it is no cell magic: "
                "the cell stops there with a UsageError, as in a kernel"
            )
        elif is_install(name, line):
            found.append(f"{call.spelled!r} will be dropped: {INSTALLS}")
        elif not does_nothing(name, call.prefix) and (reason := cannot_run(name, line)):
            outcome = "the test fails" if in_test else "it will be dropped"
            found.append(f"{call.spelled!r} cannot run under test ({reason}): {outcome}")
    return found


def run_nothing(calls: Iterable[MagicCall]) -> bool:
    """Whether a setup cell of only these magics does nothing under test: installs,
    display-only magics, and those that cannot run (dropped from a setup cell)."""
    return all(
        is_install(c.name, c.line) or does_nothing(c.name, c.prefix) or cannot_run(c.name, c.line)
        for c in calls
    )
