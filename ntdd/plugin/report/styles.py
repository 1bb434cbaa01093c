"""The page's own style sheets, allowed by their hashes in its content security policy.

The page's policy named no style sheet, allowing every inline one (`'unsafe-inline'`):
a `<style>` that reached the page from a notebook (a mermaid diagram's text was
written as it came) restyled the verdicts, a failed badge painted green. Now the
policy lists the hash of each `<style>` in the page's head, which the template
writes, and a browser applies no other.
"""

from __future__ import annotations

import base64
import hashlib
import re

PLACEHOLDER = "'ntdd-style-hashes'"  # where the template's policy wants the hashes
STYLE = re.compile(r"<style\b[^>]*>(.*?)</style\s*>", re.S | re.I)


def with_style_hashes(page: str) -> str:
    """*page* with its policy allowing the style sheets of its head, and no other."""
    end = page.find("</head>")
    head = page[:end] if end != -1 else ""
    hashes = " ".join(style_hash(text) for text in STYLE.findall(head)) or "'none'"
    return head.replace(PLACEHOLDER, hashes, 1) + page[len(head) :]


def style_hash(text: str) -> str:
    """The CSP source that allows a `<style>` of *text*: the hash of what a browser reads,
    its line ends as the HTML parser leaves them."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    digest = hashlib.sha256(text.encode("utf-8", "backslashreplace")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"
