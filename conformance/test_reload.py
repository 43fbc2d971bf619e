"""Config reload and signals: SIGHUP reloads the config file (users, permissions, limits)
with live clients re-checked and kept connected; what cannot be reloaded is refused and the
old config kept; SIGUSR1 reopens the log file; ``--signal CMD=PIDFILE`` sends them."""
from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.helpers import SpawnFn, connect_line
from conformance.rawclient import OK, PONG, RawClient, msg, pub
from conformance.servers import ServerProcess, command_for

PERMS_BEFORE = """authorization { users = [
  {user: a, password: a, permissions: {publish: ">", subscribe: ">"}}
  {user: b, password: b}
] }
max_payload: 1000
"""
PERMS_AFTER = """authorization { users = [
  {user: a, password: a, permissions: {publish: "ok", subscribe: "ok"}}
  {user: c, password: c}
] }
max_payload: 2000
"""


def conf_path(ep: ServerProcess) -> Path:
    assert ep.tempdir is not None
    return Path(ep.tempdir.name) / "server.conf"


def wait_log(ep: Any, needle: str, timeout: float = 5.0, text: Any = None) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = text() if text is not None else ep.log
        if needle in log:
            return log
        time.sleep(0.02)
    raise AssertionError(f"{needle!r} not logged:\n{text() if text is not None else ep.log}")


def reload_with(ep: ServerProcess, config: str, done: str = "") -> None:
    """Write ``config`` over the server's config file and send SIGHUP; wait for the reload
    (or its failure) to be logged."""
    before = ep.log.count("Trapped \"hangup\" signal")
    conf_path(ep).write_text(config)
    assert ep.proc is not None
    ep.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 5
    while ep.log.count("Trapped \"hangup\" signal") == before or not (
            ep.log.rstrip().endswith(("Reloaded server configuration", ")"))
            or "Failed to reload" in ep.log.split("Trapped \"hangup\" signal")[-1]):
        if time.monotonic() > deadline:
            raise AssertionError(f"no reload logged:\n{ep.log}")
        time.sleep(0.02)
    if done:
        wait_log(ep, done)


def login(ep: ServerProcess, user: str) -> RawClient:
    client = RawClient.connect(ep.host, ep.port)
    client.send(connect_line(verbose=False, pedantic=False, protocol=1, user=user,
                             **{"pass": user}) + b"PING\r\n")
    client.expect(PONG)
    client.read_line()
    return client


def test_reload_permissions_reach_live_clients(target: str, spawn: SpawnFn) -> None:
    """New permissions apply to a connected client, which stays connected: each subscription
    no longer allowed is removed with ``-ERR 'Permissions Violation for Subscription to
    "<subject>" (sid "<sid>")'`` and logged as removed; a client whose user was removed is
    closed; the reload is logged as nats-server logs it."""
    ep = spawn(config=PERMS_BEFORE)
    a = login(ep, "a")
    b = login(ep, "b")
    with a, b:
        a.send(b"SUB foo.x 1\r\nSUB ok 2\r\nSUB foo.> q 3\r\n")
        assert a.barrier() == b""
        reload_with(ep, PERMS_AFTER, "Reloaded server configuration")
        removed = {a.read_line(), a.read_line()}  # nats-server goes through a map: any order
        assert removed == {
            b"-ERR 'Permissions Violation for Subscription to \"foo.x\" (sid \"1\")'\r\n",
            b"-ERR 'Permissions Violation for Subscription to \"foo.>\" using queue \"q\" "
            b"(sid \"3\")'\r\n"}
        b.assert_closed()  # its user is gone: closed without an -ERR
        a.send(pub("foo.x", b"x") + pub("ok", b"y"))
        assert a.barrier() == b"-ERR 'Permissions Violation for Publish to \"foo.x\"'\r\n" + \
            msg("ok", 2, b"y")
    log = ep.log.split('Trapped "hangup" signal')[1]
    for line in ('[INF] Reloaded: authorization users', '[INF] Reloaded: accounts',
                 '[INF] Reloaded: max_payload = 2000',
                 '[INF] Removed sub "foo.x" (sid "1") for User "a" - not authorized',
                 '[INF] Removed sub "foo.>" using queue "q" (sid "3") for User "a" - not '
                 'authorized', '[INF] Reloaded server configuration (sha256:'):
        assert line in log, log
    assert log.index("Reloaded: authorization users") < log.index("Reloaded: accounts") < \
        log.index("Reloaded: max_payload") < log.index("Removed sub") < \
        log.index("Reloaded server configuration")
    with login(ep, "c") as c:  # the new user logs in; the new limit is announced
        pass
    with RawClient.connect(ep.host, ep.port) as fresh:
        assert fresh.info["max_payload"] == 2000


@pytest.mark.parametrize("change,error", [
    ("server_name: other\n", "config reload not supported for ServerName: old=first, "
                             "new=other"),
    ("server_name: first\nmax_pending: 100000000\n",
     "config reload not supported for MaxPending: old=67108864, new=100000000"),
    ("server_name: first\nfoo: 1\n", 'unknown field "foo"'),
    ("server_name: first\nmax_payload: {\n", "Failed to reload server configuration: "),
], ids=["server-name", "max-pending", "unknown-field", "parse-error"])
def test_reload_refused_keeps_the_old_config(target: str, spawn: SpawnFn, change: str,
                                             error: str) -> None:
    """An option that cannot be reloaded, or a broken file: ``Failed to reload server
    configuration: ...`` and nothing changes; clients stay and new ones connect as before."""
    ep = spawn(config="server_name: first\nmax_payload: 1000\n")
    with RawClient.connect(ep.host, ep.port) as client:
        client.handshake()
        reload_with(ep, change)
        assert "Failed to reload server configuration: " in ep.log
        assert error in ep.log.split('Trapped "hangup" signal')[1], ep.log
        client.send(b"SUB s 1\r\n" + pub("s", b"still"))
        assert client.barrier() == msg("s", 1, b"still")
    with RawClient.connect(ep.host, ep.port) as fresh:
        assert fresh.info["max_payload"] == 1000 and fresh.info["server_name"] == "first"


@pytest.mark.parametrize("users", [False, True], ids=["no-users", "users"])
def test_reload_unchanged_file(target: str, spawn: SpawnFn, users: bool) -> None:
    """Reloading an unchanged file reloads the users and accounts and nothing else."""
    text = "max_payload: 1000\n" + (
        "authorization { users = [ {user: a, password: a} ] }\n" if users else "")
    ep = spawn(config=text)
    reload_with(ep, text)
    log = ep.log.split('Trapped "hangup" signal')[1]
    said = [line.split("] ", 2)[-1] for line in log.strip().splitlines()]
    assert said[:-1] == ["Reloaded: authorization users", "Reloaded: accounts"]
    assert said[-1].startswith("Reloaded server configuration (sha256:")


def test_reload_token_and_user_password(target: str, spawn: SpawnFn) -> None:
    """A changed token: clients logged in with the old one are cut, the new one works."""
    ep = spawn(config='authorization { token: "one" }\n')
    old = RawClient.connect(ep.host, ep.port)
    with old:
        old.send(connect_line(verbose=False, auth_token="one") + b"PING\r\n")
        old.expect(PONG)
        reload_with(ep, 'authorization { token: "two" }\n', "Reloaded server configuration")
        assert "[INF] Reloaded: authorization token" in ep.log
        old.assert_closed(expect_data=b"-ERR 'Authorization Violation'\r\n")
    with RawClient.connect(ep.host, ep.port) as new:
        new.send(connect_line(verbose=False, auth_token="two") + b"PING\r\n")
        new.expect(PONG)


def test_sigusr1_reopens_the_log_file(target: str, tmp_path: Path) -> None:
    """After the log file is moved away, SIGUSR1 makes the server write a new one."""
    if target == "url":
        pytest.skip("needs a server of our own")
    log = tmp_path / "server.log"
    proc = subprocess.Popen(command_for(target) + ["-a", "127.0.0.1", "-p", "-1", "-l",
                                                    str(log)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def text() -> str:
            return log.read_text() if log.exists() else ""

        wait_log(None, "Server is ready", timeout=10, text=text)
        rotated = tmp_path / "server.log.1"
        log.rename(rotated)
        proc.send_signal(signal.SIGUSR1)
        wait_log(None, "[INF] File log re-opened", text=text)
        assert 'Trapped "user defined signal 1" signal' in rotated.read_text()
    finally:
        proc.terminate()
        proc.wait(10)


def test_signal_reload_through_the_pid_file(target: str, spawn: SpawnFn,
                                            tmp_path: Path) -> None:
    """``--signal reload=PIDFILE``: the server named by the pid file reloads; the command
    exits 0."""
    pid_file = tmp_path / "server.pid"
    ep = spawn(config="max_payload: 1000\n", args=["-P", str(pid_file)])
    conf_path(ep).write_text("max_payload: 3000\n")
    proc = subprocess.run(command_for(target) + ["--signal", f"reload={pid_file}"],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    wait_log(ep, "Reloaded: max_payload = 3000")
    proc = subprocess.run(command_for(target) + ["-sl", f"reopen={pid_file}"],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    wait_log(ep, "File log re-open ignored, not a file logger")


@pytest.mark.parametrize("value,error", [
    ("reload=notapid", "invalid pid: notapid"),
    ("bogus=1", 'unknown signal "bogus"'),
    ("reload=1=2", "invalid signal parameters: [2]"),
], ids=["bad-pid", "unknown-command", "too-many-parts"])
def test_signal_errors(target: str, value: str, error: str) -> None:
    """``--signal`` refusals, in nats-server's words, exit status 1."""
    if target == "url":
        pytest.skip("runs the server's command")
    proc = subprocess.run(command_for(target) + ["--signal", value], capture_output=True,
                          text=True, timeout=20)
    assert proc.returncode == 1
    assert error in proc.stderr, proc.stderr
