"""Fast batch publishing (``allow_batched``), as nats-server 2.15 on a single server.

The flow-controlled, non-atomic batch ingest used by nats.js's fast-ingest publisher. The batch
lives in the *reply subject* of each published message (no headers):
``<prefix>.<batch id>.<initial flow>.<gap mode>.<batch seq>.<operation>.$FI`` with the gap mode
``fail`` or ``ok`` and the operation 0 start (seq 1), 1 append (seq > 1), 2 commit, 3 commit
with an end-of-batch marker (not stored, seq > 1) and 4 ping. Any publish whose reply ends in
``.$FI`` takes this path on every stream: refused 10205 ``batch publish is disabled`` unless the
stream allows it, 10206 ``batch publish pattern is invalid`` when the reply does not parse.

Each message is checked and stored on its own, as a plain publish (nothing is staged). The
server answers on the message's reply subject with

* ``{"type":"ack","seq":<n>,"msgs":<m>}``, flow control: batch messages up to ``seq`` are
  stored, send the next ack after ``m`` more. The first message gets ``seq`` 0 and the initial
  ``msgs`` (the client's flow capped at 500, or 1 when other fast batches are in flight on the
  stream); later ``msgs`` ramp up (doubling) or down to ``500 / batches in flight``, capped by
  the client's flow.
* ``{"type":"gap","last_seq":<expected>,"seq":<got>}`` when a sequence was skipped: with
  ``fail`` the batch ends (committed up to what was stored), with ``ok`` it continues.
* ``{"type":"err","seq":<n>,"error":{…}}`` when a message after the first is refused (with
  ``fail`` the batch then ends); the first message of a ``fail`` batch gets the plain publish
  error instead.
* the commit's pub ack ``{"stream":…,"seq":<last stored>,"batch":<id>,"count":<batch seq>}``.

An idle batch is forgotten after 10 s of the server clock (later messages get 10208 ``batch
publish ID unknown``); nats-server's limits: 1000 batches in flight per stream, 50000 per server.
"""
from __future__ import annotations

import weakref
from typing import Any

from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.streams import tracing
from minijs.jetstream.streams.batch import BATCH_TIMEOUT, MAX_BATCH_ID
from minijs.jetstream.streams.puback import duplicate_batch, is_duplicate

SUFFIX = b".$FI"
OP_START, OP_APPEND, OP_COMMIT, OP_COMMIT_EOB, OP_PING = range(5)
MAX_INFLIGHT_PER_STREAM = 1000
MAX_INFLIGHT_TOTAL = 50_000
_U64 = 1 << 64

#: Fast batches in flight per engine (nats-server counts them server-wide).
_inflight: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


class _Parsed:
    __slots__ = ("id", "seq", "flow", "gap_ok", "op")

    def __init__(self, batch_id: str, seq: int, flow: int, gap_ok: bool, op: int) -> None:
        self.id, self.seq, self.flow, self.gap_ok, self.op = batch_id, seq, flow, gap_ok, op


def _parse_int64(text: str) -> int:
    """nats-server ``parseInt64``: -1 unless all digits (wrapping like Go's int64)."""
    if not text or not text.isascii() or not text.isdigit():
        return -1
    n = int(text) % _U64
    return n - _U64 if n >= 1 << 63 else n


def parse_reply(reply: str) -> _Parsed | None:
    """nats-server ``getFastBatch`` for a reply ending in ``.$FI``; None if invalid."""
    parts = reply[:-4].rsplit(".", 5)
    if len(parts) < 6:
        return None
    _, batch_id, flow_s, gap, seq_s, op_s = parts
    op = _parse_int64(op_s)
    if not OP_START <= op <= OP_PING:
        return None
    if not seq_s or not seq_s.isascii() or not seq_s.isdigit():
        return None
    seq = int(seq_s)
    if seq == 0 or seq >= _U64 - 1:
        return None
    if (seq == 1 and op == OP_COMMIT_EOB) or (op == OP_START and seq != 1) \
            or (op == OP_APPEND and seq <= 1):
        return None
    if gap not in ("fail", "ok"):
        return None
    flow = _parse_int64(flow_s)
    flow = 10 if flow <= 0 else min(flow, 0xFFFF)
    return _Parsed(batch_id, seq, flow, gap == "ok", op)


class _Batch:
    __slots__ = ("id", "lseq", "sseq", "pseq", "fseq", "ack_msgs", "max_ack_msgs", "gap_ok",
                 "committing", "timer")

    def __init__(self, batch_id: str, gap_ok: bool, max_ack_msgs: int) -> None:
        self.id = batch_id
        self.lseq = 0  # highest batch sequence seen
        self.sseq = 0  # last stream sequence stored
        self.pseq = 0  # last batch sequence stored (a single server stores synchronously)
        self.fseq = 0  # batch sequence of the last flow-control ack
        self.ack_msgs = 0
        self.max_ack_msgs = max_ack_msgs
        self.gap_ok = gap_ok
        #: Ended while a message it counts was refused (``gap`` ``ok``): nats-server waits
        #: for a store that never comes, ignoring later messages, and never answers.
        self.committing = False
        self.timer: Any = None


class FastBatches:
    """The fast batches in flight on one stream. ``process`` returns the replies to send, in
    order, as ``(payload, respects_no_ack)``: nats-server sends the first message's flow
    settings and the batch path's own refusals (sealed, size, disabled, pattern, id, unknown,
    too many inflight, API level) only when the stream acks (not ``no_ack``), everything else
    (flow acks, gaps, ``err`` replies, a refused first message, the commit ack) always."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.clock = stream.clock
        self.batches: dict[str, _Batch] = {}

    # ------------------------------------------------------------------ lifecycle

    def _arm(self, b: _Batch) -> None:
        if b.timer is not None:
            b.timer.cancel()
        b.timer = self.clock.call_later(BATCH_TIMEOUT, lambda: self._drop(b))

    def _drop(self, b: _Batch) -> None:
        if b.timer is not None:
            b.timer.cancel()
            b.timer = None
        if self.batches.get(b.id) is b:
            del self.batches[b.id]
            engine = self.stream.engine
            _inflight[engine] = max(0, _inflight.get(engine, 0) - 1)

    def stop(self) -> None:
        """The stream stops or disables ``allow_batched``: forget every batch."""
        for b in list(self.batches.values()):
            self._drop(b)

    # ------------------------------------------------------------------ flow control

    def _init_flow(self, b: _Batch) -> None:
        b.ack_msgs = 1 if len(self.batches) > 1 else min(500, b.max_ack_msgs)

    @staticmethod
    def _flow(seq: int, b: _Batch) -> bytes:
        return b'{"type":"ack","seq":%d,"msgs":%d}' % (seq, b.ack_msgs)

    def _check_flow(self, b: _Batch, out: list) -> bool:
        """nats-server ``checkFlowControl``: one ack per ``ack_msgs`` stored messages."""
        am = b.ack_msgs
        if b.pseq < b.fseq + am:
            return False
        b.fseq += (b.pseq - b.fseq) // am * am
        cap = min(max(1, (500 // len(self.batches)) & 0xFFFF), b.max_ack_msgs)
        if b.ack_msgs < cap:
            b.ack_msgs = min(b.ack_msgs * 2, cap)
        elif b.ack_msgs > cap:
            b.ack_msgs = max(b.ack_msgs // 2, cap)
        out.append((self._flow(b.fseq, b), False))
        return True

    def _commit(self, b: _Batch, out: list) -> None:
        """Everything sent so far is stored: the pub ack ends the batch."""
        self._drop(b)
        out.append((self.stream.acks.batch(b.sseq, b.id, b.lseq), False))

    # ------------------------------------------------------------------ publish path

    def process(self, subject: str, reply: str, hdr: bytes | None, data: bytes) -> list:
        """One published message whose reply ends in ``.$FI`` (the stream checked it is not
        closed). Returns the replies to send (see the class)."""
        stream = self.stream
        cfg = stream.config
        out: list = []

        def traced(err: E.ApiError) -> None:
            if stream._trace is not None:  # a traced message (Nats-Trace-Dest) was refused
                stream._trace.jetstream_error(tracing.error_text(err, hdr))

        def refuse(err: E.ApiError) -> list:
            traced(err)
            out.append((stream.acks.error(err), True))
            return out

        if cfg.sealed:
            return refuse(E.stream_sealed())
        mms = cfg.max_msg_size
        if mms >= 0 and len(data) + (len(hdr) if hdr else 0) > mms:
            return refuse(E.message_size_exceeds_maximum())
        if not cfg.allow_batched:
            return refuse(E.batch_publish_disabled())
        p = parse_reply(reply)
        if p is None:
            return refuse(E.batch_publish_invalid_pattern())
        if len(p.id.encode()) > MAX_BATCH_ID:
            return refuse(E.batch_publish_invalid_batch_id())
        b = self.batches.get(p.id)
        if b is None:
            if p.seq != 1:
                return refuse(E.batch_publish_unknown_batch_id())
            engine = stream.engine
            if len(self.batches) + 1 > MAX_INFLIGHT_PER_STREAM \
                    or _inflight.get(engine, 0) + 1 > MAX_INFLIGHT_TOTAL:
                return refuse(E.batch_publish_too_many_inflight())
            _inflight[engine] = _inflight.get(engine, 0) + 1
            b = self.batches[p.id] = _Batch(p.id, p.gap_ok, p.flow)
            self._init_flow(b)
        if hdr and H.REQUIRED_API_LEVEL.encode() in hdr:
            hdr = H.strip_status(hdr)
            h = H.parse(hdr)
            if h.get(H.REQUIRED_API_LEVEL):
                if H.api_level_too_high(h[H.REQUIRED_API_LEVEL]):
                    self._drop(b)
                    return refuse(E.required_api_level())
                hdr = H.remove(hdr, H.REQUIRED_API_LEVEL) or None
        self._arm(b)

        if p.op == OP_PING:  # resend the flow state; a ping past what arrived is a gap
            send_flow = True
            if p.seq > b.lseq:
                out.append((b'{"type":"gap","last_seq":%d,"seq":%d}'
                            % (b.lseq + 1, p.seq + 1), False))
                if b.gap_ok:
                    b.lseq = b.pseq = p.seq
                    send_flow = not self._check_flow(b, out)
                else:
                    self._commit(b, out)
                    send_flow = False
            if send_flow:
                out.append((self._flow(b.fseq, b), False))
            return out
        if b.committing:
            return out

        b.lseq += 1
        if b.lseq != p.seq:
            if p.seq > b.lseq:
                out.append((b'{"type":"gap","last_seq":%d,"seq":%d}' % (b.lseq, p.seq), False))
            if b.gap_ok and p.seq > b.lseq:
                b.lseq = p.seq
            else:  # a backward gap, or a gap with "fail": commit what was stored
                b.lseq -= 1
                if b.pseq == b.lseq:
                    self._commit(b, out)
                else:
                    b.committing = True
                    if b.timer is not None:
                        b.timer.cancel()
                        b.timer = None
                return out
        commit = p.op in (OP_COMMIT, OP_COMMIT_EOB)
        if p.op == OP_COMMIT_EOB:
            b.lseq -= 1
            b.pseq = b.lseq
            self._commit(b, out)
            return out
        if p.seq == 1 and not commit:
            out.append((self._flow(0, b), True))

        try:
            ack = stream.process(subject, hdr, data, fast_batch=True)
        except Exception as exc:
            err = stream.publish_error(exc)
            if not b.gap_ok and b.lseq == 1:  # answered as a plain publish, even no_ack
                self._drop(b)
                traced(err)
                out.append((stream.acks.error(err), False))
                return out
            traced(err)
            out.append((b'{"type":"err","seq":%d,"error":' % p.seq + J.dumps(err.to_json())
                        + b"}", False))
            if b.gap_ok and not commit:
                return out
            b.lseq -= 1
            b.pseq = b.lseq
            self._commit(b, out)
            return out
        if ack is not None and is_duplicate(ack):
            b.pseq = p.seq
            self._check_flow(b, out)
            if not commit:
                return out
            if not b.gap_ok and b.lseq == 1:
                self._drop(b)
                out.append((duplicate_batch(ack, b.id, p.seq), False))
                return out
            self._commit(b, out)
            return out
        b.sseq = stream.store.last_seq
        b.pseq = b.lseq
        if commit:
            self._commit(b, out)
        else:
            self._check_flow(b, out)
        return out
