"""A stream's part of message tracing: the ``js`` event (see ``minijs.core.msgtrace``).

nats-server records, for a traced message a stream takes, the stream's name, then either the
subject it stored the message under (and ``nointerest`` when an interest stream without
interest dropped it) or the error of the check that refused it. That error is the Go error the
stream's ``processJetStreamMsg`` returned, which is not always the pub ack's description: a
wrong ``Nats-Expected-Last-Sequence`` reads ``last sequence mismatch: 7 vs 1`` in the trace and
``wrong last sequence: 1`` in the pub ack. :func:`error_text` makes that translation.
"""
from __future__ import annotations

from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.protocol.gostrings import go_quote

#: ``errMsgIdDuplicate``: a duplicate is acknowledged (``"duplicate": true``) but not stored.
ERR_DUPLICATE = "msgid is duplicate"


def error_text(err: Exception, hdr: bytes | None) -> str:
    """The Go error text nats-server's stream returns for a refused publish."""
    if not isinstance(err, E.ApiError):
        return str(err)
    code = err.err_code
    h = H.parse(H.strip_status(hdr)) if hdr else {}
    if code == E.ErrCode.STREAM_WRONG_LAST_SEQUENCE:
        have = err.description.rpartition(" ")[2]
        if H.EXPECTED_LAST_SUBJ_SEQ in h:
            return f"last sequence by subject mismatch: {_uint(h[H.EXPECTED_LAST_SUBJ_SEQ])} vs {have}"
        return f"last sequence mismatch: {_uint(h.get(H.EXPECTED_LAST_SEQ, ''))} vs {have}"
    if code == E.ErrCode.STREAM_WRONG_LAST_MSG_ID:
        have = err.description.partition(": ")[2]
        return f"last msgid mismatch: {go_quote(h.get(H.EXPECTED_LAST_MSG_ID, ''))} vs {go_quote(have)}"
    if code == E.ErrCode.STREAM_NOT_MATCH:
        return "expected stream does not match"
    if code == E.ErrCode.MESSAGE_TTL_DISABLED:
        return "message TTL disabled"
    if code in (E.ErrCode.STREAM_MESSAGE_EXCEEDS_MAXIMUM, E.ErrCode.STREAM_HEADER_EXCEEDS_MAXIMUM):
        return "maximum payload exceeded"
    if code in (E.ErrCode.STREAM_ROLLUP_FAILED, E.ErrCode.STREAM_STORE_FAILED):
        return err.description  # the wrapped error itself
    return f"{err.description} ({code})"


def _uint(text: str) -> int:
    text = text.strip()
    return int(text) if text.isdigit() else 0
