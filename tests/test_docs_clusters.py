"""Every Python example of docs/clusters.md runs: scripts as they are, pytest examples under
pytest with the minijs plugin (as tests/test_readme.py runs the README's)."""
from __future__ import annotations

from pathlib import Path

import pytest

from docexamples import python_blocks, run_python_example

PAGE = Path(__file__).resolve().parent.parent / "docs" / "clusters.md"
_TEXT = PAGE.read_text().split("## Processes joined by routes")[0]
PYTHON = python_blocks(_TEXT)


def test_page_has_examples() -> None:
    assert len(PYTHON) >= 2


@pytest.mark.parametrize("code", PYTHON, ids=[f"example{i}" for i in range(len(PYTHON))])
def test_docs_clusters_example(code: str, tmp_path: Path) -> None:
    run_python_example(code, tmp_path)
