"""Every code example in docs/tls.md and docs/websocket.md runs: Python blocks as scripts,
``conf`` blocks as the config of a started ``minijs`` (and of nats-server, which must take the
same file), ``bash`` lines starting with ``minijs`` as commands that must reach "Server is
ready". The certificate files the examples name are made here with trustme; a fixed port in a
config (8080) becomes a free one."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trustme

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ("tls.md", "websocket.md")
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _blocks(lang: str) -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for kind, code in _BLOCK.findall((DOCS / page).read_text()):
            if kind == lang:
                out.append((page, code))
    return out


def _ids(blocks: list[tuple[str, str]]) -> list[str]:
    return [f"{page}-{i}" for i, (page, _) in enumerate(blocks)]


@pytest.fixture
def certs_dir(tmp_path: Path) -> Path:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    cert = ca.issue_cert("localhost", "127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp_path / "server-cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "server-key.pem"))
    return tmp_path


def _ready(cmd: list[str], cwd: Path) -> str:
    proc = subprocess.Popen(cmd, cwd=cwd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            text=True)
    lines = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "Server is ready" in line:
                return "".join(lines)
        raise AssertionError(f"{cmd} did not start:\n{''.join(lines)}")
    finally:
        proc.terminate()
        proc.wait(10)


def test_pages_have_examples() -> None:
    assert len(_blocks("python")) >= 2 and len(_blocks("conf")) >= 3


@pytest.mark.parametrize("page,code", _blocks("python"), ids=_ids(_blocks("python")))
def test_python_example(page: str, code: str, tmp_path: Path) -> None:
    path = tmp_path / "example.py"
    path.write_text(code)
    proc = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.mark.parametrize("page,code", _blocks("conf"), ids=_ids(_blocks("conf")))
def test_conf_example_starts_both_servers(page: str, code: str, certs_dir: Path) -> None:
    conf = certs_dir / "server.conf"
    conf.write_text(code.replace("port: 8080", "port: -1"))
    flags = ["-c", str(conf), "-p", "-1", "-a", "127.0.0.1"]
    log = _ready([sys.executable, "-m", "minijs", *flags], certs_dir)
    assert "Listening for client connections" in log
    nats_server = shutil.which("nats-server") or str(Path(sys.executable).parent / "nats-server")
    _ready([nats_server, *flags], certs_dir)


@pytest.mark.parametrize("page,code", _blocks("bash"), ids=_ids(_blocks("bash")))
def test_shell_example(page: str, code: str, certs_dir: Path) -> None:
    lines = [ln for ln in code.splitlines() if ln.startswith("minijs ")]
    assert lines
    for line in lines:
        args = line.split()[1:]
        log = _ready([sys.executable, "-m", "minijs", *args, "-p", "-1", "-a", "127.0.0.1"],
                     certs_dir)
        assert "TLS required for client connections" in log or "websocket" in log
