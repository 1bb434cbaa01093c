"""The version of ntdd: the installed distribution's, which the build takes from the
git tag (hatch-vcs, pyproject.toml).

Read from the metadata pip installed rather than from a file the build writes: in an
editable install any later build (`python -m build`, `pip wheel .`) would rewrite
that file under the running code, and `ntdd --version` would stop agreeing with
what is installed.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ntdd")
except PackageNotFoundError:  # the source tree on sys.path, never installed
    __version__ = "0.dev0"
