"""Headless Chromium for minijs's own browser tests: pages and screenshots on top of the one
launcher every browser test of the project uses (:mod:`conformance.chromium`: Debian's
``chromium`` through playwright, never a downloaded browser, the same flags).

Screenshots go to :data:`ARTIFACTS` (``tests/artifacts/``, git-ignored; the environment
variable ``MINIJS_TEST_ARTIFACTS`` moves it) and are kept after the run.

    from browser import chromium_page, screenshot   # tests/ is on sys.path under pytest

    def test_page(...):
        with chromium_page() as page:
            page.goto(url)
            screenshot(page, "my-page")
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from conformance import chromium

ARTIFACTS = Path(os.environ.get("MINIJS_TEST_ARTIFACTS",
                                Path(__file__).resolve().parent / "artifacts"))


def require_chromium() -> None:
    """Skip, naming the cause and the fix, when playwright or Debian's chromium is missing
    (a fresh machine; .ci/run installs both)."""
    why = chromium.missing()
    if why:
        pytest.skip(f"browser test: {why}")


@contextmanager
def chromium_page(*, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A fresh page in a fresh headless Chromium, closed afterwards."""
    require_chromium()
    with chromium.launched() as browser:
        yield browser.new_page(viewport={"width": width, "height": height})


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page PNG as ``<ARTIFACTS>/<name>.png`` and return its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
