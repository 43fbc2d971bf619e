"""Every code example in README.md runs: Python scripts as they are, pytest examples under
pytest (with the minijs plugin), and the control-plane shell lines through the CLI."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[str]:
    return [code for kind, code in _BLOCK.findall(README.read_text()) if kind == lang]


PYTHON = _blocks("python")


def _id(code: str) -> str:
    for line in code.splitlines():
        if line.startswith(("async def test_", "def test_", "async def main", "with ")):
            return re.sub(r"\W+", "_", line)[:40]
    return re.sub(r"\W+", "_", code.splitlines()[-1])[:40]


def test_readme_has_examples():
    assert len(PYTHON) >= 8


@pytest.mark.parametrize("code", PYTHON, ids=[f"{i}-{_id(c)}" for i, c in enumerate(PYTHON)])
def test_readme_python_example(code: str, tmp_path: Path):
    env = dict(os.environ)
    if "pyspark" in code:
        pytest.importorskip("pyspark", reason="the Spark example needs the 'spark' extra")
    if re.search(r"^(async )?def test_", code, re.M):
        path = tmp_path / "test_readme_example.py"
        path.write_text(code)
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function",
               str(path)]
    else:
        path = tmp_path / "example.py"
        path.write_text(code)
        cmd = [sys.executable, str(path)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_readme_control_plane_shell_lines(tmp_path: Path):
    """The `minijs -js --control --clock virtual` line starts a server that answers the
    `nats req` lines of the README (sent here from nats-py: the nats CLI is not installed)."""
    shell = next(b for b in _blocks("bash") if "$MINIJS.CLOCK.ADVANCE" in b)
    lines = [ln for ln in shell.splitlines() if ln.strip()]
    start = lines[0].rstrip(" &").split()
    assert start[:4] == ["minijs", "-js", "--control", "--clock"]
    requests = [re.match(r"nats req '([^']+)' '(.*)'$", ln).groups() for ln in lines[1:]]
    proc = subprocess.Popen([sys.executable, "-m", "minijs", *start[1:], "-p", "-1",
                             "-a", "127.0.0.1"], stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in proc.stderr:
            m = re.search(r"Listening for client connections on \S+:(\d+)", line)
            if m:
                port = int(m.group(1))
            if "Server is ready" in line:
                break
        assert port is not None

        async def run() -> list[dict]:
            import nats

            nc = await nats.connect(f"nats://127.0.0.1:{port}")
            js = nc.jetstream()
            await js.add_stream(name="ORDERS", subjects=["orders.>"])
            await js.add_consumer("ORDERS", durable_name="worker")
            out = []
            for subject, body in requests:
                out.append(json.loads((await nc.request(subject, body.encode())).data))
            await nc.close()
            return out

        import asyncio

        advance, fault = asyncio.run(run())
        assert advance["virtual"] is True and "fired" in advance
        assert fault["rule"]["status"] == 408
    finally:
        proc.terminate()
        proc.wait(10)
