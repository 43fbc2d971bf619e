"""MkDocs hook of the documentation site: docstrings use Sphinx's roles (``:class:`Clock```,
``:meth:`~minijs.virtualclock.VirtualClock.advance```), which mkdocstrings renders as Markdown; the
role's prefix is dropped here, and ``~`` keeps only the last name, as Sphinx shows it."""
from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|meth|attr|mod|func|data|exc|obj):<code>(~?)([^<]*)</code>")


def _plain(m: re.Match[str]) -> str:
    name = m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)
    return f"<code>{name}</code>"


def on_page_content(html: str, **_: Any) -> str:
    return _ROLE.sub(_plain, html)
