"""The command line surface both targets share: flags, logging, shutdown, monitoring."""
from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import SpawnFn, connect_line, get_json, refused_start, wait_for_log
from conformance.rawclient import OK, PONG, RawClient, msg, pub
from conformance.servers import free_port


def test_sigterm_closes_clients_and_exits_zero(target: str, spawn: SpawnFn) -> None:
    """SIGTERM: connected clients see the connection closed (no -ERR), exit status 0."""
    srv = spawn()
    client = RawClient.connect(srv.host, srv.port)
    try:
        client.handshake()
        assert srv.proc is not None
        srv.proc.send_signal(signal.SIGTERM)
        client.assert_closed(timeout=5, expect_data=b"")
        assert srv.proc.wait(5) == 0
    finally:
        client.close()


def test_user_pass_flags(target: str, spawn: SpawnFn) -> None:
    """``--user``/``--pass`` enable user/password auth like the config block."""
    srv = spawn(args=["--user", "flaguser", "--pass", "flagpass"])
    with RawClient.connect(srv.host, srv.port) as good:
        assert good.info.get("auth_required") is True
        good.send(connect_line(verbose=True, user="flaguser", **{"pass": "flagpass"}))
        good.expect(OK)
    with RawClient.connect(srv.host, srv.port) as bad:
        bad.send(connect_line(verbose=True, user="flaguser", **{"pass": "nope"}))
        bad.assert_closed(expect_data=b"-ERR 'Authorization Violation'\r\n")


def test_auth_token_flag(target: str, spawn: SpawnFn) -> None:
    """``--auth TOKEN`` enables token auth."""
    srv = spawn(args=["--auth", "flagtoken"])
    with RawClient.connect(srv.host, srv.port) as good:
        assert good.info.get("auth_required") is True
        good.send(connect_line(verbose=True, auth_token="flagtoken"))
        good.expect(OK)
    with RawClient.connect(srv.host, srv.port) as bad:
        bad.send(connect_line(verbose=True, auth_token="other"))
        bad.assert_closed(expect_data=b"-ERR 'Authorization Violation'\r\n")


def test_debug_trace_logging(target: str, spawn: SpawnFn, subject: str) -> None:
    """``-DV`` logs debug lines and traces client protocol (``<<- [SUB ...]``) on stderr."""
    srv = spawn(args=["-DV"])
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake()
        client.send(f"SUB {subject} 1\r\n".encode() + pub(subject, b"t"))
        assert client.barrier() == msg(subject, 1, b"t")
    needle = f"<<- [SUB {subject} 1]"
    log = wait_for_log(srv, needle)
    assert "[DBG]" in log, f"no [DBG] line in the -DV log:\n{log}"
    trace = [line for line in log.splitlines() if needle in line]
    assert trace, f"no trace line containing {needle!r} in the -DV log:\n{log}"
    assert "[TRC]" in trace[0], trace[0]


def test_monitoring_healthz_and_varz(target: str, spawn: SpawnFn) -> None:
    """``-m PORT`` serves ``/healthz`` and ``/varz`` (matching the INFO) as JSON."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port)])
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake()
        assert get_json(http_port, "/healthz") == {"status": "ok"}
        varz = get_json(http_port, "/varz")
        assert varz["server_id"] == client.info["server_id"]
        assert varz["server_name"] == client.info["server_name"]
        assert varz["version"] == client.info["version"]
        assert varz["max_payload"] == client.info["max_payload"]
        assert varz["connections"] >= 1


def test_monitoring_connz(target: str, spawn: SpawnFn) -> None:
    """``/connz`` lists the open client connections by ``cid`` (the INFO ``client_id``)."""
    http_port = free_port()
    srv = spawn(args=["-m", str(http_port)])
    with RawClient.connect(srv.host, srv.port) as client:
        client.handshake()
        connz = get_json(http_port, "/connz")
        assert connz["server_id"] == client.info["server_id"]
        assert connz["num_connections"] >= 1
        cids = [c["cid"] for c in connz["connections"]]
        assert client.info["client_id"] in cids
        client.send(b"PING\r\n")
        client.expect(PONG)


def test_ports_file_dir(target: str, spawn: SpawnFn, tmp_path: Any) -> None:
    """``--ports_file_dir DIR``: ``<exe>_<pid>.ports`` holds the client and monitoring URLs as
    JSON while the server runs, and is removed at shutdown."""
    srv = spawn(args=["--ports_file_dir", str(tmp_path), "-m", "-1"], jetstream=True)
    assert srv.proc is not None
    deadline = time.monotonic() + 5
    files: list[Any] = []
    info: Any = None
    # nats-server creates the file, then writes it: an empty file may be seen for a moment.
    while time.monotonic() < deadline:
        files = [p for p in tmp_path.iterdir() if p.name.endswith(f"_{srv.proc.pid}.ports")]
        if files and files[0].read_text():
            info = json.loads(files[0].read_text())
            break
        time.sleep(0.02)
    assert len(files) == 1, list(tmp_path.iterdir())
    assert info is not None, "the ports file stayed empty"
    assert sorted(info) == ["monitoring", "nats"]
    assert info["nats"] == [f"nats://127.0.0.1:{srv.port}"]
    monitor_port = int(info["monitoring"][0].rsplit(":", 1)[1])
    assert info["monitoring"] == [f"http://127.0.0.1:{monitor_port}"]
    assert get_json(monitor_port, "/varz")["port"] == srv.port
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(5) == 0
    assert not files[0].exists()


def test_ports_file_dir_in_the_config_file(target: str, spawn: SpawnFn, tmp_path: Any) -> None:
    """``ports_file_dir`` in the config file (as nats.js's test harness writes it) works as the
    flag does: the ports file is there while the server runs, removed at shutdown."""
    ports = tmp_path / "ports"
    ports.mkdir()
    srv = spawn(config=f'ports_file_dir: "{ports}"\n')
    assert srv.proc is not None
    deadline = time.monotonic() + 5
    info: Any = None
    name = ""
    while time.monotonic() < deadline and info is None:
        for p in ports.iterdir():
            if p.name.endswith(f"_{srv.proc.pid}.ports") and p.read_text():
                info, name = json.loads(p.read_text()), p.name
        time.sleep(0.02)
    assert info is not None, list(ports.iterdir())
    assert info["nats"] == [f"nats://127.0.0.1:{srv.port}"]
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(5) == 0
    assert not (ports / name).exists()


def test_store_dir_that_is_a_file_stops_startup(target: str, tmp_path: Any) -> None:
    """``-js -sd FILE``: the server refuses to start, exits 1, and its fatal log line names the
    cause (``Can't start JetStream: storage directory is not a directory``)."""
    import subprocess

    from conformance.servers import URL_TARGET, command_for

    if target == URL_TARGET:
        pytest.skip("needs a specially configured server; not possible with --url")
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    proc = subprocess.run(command_for(target) + ["-a", "127.0.0.1", "-p", "-1", "-js", "-sd",
                                                 str(blocker)],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 1
    fatal = [ln for ln in proc.stderr.splitlines() if "[FTL]" in ln]
    assert fatal and fatal[-1].endswith(
        "[FTL] Can't start JetStream: storage directory is not a directory"), proc.stderr
    assert "Server is ready" not in proc.stderr


@pytest.mark.parametrize("value,error", [
    ('"1x"', 'time: unknown unit "x" in duration "1x"'),
    ('"5"', 'time: missing unit in duration "5"'),
    ('"1e3s"', 'time: unknown unit "e" in duration "1e3s"'),
    ('"9223372037s"', 'time: invalid duration "9223372037s"'),
    ('""', 'time: invalid duration ""'),
    ('"1.s5"', 'time: missing unit in duration "1.s5"'),
    ('"-"', 'time: invalid duration "-"'),
    ('"1\u00b5x"', r'time: unknown unit "\xc2\xb5x" in duration "1\xc2\xb5x"'),
], ids=["unknown-unit", "missing-unit", "exponent", "overflow", "empty", "unit-then-digit",
        "sign-only", "non-ascii-unit"])
def test_config_duration_errors(target: str, tmp_path: Path, value: str, error: str) -> None:
    """A duration setting Go's time.ParseDuration refuses stops the server with its error."""
    stderr = refused_start(target, tmp_path, f"ping_interval: {value}\n")
    assert f"error parsing ping_interval: {error}" in stderr, stderr
