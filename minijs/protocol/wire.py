"""Encoders for what the server writes: INFO, MSG/HMSG, -ERR, status messages.

Every wire string the server emits is built here, so its exact bytes live in one place.
"""
from __future__ import annotations

from minijs.protocol.cjson import dumps_compact
from minijs.protocol.gostrings import go_quote

PING = b"PING\r\n"
PONG = b"PONG\r\n"
OK = b"+OK\r\n"
CRLF = b"\r\n"
HEADER_VERSION = b"NATS/1.0"
#: The header that asks for a message to be traced (nats-server's ``MsgTraceDest``).
TRACE_DEST_HEADER = b"Nats-Trace-Dest"


def info(fields: dict) -> bytes:
    """``INFO {json} \\r\\n``: compact JSON, and the single space nats-server puts before CRLF."""
    return b"INFO " + dumps_compact(fields).encode() + b" \r\n"


def err(text: str) -> bytes:
    return b"-ERR '" + text.encode() + b"'\r\n"


def quote(data: bytes) -> str:
    """Go's ``%q`` of a byte string (``strconv.Quote``), as nats-server's -ERR texts show a
    subject: printable runes as they are, the C escapes, ``\\x..`` for other control bytes
    and for each byte of invalid UTF-8, ``\\u....`` for other unprintable runes."""
    if data.isascii() and data.isalnum():
        return '"' + data.decode() + '"'
    return go_quote(data)


def msg(subject: bytes, sid: bytes, reply: bytes | None, payload: bytes) -> bytes:
    # One formatting operation builds the whole frame (no intermediate head + payload copies).
    if reply:
        return b"MSG %b %b %b %d\r\n%b\r\n" % (subject, sid, reply, len(payload), payload)
    return b"MSG %b %b %d\r\n%b\r\n" % (subject, sid, len(payload), payload)


#: ``<size>\r\n`` lines already built, by size (at most SIZE_LINES_MAX of them): the end of a
#: MSG line for a payload of that size, framed in pieces (see
#: :meth:`minijs.core.connection.Connection.deliver`).
SIZE_LINES: dict[int, bytes] = {}
SIZE_LINES_MAX = 4096


def size_line(size: int) -> bytes:
    """``b"<size>\r\n"``, remembered in :data:`SIZE_LINES` while there is room."""
    line = SIZE_LINES.get(size)
    if line is None:
        line = b"%d\r\n" % size
        if len(SIZE_LINES) < SIZE_LINES_MAX:
            SIZE_LINES[size] = line
    return line


class Sized(bytes):
    """A client's payload whose size tokens had leading zeros (``PUB s 007``): nats-server
    repeats the client's own tokens in the MSG/HMSG lines of that publish, so they travel
    with the payload (``size``; ``header_size`` for an HPUB). Set to None once the publish
    has been routed: a stored copy is delivered later with plain sizes."""

    size: bytes | None
    header_size: bytes | None


def sized(payload: bytes, header_size: bytes | None, size: bytes) -> Sized:
    out = Sized(payload)
    out.size = size
    out.header_size = header_size
    return out


def msg_sized(subject: bytes, sid: bytes, reply: bytes | None, payload: Sized,
              header: bytes = b"") -> bytes:
    """MSG (or HMSG with ``header``) with the publisher's own size tokens."""
    if payload.size is None:
        if header:
            return hmsg(subject, sid, reply, header, payload)
        return msg(subject, sid, reply, payload)
    head = [b"HMSG" if header else b"MSG", subject, sid]
    if reply:
        head.append(reply)
    if header:
        head.append(payload.header_size or b"%d" % len(header))
    head.append(payload.size)
    return b" ".join(head) + CRLF + header + payload + CRLF


def hmsg(subject: bytes, sid: bytes, reply: bytes | None, header: bytes, payload: bytes) -> bytes:
    hlen = len(header)
    if reply:
        return b"HMSG %b %b %b %d %d\r\n%b%b\r\n" % (subject, sid, reply, hlen,
                                                       hlen + len(payload), header, payload)
    return b"HMSG %b %b %d %d\r\n%b%b\r\n" % (subject, sid, hlen, hlen + len(payload),
                                               header, payload)


def status_header(code: int, description: str = "", headers: list[tuple[str, str]] | None = None
                  ) -> bytes:
    """A header block carrying a status line: ``NATS/1.0 503\\r\\nName: value\\r\\n\\r\\n``."""
    line = b"NATS/1.0 %d" % code
    if description:
        line += b" " + description.encode()
    parts = [line]
    for name, value in headers or ():
        parts.append(f"{name}: {value}".encode())
    return b"\r\n".join(parts) + b"\r\n\r\n"


def no_responders_header(subject: bytes) -> bytes:
    """The 503 a requester gets when nothing received its request."""
    return b"NATS/1.0 503\r\nNats-Subject: " + subject + b"\r\n\r\n"
