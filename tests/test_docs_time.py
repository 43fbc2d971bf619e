"""Every Python example of docs/time.md runs: scripts as they are, pytest examples under
pytest with the minijs plugin (as tests/test_readme.py runs the README's)."""
from __future__ import annotations

from pathlib import Path

import pytest

from docexamples import python_blocks, run_python_example

PAGE = Path(__file__).resolve().parent.parent / "docs" / "time.md"
PYTHON = python_blocks(PAGE.read_text())


def test_page_has_examples() -> None:
    assert len(PYTHON) >= 4


@pytest.mark.parametrize("code", PYTHON, ids=[f"example{i}" for i in range(len(PYTHON))])
def test_docs_time_example(code: str, tmp_path: Path) -> None:
    run_python_example(code, tmp_path)
