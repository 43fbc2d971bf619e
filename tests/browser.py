"""Headless Chromium for the browser tests: Debian's ``chromium`` driven by Python playwright.

One place for how every browser test starts the browser (the monitoring page's, the
websocket client's): Debian's build at :data:`CHROMIUM` (``.ci/run`` installs it with apt when
it is missing), never a browser playwright would download, with the flags that keep a headless
run on this machine quiet and offline (:data:`ARGS`). Screenshots go to :data:`ARTIFACTS`
(``tests/artifacts/``, git-ignored; ``MINIJS_TEST_ARTIFACTS`` moves it), kept after the run.

    from browser import chromium_page, screenshot   # tests/ is on sys.path under pytest

    def test_page(...):
        with chromium_page() as page:
            page.goto(url)
            screenshot(page, "my-page")
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

#: Debian's chromium (apt-get install chromium).
CHROMIUM = "/usr/bin/chromium"
#: Headless, no sandbox (root in CI), no GPU, and nothing that reaches out to the network.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(os.environ.get("MINIJS_TEST_ARTIFACTS",
                                Path(__file__).resolve().parent / "artifacts"))

# playwright must never fetch a browser of its own (nothing here runs `playwright install`;
# this also stops any helper that would).
os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")


def require_chromium() -> None:
    """Skip, naming the cause and the fix, when playwright or Debian's chromium is missing."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("browser test: needs playwright (the 'test' extra: pip install -e '.[test]')")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"browser test: needs Debian's chromium at {CHROMIUM} "
                    "(apt-get install chromium; .ci/run installs it)")


@contextmanager
def chromium_page(*, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A fresh page in a fresh headless Chromium, closed afterwards."""
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page PNG as ``<ARTIFACTS>/<name>.png`` and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
