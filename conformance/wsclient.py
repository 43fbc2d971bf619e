"""A websocket client for the conformance cases, on ``wsproto`` (client side): the upgrade
request as the case writes it, then frames, well-formed or not, and the NATS protocol inside
binary frames."""
from __future__ import annotations

import base64
import os
import socket
import ssl
import time
from typing import Any

from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Message, Ping, Pong, TextMessage
from wsproto.extensions import PerMessageDeflate


class WsClient:
    """One websocket connection: ``upgrade()`` sends the request and reads the response;
    after a ``101`` the frame methods work."""

    def __init__(self, host: str, port: int, *, context: ssl.SSLContext | None = None,
                 timeout: float = 5.0) -> None:
        sock = socket.create_connection((host, port), timeout=timeout)
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname="localhost")
        self.sock = sock
        self.host, self.port = host, port
        self.status = 0
        self.response_head = b""
        self.headers: dict[str, str] = {}
        self.body = b""
        self.ws: Connection | None = None
        self._pending = b""
        self.close_event: CloseConnection | None = None
        self.pongs: list[bytes] = []
        self.closed = False

    # -- the upgrade

    def upgrade(self, *, method: str = "GET", headers: dict[str, str] | None = None,
                omit: tuple[str, ...] = (), compress: bool = False, extra: bytes = b"") -> int:
        """Send the upgrade request (``omit`` drops default headers, ``headers`` adds or
        replaces), read the response; returns the status."""
        fields = {"Host": f"{self.host}:{self.port}", "Upgrade": "websocket",
                  "Connection": "Upgrade",
                  "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                  "Sec-WebSocket-Version": "13"}
        if compress:
            fields["Sec-WebSocket-Extensions"] = ("permessage-deflate; "
                                                  "client_max_window_bits")
        fields.update(headers or {})
        for name in omit:
            fields.pop(name, None)
        self.key = fields.get("Sec-WebSocket-Key", "")
        head = f"{method} / HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        self.sock.sendall(head.encode() + b"\r\n" + extra)
        data = b""
        deadline = time.monotonic() + 5
        while b"\r\n\r\n" not in data:
            chunk = self._recv(deadline)
            if not chunk:
                break
            data += chunk
        head_bytes, _, rest = data.partition(b"\r\n\r\n")
        self.response_head = head_bytes
        lines = head_bytes.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1]) if lines and len(lines[0].split()) > 1 else 0
        self.headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        if self.status == 101:
            extensions = []
            if "permessage-deflate" in self.headers.get("sec-websocket-extensions", ""):
                deflate = PerMessageDeflate()
                deflate.finalize(self.headers["sec-websocket-extensions"])
                extensions.append(deflate)
            self.ws = Connection(ConnectionType.CLIENT, extensions)
            self._pending = rest
        else:
            length = int(self.headers.get("content-length", "0") or 0)
            while len(rest) < length:
                chunk = self._recv(deadline)
                if not chunk:
                    break
                rest += chunk
            self.body = rest
        return self.status

    # -- frames

    def send(self, data: bytes, *, fin: bool = True, text: bool = False) -> None:
        assert self.ws is not None
        event: Message[Any] = (TextMessage(data=data.decode(), message_finished=fin) if text
                               else BytesMessage(data=data, message_finished=fin))
        self.sock.sendall(self.ws.send(event))

    def ping(self, payload: bytes) -> None:
        assert self.ws is not None
        self.sock.sendall(self.ws.send(Ping(payload=payload)))

    def close(self, code: int | None = 1000, reason: str = "") -> None:
        assert self.ws is not None
        self.sock.sendall(self.ws.send(CloseConnection(code=code, reason=reason)))

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def read(self, until: bytes = b"", timeout: float = 5.0) -> bytes:
        """The payload of data frames received until ``until`` was seen (or the connection
        closed, or the time ran out); pongs and the close frame are kept aside."""
        assert self.ws is not None
        out = b""
        deadline = time.monotonic() + timeout
        while True:
            if self._pending:
                data, self._pending = self._pending, b""
            else:
                if self.closed or (until and until in out):
                    return out
                data = self._recv(deadline)
                if not data:
                    self.closed = True
                    return out
            try:
                self.ws.receive_data(data)
            except Exception:  # data after the close
                self.closed = True
                return out
            for event in self.ws.events():
                if isinstance(event, BytesMessage):
                    out += bytes(event.data)
                elif isinstance(event, TextMessage):
                    out += event.data.encode()
                elif isinstance(event, Pong):
                    self.pongs.append(bytes(event.payload))
                elif isinstance(event, CloseConnection):
                    self.close_event = event
            if self.close_event is not None and not until:
                return out
            if until and until in out:
                return out

    def wait_closed(self, timeout: float = 5.0) -> CloseConnection | None:
        """Read until the server's close frame (returned) or the socket's end."""
        deadline = time.monotonic() + timeout
        while self.close_event is None and not self.closed and time.monotonic() < deadline:
            self.read(timeout=max(deadline - time.monotonic(), 0.01))
        return self.close_event

    def nats(self, text: str) -> None:
        """NATS protocol text in one binary frame."""
        self.send(text.encode())

    def handshake(self, **connect: Any) -> dict[str, Any]:
        """Read the INFO, send CONNECT (protocol 0: no INFO follows the PONG) and PING, wait
        for the PONG; returns the INFO."""
        import json

        info_line = self.read(until=b"\r\n")
        assert info_line.startswith(b"INFO "), info_line
        body = json.dumps({"verbose": False, "pedantic": False, "headers": True,
                           "protocol": 0, **connect})
        self.nats(f"CONNECT {body}\r\nPING\r\n")
        out = self.read(until=b"PONG\r\n")
        assert out.endswith(b"PONG\r\n"), out
        return json.loads(info_line[5:].strip())

    def _recv(self, deadline: float) -> bytes:
        self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            return self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return b""
        except (ConnectionResetError, ssl.SSLError):
            self.closed = True
            return b""

    def shutdown(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "WsClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def masked_frame(opcode: int, payload: bytes, *, fin: bool = True, rsv: int = 0,
                 mask: bool = True) -> bytes:
    """A client frame built by hand (for frames wsproto would refuse to send)."""
    head = bytes(((0x80 if fin else 0) | rsv | opcode,))
    length = len(payload)
    mbit = 0x80 if mask else 0
    if length < 126:
        head += bytes((mbit | length,))
    elif length < 65536:
        head += bytes((mbit | 126,)) + length.to_bytes(2, "big")
    else:
        head += bytes((mbit | 127,)) + length.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))
