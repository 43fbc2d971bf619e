"""JetStream helpers for the conformance cases: a raw-protocol request/reply client for the
``$JS.API`` subjects and the publish path, and small parsers for what comes back.

``JsClient`` sits on a ``RawClient`` so cases can compare exact wire bytes (pub ack payloads,
status lines, DIRECT.GET header blocks) as well as decoded JSON. Every request gets its own
reply subject under a per-client inbox, so replies can never be confused. ``Sub`` is the one
reader of a subscription on that connection (pull inboxes, push deliveries, advisories),
told apart by sid; messages read while waiting for another reader are kept for it.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.rawclient import CRLF, RawClient, split_frames
from conformance.servers import Endpoint

API = "$JS.API"
#: ``type`` prefix of every JSON API reply.
TYPE_PREFIX = "io.nats.jetstream.api.v1."
#: Go's zero time as the server encodes it.
ZERO_TIME = "0001-01-01T00:00:00Z"
#: RFC 3339 UTC with 0-9 fractional digits, trailing zeros trimmed (Go's RFC3339Nano).
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d*[1-9])?Z$")
#: The server's reported version (both targets advertise 2.15.1).
SERVER_VERSION = "2.15.1"
#: JetStream API level of 2.15.x.
API_LEVEL = 5
#: Dynamic metadata keys the server adds to create/update/info replies.
DYNAMIC_METADATA = {"_nats.level": str(API_LEVEL), "_nats.req.level": "0",
                    "_nats.ver": SERVER_VERSION}

#: StreamConfig as echoed for ``{"name": N, "subjects": [...]}`` with nothing else set
#: (file storage). ``name`` and ``subjects`` are filled in by ``default_config``.
_DEFAULT_CONFIG: dict[str, Any] = {
    "name": None,
    "subjects": None,
    "retention": "limits",
    "max_consumers": -1,
    "max_msgs": -1,
    "max_bytes": -1,
    "max_age": 0,
    "max_msgs_per_subject": -1,
    "max_msg_size": -1,
    "discard": "old",
    "storage": "file",
    "num_replicas": 1,
    "duplicate_window": 120_000_000_000,
    "compression": "none",
    "allow_direct": False,
    "mirror_direct": False,
    "sealed": False,
    "deny_delete": False,
    "deny_purge": False,
    "allow_rollup_hdrs": False,
    "consumer_limits": {},
    "allow_msg_ttl": False,
    "metadata": DYNAMIC_METADATA,
}


def unique_name(prefix: str = "S") -> str:
    """A stream name no other case uses."""
    return f"{prefix}{uuid.uuid4().hex[:10].upper()}"


def default_config(name: str, subjects: list[str] | None = None, **overrides: Any) -> dict[str, Any]:
    """The full config object the server echoes for a stream created with only name/subjects
    (plus ``overrides`` replacing or adding fields, in Go struct order where it matters)."""
    cfg = dict(_DEFAULT_CONFIG)
    cfg["name"] = name
    cfg["subjects"] = subjects if subjects is not None else [name]
    cfg["metadata"] = dict(DYNAMIC_METADATA)
    cfg.update(overrides)
    return cfg


def api_error(code: int, err_code: int, description: str) -> dict[str, Any]:
    """The ``error`` object of a JSON API reply."""
    return {"code": code, "err_code": err_code, "description": description}


def encode(body: Any) -> bytes:
    """Request payload: dicts/lists as compact JSON, bytes/str as is, None as empty."""
    if body is None:
        return b""
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return json.dumps(body, separators=(",", ":")).encode()


def header_block(*pairs: tuple[str, str], status: str = "") -> bytes:
    """``NATS/1.0[ status]\\r\\nK: V\\r\\n...\\r\\n`` for the given pairs, in order."""
    first = b"NATS/1.0" + ((b" " + status.encode()) if status else b"")
    lines = [first] + [f"{k}: {v}".encode() for k, v in pairs]
    return CRLF.join(lines) + CRLF + CRLF


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass
class Msg:
    """One MSG/HMSG delivered to the client."""

    frame: bytes
    subject: str
    sid: str
    reply: str | None
    header: bytes
    data: bytes

    @property
    def status_line(self) -> str:
        """The first header line (``NATS/1.0 503``), or '' without headers."""
        if not self.header:
            return ""
        return self.header.split(CRLF, 1)[0].decode()

    @property
    def status(self) -> str:
        """Status code and description after ``NATS/1.0``, e.g. ``"404 Message Not Found"``."""
        return self.status_line[len("NATS/1.0"):].strip()

    @property
    def header_pairs(self) -> list[tuple[str, str]]:
        """Header ``(name, value)`` pairs in wire order (status line excluded)."""
        out: list[tuple[str, str]] = []
        if not self.header:
            return out
        for line in self.header.split(CRLF)[1:]:
            if not line:
                continue
            k, _, v = line.decode().partition(":")
            out.append((k, v.strip()))
        return out

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.header_pairs)

    def json(self) -> Any:
        return json.loads(self.data)


def parse_msg(frame: bytes) -> Msg:
    line, _, rest = frame.partition(CRLF)
    words = line.decode().split()
    if words[0] == "MSG":
        subject, sid = words[1], words[2]
        reply = words[3] if len(words) == 5 else None
        size = int(words[-1])
        return Msg(frame, subject, sid, reply, b"", rest[:size])
    if words[0] == "HMSG":
        subject, sid = words[1], words[2]
        reply = words[3] if len(words) == 6 else None
        hsize, total = int(words[-2]), int(words[-1])
        return Msg(frame, subject, sid, reply, rest[:hsize], rest[hsize:total])
    raise AssertionError(f"expected MSG/HMSG, got {frame!r}")


class JsClient:
    """Raw-protocol client for JetStream requests.

    ``request`` sends one request (PUB or HPUB with a fresh reply subject) and returns the first
    reply as a ``Msg``; ``api`` does the same for ``$JS.API.<suffix>`` and decodes the JSON.
    """

    def __init__(self, raw: RawClient) -> None:
        self.raw = raw
        self.inbox = f"_INBOX.{uuid.uuid4().hex}"
        self._n = 0
        self._pending: list[Msg] = []
        self.created: list[str] = []
        raw.send(f"SUB {self.inbox}.> 1\r\n".encode())
        raw.barrier()

    @classmethod
    def connect(cls, endpoint: Endpoint, **connect_options: Any) -> "JsClient":
        """Connect (``connect_options`` go into CONNECT: ``user``, ``pass``, ...)."""
        raw = RawClient.connect(endpoint.host, endpoint.port)
        raw.handshake(**connect_options)
        return cls(raw)

    def close(self) -> None:
        self.raw.close()

    # ------------------------------------------------------------------ sending

    def new_reply(self) -> str:
        self._n += 1
        return f"{self.inbox}.{self._n}"

    def send(self, subject: str, payload: Any = None, headers: bytes | None = None,
             reply: str | None = None) -> None:
        """PUB (or HPUB when ``headers`` is given) without waiting for anything."""
        data = encode(payload)
        parts = [subject]
        if reply:
            parts.append(reply)
        if headers is None:
            line = f"PUB {' '.join(parts)} {len(data)}\r\n".encode()
            self.raw.send(line + data + CRLF)
        else:
            line = f"HPUB {' '.join(parts)} {len(headers)} {len(headers) + len(data)}\r\n".encode()
            self.raw.send(line + headers + data + CRLF)

    def _next_where(self, wanted: Callable[[Msg], bool], what: str, timeout: float,
                    errors_fatal: bool) -> Msg:
        """The next message ``wanted`` accepts: first from those read earlier for someone
        else, then from the wire (keeping the others for their readers). ``-ERR`` fails the
        read when ``errors_fatal``; other non-message frames (INFO updates) are skipped."""
        for i, m in enumerate(self._pending):
            if wanted(m):
                return self._pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what} within {timeout}s")
            try:
                frame = self.raw.read_frame(timeout=remaining)
            except TimeoutError:
                raise TimeoutError(f"{what} within {timeout}s") from None
            if not (frame.startswith(b"MSG ") or frame.startswith(b"HMSG ")):
                if errors_fatal and frame.startswith(b"-ERR"):
                    raise AssertionError(f"server error: {frame!r}")
                continue  # e.g. INFO updates
            m = parse_msg(frame)
            if wanted(m):
                return m
            self._pending.append(m)

    def _next_for(self, reply: str, timeout: float) -> Msg:
        return self._next_where(lambda m: m.subject == reply, f"no reply on {reply}", timeout,
                                errors_fatal=True)

    def next_msg(self, subject: str, timeout: float = 5.0) -> Msg:
        """The next message delivered on ``subject`` (any of this connection's SUBs)."""
        return self._next_for(subject, timeout)

    def next_on_sid(self, sid: str, subject: str, timeout: float = 5.0) -> Msg:
        """The next message delivered to subscription ``sid`` (on ``subject``, named in the
        TimeoutError). ``-ERR`` frames are skipped, as a subscriber sees them."""
        return self._next_where(lambda m: m.sid == sid, f"nothing on {subject}", timeout,
                                errors_fatal=False)

    def sync(self) -> None:
        """PING/PONG round trip: every op sent so far has been processed by the server. The
        messages that arrived before the PONG are kept for their readers."""
        for frame in split_frames(self.raw.barrier()):
            if frame.startswith(b"MSG ") or frame.startswith(b"HMSG "):
                self._pending.append(parse_msg(frame))

    def subscribe(self, subject: str, queue: str = "") -> "Sub":
        """SUB ``subject`` on this connection, in place once this returns."""
        return Sub(self, subject, queue)

    def request(self, subject: str, payload: Any = None, headers: bytes | None = None,
                timeout: float = 5.0) -> Msg:
        """Send a request and return the first reply."""
        reply = self.new_reply()
        self.send(subject, payload, headers, reply)
        return self._next_for(reply, timeout)

    def request_many(self, subject: str, payload: Any = None, headers: bytes | None = None,
                     *, until_status: bool = True, count: int | None = None,
                     timeout: float = 5.0) -> list[Msg]:
        """Send a request and collect replies until one carries a status line (when
        ``until_status``; that reply is included) or ``count`` replies have arrived."""
        reply = self.new_reply()
        self.send(subject, payload, headers, reply)
        out: list[Msg] = []
        while True:
            m = self._next_for(reply, timeout)
            out.append(m)
            if count is not None and len(out) >= count:
                return out
            if until_status and m.status:
                return out

    def no_reply(self, subject: str, payload: Any = None, headers: bytes | None = None,
                 wait: float = 0.5) -> None:
        """Assert that a request gets no reply at all within ``wait`` seconds."""
        try:
            m = self.request(subject, payload, headers, timeout=wait)
        except TimeoutError:
            return
        raise AssertionError(f"expected no reply, got {m.frame!r}")

    # ------------------------------------------------------------------ API

    def api_msg(self, suffix: str, body: Any = None, headers: bytes | None = None,
                timeout: float = 5.0) -> Msg:
        """Request ``$JS.API.<suffix>`` and return the raw reply."""
        return self.request(f"{API}.{suffix}", body, headers, timeout)

    def api(self, suffix: str, body: Any = None, headers: bytes | None = None,
            timeout: float = 5.0) -> dict[str, Any]:
        """Request ``$JS.API.<suffix>`` and return the decoded JSON reply (checks it is a plain
        MSG whose ``type`` starts with the API prefix)."""
        m = self.api_msg(suffix, body, headers, timeout)
        assert not m.header, f"API replies are plain MSG, got {m.frame!r}"
        out = m.json()
        assert isinstance(out, dict) and out.get("type", "").startswith(TYPE_PREFIX), out
        return out

    def create(self, name: str, check: bool = True, **config: Any) -> dict[str, Any]:
        """STREAM.CREATE ``name`` with ``config`` (name added). Asserts success when ``check``."""
        body = {"name": name, **config}
        out = self.api(f"STREAM.CREATE.{name}", body)
        if "error" not in out:
            self.created.append(name)
        if check:
            assert "error" not in out, out
        return out

    def create_consumer(self, stream: str, config: dict[str, Any], name: str | None = None,
                        *, check: bool = True, **extra: Any) -> dict[str, Any]:
        """CONSUMER.CREATE on ``stream`` (the named form ``CONSUMER.CREATE.<stream>.<name>``
        when ``name`` is given) with body ``{"stream_name", "config", **extra}`` (e.g.
        ``action="create"``); the decoded reply. Asserts success when ``check``."""
        suffix = f"CONSUMER.CREATE.{stream}" + (f".{name}" if name else "")
        out = self.api(suffix, {"stream_name": stream, "config": config, **extra})
        if check:
            assert "error" not in out, out
        return out

    def update(self, name: str, **config: Any) -> dict[str, Any]:
        return self.api(f"STREAM.UPDATE.{name}", {"name": name, **config})

    def info(self, name: str, body: Any = None) -> dict[str, Any]:
        return self.api(f"STREAM.INFO.{name}", body)

    def state(self, name: str) -> dict[str, Any]:
        out = self.info(name)
        assert "error" not in out, out
        return out["state"]

    def delete(self, name: str) -> dict[str, Any]:
        return self.api(f"STREAM.DELETE.{name}")

    def purge(self, name: str, body: Any = None) -> dict[str, Any]:
        return self.api(f"STREAM.PURGE.{name}", body)

    def msg_get(self, name: str, body: Any) -> dict[str, Any]:
        return self.api(f"STREAM.MSG.GET.{name}", body)

    def msg_delete(self, name: str, body: Any) -> dict[str, Any]:
        return self.api(f"STREAM.MSG.DELETE.{name}", body)

    def account_info(self) -> dict[str, Any]:
        return self.api("INFO")

    # ------------------------------------------------------------------ publish

    def publish(self, subject: str, data: Any = b"", headers: bytes | None = None,
                timeout: float = 5.0) -> Msg:
        """Publish with a reply subject and return the raw ack message."""
        return self.request(subject, data, headers, timeout)

    def pub(self, subject: str, data: Any = b"", headers: bytes | None = None) -> dict[str, Any]:
        """Publish and return the decoded ack JSON."""
        return self.publish(subject, data, headers).json()

    def pub_ok(self, subject: str, data: Any = b"", headers: bytes | None = None) -> int:
        """Publish, assert a successful ack and return the stored sequence."""
        ack = self.pub(subject, data, headers)
        assert "error" not in ack, ack
        return int(ack["seq"])

    def cleanup(self) -> None:
        """Delete every stream this client created (errors ignored)."""
        for name in self.created:
            try:
                self.api(f"STREAM.DELETE.{name}", timeout=2.0)
            except Exception:
                pass
        self.created.clear()


#: Subscription ids of :class:`Sub`; the JsClient's own inbox is sid 1.
_SIDS = itertools.count(100)


class Sub:
    """One subscription on a JsClient's connection, read by subscription id: a pull request's
    inbox, a push consumer's deliver subject, advisories and events. Deliveries of a consumer
    carry the *stored* subject, so they are told apart by sid, never by subject. Messages
    read while waiting for someone else (an API reply, another ``Sub``) wait in the client
    for their reader, so nothing is lost between readers.

    Without ``subject`` it subscribes a fresh reply subject of its own (``_PULL.<hex>``),
    e.g. the inbox of one pull request. The SUB is in place (a PING/PONG round trip) once the
    constructor returns."""

    def __init__(self, js: JsClient, subject: str | None = None, queue: str = "") -> None:
        self.js = js
        self.sid = str(next(_SIDS))
        self.subject = subject or f"_PULL.{uuid.uuid4().hex}"
        q = f" {queue}" if queue else ""
        js.raw.send(f"SUB {self.subject}{q} {self.sid}\r\n".encode())
        js.sync()

    def unsub(self) -> None:
        self.js.raw.send(f"UNSUB {self.sid}\r\n".encode())

    def next(self, timeout: float = 5.0) -> Msg:
        """The next message; TimeoutError when none comes within ``timeout`` seconds."""
        return self.js.next_on_sid(self.sid, self.subject, timeout)

    def take(self, n: int, timeout: float = 5.0) -> list[Msg]:
        """The next ``n`` messages."""
        return [self.next(timeout) for _ in range(n)]

    def collect(self, until_status: bool = True, count: int | None = None,
                timeout: float = 5.0) -> list[Msg]:
        """Messages until one carries a status line (when ``until_status``; it is included)
        or ``count`` have arrived."""
        out: list[Msg] = []
        while True:
            m = self.next(timeout)
            out.append(m)
            if count is not None and len(out) >= count:
                return out
            if until_status and m.status:
                return out

    def data(self, timeout: float = 5.0) -> Msg:
        """The next message that is not a heartbeat / flow-control status (``100``)."""
        while True:
            m = self.next(timeout)
            if not m.status.startswith("100"):
                return m

    def event(self, timeout: float = 5.0) -> tuple[str, dict[str, Any]]:
        """The next message as (subject, decoded JSON body): an advisory or a metric."""
        m = self.next(timeout)
        return m.subject, json.loads(m.data)

    def drain(self) -> list[Msg]:
        """Everything that has arrived so far (after a round trip to the server)."""
        self.js.sync()
        out: list[Msg] = []
        while True:
            try:
                out.append(self.next(timeout=0.05))
            except TimeoutError:
                return out

    def nothing(self, wait: float = 0.5) -> None:
        """Assert that no message arrives within ``wait`` seconds."""
        try:
            m = self.next(wait)
        except TimeoutError:
            return
        raise AssertionError(f"expected nothing on {self.subject}, got {m.frame!r}")


#: A v1 ack subject: ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>``.
ACK_RE = re.compile(r"^\$JS\.ACK\.([^.]+)\.([^.]+)\.(\d+)\.(\d+)\.(\d+)\.(\d+)\.(\d+)$")


def ack_fields(m: Msg) -> tuple[str, str, int, int, int, int, int]:
    """The fields of a delivery's v1 ack subject (its reply): stream, consumer, delivery
    count, stream sequence, consumer sequence, timestamp (ns), pending."""
    g = ACK_RE.match(m.reply or "")
    assert g, f"not a v1 ack subject: {m.frame!r}"
    return (g[1], g[2], int(g[3]), int(g[4]), int(g[5]), int(g[6]), int(g[7]))


def status_frame(m: Msg, status: str, *pairs: tuple[str, str]) -> bytes:
    """The exact HMSG frame of a status message (no payload) to ``m``'s subject and sid."""
    header = header_block(*pairs, status=status)
    return (b"HMSG %s %s %d %d\r\n" % (m.subject.encode(), m.sid.encode(), len(header),
                                       len(header)) + header + b"\r\n")


def check_envelope(ev: dict[str, Any], event_type: str) -> dict[str, Any]:
    """Assert an event's ``type`` (``io.nats.jetstream.<event_type>``), ``id`` and
    ``timestamp`` come first and are well formed; return the rest."""
    keys = list(ev)
    assert keys[:3] == ["type", "id", "timestamp"], keys
    assert ev["type"] == "io.nats.jetstream." + event_type
    assert isinstance(ev["id"], str) and len(ev["id"]) == 22
    assert TIMESTAMP.match(ev["timestamp"]), ev["timestamp"]
    return {k: v for k, v in ev.items() if k not in ("type", "id", "timestamp")}


_HASH_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def get_hash(text: str) -> str:
    """nats-server's ``getHash``: the first 8 bytes of SHA-256 of ``text``, each mapped to a
    base-62 digit. A raft peer id is the hash of the server's name; a source's stream
    identity the hash of its ``created`` timestamp."""
    return "".join(_HASH_DIGITS[b % 62] for b in hashlib.sha256(text.encode()).digest()[:8])


def wait_for(predicate: Any, timeout: float = 5.0, interval: float = 0.05) -> Any:
    """Poll ``predicate()`` until it returns a truthy value (returned) or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s (last: {value!r})")
        time.sleep(interval)


def without_times(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of a create/info reply without its variable timestamps (``created``, ``ts``,
    ``state.first_ts``/``last_ts`` are checked separately by the cases that care)."""
    out = dict(obj)
    for k in ("created", "ts"):
        out.pop(k, None)
    if isinstance(out.get("state"), dict):
        st = dict(out["state"])
        for k in ("first_ts", "last_ts"):
            st.pop(k, None)
        out["state"] = st
    return out


def empty_state(first_seq: int = 0, last_seq: int = 0) -> dict[str, Any]:
    """``state`` of a stream without messages, timestamps included."""
    return {"messages": 0, "bytes": 0, "first_seq": first_seq, "first_ts": ZERO_TIME,
            "last_seq": last_seq, "last_ts": ZERO_TIME, "consumer_count": 0}


def file_bytes(subject: str, data: bytes, header: bytes = b"") -> int:
    """Accounted size of one message in a file-storage stream."""
    if header:
        return 34 + len(subject) + len(header) + len(data)
    return 30 + len(subject) + len(data)


def mem_bytes(subject: str, data: bytes, header: bytes = b"") -> int:
    """Accounted size of one message in a memory-storage stream."""
    return 16 + len(subject) + len(header) + len(data)


def error_reply(type_suffix: str, code: int, err_code: int, description: str,
                **extra: Any) -> dict[str, Any]:
    """A whole JSON error reply: type, error, then any always-present fields."""
    return {"type": TYPE_PREFIX + type_suffix, "error": api_error(code, err_code, description),
            **extra}


__all__ = [
    "ACK_RE", "API", "API_LEVEL", "DYNAMIC_METADATA", "JsClient", "Msg", "SERVER_VERSION",
    "Sub", "TIMESTAMP", "TYPE_PREFIX", "ZERO_TIME", "ack_fields", "api_error", "b64",
    "check_envelope", "default_config", "empty_state", "encode", "error_reply", "file_bytes",
    "get_hash", "header_block", "mem_bytes", "parse_msg", "status_frame", "unique_name",
    "wait_for", "without_times",
]
