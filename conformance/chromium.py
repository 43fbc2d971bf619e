"""Headless Chromium for every browser test of the project: Debian's ``chromium`` driven by
Python playwright, launched one way (the websocket case here, ``tests/test_monitor_page.py``
through ``tests/browser.py``).

Debian's build at :data:`CHROMIUM` (``.ci/run`` installs it with apt when missing), never a
browser playwright would download, with the flags that keep a headless run on this machine
quiet and offline (:data:`CHROMIUM_ARGS`). Nothing here imports minijs: the conformance
suite stands alone.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: Debian's chromium (apt-get install chromium).
CHROMIUM = "/usr/bin/chromium"
#: Headless, no sandbox (root in CI), no GPU, and nothing that reaches out to the network.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

# playwright must never fetch a browser of its own (nothing here runs `playwright install`).
os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


def missing() -> str | None:
    """What is missing to run a browser test, with the command that fixes it; None if
    nothing is."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing: pip install -e '.[test]' (the test extra)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
    return None


@contextmanager
def launched() -> Iterator[Any]:
    """A headless Debian chromium (a playwright ``Browser``), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            yield browser
        finally:
            browser.close()
