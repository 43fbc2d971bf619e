"""Every example of docs/clusters.md's "Processes joined by routes" runs: the Python as it is,
the shell lines as they are (three minijs processes, checked through their INFO), the config
block with a second node it routes to."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _section() -> str:
    text = (DOCS / "clusters.md").read_text()
    start = text.index("## Processes joined by routes")
    end = text.find("\n## ", start + 3)
    return text[start:] if end < 0 else text[start:end]


def _blocks(lang: str) -> list[str]:
    return [code for kind, code in _BLOCK.findall(_section()) if kind == lang]


def _env() -> dict[str, str]:
    exe = Path(sys.executable).parent
    return dict(os.environ, PATH=f"{exe}{os.pathsep}{os.environ.get('PATH', '')}")


def _info(port: int) -> dict | None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            data = b""
            while b"\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    return None
                data += chunk
    except OSError:
        return None
    return json.loads(data.split(b"\r\n", 1)[0][5:])


def _wait_for(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.1)


def test_the_section_has_its_examples():
    assert len(_blocks("python")) == 1 and len(_blocks("bash")) == 1
    assert len(_blocks("conf")) == 1


@pytest.mark.parametrize("code", _blocks("python"))
def test_python_example(code: str, tmp_path: Path):
    path = tmp_path / "example.py"
    path.write_text(code)
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_shell_example(tmp_path: Path):
    """The three processes of the shell lines form a full mesh from one seed route."""
    shell = _blocks("bash")[0]
    ports = [int(p) for p in re.findall(r"-p (\d+)", shell)]
    assert len(ports) == 3
    proc = subprocess.Popen(["bash", "-c", shell + "\nwait\n"], cwd=tmp_path, env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        everyone = sorted(f"127.0.0.1:{p}" for p in ports)

        def meshed() -> bool:
            infos = [_info(p) for p in ports]
            return all(i is not None and sorted(i.get("connect_urls") or []) == everyone
                       for i in infos)
        _wait_for(meshed)
        info = _info(ports[1])
        assert info is not None and info["cluster"] == "demo" and info["server_name"] == "n2"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the group this test started
        _, err = proc.communicate(timeout=30)
    assert "Listening for route connections on 127.0.0.1:16223" in err.decode()


def test_config_example(tmp_path: Path):
    """The config block's node joins the node it routes to, presenting its credentials."""
    conf = _blocks("conf")[0]
    (tmp_path / "n5.conf").write_text(conf)
    port = int(re.search(r"^port: (\d+)", conf, re.M).group(1))
    target = re.search(r"ruser:rpass@127\.0\.0\.1:(\d+)", conf).group(1)
    peer = ["minijs", "-a", "127.0.0.1", "-p", "14226", "-n", "n6", "--cluster_name", "demo",
            "--cluster", f"nats://ruser:rpass@127.0.0.1:{target}"]
    procs = [subprocess.Popen(peer, cwd=tmp_path, env=_env(), stderr=subprocess.DEVNULL),
             subprocess.Popen(["minijs", "-c", "n5.conf"], cwd=tmp_path,
                              env=_env(), stderr=subprocess.DEVNULL)]
    try:
        def joined() -> bool:
            info = _info(port)
            return info is not None and sorted(info.get("connect_urls") or []) == [
                f"127.0.0.1:{port}", "127.0.0.1:14226"]
        _wait_for(joined)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
