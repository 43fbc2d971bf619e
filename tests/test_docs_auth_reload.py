"""Every code example of docs/nkeys-jwt.md and docs/reload.md runs: Python as it is, the bash
lines with the minijs command (a config file written for them)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
PAGES = ("nkeys-jwt.md", "reload.md")


def _blocks(lang: str) -> list[tuple[str, str]]:
    return [(page, code) for page in PAGES
            for kind, code in _BLOCK.findall((DOCS / page).read_text()) if kind == lang]


PYTHON = _blocks("python")


def test_the_pages_have_examples():
    assert len(PYTHON) >= 5


@pytest.mark.parametrize("page,code", PYTHON, ids=[f"{p}-{i}" for i, (p, _) in
                                                   enumerate(PYTHON)])
def test_python_example(page: str, code: str, tmp_path: Path):
    path = tmp_path / "example.py"
    path.write_text(code)
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_signal_shell_lines(tmp_path: Path):
    """The reload page's shell lines: start with a pid file, reload, quit."""
    shell = next(code for page, code in _blocks("bash") if "--signal reload" in code)
    (tmp_path / "server.conf").write_text("port: -1\nlisten: 127.0.0.1:-1\n")
    exe = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{exe}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run(["bash", "-e", "-c", shell], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Reloaded server configuration" in proc.stderr
    assert 'Trapped "interrupt" signal' in proc.stderr
