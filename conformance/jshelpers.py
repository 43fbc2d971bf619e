"""JetStream helpers for the conformance cases: a raw-protocol request/reply client for the
``$JS.API`` subjects and the publish path, and small parsers for what comes back.

``JsClient`` sits on a ``RawClient`` so cases can compare exact wire bytes (pub ack payloads,
status lines, DIRECT.GET header blocks) as well as decoded JSON. Every request gets its own
reply subject under a per-client inbox, so replies can never be confused.
"""
from __future__ import annotations

import base64
import json
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

from conformance.rawclient import CRLF, RawClient
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

    def _next_for(self, reply: str, timeout: float) -> Msg:
        for i, m in enumerate(self._pending):
            if m.subject == reply:
                return self._pending.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no reply on {reply} within {timeout}s")
            try:
                frame = self.raw.read_frame(timeout=remaining)
            except TimeoutError:
                raise TimeoutError(f"no reply on {reply} within {timeout}s") from None
            if not (frame.startswith(b"MSG ") or frame.startswith(b"HMSG ")):
                if frame.startswith(b"-ERR"):
                    raise AssertionError(f"server error: {frame!r}")
                continue  # e.g. INFO updates
            m = parse_msg(frame)
            if m.subject == reply:
                return m
            self._pending.append(m)

    def next_msg(self, subject: str, timeout: float = 5.0) -> Msg:
        """The next message delivered on ``subject`` (any of this connection's SUBs)."""
        return self._next_for(subject, timeout)

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
    "API", "API_LEVEL", "DYNAMIC_METADATA", "JsClient", "Msg", "SERVER_VERSION", "TIMESTAMP",
    "TYPE_PREFIX", "ZERO_TIME", "api_error", "b64", "default_config", "empty_state", "encode",
    "error_reply", "file_bytes", "header_block", "mem_bytes", "parse_msg", "unique_name",
    "wait_for", "without_times",
]
