"""The websocket listener in the in-process server: ``Server(websocket=WebsocketOptions(...))``
with a wsproto client, cookies standing in for CONNECT's credentials (``jwt_cookie`` included),
the extra's absence, and the config reading of ``websocket { }``."""
from __future__ import annotations

import asyncio
import base64
import os
from typing import Any

import pytest
from wsproto.connection import Connection as WsConnection
from wsproto.connection import ConnectionType
from wsproto.events import BytesMessage

from minijs import Server
from minijs.config import ConfigError
from minijs.confparse import parse_config
from minijs.core.connection import Connection
from minijs.core.websocket import WebsocketSession
from minijs.wsconfig import WebsocketOptions


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.ws = WsConnection(ConnectionType.CLIENT)

    @classmethod
    async def open(cls, port: int, cookie: str = "") -> "Client":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        key = base64.b64encode(os.urandom(16)).decode()
        extra = f"Cookie: {cookie}\r\n" if cookie else ""
        writer.write(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                     f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                     f"Sec-WebSocket-Version: 13\r\n{extra}\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 "), head
        return cls(reader, writer)

    def send(self, text: str) -> None:
        self.writer.write(self.ws.send(BytesMessage(data=text.encode())))

    async def read_until(self, marker: bytes) -> bytes:
        out = b""
        while marker not in out:
            data = await asyncio.wait_for(self.reader.read(65536), 5)
            assert data, out
            self.ws.receive_data(data)
            for event in self.ws.events():
                if isinstance(event, BytesMessage):
                    out += bytes(event.data)
        return out


async def test_in_process_websocket_listener() -> None:
    async with Server(port=0, websocket=WebsocketOptions(host="127.0.0.1", port=-1,
                                                         no_tls=True)) as server:
        assert server.websocket_url == f"ws://127.0.0.1:{server.websocket.port}"
        client = await Client.open(server.websocket.port)
        info = await client.read_until(b"\r\n")
        assert b'"port":%d' % server.websocket.port in info
        client.send('CONNECT {"verbose":false}\r\nSUB a 1\r\nPUB a 2\r\nhi\r\nPING\r\n')
        assert await client.read_until(b"PONG\r\n") == b"MSG a 1 2\r\nhi\r\nPONG\r\n"
        conn = next(iter(server.connections.values()))
        assert conn.websocket is not None and conn.websocket.browser is False
        client.writer.close()


async def test_jwt_cookie_becomes_the_connect_jwt(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``jwt_cookie``'s value reaches authentication as CONNECT's ``jwt`` when CONNECT has
    none (JWT verification itself belongs to operator mode, not checked here); a JWT in
    CONNECT wins over the cookie."""
    seen: list[dict[str, Any]] = []
    original = Connection._authenticate

    def spy(self: Connection, opts: dict[str, Any]) -> bool:
        seen.append(dict(opts))
        return original(self, opts)

    monkeypatch.setattr(Connection, "_authenticate", spy)
    options = WebsocketOptions(host="127.0.0.1", port=-1, no_tls=True, jwt_cookie="natsjwt")
    async with Server(port=0, websocket=options) as server:
        client = await Client.open(server.websocket.port, cookie="other=1; natsjwt=eyJ.cookie")
        await client.read_until(b"\r\n")
        client.send('CONNECT {"verbose":false}\r\nPING\r\n')
        await client.read_until(b"PONG\r\n")
        client.send('CONNECT {"verbose":false,"jwt":"eyJ.connect"}\r\nPING\r\n')
        await client.read_until(b"PONG\r\n")
        client.writer.close()
    assert [opts.get("jwt") for opts in seen] == ["eyJ.cookie", "eyJ.connect"]


def test_cookies_fill_only_what_connect_left_out() -> None:
    session = WebsocketSession(WebsocketOptions(), "0.0.0.0", 1, False, cookie_user="u",
                               cookie_pass="p", cookie_token="t", cookie_jwt="j")
    opts: dict[str, Any] = {"user": "given"}
    session.fill_connect(opts)
    assert opts == {"user": "given", "pass": "p", "auth_token": "t", "jwt": "j"}


def test_config_reading() -> None:
    config = parse_config('websocket {\n listen: "127.0.0.1:-1"\n no_tls: true\n '
                          'compression: true\n allowed_origins: "http://a.example"\n '
                          'authorization { user: u, password: p, timeout: 3 }\n '
                          'handshake_timeout: 2\n headers { "X-A": "b" }\n}\n')
    ws = config.websocket
    assert (ws.host, ws.port, ws.no_tls, ws.compression) == ("127.0.0.1", -1, True, True)
    assert ws.allowed_origins == ("http://a.example",) and ws.auth_override
    assert (ws.username, ws.password, ws.auth_timeout, ws.handshake_timeout) == ("u", "p", 3.0,
                                                                                2.0)
    assert ws.headers == (("X-A", "b"),)
    with pytest.raises(ConfigError, match="interface conversion: interface {} is int64, "
                                          "not bool"):
        parse_config("websocket { port: 1, no_tls: 1 }")


async def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from minijs.server import StartupError

    monkeypatch.setitem(sys.modules, "wsproto.connection", None)
    monkeypatch.delitem(sys.modules, "minijs.core.websocket", raising=False)
    server = Server(port=0, websocket=WebsocketOptions(port=-1, no_tls=True))
    with pytest.raises(StartupError, match=r"pip install 'minijs\[websocket\]'"):
        await server.start()
