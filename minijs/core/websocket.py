"""The websocket listener: NATS inside websocket frames, for browsers (nats.js's websocket
transport) and other websocket clients.

Each accepted socket gets a :class:`WebsocketLayer` (over a :class:`~minijs.core.tls.TlsLayer`
for ``wss``), which reads the HTTP upgrade request with ``h11``, checks it as nats-server does
(its order, its HTTP statuses and log lines), answers ``101 Switching Protocols`` with the same
headers, and from then on runs the frames with ``wsproto``: the payload of every binary or text
frame, fragmented or not, compressed (permessage-deflate, no context takeover) or not, goes to
an ordinary :class:`~minijs.core.connection.Connection` as a byte stream; its output leaves as
binary frames (at most 4 KiB each for browsers, as nats-server sends them). Pings are answered,
a close is echoed, a protocol error closes with 1002 and nats-server's reason, and a connection
the server closes gets a close frame whose status says why (nats-server's mapping).

Invariants: the connection exists only once the upgrade succeeded (nothing is registered for a
refused request); frames are never written before the ``101``; after a close frame was sent
nothing else is. Loaded only when a ``websocket { }`` block is configured, with ``wsproto``
(the ``minijs[websocket]`` extra).
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import urlsplit

import h11
from wsproto.connection import Connection as FrameConnection
from wsproto.connection import ConnectionState, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, TextMessage
from wsproto.extensions import Extension, PerMessageDeflate

from minijs.clock import REAL_CLOCK
from minijs.wsconfig import WebsocketOptions

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_PMC_RESPONSE = ("permessage-deflate; server_no_context_takeover; "
                 "client_no_context_takeover")
#: nats-server's frame size for browsers ("webrowsers behave better with limited frame size").
BROWSER_FRAME_SIZE = 4096
#: Largest HTTP request head accepted before the upgrade (Go's http server: 1 MiB).
_MAX_REQUEST_HEAD = 1 << 20

#: Close statuses nats-server sends for a connection it closes, by close reason.
_CLOSE_STATUS = {
    "Client Closed": 1000,
    "Authentication Timeout": 1008, "Authentication Failure": 1008,
    "Slow Consumer (Pending Bytes)": 1008, "Slow Consumer (Write Deadline)": 1008,
    "Maximum Account Connections Exceeded": 1008, "Maximum Connections Exceeded": 1008,
    "Maximum Control Line Exceeded": 1008, "Maximum Subscriptions Exceeded": 1008,
    "Missing Account": 1008, "Authentication Expired": 1008, "Credentials Revoked": 1008,
    "TLS Handshake Failure": 1015,
    "Parse Error": 1002, "Protocol Violation": 1002, "Bad Client Protocol Version": 1002,
    "Maximum Message Payload Exceeded": 1009,
    "Write Error": 1001, "Read Error": 1001, "Stale Connection": 1001,
    "Server Shutdown": 1001,
}

#: wsproto's reasons for a frame it refuses, in nats-server's words (wsReadLoop).
_PROTOCOL_ERRORS = {
    "server received unexpected unmasked frame": "mask bit missing",
    "Reserved bit set unexpectedly": "RSV2 and RSV3 must be clear",
    "Control frame with payload len > 125":
        "control frame length bigger than maximum allowed of 125 bytes",
    "Invalid attempt to fragment control frame": "control frame does not have final bit set",
    "unexpected CONTINUATION": "invalid continuation frame",
    "CLOSE with 1 byte payload": "close frame payload cannot be 1 byte",
    "8-byte payload length with non-zero MSB": "invalid 64-bit payload length",
}


@dataclass
class WebsocketSession:
    """What the upgrade request told about a websocket client, kept on its connection
    (``conn.websocket``): the listener's options, the credentials sent as cookies, whether it
    is a browser, and the TLS session of a ``wss`` listener."""

    options: WebsocketOptions
    host: str
    port: int
    secure: bool
    browser: bool = False
    compress: bool = False
    cookie_jwt: str = ""
    cookie_user: str = ""
    cookie_pass: str = ""
    cookie_token: str = ""
    tls: Any = None

    def info_fields(self, fields: dict[str, Any], auth_required: bool) -> None:
        """INFO as nats-server sends it to a websocket client: the websocket listener's host
        and port, ``auth_required`` with the block's own authentication, and
        ``tls_required``/``tls_available`` both saying whether it is ``wss``."""
        fields["host"] = self.host
        fields["port"] = self.port
        if auth_required or self.options.auth_override:
            fields["auth_required"] = True
        if self.secure:
            fields["tls_required"] = True
            fields["tls_available"] = True

    def fill_connect(self, opts: dict[str, Any]) -> None:
        """Cookies stand in for what a CONNECT left out (nats-server's processConnect): the
        ``jwt_cookie`` becomes the connection's JWT, and the user, password and token
        cookies its credentials."""
        if not opts.get("jwt") and self.cookie_jwt:
            opts["jwt"] = self.cookie_jwt
        if not opts.get("user") and self.cookie_user:
            opts["user"] = self.cookie_user
        if not opts.get("pass") and self.cookie_pass:
            opts["pass"] = self.cookie_pass
        if not opts.get("auth_token") and self.cookie_token:
            opts["auth_token"] = self.cookie_token

    def auth_settings(self, required: bool, timeout: float) -> tuple[bool, float]:
        """Whether the client must authenticate, and how long it has."""
        if self.options.auth_timeout:
            timeout = self.options.auth_timeout
        return required or self.options.auth_override, timeout


class HandshakeRefused(Exception):
    """An upgrade request nats-server refuses: the HTTP status and its reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


_STATUS_TEXT = {400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed",
                500: "Internal Server Error"}


class WebsocketLayer(asyncio.Protocol):
    """Below a connection, above the socket (or its TLS layer): the upgrade, then frames.

    ``make_connection()`` builds the connection once the upgrade succeeded; ``session`` is
    filled from the request and handed to it as ``conn.websocket``.
    """

    def __init__(self, options: WebsocketOptions, make_connection: Callable[[], Any],
                 session: WebsocketSession, log: Any) -> None:
        self.options = options
        self.make_connection = make_connection
        self.session = session
        self.log = log
        self.lower: Any = None
        self.upper: Any = None
        self._http: h11.Connection | None = h11.Connection(
            h11.SERVER, max_incomplete_event_size=_MAX_REQUEST_HEAD)
        self._frames: FrameConnection | None = None
        self._timer: Any = None
        self._closing = False
        self._close_sent = False
        self._peer = ""

    # -- below (the socket or TLS)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.lower = transport
        peer = transport.get_extra_info("peername") or ("", 0)
        self._peer = _addr(peer)
        if self.options.handshake_timeout > 0:
            self._timer = REAL_CLOCK.call_later(self.options.handshake_timeout,
                                                self._handshake_expired)

    def data_received(self, data: bytes) -> None:
        frames = self._frames
        if frames is not None:
            self._frames_in(data)
        elif self._http is not None:
            self._request_in(data)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        if self.upper is not None:
            self.upper.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.upper is not None:
            self.upper.pause_writing()

    def resume_writing(self) -> None:
        if self.upper is not None:
            self.upper.resume_writing()

    # -- above (the connection's transport)

    def write(self, data: bytes) -> None:
        frames = self._frames
        if frames is None or self._close_sent or frames.state != ConnectionState.OPEN:
            return
        if self.session.browser and len(data) > BROWSER_FRAME_SIZE and not self.session.compress:
            out = []
            for start in range(0, len(data), BROWSER_FRAME_SIZE):
                chunk = data[start:start + BROWSER_FRAME_SIZE]
                out.append(frames.send(BytesMessage(
                    data=chunk, message_finished=start + BROWSER_FRAME_SIZE >= len(data))))
            self.lower.write(b"".join(out))
        else:
            self.lower.write(frames.send(BytesMessage(data=data)))

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def get_write_buffer_size(self) -> int:
        return self.lower.get_write_buffer_size() if self.lower is not None else 0

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if self.lower is not None:
            self.lower.set_write_buffer_limits(high, low)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.lower.get_extra_info(name, default) if self.lower is not None else default

    def is_closing(self) -> bool:
        return self._closing

    def pause_reading(self) -> None:
        self.lower.pause_reading()

    def resume_reading(self) -> None:
        self.lower.resume_reading()

    def close(self) -> None:
        """The server closes the connection: a close frame saying why, then the socket."""
        if self._closing:
            return
        self._closing = True
        reason = getattr(self.upper, "close_reason", None) or "Server Shutdown"
        self._send_close(_CLOSE_STATUS.get(reason, 1011), reason)
        self.lower.close()

    def abort(self) -> None:
        self._closing = True
        self.lower.abort()

    # -- the upgrade

    def _request_in(self, data: bytes) -> None:
        http = self._http
        assert http is not None
        try:
            http.receive_data(data)
            event = http.next_event()
        except h11.RemoteProtocolError:
            self._refuse_plain(400)
            return
        if event is h11.NEED_DATA:
            return
        if not isinstance(event, h11.Request):
            self._refuse_plain(400)
            return
        self._http = None
        self._cancel_timer()
        trailing, _ = http.trailing_data
        try:
            response = self._upgrade(event)
            if trailing:
                # Go's HTTP server has handed the socket over by now: no response is possible
                raise HandshakeRefused(0, "client sent data before handshake is complete")
        except HandshakeRefused as exc:
            self.log.error(f"{self._peer} - websocket handshake error: {exc.reason}")
            if exc.status:
                self._refuse(exc.status)
            else:
                self._closing = True
                self.lower.close()
            return
        self.lower.write(response)
        extensions: list[Extension] = []
        if self.session.compress:
            deflate = PerMessageDeflate(client_no_context_takeover=True,
                                        server_no_context_takeover=True)
            deflate.finalize(_PMC_RESPONSE)
            extensions.append(deflate)
        self._frames = FrameConnection(ConnectionType.SERVER, extensions)
        conn = self.make_connection()
        conn.websocket = self.session
        if self.session.tls is not None:
            conn.tls = self.session.tls
        self.upper = conn
        conn.connection_made(self)

    def _upgrade(self, request: h11.Request) -> bytes:
        """nats-server's wsUpgrade checks, in its order; the ``101`` response."""
        headers: dict[str, list[str]] = {}
        for name, value in request.headers:
            headers.setdefault(name.decode("latin-1").lower(), []).append(
                value.decode("latin-1"))
        if request.method != b"GET":
            raise HandshakeRefused(405, "request method must be GET")
        if not headers.get("host", [""])[0]:
            raise HandshakeRefused(400, "'Host' missing in request")
        if not _contains(headers, "upgrade", "websocket"):
            raise HandshakeRefused(400, "invalid value for header 'Upgrade'")
        if not _contains(headers, "connection", "upgrade"):
            raise HandshakeRefused(400, "invalid value for header 'Connection'")
        key = headers.get("sec-websocket-key", [""])[0]
        if not key:
            raise HandshakeRefused(400, "key missing")
        try:
            valid_key = len(base64.b64decode(key, validate=True)) == 16
        except ValueError:
            valid_key = False
        if not valid_key:
            raise HandshakeRefused(400, "invalid websocket key")
        if not _contains(headers, "sec-websocket-version", "13"):
            raise HandshakeRefused(400, "invalid version")
        problem = self._origin_problem(headers)
        if problem:
            raise HandshakeRefused(403, f"origin not allowed: {problem}")
        session = self.session
        session.compress = self.options.compression and any(
            _has_deflate(v) for v in headers.get("sec-websocket-extensions", []))
        agent = headers.get("user-agent", [""])[0]
        session.browser = agent.startswith("Mozilla/")
        for cookie in headers.get("cookie", []):
            self._take_cookies(cookie)
        accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest()).decode()
        lines = ["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket",
                 "Connection: Upgrade", f"Sec-WebSocket-Accept: {accept}"]
        if session.compress:
            lines.append(f"Sec-WebSocket-Extensions: {_PMC_RESPONSE}")
        lines.extend(f"{k}: {v}" for k, v in self.options.headers)
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _origin_problem(self, headers: dict[str, list[str]]) -> str | None:
        """nats-server's checkOrigin: same origin and/or the allowed list, when configured;
        a request without an Origin header passes."""
        options = self.options
        if not options.same_origin and not options.allowed_origins:
            return None
        origin = (headers.get("origin") or headers.get("sec-websocket-origin") or [""])[0]
        if not origin:
            return None
        parts = urlsplit(origin)
        if not parts.scheme or not parts.netloc:
            return f'parse "{origin}": invalid URI for request'
        host, port = _host_and_port(parts.scheme == "https", parts.netloc)
        if options.same_origin:
            secure = self.session.secure
            req_host, req_port = _host_and_port(secure, headers.get("host", [""])[0])
            scheme = "https" if secure else "http"
            if host != req_host or port != req_port or parts.scheme.lower() != scheme:
                return "not same origin"
        if options.allowed_origins:
            for allowed in options.allowed_origins:
                a = urlsplit(allowed)
                a_host, a_port = _host_and_port(a.scheme == "https", a.netloc)
                if a_host == host and a.scheme == parts.scheme and a_port == port:
                    return None
            return "not in the allowed list"
        return None

    def _take_cookies(self, header: str) -> None:
        options = self.options
        session = self.session
        for part in header.split(";"):
            name, sep, value = part.strip().partition("=")
            if not sep:
                continue
            value = value.strip().strip('"')
            if options.jwt_cookie and name == options.jwt_cookie:
                session.cookie_jwt = value
            elif options.user_cookie and name == options.user_cookie:
                session.cookie_user = value
            elif options.pass_cookie and name == options.pass_cookie:
                session.cookie_pass = value
            elif options.token_cookie and name == options.token_cookie:
                session.cookie_token = value

    def _refuse(self, status: int) -> None:
        """Go's http.Error after a refused upgrade."""
        text = _STATUS_TEXT.get(status, "Bad Request")
        body = f"{text}\n".encode()
        date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())
        head = (f"HTTP/1.1 {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Sec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\n"
                f"Date: {date}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        self._closing = True
        self.lower.write(head.encode() + body)
        self.lower.close()

    def _refuse_plain(self, status: int) -> None:
        """A request Go's HTTP server itself refuses (not HTTP/1.1): ``400 Bad Request``."""
        self._http = None
        self._cancel_timer()
        self._closing = True
        self.lower.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; "
                         b"charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request")
        self.lower.close()

    def _handshake_expired(self) -> None:
        self._timer = None
        if self._http is not None:  # Go's http server read timeout: the socket is closed
            self._http = None
            self._closing = True
            self.lower.close()

    # -- frames

    def _frames_in(self, data: bytes) -> None:
        frames = self._frames
        assert frames is not None
        upper = self.upper
        try:
            frames.receive_data(data)
        except Exception:  # data after the connection closed (wsproto LocalProtocolError)
            return
        parts: list[bytes] = []
        for event in frames.events():
            if isinstance(event, BytesMessage):
                parts.append(bytes(event.data))
            elif isinstance(event, TextMessage):
                parts.append(event.data.encode("utf-8"))
            elif isinstance(event, Ping):
                if not self._close_sent:
                    self.lower.write(frames.send(event.response()))
            elif isinstance(event, CloseConnection):
                if parts:
                    upper.data_received(b"".join(parts))
                    parts = []
                self._peer_closed(event)
                return
        if parts and not upper.closed:
            upper.data_received(parts[0] if len(parts) == 1 else b"".join(parts))

    def _peer_closed(self, event: CloseConnection) -> None:
        """A close frame from the client (echoed, then ``Client Closed``), or a frame wsproto
        refused (1002 with nats-server's reason, then the same)."""
        frames = self._frames
        assert frames is not None
        upper = self.upper
        refused = frames.state == ConnectionState.OPEN
        if refused:
            # wsproto refused a frame: it turned the error into this event, nothing was sent
            reason = _PROTOCOL_ERRORS.get(event.reason or "", event.reason or "")
            if event.reason and event.reason.startswith("Invalid opcode"):
                reason = f"unknown opcode {int(event.reason.split()[-1], 16)}"
            elif event.reason and event.reason.startswith("expected CONTINUATION"):
                reason = ("new message started before final frame for previous message was "
                          "received")
            elif event.code == 1007 and "close" not in (event.reason or "").lower():
                reason = event.reason or "invalid utf8 body in close frame"
            self._send_close(event.code, reason)
            self.log.error(f"{self._peer} - wid:{upper.cid} - read error: {reason}")
        elif not self._close_sent and frames.state == ConnectionState.REMOTE_CLOSING:
            self._close_sent = True
            self.lower.write(frames.send(event.response()) if event.code != 1005
                             else _close_frame(None, ""))
        upper.closing("Read Error" if refused else "Client Closed")
        self._closing = True
        upper.close()
        self.lower.close()

    def _send_close(self, status: int, reason: str) -> None:
        if self._close_sent or self._frames is None:
            return
        self._close_sent = True
        self.lower.write(_close_frame(status, reason))

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _close_frame(status: int | None, reason: str) -> bytes:
    """An unmasked close frame (nats-server's wsCreateCloseMessage: a reason longer than a
    control frame allows is cut and ends in ``...``)."""
    if status is None:
        return b"\x88\x00"
    body = reason.encode("utf-8")
    if len(body) > 123:
        body = body[:120] + b"..."
    payload = status.to_bytes(2, "big") + body
    return bytes((0x88, len(payload))) + payload


def _contains(headers: dict[str, list[str]], name: str, token: str) -> bool:
    for value in headers.get(name, []):
        for part in value.split(","):
            if part.strip(" \t").lower() == token:
                return True
    return False


def _has_deflate(value: str) -> bool:
    return any(p.strip(" \t").lower() == "permessage-deflate"
               for ext in value.split(",") for p in ext.split(";"))


def _host_and_port(secure: bool, hostport: str) -> tuple[str, str]:
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif hostport.count(":") == 1:
        host, _, port = hostport.partition(":")
    else:
        host, port = hostport, ""
    return host.lower(), port or ("443" if secure else "80")


def _addr(sockaddr: Any) -> str:
    host, port = sockaddr[0], sockaddr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# ----------------------------------------------------------------------------- the listener


class WebsocketListener:
    """The ``websocket { }`` listener of a server: binds, logs as nats-server does, and
    turns each accepted socket into a websocket client of ``router``."""

    def __init__(self, router: Any, options: WebsocketOptions) -> None:
        self.router = router
        self.options = options
        self.port = 0
        self.secure = options.tls is not None
        self.tls: Any = None
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        """Bind (``OSError`` with nats-server's fatal line when the port is taken)."""
        options = self.options
        if self.secure:
            from minijs.core.tls import ClientTls

            assert options.tls is not None  # (secure: a tls { } block is configured)
            self.tls = ClientTls(options.tls)
        loop = asyncio.get_running_loop()
        port = options.port if options.port > 0 else 0
        from minijs.core.router import dual_stack_socket

        try:
            sock = dual_stack_socket(options.host, port)
            if sock is not None:
                self._server = await loop.create_server(self._protocol, sock=sock,
                                                        backlog=1024)
            else:
                self._server = await loop.create_server(self._protocol, host=options.host,
                                                        port=port, reuse_address=True,
                                                        backlog=1024)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if "): " in reason:
                reason = reason.rsplit("): ", 1)[1]
            hp = _addr((options.host, port))
            raise WebsocketListenError(
                f"Unable to listen for websocket connections: listen tcp {hp}: bind: "
                f"{reason.lower() if reason[:1].isupper() else reason}") from None
        self.port = self._server.sockets[0].getsockname()[1]
        log = self.router.log
        scheme = "wss" if self.secure else "ws"
        log.info(f"Listening for websocket clients on {scheme}://"
                 f"{_addr((options.host, self.port))}")
        if not self.secure:
            log.warn("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    async def closed(self) -> None:
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    @property
    def url(self) -> str:
        host = self.options.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        return f"{'wss' if self.secure else 'ws'}://{_addr((host, self.port))}"

    def _protocol(self) -> asyncio.Protocol:
        from minijs.core.connection import Connection

        router = self.router
        session = WebsocketSession(self.options, self.options.host, self.port, self.secure)

        def make_connection() -> Any:
            conn = Connection(router)
            conn.connection_type = "WEBSOCKET"  # for users' allowed_connection_types
            required, _ = session.auth_settings(router.config.auth_required, 0.0)
            conn.parser.require_connect = required
            return conn

        layer = WebsocketLayer(self.options, make_connection, session, router.log)
        if not self.secure:
            return layer
        from minijs.core.tls import TlsLayer

        tls = self.tls
        assert tls is not None
        return TlsLayer(layer, tls.context, tls.options, "immediate",
                        on_session=_keep_session, log=_layer_log(router.log))


class WebsocketListenError(OSError):
    """The websocket port cannot be bound (nats-server's fatal message)."""


def _keep_session(layer: WebsocketLayer, session: Any) -> None:
    layer.session.tls = session


def _layer_log(log: Any) -> Callable[[Any, str, str], None]:
    def say(layer: WebsocketLayer, level: str, text: str) -> None:
        getattr(log, level)(f"{layer._peer} - {text}")
    return say
