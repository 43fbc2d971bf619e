"""Message tracing (nats-server's ``msgtrace.go``): ``Nats-Trace-Dest`` and ``Nats-Trace-Only``.

A client message whose headers carry ``Nats-Trace-Dest: <subject>`` is traced: while the router
delivers it, each step is recorded as an event, and once it has been fully processed one JSON
message (``{"server": …, "request": …, "events": […]}``) is published to that subject, as a
single nats-server sends it. Events: ``in`` (ingress: the publishing client, account, subject,
an ingress error such as a publish permission violation), ``eg`` (egress: each client
subscription it went to, or why not: no echo), ``si`` (the JetStream API service import) and
``js`` (the stream that took it: the stored subject, ``nointerest``, or the error that refused
it). With ``Nats-Trace-Only: true`` (``1``, ``on``) nothing is delivered to client subscribers
nor stored, but every event is still recorded: a traced request with trace-only gets no reply.
The event is compressed as the message's ``Accept-Encoding`` asks (gzip, or snappy framing).

Everything JetStream adds is done by the stream itself through :class:`MsgTrace`
(``jetstream`` / ``update_jetstream`` / ``jetstream_error``); this module knows no stream.

A sampled W3C ``traceparent`` header (its flags ending in 1, the name in any case) is traced
only for an account configured with a trace destination (``accounts { A { msg_trace { dest,
sampling } } }``), to that destination and never trace-only; a message the sampling draw skips
goes on with ``Nats-Trace-Dest: trace disabled``. Elsewhere it is passed along untouched.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from minijs.config import GLOBAL_ACCOUNT
from minijs.protocol import wire

#: The header names (``server/msgtrace.go``).
TRACE_DEST = wire.TRACE_DEST_HEADER.decode()
TRACE_ONLY = "Nats-Trace-Only"
TRACE_HOP = "Nats-Trace-Hop"
TRACE_ORIGIN_ACCOUNT = "Nats-Trace-Origin-Account"
#: The value nats-server writes into ``Nats-Trace-Dest`` to switch tracing off (an invalid
#: subject): a stored traced message carries it, so a consumer delivery is never traced again.
TRACE_DEST_DISABLED = "trace disabled"
TRACE_DEST_B = wire.TRACE_DEST_HEADER
_HDR_LINE = b"NATS/1.0\r\n"

#: Connection kinds as nats-server numbers them (``CLIENT`` = 0 … ``ACCOUNT`` = 6).
KIND_CLIENT = 0

#: Egress errors (the ones a single server can produce).
ERR_NO_ECHO = "Not delivered because of no echo"

#: The account the JetStream API is imported from.
SYSTEM_ACCOUNT = "$SYS"


def header_map(hdr: bytes) -> tuple[dict[str, list[str]] | None, bool]:
    """The headers as nats-server lifts them for a trace (``genHeaderMapIfTraceHeadersPresent``)
    and whether only a sampled W3C ``traceparent`` asked for it (``external``): ``(None,
    False)`` when neither ``Nats-Trace-Dest`` (matched case-sensitively; not ``trace
    disabled``) nor a ``traceparent`` (any case) with the sampled flag is there.

    Names keep their case; empty names or values are left out; the value is trimmed of spaces
    and tabs."""
    if not hdr.startswith(_HDR_LINE):
        return None, False
    keys: list[bytes] = []
    vals: list[bytes] = []
    found = False
    parent = False
    i = len(_HDR_LINE)
    n = len(hdr)
    while i < n:
        d = hdr.find(b":", i)
        if d < 0:
            break
        key = hdr[i:d]
        i = d + 1
        while i < n and hdr[i] in (32, 9):
            i += 1
        nl = hdr.find(b"\r\n", i)
        if nl < 0:
            break
        end = nl
        while end > i and hdr[end - 1] in (32, 9):
            end -= 1
        val = hdr[i:end]
        if key and val:
            if not parent and key.lower() == b"traceparent":
                parts = val.split(b"-")
                if len(parts) == 4 and len(parts[3]) == 2:
                    try:
                        parent = bool(int(parts[3], 16) & 1)
                    except ValueError:
                        pass
            elif not found and key == TRACE_DEST_B:
                if val == TRACE_DEST_DISABLED.encode():
                    return None, False
                found = True
            keys.append(key)
            vals.append(val)
        i = nl + 2
    if not found and not parent:
        return None, False
    out: dict[str, list[str]] = {}
    for k, v in zip(keys, vals):
        out.setdefault(k.decode("utf-8", "replace"), []).append(v.decode("utf-8", "replace"))
    return out, not found


def is_valid_publish_subject(subject: str) -> bool:
    """nats-server's ``IsValidPublishSubject``: literal, no empty token, no white space."""
    if not subject:
        return False
    for ch in (" ", "\t", "\r", "\n", "\f"):
        if ch in subject:
            return False
    for tok in subject.split("."):
        if not tok or tok == "*" or tok == ">":
            return False
    return True


def go_time(ns: int) -> str:
    """Go's ``time.Time`` JSON text of ``ns`` since the epoch, in UTC (RFC 3339, nanoseconds,
    trailing zeros trimmed)."""
    from minijs.protocol.gotime import rfc3339_nano

    return rfc3339_nano(ns)


_GO_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
               "\u2028": "\\u2028", "\u2029": "\\u2029"}
_GO_ESCAPE_TABLE = str.maketrans(_GO_ESCAPES)


def go_json(obj: Any) -> bytes:
    """Compact JSON as Go's ``encoding/json`` writes it (``<``, ``>``, ``&`` escaped)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return text.translate(_GO_ESCAPE_TABLE).encode("utf-8")


class MsgTrace:
    """The trace of one message: its events, in the order nats-server records them."""

    __slots__ = ("dest", "only", "header", "msgsize", "events", "compression", "account", "_js",
                 "_clock")

    def __init__(self, dest: str, only: bool, header: dict[str, list[str]], msgsize: int,
                 clock: Any) -> None:
        self.dest = dest
        self.only = only
        self.header = header
        self.msgsize = msgsize
        self.events: list[dict[str, Any]] = []
        #: The publisher's account: the event is published there.
        self.account = GLOBAL_ACCOUNT
        accept = header.get("Accept-Encoding")
        self.compression = _compression(accept[0] if accept else "")
        self._js: dict[str, Any] | None = None
        self._clock = clock

    def _ts(self) -> str:
        return go_time(self._clock.time_ns())

    # -- events

    def ingress(self, cid: int, name: str, subject: str, account: str = GLOBAL_ACCOUNT) -> None:
        ev: dict[str, Any] = {"type": "in", "ts": self._ts(), "kind": KIND_CLIENT, "cid": cid}
        if name:
            ev["name"] = name
        ev["acc"] = account
        ev["subj"] = subject
        self.events.append(ev)

    def ingress_error(self, error: str) -> None:
        if self.events and self.events[0]["type"] == "in":
            self.events[0]["error"] = error

    def egress(self, cid: int, name: str, subscription: str, queue: str = "",
               error: str = "", account: str = "") -> None:
        """A delivery to a client (``account``: the client's, when another account's)."""
        ev: dict[str, Any] = {"type": "eg", "ts": self._ts(), "kind": KIND_CLIENT, "cid": cid}
        if name:
            ev["name"] = name
        if account:
            ev["acc"] = account
        if subscription:
            ev["sub"] = subscription
        if queue:
            ev["queue"] = queue
        if error:
            ev["error"] = error
        self.events.append(ev)

    def subject_mapping(self, to_subject: str) -> None:
        """The account's mappings rewrote the subject (``sm``)."""
        self.events.append({"type": "sm", "ts": self._ts(), "to": to_subject})

    def stream_export(self, account: str, to_subject: str) -> None:
        """A stream import took a copy into ``account`` under ``to_subject`` (``se``)."""
        self.events.append({"type": "se", "ts": self._ts(), "acc": account, "to": to_subject})

    def service_import(self, account: str, from_subject: str, to_subject: str) -> None:
        self.events.append({"type": "si", "ts": self._ts(), "acc": account,
                            "from": from_subject, "to": to_subject})

    def jetstream(self, stream: str) -> None:
        """A stream took the message (nats-server's ``addJetStreamEvent``)."""
        self._js = {"type": "js", "ts": self._ts(), "stream": stream}
        self.events.append(self._js)

    def update_jetstream(self, subject: str, no_interest: bool) -> None:
        """The stream reached its storage step: the stored subject, and whether an interest
        stream dropped it for want of interest (``updateJetStreamEvent``)."""
        js = self._js
        if js is None:
            return
        js.pop("subject", None)
        js.pop("nointerest", None)
        if subject:
            js["subject"] = subject
        if no_interest:
            js["nointerest"] = True
        js["ts"] = self._ts()

    @property
    def jetstream_settled(self) -> bool:
        """Did the stream reach its storage step or refuse the message?"""
        js = self._js
        return js is not None and ("subject" in js or "error" in js)

    def jetstream_error(self, error: str) -> None:
        if self._js is not None and error:
            self._js["error"] = error

    # -- the event message

    def encode(self, server: dict[str, Any]) -> tuple[bytes | None, bytes]:
        """The trace message: ``(header, payload)``, compressed as ``Accept-Encoding`` asked."""
        request: dict[str, Any] = {}
        if self.header:
            request["header"] = dict(sorted(self.header.items()))
        if self.msgsize:
            request["msgsize"] = self.msgsize
        body = go_json({"server": server, "request": request, "events": self.events})
        if self.compression == "gzip":
            import gzip

            return b"NATS/1.0\r\nContent-Encoding: gzip\r\n\r\n", gzip.compress(body)
        if self.compression == "snappy":
            from minijs.protocol import snappy

            return b"NATS/1.0\r\nContent-Encoding: snappy\r\n\r\n", snappy.frame(body)
        if self.compression == "identity":
            return b"NATS/1.0\r\nContent-Encoding: identity\r\n\r\n", body
        return None, body


def _compression(accept: str) -> str:
    """nats-server's ``getCompressionType`` for the ``Accept-Encoding`` value."""
    if not accept:
        return ""
    accept = accept.lower()
    if "snappy" in accept or "s2" in accept:
        return "snappy"
    if "gzip" in accept:
        return "gzip"
    return "identity"


def start(hdr: bytes, cid: int, name: str, subject: bytes, size: int, clock: Any,
          account: str = GLOBAL_ACCOUNT, account_trace: tuple[str, int] | None = None,
          draw: Callable[[int], int] | None = None
          ) -> tuple[bool, MsgTrace | None, bytes | None]:
    """nats-server's ``initMsgTrace`` for a client's message: ``(skip, trace, header)``.

    ``trace`` is None when the message is not traced; ``skip`` is True when the message must
    not be processed at all (a trace-only message whose destination is unusable); ``header`` is
    None, or the header the message goes on with (tracing switched off). ``account_trace`` is
    the account's ``msg_trace`` (destination, sampling percent): a sampled ``traceparent``
    is traced there (never trace-only), when the sampling draw (``draw(100)``, the server's
    seeded source) says so."""
    headers, external = header_map(hdr)
    if not headers:
        return False, None, None
    only = False
    if external:
        if account_trace is None:
            return False, None, None
        dest, sampling = account_trace
        if 0 < sampling < 100 and draw is not None and draw(100) > sampling:
            return False, None, set_trace_dest(hdr, TRACE_DEST_DISABLED)
    else:
        to = headers.get(TRACE_ONLY)
        if to and to[0].lower() in ("1", "true", "on"):
            only = True
        dest = headers[TRACE_DEST][0]
    if headers.get(TRACE_ORIGIN_ACCOUNT):
        # The header of an old server's route: nats-server switches tracing off (and, unless
        # the message is trace-only and so dropped, delivers it with the destination disabled).
        return only, None, (None if only else disable(hdr))
    if not is_valid_publish_subject(dest):
        return only, None, None
    trace = MsgTrace(dest, only, headers, size, clock)
    trace.account = account
    trace.ingress(cid, name, subject.decode("utf-8", "replace"), account)
    return False, trace, None


def set_trace_dest(hdr: bytes, value: str) -> bytes:
    """The header with ``Nats-Trace-Dest`` set to ``value`` (added last when absent)."""
    if TRACE_DEST_B + b":" in hdr:
        return disable(hdr)
    return hdr[:-2] + TRACE_DEST_B + b": " + value.encode() + b"\r\n\r\n"


def disable(hdr: bytes) -> bytes:
    """The header with ``Nats-Trace-Dest`` moved to the end and set to ``trace disabled``
    (nats-server's client ``setHeader``: remove, then append)."""
    lines = hdr.split(b"\r\n")
    key = TRACE_DEST_B + b":"
    kept = [ln for ln in lines[1:] if ln and not ln.startswith(key)]
    return b"\r\n".join([lines[0], *kept, TRACE_DEST_B + b": " + TRACE_DEST_DISABLED.encode(),
                         b"", b""])
