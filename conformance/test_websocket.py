"""The websocket listener on both servers: the upgrade (nats-server's response, its checks
and their HTTP statuses and log lines, origins, compression, custom headers), NATS inside
frames (fragmented, text or binary, compressed), pings, closes and the statuses a close
carries, the block's own authentication and cookies, ``wss``, ``/varz`` and ``/connz``, and
the refused configurations (a port already in use among them)."""
from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import socket
import time
from pathlib import Path

import nats
import pytest

from conformance.certs import Certs, certs  # noqa: F401  (the session fixture)
from conformance.helpers import SpawnFn, ensure_subs, get_json, log_lines, refused_start
from conformance.natskeys import OperatorSetup
from conformance.servers import ServerProcess, free_port
from conformance.wsclient import WsClient, masked_frame

WS = "websocket {\n  host: 127.0.0.1\n  port: -1\n  no_tls: true\n  %s\n}\n"


def ws_server(spawn: SpawnFn, extra: str = "", config: str = "", **kw: object) -> ServerProcess:
    srv = spawn(config=WS % extra + config, **kw)
    assert srv.ws_port, srv.log
    return srv


def client(srv: ServerProcess, **kw: object) -> WsClient:
    return WsClient("127.0.0.1", srv.ws_port, **kw)  # type: ignore[arg-type]


def test_upgrade_response_and_info(target: str, spawn: SpawnFn) -> None:
    """``101 Switching Protocols`` with exactly nats-server's headers, then the INFO in a
    binary frame, naming the websocket listener's host and port."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        assert ws.upgrade() == 101
        accept = base64.b64encode(hashlib.sha1(
            ws.key.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
        assert ws.response_head == ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                    "Connection: Upgrade\r\n"
                                    f"Sec-WebSocket-Accept: {accept}").encode()
        info = ws.handshake()
        assert (info["host"], info["port"]) == ("127.0.0.1", srv.ws_port)
        assert "tls_required" not in info and "tls_available" not in info
    assert log_lines(srv, f"Listening for websocket clients on ws://127.0.0.1:{srv.ws_port}")
    assert log_lines(srv, "Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")


async def test_pub_sub_between_websocket_and_nats_clients(target: str, spawn: SpawnFn) -> None:
    """A websocket client and a plain NATS client exchange messages both ways, a large one
    included."""
    srv = ws_server(spawn)
    nc = await nats.connect(f"nats://127.0.0.1:{srv.port}", allow_reconnect=False)
    try:
        sub = await nc.subscribe("from.ws")
        await ensure_subs(nc)
        with client(srv) as ws:
            ws.upgrade()
            ws.handshake()
            big = b"x" * 100_000
            ws.nats(f"SUB to.ws 1\r\nPUB from.ws 5\r\nhello\r\nPUB from.ws {len(big)}\r\n")
            ws.send(big + b"\r\nPING\r\n")
            assert ws.read(until=b"PONG\r\n").endswith(b"PONG\r\n")
            assert (await sub.next_msg(timeout=5)).data == b"hello"
            assert (await sub.next_msg(timeout=5)).data == big
            await nc.publish("to.ws", b"back")
            await nc.publish("to.ws", big)
            await nc.flush()
            got = ws.read(until=big + b"\r\n", timeout=10)
            assert got.startswith(b"MSG to.ws 1 4\r\nback\r\n")
            assert got.endswith(f"MSG to.ws 1 {len(big)}\r\n".encode() + big + b"\r\n")
    finally:
        await nc.close()


def test_fragmented_and_text_frames(target: str, spawn: SpawnFn) -> None:
    """NATS operations split across frames, fragments of one message, and text frames all
    reach the parser as one byte stream."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        ws.upgrade()
        ws.read(until=b"\r\n")
        ws.send(b'CONN', fin=False)
        ws.send(b'ECT {"verbose":false}\r\nSU', fin=True)
        ws.send(b"B frag 1\r\nPUB frag 3\r\nab")
        ws.send(b"c\r\nPI", text=True)
        ws.send(b"NG\r\n")
        out = ws.read(until=b"PONG\r\n")
        assert out == b"MSG frag 1 3\r\nabc\r\nPONG\r\n"


def test_ping_pong_and_close(target: str, spawn: SpawnFn) -> None:
    """A websocket ping is answered with its payload; a close frame is echoed (status and
    reason) and the connection ends."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake()
        ws.ping(b"are you there")
        ws.nats("PING\r\n")
        ws.read(until=b"PONG\r\n")
        assert ws.pongs == [b"are you there"]
        ws.close(1000, "bye")
        event = ws.wait_closed()
        assert event is not None and (event.code, event.reason) == (1000, "bye")


def test_close_without_status_gets_empty_close(target: str, spawn: SpawnFn) -> None:
    srv = ws_server(spawn)
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake()
        ws.send_raw(masked_frame(0x8, b""))
        event = ws.wait_closed()
        assert event is not None and event.code == 1005 and not event.reason


@pytest.mark.parametrize("frame,reason", [
    (masked_frame(0x2, b"PING\r\n", mask=False), "mask bit missing"),
    (masked_frame(0x3, b"x"), "unknown opcode 3"),
    (masked_frame(0x2, b"PING\r\n", rsv=0x20), "RSV2 and RSV3 must be clear"),
    (masked_frame(0x9, b"x", fin=False), "control frame does not have final bit set"),
    (masked_frame(0x0, b"x"), "invalid continuation frame"),
    (masked_frame(0x8, b"\x03"), "close frame payload cannot be 1 byte"),
], ids=["unmasked", "opcode", "rsv", "control-fragment", "continuation", "close-1-byte"])
def test_bad_frames_close_with_protocol_error(target: str, spawn: SpawnFn, frame: bytes,
                                              reason: str) -> None:
    """A frame the protocol forbids ends the connection, logged as a read error with
    nats-server's reason; a close frame, when one gets out before the socket closes (it races
    the close in nats-server), says 1002 and the same reason."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake()
        ws.send_raw(frame)
        event = ws.wait_closed()
        assert event is None or (event.code, event.reason) == (1002, reason)
        assert ws.read(timeout=2) == b""
    lines = log_lines(srv, f"read error: {reason}")
    assert lines and "[ERR]" in lines[0], srv.log


def test_server_close_says_why(target: str, spawn: SpawnFn) -> None:
    """When the server closes a websocket client, the close frame carries the status
    nats-server maps the reason to: an authorization violation is 1008, a payload over the
    limit 1009."""
    srv = ws_server(spawn, config="authorization { user: u, password: p }\nmax_payload: 100\n")
    with client(srv) as ws:
        ws.upgrade()
        ws.read(until=b"\r\n")
        ws.nats('CONNECT {"verbose":false,"user":"u","pass":"wrong"}\r\n')
        assert ws.read(until=b"\r\n") == b"-ERR 'Authorization Violation'\r\n"
        event = ws.wait_closed()
        assert event is not None and (event.code, event.reason) == (1008,
                                                                    "Authentication Failure")
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake(user="u", **{"pass": "p"})
        ws.nats("PUB big 200\r\n" + "x" * 200 + "\r\n")
        assert ws.read(until=b"\r\n") == b"-ERR 'Maximum Payload Violation'\r\n"
        event = ws.wait_closed()
        assert event is not None and (event.code, event.reason) == (
            1009, "Maximum Message Payload Exceeded")


@pytest.mark.parametrize("kw,status,reason", [
    ({"omit": ("Sec-WebSocket-Key",)}, 400, "key missing"),
    ({"headers": {"Sec-WebSocket-Key": "c2hvcnQ="}}, 400, "invalid websocket key"),
    ({"headers": {"Sec-WebSocket-Version": "12"}}, 400, "invalid version"),
    ({"omit": ("Upgrade",)}, 400, "invalid value for header 'Upgrade'"),
    ({"headers": {"Connection": "keep-alive"}}, 400, "invalid value for header 'Connection'"),
    ({"method": "POST"}, 405, "request method must be GET"),
], ids=["no-key", "short-key", "version", "no-upgrade", "connection", "post"])
def test_refused_upgrades(target: str, spawn: SpawnFn, kw: dict, status: int,
                          reason: str) -> None:
    """An upgrade request nats-server refuses gets its HTTP status and is logged as
    ``<addr> - websocket handshake error: <reason>``."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        assert ws.upgrade(**kw) == status
        assert ws.headers.get("sec-websocket-version") == "13"
        text = {400: "Bad Request", 405: "Method Not Allowed"}[status]
        assert ws.body == f"{text}\n".encode()
    lines = log_lines(srv, f"websocket handshake error: {reason}")
    assert lines and "[ERR]" in lines[0], srv.log


def test_data_before_the_upgrade_completes(target: str, spawn: SpawnFn) -> None:
    """Bytes sent behind the upgrade request, before the response: the socket is closed
    without a response (the connection was already taken from the HTTP server) and the
    refusal is logged."""
    srv = ws_server(spawn)
    with client(srv) as ws:
        assert ws.upgrade(extra=b"PING\r\n") == 0
        assert ws.response_head == b""
    assert log_lines(srv, "websocket handshake error: client sent data before handshake is "
                          "complete")


def test_origins(target: str, spawn: SpawnFn) -> None:
    """``same_origin`` compares the Origin with the request's Host; ``allowed_origins`` lists
    the origins that may connect; a request without Origin passes; a refusal is 403."""
    srv = ws_server(spawn, "same_origin: true")
    with client(srv) as ws:
        assert ws.upgrade(headers={"Origin": f"http://127.0.0.1:{srv.ws_port}"}) == 101
    with client(srv) as ws:
        assert ws.upgrade(headers={"Origin": "http://evil.example"}) == 403
        assert ws.body == b"Forbidden\n"
    with client(srv) as ws:
        assert ws.upgrade() == 101
    assert log_lines(srv, "websocket handshake error: origin not allowed: not same origin")
    srv = ws_server(spawn, 'allowed_origins: ["http://good.example", "https://good.example:8443"]')
    for origin, status in (("http://good.example", 101), ("https://good.example:8443", 101),
                           ("http://good.example:8080", 403), ("http://bad.example", 403)):
        with client(srv) as ws:
            assert ws.upgrade(headers={"Origin": origin}) == status, origin
    assert log_lines(srv, "origin not allowed: not in the allowed list")


async def test_compression(target: str, spawn: SpawnFn) -> None:
    """``compression: true`` and a client offering permessage-deflate: nats-server's extension
    response (no context takeover either way); compressed frames carry the protocol both
    ways. Without the option, or without the offer, frames are not compressed."""
    srv = ws_server(spawn, "compression: true")
    nc = await nats.connect(f"nats://127.0.0.1:{srv.port}", allow_reconnect=False)
    try:
        with client(srv) as ws:
            assert ws.upgrade(compress=True) == 101
            assert ws.headers["sec-websocket-extensions"] == (
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover")
            ws.handshake()
            body = b"compress me " * 500
            ws.nats("SUB zip 1\r\nPING\r\n")
            ws.read(until=b"PONG\r\n")
            await nc.publish("zip", body)
            await nc.flush()
            expected = f"MSG zip 1 {len(body)}\r\n".encode() + body + b"\r\n"
            assert ws.read(until=body + b"\r\n") == expected
            sub = await nc.subscribe("unzip")
            await ensure_subs(nc)  # nats-py's flush() can overtake the SUB
            ws.nats(f"PUB unzip {len(body)}\r\n{body.decode()}\r\nPING\r\n")
            ws.read(until=b"PONG\r\n")  # the server has taken the compressed PUB
            assert (await sub.next_msg(timeout=10)).data == body
        with client(srv) as ws:
            assert ws.upgrade() == 101
            assert "sec-websocket-extensions" not in ws.headers
    finally:
        await nc.close()
    srv = ws_server(spawn)
    with client(srv) as ws:
        assert ws.upgrade(compress=True) == 101
        assert "sec-websocket-extensions" not in ws.headers


def test_custom_response_headers(target: str, spawn: SpawnFn) -> None:
    srv = ws_server(spawn, 'headers { "X-Test": "yes" }')
    with client(srv) as ws:
        assert ws.upgrade() == 101
        assert ws.headers["x-test"] == "yes"


def test_websocket_authorization_overrides(target: str, spawn: SpawnFn) -> None:
    """The block's ``authorization { user pass }`` applies to websocket clients only: their
    INFO says ``auth_required``, the right credentials get in, others are refused; NATS
    clients still connect without any."""
    srv = ws_server(spawn, "authorization { user: wsuser, password: wspass }")
    with client(srv) as ws:
        ws.upgrade()
        info = ws.handshake(user="wsuser", **{"pass": "wspass"})
        assert info["auth_required"] is True
    with client(srv) as ws:
        ws.upgrade()
        ws.read(until=b"\r\n")
        ws.nats('CONNECT {"verbose":false}\r\nPING\r\n')
        assert ws.read(until=b"\r\n") == b"-ERR 'Authorization Violation'\r\n"
    with socket.create_connection((srv.host, srv.port), timeout=5) as sock:
        info_line = sock.recv(4096)
        assert b"auth_required" not in info_line
        sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
        assert sock.recv(100) == b"PONG\r\n"
    srv = ws_server(spawn, "authorization { token: s3cr3t }")
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake(auth_token="s3cr3t")


def test_websocket_no_auth_user_and_cookies(target: str, spawn: SpawnFn) -> None:
    """With users configured, the block's ``no_auth_user`` is who a websocket client without
    credentials becomes (with that user's permissions); ``user_cookie``/``pass_cookie`` take
    the credentials from the upgrade request's cookies when CONNECT has none."""
    users = ('authorization { users = [ {user: guest, password: g, permissions: {publish: '
             '"guest.>"}}, {user: ann, password: secret} ] }\n')
    srv = ws_server(spawn, "no_auth_user: guest\n  user_cookie: u\n  pass_cookie: p", users)
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake()
        ws.nats("PUB other.x 1\r\nx\r\nPING\r\n")
        out = ws.read(until=b"PONG\r\n")
        assert b"Permissions Violation for Publish to \"other.x\"" in out
    with client(srv) as ws:
        ws.upgrade(headers={"Cookie": "u=ann; p=secret"})
        ws.handshake()
        ws.nats("PUB other.x 1\r\nx\r\nPING\r\n")
        assert ws.read(until=b"PONG\r\n") == b"PONG\r\n"
    with client(srv) as ws:
        ws.upgrade(headers={"Cookie": "u=ann; p=wrong"})
        ws.read(until=b"\r\n")
        ws.nats('CONNECT {"verbose":false}\r\nPING\r\n')
        assert ws.read(until=b"\r\n") == b"-ERR 'Authorization Violation'\r\n"


def test_jwt_cookie_in_operator_mode(target: str, spawn: SpawnFn) -> None:
    """In operator mode, ``jwt_cookie`` names the cookie whose value is the user JWT when
    CONNECT carries none: a bearer user JWT in the cookie logs the websocket client in; no
    cookie and no JWT is an Authorization Violation."""

    s = OperatorSetup()
    ws_block = ("websocket {\n  host: 127.0.0.1\n  port: -1\n  no_tls: true\n"
                "  jwt_cookie: natsjwt\n}\n")
    srv = spawn(config=s.config(ws_block))
    assert srv.ws_port
    with client(srv) as ws:
        assert ws.upgrade(headers={"Cookie": f"natsjwt={s.user_jwt(bearer=True)}"}) == 101
        info = ws.handshake()
        assert info["auth_required"] is True and info.get("nonce")
        ws.nats("SUB c 1\r\nPUB c 2\r\nok\r\nPING\r\n")
        assert ws.read(until=b"PONG\r\n") == b"MSG c 1 2\r\nok\r\nPONG\r\n"
    with client(srv) as ws:
        ws.upgrade()
        ws.read(until=b"\r\n")
        ws.nats('CONNECT {"verbose":false}\r\nPING\r\n')
        assert ws.read(until=b"\r\n") == b"-ERR 'Authorization Violation'\r\n"


def test_wss(target: str, spawn: SpawnFn, certs: Certs) -> None:
    """A ``tls { }`` in the block: ``wss``, the INFO says ``tls_required`` and
    ``tls_available``; NATS works inside."""
    srv = spawn(config=f"websocket {{\n host: 127.0.0.1\n port: -1\n {certs.tls_block()} }}\n")
    assert log_lines(srv, f"Listening for websocket clients on wss://127.0.0.1:{srv.ws_port}")
    with WsClient("127.0.0.1", srv.ws_port, context=certs.client_context()) as ws:
        assert ws.upgrade() == 101
        info = ws.handshake()
        assert info["tls_required"] is True and info["tls_available"] is True
        ws.nats("SUB s 1\r\nPUB s 2\r\nok\r\nPING\r\n")
        assert ws.read(until=b"PONG\r\n") == b"MSG s 1 2\r\nok\r\nPONG\r\n"


def test_handshake_timeout(target: str, spawn: SpawnFn) -> None:
    """``handshake_timeout``: a socket that never completes its upgrade request is closed."""
    srv = ws_server(spawn, 'handshake_timeout: "1s"')
    with socket.create_connection(("127.0.0.1", srv.ws_port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        data = b""
        while True:
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
        assert time.monotonic() - started < 4
        assert b"101" not in data


def test_varz_and_connz(target: str, spawn: SpawnFn) -> None:
    """``/varz`` shows the block (nats-server's omit-empty fields); ``/connz`` lists a
    websocket client with ``type`` ``websocket``."""
    http = free_port()
    srv = ws_server(spawn, 'compression: true\n  same_origin: true\n  handshake_timeout: "2s"',
                    args=["-m", str(http)])
    varz = get_json(http, "/varz")
    assert varz["websocket"] == {"host": "127.0.0.1", "port": srv.ws_port,
                                 "handshake_timeout": 2_000_000_000, "no_tls": True,
                                 "same_origin": True, "compression": True}
    with client(srv) as ws:
        ws.upgrade()
        ws.handshake(name="browser")
        conns = get_json(http, "/connz")["connections"]
        mine = [c for c in conns if c.get("name") == "browser"]
        assert mine and mine[0]["type"] == "websocket"


@pytest.mark.parametrize("config,message", [
    ("websocket { port: -1 }", "websocket requires TLS configuration"),
    ("websocket { port: -1, no_tls: true, foo: 1 }", 'unknown field "foo"'),
    ('websocket { port: -1, no_tls: true, allowed_origins: ["foo"] }',
     'unable to parse allowed origin: parse "foo": invalid URI for request'),
    ('websocket { port: -1, no_tls: true, allowed_origins: ["ftp://x"] }',
     'unable to parse allowed origin "ftp://x": allowed origins must be absolute URLs with http '
     "or https scheme"),
    ('websocket { port: -1, no_tls: true, jwt_cookie: "jwt" }',
     'trusted operators or trusted keys configuration is required for JWT authentication via '
     'cookie "jwt"'),
    ('websocket { port: -1, no_tls: true, headers: { "Upgrade": "x" } }',
     'websocket: invalid header "Upgrade" not allowed'),
    ('websocket { port: -1, no_tls: true, headers: { "Sec-WebSocket-Foo": "x" } }',
     'websocket: invalid header "Sec-WebSocket-Foo", "Sec-WebSocket-" prefix not allowed'),
    ('websocket { port: -1, no_tls: true, no_auth_user: "x" }',
     'no_auth_user: "x" present, but users/nkeys are not defined'),
    ('websocket { port: -1, no_tls: true, handshake_timeout: true }',
     "error parsing handshake timeout: unsupported type bool"),
    ("websocket: 1", "Expected websocket to be a map, got int64"),
    ('websocket { port: -1, no_tls: true, authorization { user: a, password: b } }\n'
     'authorization { users = [ {user: x, password: y} ] }',
     "websocket authentication username not compatible with presence of users/nkeys"),
], ids=["no-tls", "unknown", "origin-uri", "origin-scheme", "jwt-cookie", "header",
        "header-prefix", "no-auth-user", "timeout-type", "not-a-map", "user-and-users"])
def test_refused_websocket_configs(target: str, tmp_path: Path, config: str,
                                   message: str) -> None:
    stderr = refused_start(target, tmp_path, config + "\n")
    assert message in stderr, stderr


def test_websocket_port_in_use(target: str, tmp_path: Path) -> None:
    """A websocket port another process holds stops the server with nats-server's fatal
    line, naming the address."""
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        stderr = refused_start(target, tmp_path,
                               f"websocket {{ host: 127.0.0.1, port: {port}, no_tls: true }}\n")
    assert (f"[FTL] Unable to listen for websocket connections: listen tcp 127.0.0.1:{port}: "
            "bind: address already in use") in stderr, stderr
