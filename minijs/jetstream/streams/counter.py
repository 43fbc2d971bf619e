"""Counter streams (``allow_msg_counter``): ``Nats-Incr`` increments, as nats-server 2.12+.

A message published with ``Nats-Incr: <integer>`` and no payload is stored with the payload
``{"val":"<new total>"}``, where the total is the value of the last message on the same
subject plus the increment. Values are arbitrary-precision integers (nats-server uses
``big.Int``); the increment is Go's ``big.Int.SetString(s, 10)``: an optional sign and ASCII
digits, nothing else. The pub ack carries ``"val"`` (the new total).

A counter stream sourcing other counter streams keeps, in ``Nats-Counter-Sources``, the last
value it saw per origin stream and subject (``{"<stream>":{"<subject>":"<val>"}}``), and turns
each sourced message into an increment by the difference from that value, rewriting its
``Nats-Incr`` header so the arithmetic stays right.

Only pure functions live here; the stream calls them from its publish path, and the atomic
batch (:mod:`minijs.jetstream.streams.batch`) calls them with its staged running totals.
"""
from __future__ import annotations

import json
import re
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J

COUNTER_SOURCES = "Nats-Counter-Sources"
_BIG_INT = re.compile(r"[+-]?[0-9]+")

#: Headers that make an increment invalid (nats-server refuses them with 10171).
_INCOMPATIBLE = (H.ROLLUP, H.EXPECTED_STREAM, H.EXPECTED_LAST_MSG_ID,
                 H.EXPECTED_LAST_SUBJ_SEQ_SUBJ)


def parse_incr(value: str) -> int | None:
    """Go's ``big.Int.SetString(value, 10)``: the integer, or None when it fails."""
    if not _BIG_INT.fullmatch(value):
        return None
    return int(value)


def check_incr(h: dict[str, str], data: bytes, allowed: bool, sourced: bool = False) -> int | None:
    """nats-server's first counter checks on a message's headers (``getMessageIncr`` and what
    follows it). Returns the increment (None without a non-empty ``Nats-Incr``); raises 10171
    for a value that is not an integer, and (unless ``sourced``) 10168 when the stream does
    not allow counters, 10170 with a payload, 10171 with a rollup or expected-* header."""
    text = h.get(H.INCR)
    if not text:
        return None
    incr = parse_incr(text)
    if incr is None:
        raise E.message_incr_invalid()
    if sourced:
        return incr
    if not allowed:
        raise E.message_incr_disabled()
    if data:
        raise E.message_incr_payload()
    if any(h.get(name) for name in _INCOMPATIBLE) or H.EXPECTED_LAST_SEQ in h \
            or H.EXPECTED_LAST_SUBJ_SEQ in h:
        raise E.message_incr_invalid()
    return incr


def _value_of(payload: bytes) -> int:
    """The total stored in a counter message (``{"val":"N"}``); raises 10172 when the payload
    is not a JSON object. A missing or non-numeric ``val`` counts as 0."""
    try:
        doc = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        raise E.message_counter_broken() from None
    if doc is None:
        return 0
    if not isinstance(doc, dict):
        raise E.message_counter_broken()
    val = None
    for k, v in doc.items():  # Go matches struct fields case-insensitively
        if k.lower() == "val":
            val = v
    if val is None:
        return 0
    if not isinstance(val, str):
        raise E.message_counter_broken()
    n = parse_incr(val)
    return n if n is not None else 0


def _sources_of(hdr: bytes | None) -> dict[str, dict[str, str]]:
    text = H.parse(hdr).get(COUNTER_SOURCES) if hdr else None
    if not text:
        return {}
    try:
        doc = json.loads(text)
    except ValueError:
        raise E.message_counter_broken() from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not all(
            isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
            for v in doc.values() if v is not None):
        raise E.message_counter_broken()
    return {k: dict(v or {}) for k, v in doc.items()}


class Total:
    """A subject's running total and its per-source values (a copy; changing it stores
    nothing)."""

    __slots__ = ("value", "sources")

    def __init__(self, value: int = 0, sources: dict[str, dict[str, str]] | None = None) -> None:
        self.value = value
        self.sources = sources or {}

    @classmethod
    def load(cls, last: tuple[bytes | None, bytes] | None) -> "Total":
        """From the last stored message of the subject (``(hdr, payload)``), or zero."""
        if last is None:
            return cls()
        hdr, payload = last
        value = _value_of(payload)
        return cls(value, _sources_of(hdr))


def apply(total: Total, subject: str, hdr: bytes | None, data: bytes, incr: int,
          max_payload: int) -> tuple[bytes, bytes]:
    """Apply ``incr`` to ``total`` (in place) and return the message to store: ``hdr`` (with a
    sourced message's ``Nats-Incr`` rewritten to the difference and ``Nats-Counter-Sources``
    updated) and the new ``{"val":"N"}`` payload. Raises 10172 for a sourced message whose
    payload is not a counter, 10054 when the result is larger than ``max_payload``."""
    assert hdr is not None  # (a counter message carries its Nats-Incr header)
    h = H.parse(hdr) if hdr else {}
    src = h.get(H.STREAM_SOURCE)
    if src:
        fields = src.split(" ")
        origin = fields[0]
        orig_subj = fields[4] if len(fields) >= 5 else subject
        sourced_val = _value_of(data)
        per = total.sources.setdefault(origin, {})
        prev = parse_incr(per.get(orig_subj, "")) or 0
        per[orig_subj] = str(sourced_val)
        incr = sourced_val - prev
        hdr = H.set_value(hdr, H.INCR, str(incr))
    total.value += incr
    payload = b'{"val":"%d"}' % total.value
    if total.sources:
        doc = J.go_map({k: J.go_map(v) for k, v in total.sources.items()})
        hdr = H.set_value(hdr, COUNTER_SOURCES, J.dumps(doc).decode())
    if len(hdr or b"") > max_payload or len(payload) > max_payload - len(hdr or b""):
        raise E.message_size_exceeds_maximum()
    return hdr, payload


def stored_value(payload: bytes) -> str:
    """The total a counter message's payload holds (its pub ack carries it as ``val``)."""
    try:
        return str(json.loads(payload).get("val", ""))
    except (ValueError, AttributeError):
        return ""
