"""Every Python example of docs/clusters.md runs: scripts as they are, pytest examples under
pytest with the minijs plugin (as tests/test_readme.py runs the README's)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parent.parent / "docs" / "clusters.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
_TEXT = PAGE.read_text().split("## Processes joined by routes")[0]
PYTHON = [code for kind, code in _BLOCK.findall(_TEXT) if kind == "python"]


def test_page_has_examples() -> None:
    assert len(PYTHON) >= 2


@pytest.mark.parametrize("code", PYTHON, ids=[f"example{i}" for i in range(len(PYTHON))])
def test_docs_clusters_example(code: str, tmp_path: Path) -> None:
    if re.search(r"^(async )?def test_", code, re.M):
        path = tmp_path / "test_docs_example.py"
        path.write_text(code)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
               str(path)]
    else:
        path = tmp_path / "example.py"
        path.write_text(code)
        cmd = [sys.executable, str(path)]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
