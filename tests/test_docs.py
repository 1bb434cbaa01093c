"""The docs cannot drift: every setting, command option and exit code is in the reference.

The reference page is read against what the code itself registers (the
plugin's option parser and ini keys, the keys `[tool.ntdd]` accepts, the
`ntdd` commands' parsers), so a new setting fails here until it is written up.
"""

from __future__ import annotations

import argparse
import re

import pytest
import yaml
from _pytest.config.argparsing import Parser
from conftest import ROOT

import ntdd.plugin
from ntdd.commands import cli
from ntdd.settings.table import PYPROJECT_KEYS as KEYS
from ntdd.settings.table import ROWS

DOCS = ROOT / "docs"
REFERENCE = (DOCS / "reference.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The reference's text under the heading *title*, up to the next one of its level."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", REFERENCE, re.M | re.S)
    assert found, f"docs/reference.md has no section {title!r}"
    return found.group(1)


def plugin_parser() -> Parser:
    parser = Parser(_ispytest=True)
    ntdd.plugin.pytest_addoption(parser)
    return parser


def test_every_pytest_option_and_ini_key_of_the_plugin_is_in_the_reference() -> None:
    parser = plugin_parser()
    options = [n for o in parser.getgroup("ntdd").options for n in o.names() if n[:2] == "--"]
    documented = section("pytest options")
    assert options, "the plugin registers no options"
    missing = [o for o in options if f"`{o}`" not in documented and f"`{o} " not in documented]
    assert not missing, f"options missing from docs/reference.md: {missing}"
    # In a table's ini column: `ntdd`'s name alone begins every other key and command.
    ini_missing = [
        key
        for key in parser._inidict
        if not re.search(rf"\| `{re.escape(key)}( = [^`|]+)?` \|", documented)
    ]
    assert not ini_missing, f"ini keys missing from docs/reference.md: {ini_missing}"


@pytest.mark.parametrize("row", [r for r in ROWS if r.flag], ids=lambda r: r.name)
def test_each_settings_row_is_one_row_of_the_reference_with_its_ini_and_pyproject_keys(
    row: object,
) -> None:
    """The table's flag, ini key and `[tool.ntdd]` key of a setting, on one line."""
    flag, ini, key = (getattr(row, name) for name in ("flag", "ini", "pyproject"))
    lines = [
        line
        for line in section("pytest options").splitlines()
        if re.match(rf"\| `{re.escape(flag)}( [^`|]+)?` \|", line)
    ]
    assert len(lines) == 1, f"docs/reference.md: no one row for {flag}"
    assert ini is None or f"`{ini}" in lines[0], f"{flag}: its ini key {ini} is not on its row"
    assert key is None or f"`{key}" in lines[0] or f"[tool.ntdd] {key}`" in lines[0], key


def test_every_tool_ntdd_key_is_in_the_reference() -> None:
    documented = section("`[tool.ntdd]`")
    missing = [key for key in sorted(KEYS) if f"| `{key}` |" not in documented]
    assert not missing, f"[tool.ntdd] keys missing from docs/reference.md: {missing}"


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def long_flags(command: argparse.ArgumentParser) -> set[str]:
    return {
        flag
        for action in command._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


@pytest.mark.parametrize("name", sorted(commands()))
def test_every_option_of_every_command_is_in_the_reference(name: str) -> None:
    documented = section("Commands")
    rows = [line for line in documented.splitlines() if line.startswith(f"| `ntdd {name}")]
    assert rows, f"docs/reference.md has no row for `ntdd {name}`"
    every_command = set.intersection(*(long_flags(c) for c in commands().values()))
    own = sorted(long_flags(commands()[name]) - every_command)
    missing = [flag for flag in own if f"`{flag}" not in rows[0]]
    missing += [flag for flag in sorted(every_command) if f"`{flag}`" not in documented]
    assert not missing, f"`ntdd {name}` options missing from docs/reference.md: {missing}"


def test_every_exit_code_of_the_commands_is_in_the_reference() -> None:
    documented = section("Exit codes")
    codes = {cli.OK, cli.NOTHING_TO_DO, cli.BAD_INPUT, cli.FAULTS_MISSED, 130}
    missing = [code for code in sorted(codes) if f"| `{code}` |" not in documented]
    assert not missing, f"exit codes missing from docs/reference.md: {missing}"


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = {page for entry in config["nav"] for page in entry.values()}
    pages = {path.name for path in DOCS.glob("*.md")}
    assert nav == pages


def test_the_readme_is_a_door_and_its_links_lead_somewhere() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(((?!https?:)[^)#]+)", readme)
    assert links, "the README links into the docs"
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_the_readme_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = re.search(r"\| run the tests \| `([^`]+)` \|", readme)
    assert command, "the README's table has no test command"
    assert command.group(1) in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_readme_slow_tier_command_is_the_one_ci_runs_after_it() -> None:
    """A plain run leaves out the tests marked slow: CI must still run them, and the
    README must say how."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = re.search(r"\| run the tests \| `([^`]+)` \|", readme)
    slow = re.search(r"\| run the slow tier[^|]*\| `([^`]+)` \|", readme)
    assert quick and slow, "the README's table has no slow-tier command"
    assert slow.group(1) == f"{quick.group(1)} -m slow"
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quick.group(1) in script and script.index(slow.group(1)) > script.index(quick.group(1))
    workflow = (ROOT / ".github" / "workflows" / "ci.yml").read_text(encoding="utf-8")
    assert slow.group(1).removeprefix(".venv/bin/") in workflow
