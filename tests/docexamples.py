"""Running the Python examples of a documentation page: a script as it is, a block that defines
``test_`` functions under pytest with the minijs plugin (as the README's are run)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

#: A fenced block: its language and its code.
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def python_blocks(text: str) -> list[str]:
    """The code of every ``python`` block of ``text``."""
    return [code for kind, code in BLOCK.findall(text) if kind == "python"]


def run_python_example(code: str, tmp_path: Path) -> None:
    """Run one example in ``tmp_path``; fail with its output unless it exits 0."""
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
    proc = subprocess.run(cmd, cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
