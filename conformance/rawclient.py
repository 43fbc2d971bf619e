"""A tiny blocking-socket NATS client for byte-exact wire checks.

The client keeps everything the server sent in an internal buffer and splits it into *frames*
(one server op: a control line, plus the payload for ``MSG``/``HMSG``). Reads hand out bytes
from the front of that frame stream, so a test can compare exact bytes with ``expect`` without
caring how the server chunked its writes.

With ``auto_pong=True`` (the default) a server ``PING\\r\\n`` frame is answered with
``PONG\\r\\n`` and removed from the stream, so the real server's first keep-alive PING (about
2 s after connect) never shows up in a comparison. Keep-alive tests pass ``auto_pong=False``.
"""
from __future__ import annotations

import json
import socket
import time
from collections import deque
from typing import Any

CRLF = b"\r\n"
PING = b"PING\r\n"
PONG = b"PONG\r\n"
OK = b"+OK\r\n"

#: Default time a read waits for data before failing.
DEFAULT_TIMEOUT = 5.0


class ConnectionClosed(Exception):
    """The server closed the connection (EOF or reset) while more bytes were expected."""


class RawClient:
    """A blocking TCP connection to a NATS server speaking raw protocol bytes."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        auto_pong: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        rcvbuf: int | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.auto_pong = auto_pong
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            # Must be set before connect() to shrink the advertised TCP window.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self._raw = bytearray()  # received, not yet split into frames
        self._frames: deque[bytes] = deque()  # complete server frames, oldest first
        self._closed = False  # EOF or reset seen on the read side
        self.info_line: bytes = b""
        self.info: dict[str, Any] = {}

    # ------------------------------------------------------------------ life cycle

    @classmethod
    def connect(
        cls,
        host: str,
        port: int,
        *,
        auto_pong: bool = True,
        timeout: float = DEFAULT_TIMEOUT,
        rcvbuf: int | None = None,
    ) -> "RawClient":
        """Open a connection and read the server's initial INFO line (``self.info``)."""
        client = cls(host, port, auto_pong=auto_pong, timeout=timeout, rcvbuf=rcvbuf)
        client.info_line = client.read_line()
        client.info = parse_info(client.info_line)
        return client

    def handshake(self, **options: Any) -> dict[str, Any] | None:
        """Send ``CONNECT`` (nats-py style defaults overridden by ``options``) plus ``PING``.

        Waits for ``PONG`` (after a ``+OK`` when verbose). When ``protocol >= 1`` the server
        follows that first PONG with an INFO carrying ``connect_info``; it is consumed and
        returned. Returns None for protocol 0.
        """
        opts: dict[str, Any] = {
            "verbose": False,
            "pedantic": False,
            "echo": True,
            "headers": True,
            "no_responders": True,
            "protocol": 1,
            "lang": "python3",
            "version": "conformance",
        }
        opts.update(options)
        self.send(b"CONNECT " + json.dumps(opts).encode() + CRLF + PING)
        if opts.get("verbose"):
            self.expect(OK)
        self.expect(PONG)
        if int(opts.get("protocol", 0)) >= 1:
            return parse_info(self.read_line())
        return None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "RawClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    def send(self, data: bytes) -> None:
        """Write all of ``data`` to the server."""
        self.sock.sendall(data)

    def send_bytewise(self, data: bytes, delay: float = 0.0) -> None:
        """Write ``data`` one byte per ``send`` call (optionally pausing in between)."""
        for i in range(len(data)):
            self.sock.sendall(data[i : i + 1])
            if delay:
                time.sleep(delay)

    # ------------------------------------------------------------------ low-level reading

    def _recv(self, deadline: float) -> bool:
        """Receive one chunk into the frame buffer. Returns False once the peer is closed."""
        if self._closed:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self.sock.settimeout(remaining)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError from None
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
            chunk = b""
        if not chunk:
            self._closed = True
            # Whatever is left unparsed becomes a final (partial) frame.
            if self._raw:
                self._frames.append(bytes(self._raw))
                self._raw.clear()
            return False
        self._raw += chunk
        self._split_frames()
        return True

    def _split_frames(self) -> None:
        """Move complete server ops from the raw buffer into the frame queue."""
        while True:
            nl = self._raw.find(b"\n")
            if nl < 0:
                return
            line = bytes(self._raw[: nl + 1])
            size = 0
            head = line.split(None, 1)[0] if line.strip() else b""
            if head in (b"MSG", b"HMSG"):
                try:
                    size = int(line.split()[-1]) + 2  # payload plus its CRLF
                except ValueError:
                    size = 0
            if len(self._raw) < nl + 1 + size:
                return  # payload not complete yet
            frame = bytes(self._raw[: nl + 1 + size])
            del self._raw[: nl + 1 + size]
            if self.auto_pong and frame == PING:
                try:
                    self.sock.sendall(PONG)
                except OSError:
                    pass
                continue
            self._frames.append(frame)

    def _buffered(self) -> int:
        return sum(len(f) for f in self._frames)

    def _take(self, n: int) -> bytes:
        """Remove and return the first ``n`` buffered bytes (may split a frame)."""
        out = bytearray()
        while len(out) < n and self._frames:
            frame = self._frames.popleft()
            need = n - len(out)
            if len(frame) > need:
                out += frame[:need]
                self._frames.appendleft(frame[need:])
            else:
                out += frame
        return bytes(out)

    def _peek(self) -> bytes:
        return b"".join(self._frames)

    # ------------------------------------------------------------------ reading API

    def read_exactly(self, n: int, timeout: float | None = None) -> bytes:
        """Return exactly ``n`` bytes; raise TimeoutError / ConnectionClosed otherwise."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while self._buffered() < n:
            try:
                if not self._recv(deadline):
                    if self._buffered() < n:
                        raise ConnectionClosed(
                            f"connection closed after {self._peek()!r}, wanted {n} bytes"
                        )
            except TimeoutError:
                raise TimeoutError(
                    f"timed out waiting for {n} bytes; have {self._peek()!r}"
                ) from None
        return self._take(n)

    def read_line(self, timeout: float | None = None) -> bytes:
        """Return the next line including its terminating ``\\n``."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            data = self._peek()
            nl = data.find(b"\n")
            if nl >= 0:
                return self._take(nl + 1)
            try:
                if not self._recv(deadline):
                    data = self._peek()
                    if b"\n" not in data:
                        raise ConnectionClosed(f"connection closed; partial data {data!r}")
            except TimeoutError:
                raise TimeoutError(f"timed out waiting for a line; have {data!r}") from None

    def read_frame(self, timeout: float | None = None) -> bytes:
        """Return the next complete server op (control line plus payload, if any)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while not self._frames:
            try:
                if not self._recv(deadline):
                    if not self._frames:
                        raise ConnectionClosed("connection closed while waiting for a frame")
            except TimeoutError:
                raise TimeoutError(
                    f"timed out waiting for a frame; partial {bytes(self._raw)!r}"
                ) from None
        return self._frames.popleft()

    def expect(self, expected: bytes, timeout: float | None = None) -> None:
        """Assert that the next bytes from the server are exactly ``expected``."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while self._buffered() < len(expected):
            data = self._peek()
            if not expected.startswith(data):
                break  # already diverged: fail fast with what we have
            try:
                if not self._recv(deadline):
                    break
            except TimeoutError:
                break
        got = self._take(min(len(expected), self._buffered()))
        if got != expected:
            # Show what else is arriving, to make the report's diff self-explanatory.
            more = b"" if self._closed else self.read_available(0.1)
            more += self._take(self._buffered())
            state = " (connection closed)" if self._closed else ""
            raise AssertionError(
                f"expected {expected!r}, got {got!r}" + (f" then {more!r}" if more else "") + state
            )

    def read_until(self, marker: bytes, timeout: float | None = None) -> bytes:
        """Read frames until one equal to ``marker``; return the bytes before it."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        out = bytearray()
        while True:
            try:
                frame = self.read_frame(timeout=max(0.0, deadline - time.monotonic()))
            except ConnectionClosed:
                raise ConnectionClosed(
                    f"connection closed before {marker!r}; received {bytes(out)!r}"
                ) from None
            except TimeoutError:
                raise TimeoutError(
                    f"timed out waiting for {marker!r}; received {bytes(out)!r}"
                    f" + partial {bytes(self._raw)!r}"
                ) from None
            if frame == marker:
                return bytes(out)
            out += frame

    def barrier(self, timeout: float | None = None) -> bytes:
        """Send ``PING`` and return everything the server sent before the matching ``PONG``.

        The server handles a connection's input in order, so once the PONG arrives every earlier
        op of this connection has been processed and its output is in the returned bytes.
        """
        self.send(PING)
        return self.read_until(PONG, timeout)

    def read_available(self, wait: float = 0.2) -> bytes:
        """Collect whatever arrives within ``wait`` seconds (no error on silence)."""
        deadline = time.monotonic() + wait
        try:
            while self._recv(deadline):
                pass
        except TimeoutError:
            pass
        return self._take(self._buffered())

    def read_until_closed(self, timeout: float | None = None) -> bytes:
        """Read until EOF/reset and return everything received; TimeoutError if still open."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        try:
            while self._recv(deadline):
                pass
        except TimeoutError:
            raise TimeoutError(
                f"connection still open after {self._peek()!r}{bytes(self._raw)!r}"
            ) from None
        return self._take(self._buffered())

    def assert_closed(self, timeout: float | None = None, expect_data: bytes = b"") -> None:
        """Assert that the server closes the connection, sending exactly ``expect_data`` first."""
        data = self.read_until_closed(timeout)
        assert data == expect_data, f"expected {expect_data!r} then close, got {data!r}"

    @property
    def closed(self) -> bool:
        """True once EOF/reset has been observed on the read side."""
        return self._closed


def parse_info(line: bytes) -> dict[str, Any]:
    """Parse an ``INFO {json} \\r\\n`` line into its JSON object."""
    assert line.startswith(b"INFO "), f"not an INFO line: {line!r}"
    info = json.loads(line[5:].strip())
    assert isinstance(info, dict), f"INFO is not a JSON object: {line!r}"
    return info


def msg(subject: str, sid: str | int, payload: bytes, reply: str | None = None) -> bytes:
    """The exact bytes of a server ``MSG`` for the given fields."""
    parts = [b"MSG", subject.encode(), str(sid).encode()]
    if reply is not None:
        parts.append(reply.encode())
    parts.append(str(len(payload)).encode())
    return b" ".join(parts) + CRLF + payload + CRLF


def hmsg(
    subject: str, sid: str | int, header: bytes, payload: bytes, reply: str | None = None
) -> bytes:
    """The exact bytes of a server ``HMSG`` for the given fields."""
    parts = [b"HMSG", subject.encode(), str(sid).encode()]
    if reply is not None:
        parts.append(reply.encode())
    parts += [str(len(header)).encode(), str(len(header) + len(payload)).encode()]
    return b" ".join(parts) + CRLF + header + payload + CRLF


def pub(subject: str, payload: bytes, reply: str | None = None) -> bytes:
    """The exact bytes of a client ``PUB``."""
    parts = [b"PUB", subject.encode()]
    if reply is not None:
        parts.append(reply.encode())
    parts.append(str(len(payload)).encode())
    return b" ".join(parts) + CRLF + payload + CRLF


def hpub(subject: str, header: bytes, payload: bytes, reply: str | None = None) -> bytes:
    """The exact bytes of a client ``HPUB``."""
    parts = [b"HPUB", subject.encode()]
    if reply is not None:
        parts.append(reply.encode())
    parts += [str(len(header)).encode(), str(len(header) + len(payload)).encode()]
    return b" ".join(parts) + CRLF + header + payload + CRLF


def split_frames(data: bytes) -> list[bytes]:
    """Split server output into ops (control line plus MSG/HMSG payload); a trailing
    incomplete op is returned as the last element."""
    frames: list[bytes] = []
    rest = data
    while rest:
        nl = rest.find(b"\n")
        if nl < 0:
            frames.append(rest)
            break
        line = rest[: nl + 1]
        size = 0
        words = line.split()
        if words and words[0] in (b"MSG", b"HMSG"):
            try:
                size = int(words[-1]) + 2
            except ValueError:
                size = 0
        frames.append(rest[: nl + 1 + size])
        rest = rest[nl + 1 + size :]
    return frames
