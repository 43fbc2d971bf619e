"""``$JS.API.STREAM.MSG.GET.<S>`` and ``$JS.API.DIRECT.GET.<S>[.<subject…>]``: request logic.

Pure module: it takes a :class:`~minijs.jetstream.store.base.Store` and the request bytes and
returns what to answer; stream lookup, ``allow_direct`` (503), ``Nats-Required-Api-Level`` (412)
and sending are the caller's job. Every behaviour below was observed on nats-server v2.15.1
(raw socket captures; minijs's own test suite pins the exact bytes).

STREAM.MSG.GET (:func:`msg_get`) — a JSON API, *strict* decoding
    * body decoded as a stream of JSON values into ``JSApiMsgGetRequest`` (unknown field,
      type or syntax error → 400/10025); empty / whitespace / ``{}`` / ``null`` → 400/10003;
    * ``batch > 0`` or ``max_bytes > 0`` → 10003 (negative values are accepted and ignored);
      ``multi_last``, ``up_to_seq``, ``up_to_time`` are *ignored* (``{"seq":1,"multi_last":
      ["x"]}`` returns seq 1);
    * conflicts → 10003: ``seq``+``last_by_subj``, ``seq``+``start_time``, ``start_time``+
      ``last_by_subj``, ``last_by_subj``+``next_by_subj``, or none of seq/last/next/start_time;
    * lookup: ``start_time`` → seq of the first message at/after it; then ``next_by_subj`` →
      first match ``>= seq``; ``last_by_subj`` → last match; else the exact ``seq`` (a deleted
      sequence is 404/10037, it does not step forward).

DIRECT.GET (:func:`direct_get`) — raw replies, *lenient* decoding (Go ``json.Unmarshal``)
    * empty body → ``408 Empty Request``; any decode error (also whitespace-only, trailing data,
      two values, wrong types) → ``408 Malformed Request``; nothing selected (``{}``, ``null``,
      unknown fields only, ``{"batch":2}``…) → ``408 Empty Request``; conflicts → ``408 Bad
      Request``;
    * single message: stored headers + ``Nats-Stream``, ``Nats-Subject``, ``Nats-Sequence``,
      ``Nats-Time-Stamp``; ``no_hdr`` → payload only (plain MSG);
    * batch (``batch != 0``; negative means "batch mode, zero messages"): the first lookup
      steps over deleted sequences (unlike single mode), every message also carries
      ``Nats-Num-Pending`` (matches left after it) and ``Nats-Last-Sequence`` (previous seq in
      this reply, 0 first); ``no_hdr`` sends bare payloads *and* stops the pending countdown;
      ends with ``204 EOB``; a failing first lookup is a plain ``404 Message Not Found``;
    * ``multi_last``: last message per matching subject up to ``up_to_seq`` / ``up_to_time``,
      in sequence order, ``seq`` as lower bound, ``batch`` / ``max_bytes`` caps; ``no_hdr`` is
      ignored; EOB adds ``Nats-UpTo-Sequence``; more than 1024 subjects → ``413 Too Many
      Results``; none → ``404 No Results``;
    * byte budget (batch and multi_last): after each message ``len(subject) + len(stored hdr) +
      len(data)`` is added (stored header even with ``no_hdr``) and the reply stops once the
      total is ``>= max_bytes`` (``0`` → server ``max_pending``; negative → after the first).
"""
from __future__ import annotations

import base64
from typing import Any, Iterable, Optional

from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.store.base import Store, StoredMessage, TooManyResultsError

__all__ = [
    "MSG_GET_REQUEST_TYPE",
    "MSG_GET_RESPONSE_TYPE",
    "MAX_MULTI_LAST_RESULTS",
    "DEFAULT_MAX_BYTES",
    "MsgGetRequest",
    "parse_msg_get",
    "msg_get",
    "msg_get_response",
    "direct_get",
    "message_json",
    "direct_headers",
]

MSG_GET_RESPONSE_TYPE = "io.nats.jetstream.api.v1.stream_msg_get_response"

#: nats-server caps multi_last replies at this many subjects (``413 Too Many Results`` above).
MAX_MULTI_LAST_RESULTS = 1024

#: nats-server's default ``max_pending`` (64 MiB), the DIRECT.GET byte budget when
#: ``max_bytes`` is 0; callers should pass the configured value.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024

#: ``JSApiMsgGetRequest`` (Go field types matter: they appear in 10025 texts, e.g.
#: ``…JSApiMsgGetRequest.seq of type uint64`` / ``….batch of type int``).
MSG_GET_REQUEST_TYPE = J.Struct(
    "JSApiMsgGetRequest",
    {
        "seq": J.UINT64,
        "last_by_subj": J.STRING,
        "next_by_subj": J.STRING,
        "batch": J.INT,
        "max_bytes": J.INT,
        "start_time": J.Ptr(J.TIME),
        "multi_last": J.Slice(J.STRING),
        "up_to_seq": J.UINT64,
        "up_to_time": J.Ptr(J.TIME),
        "no_hdr": J.BOOL,
    },
)

# DIRECT.GET status replies (exact header blocks nats-server sends)
_EMPTY_REQUEST = b"NATS/1.0 408 Empty Request\r\n\r\n"
_MALFORMED_REQUEST = b"NATS/1.0 408 Malformed Request\r\n\r\n"
_BAD_REQUEST = b"NATS/1.0 408 Bad Request\r\n\r\n"
_NOT_FOUND = b"NATS/1.0 404 Message Not Found\r\n\r\n"
_NO_RESULTS = b"NATS/1.0 404 No Results\r\n\r\n"
_TOO_MANY = b"NATS/1.0 413 Too Many Results\r\n\r\n"

Reply = tuple[Optional[bytes], bytes]


# --------------------------------------------------------------------------------------------
# helpers


class MsgGetRequest:
    """A decoded ``JSApiMsgGetRequest`` with Go zero values for absent fields (times are ns,
    ``None`` when absent/null)."""

    __slots__ = ("seq", "last", "next", "batch", "max_bytes", "start_time", "multi_last",
                 "up_to_seq", "up_to_time", "no_hdr")

    def __init__(self, d: dict[str, Any]) -> None:
        self.seq: int = d.get("seq", 0)
        self.last: str = d.get("last_by_subj", "")
        self.next: str = d.get("next_by_subj", "")
        self.batch: int = d.get("batch", 0)
        self.max_bytes: int = d.get("max_bytes", 0)
        self.start_time: int | None = d.get("start_time")
        self.multi_last: list[str] = d.get("multi_last") or []
        self.up_to_seq: int = d.get("up_to_seq", 0)
        self.up_to_time: int | None = d.get("up_to_time")
        self.no_hdr: bool = d.get("no_hdr", False)

    def nothing_selected(self) -> bool:
        return (self.seq == 0 and not self.last and not self.next and self.start_time is None
                and not self.multi_last)

    def conflicting(self) -> bool:
        """The conflict rules shared by MSG.GET and DIRECT.GET."""
        return ((self.seq > 0 and bool(self.last))
                or (self.seq > 0 and self.start_time is not None)
                or (self.start_time is not None and bool(self.last))
                or (bool(self.last) and bool(self.next)))


def _valid_filter(subject: str) -> bool:
    """A usable subject filter: no empty tokens, ``>`` only last. The server matches nothing
    for anything else (``d..a``, ``d.>.a`` → not found), while the store's matcher would treat
    ``d.>.a`` like ``d.>``, so invalid filters never reach it."""
    tokens = subject.split(".")
    for i, t in enumerate(tokens):
        if not t or (t == ">" and i != len(tokens) - 1):
            return False
    return True


def _load_next(store: Store, seq: int, filter: str | None) -> StoredMessage | None:
    if filter is not None and not _valid_filter(filter):
        return None
    return store.load_next(max(seq, 1), filter)


def _load_last(store: Store, filter: str) -> StoredMessage | None:
    if not _valid_filter(filter):
        return None
    return store.load_last(filter)


def _blen(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode())


def _unix_nano(ns: int) -> int:
    """Go's ``Time.UnixNano``, which the stores search by: outside years 1678-2262 it wraps
    around int64 (a start time in 2999 lands before every message)."""
    return (int(ns) + (1 << 63)) % (1 << 64) - (1 << 63)


def _start_seq(store: Store, req: MsgGetRequest) -> int:
    """``start_time`` → first sequence at/after it (``last_seq + 1`` if none), else ``seq``."""
    if req.start_time is not None:
        return store.first_seq_at_or_after_time(_unix_nano(req.start_time))
    return req.seq


# --------------------------------------------------------------------------------------------
# STREAM.MSG.GET


def message_json(sm: StoredMessage, no_hdr: bool = False) -> dict[str, Any]:
    """The ``"message"`` object of a MSG.GET reply (Go ``StoredMsg`` field order; ``hdrs``
    and ``data`` are omitempty, base64 strings)."""
    out: dict[str, Any] = {"subject": sm.subject, "seq": sm.seq}
    if sm.hdr and not no_hdr:
        out["hdrs"] = base64.b64encode(sm.hdr).decode("ascii")
    if sm.data:
        out["data"] = base64.b64encode(sm.data).decode("ascii")
    out["time"] = J.go_time(sm.ts)
    return out


def parse_msg_get(payload: "bytes | MsgGetRequest") -> MsgGetRequest:
    """Decode and validate a STREAM.MSG.GET body. nats-server does all of this *before* looking
    the stream up (``garbage`` on a missing stream is 10025, ``{}`` is 10003, not 10059), so
    the API layer should call this first. Raises ``ApiError`` 10025 / 10003."""
    if isinstance(payload, MsgGetRequest):
        return payload
    # empty / whitespace-only / ``{}`` / ``null`` decode to "nothing selected" → 10003 below;
    # other bytes (``\f``) are syntax errors like in Go
    req = MsgGetRequest(J.decode_strict(bytes(payload), MSG_GET_REQUEST_TYPE))
    if req.batch > 0 or req.max_bytes > 0:
        raise E.bad_request()
    if req.conflicting() or (req.seq == 0 and not req.last and not req.next
                             and req.start_time is None):
        raise E.bad_request()
    return req


def msg_get(store: Store, payload: "bytes | MsgGetRequest") -> dict[str, Any]:
    """STREAM.MSG.GET on ``store``: returns ``{"message": {...}}`` (the reply without ``type``)
    or raises :class:`~minijs.jetstream.errors.ApiError` (10003 bad request, 10025 invalid
    JSON, 10037 no message found). ``payload`` may be the raw body or the result of
    :func:`parse_msg_get`. See the module doc for the exact rules."""
    req = parse_msg_get(payload)
    seq = _start_seq(store, req)
    if req.next:
        sm = _load_next(store, seq, req.next)
    elif req.last:
        sm = _load_last(store, req.last)
    else:
        sm = store.load(seq) if seq > 0 else None
    if sm is None:
        raise E.no_message_found()
    return {"message": message_json(sm, req.no_hdr)}


def msg_get_response(store: Store, payload: bytes) -> dict[str, Any]:
    """The complete MSG.GET reply object (``type`` first), success or error, for callers that
    do not wrap :func:`msg_get` themselves."""
    try:
        return {"type": MSG_GET_RESPONSE_TYPE, **msg_get(store, payload)}
    except E.ApiError as err:
        return {"type": MSG_GET_RESPONSE_TYPE, "error": err.to_json()}


# --------------------------------------------------------------------------------------------
# DIRECT.GET


def _hdr_line(name: str, value: str | int) -> bytes:
    return ("%s: %s\r\n" % (name, value)).encode()


def direct_headers(stream: str, sm: StoredMessage,
                   extra: Iterable[tuple[str, str | int]] = ()) -> bytes:
    """Stored headers (if any) followed by ``Nats-Stream``, ``Nats-Subject``,
    ``Nats-Sequence``, ``Nats-Time-Stamp`` and ``extra``, as one header block."""
    hdr = sm.hdr
    if hdr and len(hdr) > 2:
        base = hdr[:-2] if hdr.endswith(b"\r\n\r\n") else hdr.rstrip(b"\r\n") + b"\r\n"
    else:
        base = b"NATS/1.0\r\n"
    parts = [
        base,
        _hdr_line("Nats-Stream", stream),
        _hdr_line("Nats-Subject", sm.subject),
        _hdr_line("Nats-Sequence", sm.seq),
        _hdr_line("Nats-Time-Stamp", J.go_time(sm.ts)),
    ]
    parts.extend(_hdr_line(k, v) for k, v in extra)
    parts.append(b"\r\n")
    return b"".join(parts)


def _eob(pending: int, last_seq: int, up_to: int | None = None) -> Reply:
    hdr = b"NATS/1.0 204 EOB\r\nNats-Num-Pending: %d\r\nNats-Last-Sequence: %d\r\n" % (
        pending, last_seq)
    if up_to is not None:
        hdr += b"Nats-UpTo-Sequence: %d\r\n" % up_to
    return hdr + b"\r\n", b""


def _msg_cost(sm: StoredMessage) -> int:
    """What counts against ``max_bytes``: subject + *stored* header + payload."""
    return _blen(sm.subject) + (len(sm.hdr) if sm.hdr else 0) + len(sm.data)


def direct_get(store: Store, stream: str, payload: bytes, subject_suffix: str | None = None,
               max_bytes_default: int = DEFAULT_MAX_BYTES) -> list[Reply]:
    """DIRECT.GET on ``store``: the replies to send, in order, as ``(header block or None,
    payload)``. ``subject_suffix`` is the subject after ``$JS.API.DIRECT.GET.<stream>.`` for the
    last-by-subject form (``None`` for the JSON-body form); ``max_bytes_default`` is the server's
    ``max_pending``. See the module doc for the rules."""
    body = bytes(payload)
    if subject_suffix is not None:
        return _direct_last_by_subject(store, stream, body, subject_suffix)
    if not body:
        return [(_EMPTY_REQUEST, b"")]
    try:
        req = MsgGetRequest(J.decode_lenient(body, MSG_GET_REQUEST_TYPE))
    except E.ApiError:
        return [(_MALFORMED_REQUEST, b"")]
    if req.nothing_selected():
        return [(_EMPTY_REQUEST, b"")]
    if (req.conflicting()
            or (req.last and req.batch > 0)
            or (req.last and req.multi_last)
            or (req.next and req.multi_last)
            or (req.up_to_seq > 0 and req.up_to_time is not None)):
        return [(_BAD_REQUEST, b"")]
    max_bytes = req.max_bytes or max_bytes_default
    if req.multi_last:
        return _direct_multi_last(store, stream, req, max_bytes)
    return _direct_get(store, stream, req, max_bytes)


def _direct_last_by_subject(store: Store, stream: str, body: bytes, suffix: str) -> list[Reply]:
    """``$JS.API.DIRECT.GET.<S>.<subject>``: last message on ``suffix`` (wildcards allowed);
    a body may only carry ``no_hdr``/``max_bytes``/unknown fields."""
    req = MsgGetRequest({})
    if body:
        try:
            req = MsgGetRequest(J.decode_lenient(body, MSG_GET_REQUEST_TYPE))
        except E.ApiError:
            return [(_MALFORMED_REQUEST, b"")]
        if (req.seq > 0 or req.last or req.next or req.batch != 0 or req.multi_last
                or req.start_time is not None or req.up_to_seq > 0
                or req.up_to_time is not None):
            return [(_BAD_REQUEST, b"")]
    if not suffix:
        return [(_BAD_REQUEST, b"")]
    sm = _load_last(store, suffix)
    if sm is None:
        return [(_NOT_FOUND, b"")]
    if req.no_hdr:
        return [(None, sm.data)]
    return [(direct_headers(stream, sm), sm.data)]


def _direct_get(store: Store, stream: str, req: MsgGetRequest, max_bytes: int) -> list[Reply]:
    """Single message or batch (``seq`` / ``start_time`` / ``next_by_subj`` / ``last_by_subj``)."""
    seq = _start_seq(store, req)
    if req.batch == 0:
        if req.next:
            sm = _load_next(store, seq, req.next)
        elif req.last:
            sm = _load_last(store, req.last)
        else:
            sm = store.load(seq) if seq > 0 else None
        if sm is None:
            return [(_NOT_FOUND, b"")]
        if req.no_hdr:
            return [(None, sm.data)]
        return [(direct_headers(stream, sm), sm.data)]

    # batch mode: pending counts matches >= seq and is decremented before each header is built
    filter = req.next or None
    if filter is not None and not _valid_filter(filter):
        pending = 0
    else:
        pending = store.num_pending(max(seq, 1), filter)
    out: list[Reply] = []
    last_sent = 0
    spent = 0
    cur = seq
    for i in range(max(req.batch, 0)):
        sm = _load_next(store, cur, filter)
        if sm is None:
            if i == 0:
                return [(_NOT_FOUND, b"")]
            break
        cur = sm.seq + 1
        if req.no_hdr:
            out.append((None, sm.data))
        else:
            pending = max(pending - 1, 0)
            out.append((direct_headers(stream, sm, (("Nats-Num-Pending", pending),
                                                    ("Nats-Last-Sequence", last_sent))),
                        sm.data))
        last_sent = sm.seq
        spent += _msg_cost(sm)
        if spent >= max_bytes:
            break
    out.append(_eob(pending, last_sent))
    return out


def _direct_multi_last(store: Store, stream: str, req: MsgGetRequest, max_bytes: int) -> list[Reply]:
    """``multi_last``: the last message of every matching subject, in sequence order."""
    if req.up_to_time is not None:
        # the first sequence at/after the time, minus one; 0 here means "nothing", not "all"
        up_to = store.first_seq_at_or_after_time(_unix_nano(req.up_to_time)) - 1
        if up_to <= 0:
            return [(_NO_RESULTS, b"")]
    else:
        up_to = req.up_to_seq or store.last_seq
    filters = [f for f in req.multi_last if f and _valid_filter(f)]
    if not filters:
        return [(_NO_RESULTS, b"")]
    try:
        seqs = store.multi_last_seqs(filters, up_to_seq=up_to, max_allowed=MAX_MULTI_LAST_RESULTS)
    except TooManyResultsError:
        return [(_TOO_MANY, b"")]
    if not seqs:
        return [(_NO_RESULTS, b"")]
    pending = len(seqs)
    out: list[Reply] = []
    last_sent = 0
    spent = 0
    sent = 0
    for q in seqs:
        if q < req.seq:
            pending = max(pending - 1, 0)
            continue
        sm = store.load(q)
        if sm is None:
            continue
        pending = max(pending - 1, 0)
        out.append((direct_headers(stream, sm, (("Nats-Num-Pending", pending),
                                                ("Nats-Last-Sequence", last_sent))),
                    sm.data))
        last_sent = sm.seq
        spent += _msg_cost(sm)
        if spent >= max_bytes:
            break
        sent += 1
        if req.batch > 0 and sent >= req.batch:
            break
    out.append(_eob(pending, last_sent, up_to))
    return out
