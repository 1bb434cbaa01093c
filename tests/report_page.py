"""Reading `--ntdd-report`'s page as tools read it (its `data-ntdd-*` marks), and as a
person opens it: in headless Chromium, offline."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import run


class Elements(HTMLParser):
    """The page's elements that carry ntdd's marks, with their attributes and text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.marked: list[dict[str, str]] = []  # elements with data-ntdd-outcome
        self.resources: list[str] = []  # what the page would fetch
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if "data-ntdd-outcome" in found:
            self.marked.append({"tag": tag, **found})
        if tag in ("script", "img", "iframe", "audio", "video", "source") and "src" in found:
            self.resources.append(found["src"])
        if tag == "link" and "href" in found:
            self.resources.append(found["href"])

    def cells(self) -> dict[str, str]:
        """Each cell's anchor and its verdict."""
        return {
            e["id"]: e["data-ntdd-outcome"]
            for e in self.marked
            if "ntdd-cell" in e.get("class", "").split()
        }

    def badges(self) -> list[tuple[str, str, str]]:
        return [
            (e["data-ntdd-test"], e["data-ntdd-device"], e["data-ntdd-outcome"])
            for e in self.marked
            if e.get("class") == "ntdd-badge" and "data-ntdd-test" in e
        ]


def report_of(pytester: pytest.Pytester, *args: str, name: str = "report.html") -> str:
    run(pytester, "--ntdd", f"--ntdd-report={name}", *args)
    return (pytester.path / name).read_text(encoding="utf-8")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="needs Chromium (apt-get install chromium), as .ci/run installs it"
)
# Headless as root, with Chromium's own background traffic off as far as flags allow.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CLOSED_NETWORK = ["--proxy-server=http://127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]
CHROMIUMS_OWN = re.compile(r"^https?://([\w-]+\.)*(google\.com|googleapis\.com|gvt1\.com)/")


def chromium(page: Path, tmp: Path, *options: str) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    profile.mkdir()
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *options, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


def requests_in(net_log: Path) -> list[str]:
    """The URLs Chromium's net log shows requested, less Chromium's own services."""
    urls = re.findall(r'"url":\s*"([^"]+)"', net_log.read_text(errors="replace"))
    return sorted({u for u in urls if u.startswith(("http", "ws")) and not CHROMIUMS_OWN.match(u)})
