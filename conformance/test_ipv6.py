"""IPv6 on the client listener, on both servers: a server started without ``-a`` (or with
``-a ::``) listens on every address, so ``[::1]`` and ``127.0.0.1`` both reach it, and an IPv4
client is reported by its IPv4 address; ``-a ::1`` listens on IPv6 loopback only; a config's
``listen: "[::1]:port"`` works; ``-a [::1]`` is refused as nats-server refuses it."""
from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from conformance.rawclient import parse_info
from conformance.servers import URL_TARGET, ServerProcess, command_for, free_port, spawn_server

pytestmark = pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6 on this machine")


def info_from(host: str, port: int) -> dict:
    with socket.create_connection((host, port), timeout=5) as sock:
        data = b""
        while not data.endswith(b"\r\n"):
            data += sock.recv(4096)
    return parse_info(data)


def started(target: str, args: list[str], config: str | None = None) -> ServerProcess:
    """``spawn_server`` adds ``-a 127.0.0.1``; a later ``-a`` (or none, via ``0.0.0.0``)
    decides where these servers listen."""
    if target == URL_TARGET:
        pytest.skip("needs a server of its own")
    return spawn_server(target, args=args, config=config)


@pytest.mark.parametrize("addr", ["0.0.0.0", "::"])
def test_wildcard_listener_is_dual_stack(target: str, addr: str) -> None:
    srv = started(target, ["-a", addr])
    try:
        v6 = info_from("::1", srv.port)
        v4 = info_from("127.0.0.1", srv.port)
        assert v6["client_ip"] == "::1"
        assert v4["client_ip"] == "127.0.0.1"
        assert v4["host"] == addr
        shown = f"[{addr}]" if ":" in addr else addr
        assert f"Listening for client connections on {shown}:{srv.port}" in srv.log
    finally:
        srv.stop()


def test_ipv6_loopback_only(target: str) -> None:
    srv = started(target, ["-a", "::1"])
    try:
        ours = info_from("::1", srv.port)
        assert ours["host"] == "::1"
        # nothing of this server on 127.0.0.1 (another process may own that port number on
        # IPv4: then it is not this server answering)
        try:
            other = info_from("127.0.0.1", srv.port)
        except OSError:
            pass
        else:
            assert other.get("server_id") != ours["server_id"]
        assert f"Listening for client connections on [::1]:{srv.port}" in srv.log
    finally:
        srv.stop()


def test_bracketed_listen_in_config(target: str, tmp_path: Path) -> None:
    """``listen: "[::1]:PORT"`` in a config file (no ``-a``/``-p`` flags to override it)."""
    import time

    if target == URL_TARGET:
        pytest.skip("needs a server of its own")
    port = free_port()
    conf = tmp_path / "v6.conf"
    conf.write_text(f'listen: "[::1]:{port}"\n')
    proc = subprocess.Popen(command_for(target) + ["-c", str(conf)], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        lines = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            line = proc.stderr.readline().decode()
            lines.append(line)
            if "Server is ready" in line or not line:
                break
        assert f"Listening for client connections on [::1]:{port}" in "".join(lines), lines
        assert info_from("::1", port)["port"] == port
    finally:
        proc.terminate()
        proc.wait(10)


def test_bracketed_flag_is_refused(target: str, tmp_path: Path) -> None:
    if target == URL_TARGET:
        pytest.skip("needs a server of its own")
    port = free_port()
    proc = subprocess.run(command_for(target) + ["-a", "[::1]", "-p", str(port)],
                          capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert proc.returncode != 0
    assert (f'Error listening on port: [[::1]]:{port}, "listen tcp: address [[::1]]:{port}: '
            'missing port in address"') in proc.stderr, proc.stderr
