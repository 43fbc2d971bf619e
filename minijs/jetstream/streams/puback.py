"""Pub acks: what a publish to a stream is answered with (nats-server's ``PubAck`` inside its
``JSPubAckResponse``), every form in one place.

* stored: ``{"stream":<name>,"domain":<domain>,"seq":<n>}`` (``domain`` only with one);
* a counter stream's: the same with ``"val":<new total as a string>`` after ``seq``;
* a duplicate ``Nats-Msg-Id`` within the window: the first copy's ``seq`` and
  ``"duplicate": true`` (with the space: nats-server writes this one by hand);
* the commit of an atomic or fast batch: ``"batch":<id>,"count":<n>`` after ``seq``
  (after ``duplicate`` when a fast batch's first and only message was a duplicate);
* a refusal: ``{"error":{"code":…,"err_code":…,"description":…},"stream":<name>,"seq":0}``
  (no domain).

A stream keeps one :class:`PubAcks` for its name and domain, made again when its config is
applied; the bodies are bytes built from a precomputed prefix, as the publish path sends one
per message.
"""
from __future__ import annotations

from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.protocol.gostrings import go_quote

_DUPLICATE = b',"duplicate": true}'


class PubAcks:
    """The pub acks of one stream."""

    __slots__ = ("_prefix", "_error_tail")

    def __init__(self, stream: str, domain: str = "") -> None:
        name = J.dumps(stream)
        self._prefix = (b'{"stream":' + name + (b',"domain":' + J.dumps(domain) if domain else b"")
                        + b',"seq":')
        self._error_tail = b',"stream":' + name + b',"seq":0}'

    def stored(self, seq: int) -> bytes:
        return self._prefix + b"%d}" % seq

    def counter(self, seq: int, value: str) -> bytes:
        """A counter stream's ack: ``value`` is the new total (Go's ``%q`` of it)."""
        return self._prefix + b"%d" % seq + b',"val":' + J.dumps(value) + b"}"

    def duplicate(self, seq: int) -> bytes:
        """A ``Nats-Msg-Id`` seen within the window: acknowledged, not stored again."""
        return self._prefix + b"%d" % seq + _DUPLICATE

    def batch(self, seq: int, batch_id: str, count: int) -> bytes:
        """The commit of a batch: ``seq`` is the last message it stored."""
        return (self._prefix + b"%d" % seq + b',"batch":' + go_quote(batch_id).encode()
                + b',"count":%d}' % count)

    def error(self, err: E.ApiError) -> bytes:
        """A refused publish."""
        return b'{"error":' + J.dumps(err.to_json()) + self._error_tail


def is_duplicate(ack: bytes) -> bool:
    """Is ``ack`` (from :meth:`PubAcks.duplicate`) the answer to a duplicate?"""
    return ack.endswith(_DUPLICATE)


def duplicate_batch(ack: bytes, batch_id: str, count: int) -> bytes:
    """A duplicate's ack closing a batch: the batch fields follow ``duplicate``."""
    return ack[:-1] + b',"batch":' + go_quote(batch_id).encode() + b',"count":%d}' % count
