"""Atomic batch publish (``allow_atomic``), as nats-server 2.12+ on a single server.

A client publishes the messages of a batch with ``Nats-Batch-Id: <id>`` (at most 64 bytes) and
``Nats-Batch-Sequence: 1, 2, …``; the last one carries ``Nats-Batch-Commit: 1`` (stored with
the batch) or ``Nats-Batch-Commit: eob`` (an end-of-batch marker, not stored; the last staged
message is stored with ``Nats-Batch-Commit: 1`` added). Each staged message is answered with an
empty message; nothing is stored until the commit. At the commit every message is checked as
nats-server's ``checkMsgHeadersPreClusteredProposal`` does (with the batch's own running state:
earlier messages' ids, counter totals, subjects written), and then either the whole batch is
stored (in one turn, so a file stream commits it in one transaction) and the commit is acked
with ``{"stream":…,"seq":<last>,"batch":<id>,"count":<n>}``, or nothing is stored and the
commit gets the error. Any error discards the batch.

Staged messages live in memory only: a batch not committed before a restart or crash is gone
(nats-server deletes its staging directories when it recovers a stream), and an inactive batch
is discarded after 10 s of the server clock (``BATCH_ABANDONED`` advisory, reason
``timeout``). Limits are nats-server's defaults: 1000 messages per batch, 50 batches in
flight per stream, 1000 per server.
"""
from __future__ import annotations

import re
import weakref
from typing import Any, Protocol

from minijs.jetstream.streams import counter as C
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream.streams import schedules as _schedules
from minijs.jetstream.streams.puback import PubAcks



class BatchStream(Protocol):
    """What batches need from the stream they belong to (given, not imported: the stream
    owns its batches)."""

    name: str
    config: Any
    store: Any
    clock: Any
    engine: Any
    bus: Any
    acks: PubAcks

    def store_checked(self, *args: Any, **kwargs: Any) -> int: ...
    def _check_dedup(self, msg_id: str) -> Any: ...
    def counter_total(self, subject: str) -> Any: ...

BATCH_SEQ = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
#: Seconds a batch may stay idle (nats-server ``streamDefaultMaxBatchTimeout``).
BATCH_TIMEOUT = 10.0
MAX_BATCH_SIZE = 1000
MAX_INFLIGHT_PER_STREAM = 50
MAX_INFLIGHT_TOTAL = 1000
MAX_BATCH_ID = 64
_MAX_HEADER = 0xFFFF
_UINT = re.compile(r"[0-9]+")

#: Batches in flight per engine (nats-server counts them server-wide).
_inflight: "weakref.WeakKeyDictionary[Any, int]" = weakref.WeakKeyDictionary()


class _Batch:
    __slots__ = ("id", "msgs", "lseq", "timer")

    def __init__(self, batch_id: str) -> None:
        self.id = batch_id
        self.msgs: list[tuple[str, bytes, bytes]] = []
        self.lseq = 0
        self.timer: Any = None


def _parse_seq(text: str | None) -> int | None:
    if not text or not _UINT.fullmatch(text) or int(text) >= 1 << 64:
        return None
    return int(text)


def _parse_uint(value: str) -> int:
    """An expected-sequence header as nats-server reads it: garbage never matches."""
    return int(value) if _UINT.fullmatch(value) else (1 << 64) - 1


class AtomicBatches:
    """The atomic batches being staged on one stream."""

    def __init__(self, stream: "BatchStream") -> None:
        self.stream = stream
        self.clock = stream.clock
        self.batches: dict[str, _Batch] = {}

    # ------------------------------------------------------------------ lifecycle

    def _discard(self, b: _Batch) -> None:
        if self.batches.get(b.id) is b:
            del self.batches[b.id]
            engine = self.stream.engine
            _inflight[engine] = max(0, _inflight.get(engine, 0) - 1)
        if b.timer is not None:
            b.timer.cancel()
            b.timer = None

    def _abandoned(self, batch_id: str, reason: str) -> None:
        name = self.stream.name
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.{name}",
            "advisory.v1.stream_batch_abandoned",
            {"stream": name, "batch": batch_id, "reason": reason})

    def _arm(self, b: _Batch) -> None:
        if b.timer is not None:
            b.timer.cancel()
        b.timer = self.clock.call_later(BATCH_TIMEOUT, lambda: self._timeout(b))

    def _timeout(self, b: _Batch) -> None:
        b.timer = None
        if self.batches.get(b.id) is b:
            self._discard(b)
            self._abandoned(b.id, "timeout")

    def stop(self) -> None:
        """The stream stops: drop every staged batch."""
        for b in list(self.batches.values()):
            self._discard(b)

    # ------------------------------------------------------------------ publish path

    def process(self, batch_id: str, subject: str, hdr: bytes, data: bytes) -> bytes:
        """One message of a batch (the stream checked sealed, size and ``allow_atomic``).
        Returns the reply payload (empty for a staged message, the pub ack for the commit);
        raises ``ApiError``."""
        if len(batch_id.encode()) > MAX_BATCH_ID:
            raise E.atomic_publish_invalid_batch_id()
        h = H.parse(hdr)
        seq = _parse_seq(h.get(BATCH_SEQ))
        if seq is None:
            raise E.atomic_publish_missing_seq()
        commit = BATCH_COMMIT in h
        eob = commit and h[BATCH_COMMIT] == "eob"
        invalid_commit = commit and not eob and h[BATCH_COMMIT] != "1"
        b = self.batches.get(batch_id)
        if b is None:
            if seq != 1:
                if (seq - 1 if eob else seq) > MAX_BATCH_SIZE:
                    raise E.atomic_publish_too_large_batch(MAX_BATCH_SIZE)
                raise E.atomic_publish_incomplete_batch()
            engine = self.stream.engine
            if len(self.batches) + 1 > MAX_INFLIGHT_PER_STREAM \
                    or _inflight.get(engine, 0) + 1 > MAX_INFLIGHT_TOTAL:
                raise E.atomic_publish_too_many_inflight()
            _inflight[engine] = _inflight.get(engine, 0) + 1
            b = self.batches[batch_id] = _Batch(batch_id)
        if invalid_commit:
            self._discard(b)
            raise E.atomic_publish_invalid_batch_commit()
        if H.REQUIRED_API_LEVEL in h:
            if h[H.REQUIRED_API_LEVEL] and H.api_level_too_high(h[H.REQUIRED_API_LEVEL]):
                self._discard(b)
                self._abandoned(batch_id, "unsupported")
                raise E.required_api_level()
            hdr = H.remove(hdr, H.REQUIRED_API_LEVEL) or b""
        self._arm(b)
        b.lseq += 1
        if b.lseq != seq or (seq == 1 and eob):
            self._discard(b)
            self._abandoned(batch_id, "incomplete")
            raise E.atomic_publish_incomplete_batch()
        if (seq - 1 if eob else seq) > MAX_BATCH_SIZE:
            self._discard(b)
            self._abandoned(batch_id, "large")
            raise E.atomic_publish_too_large_batch(MAX_BATCH_SIZE)
        if not commit:
            b.msgs.append((subject, hdr, data))
            return b""
        msgs = b.msgs if eob else b.msgs + [(subject, hdr, data)]
        self._discard(b)
        return self._commit(batch_id, msgs, eob)

    def _commit(self, batch_id: str, msgs: list[tuple[str, bytes, bytes]], eob: bool) -> bytes:
        checked = _Checker(self.stream).check_all(msgs)
        if eob:
            subject, hdr, data, ttl, msg_id, rollup = checked[-1]
            checked[-1] = (subject, H.append(hdr, [(BATCH_COMMIT, "1")]), data, ttl, msg_id, rollup)
        stream = self.stream
        seq = 0
        for subject, hdr, data, ttl, msg_id, rollup in checked:
            seq = stream.store_checked(subject, hdr or None, data, ttl, msg_id, rollup,
                                       batched=True)
        return stream.acks.batch(seq, batch_id, len(checked))


class _Checker:
    """nats-server's ``checkMsgHeadersPreClusteredProposal`` over a whole batch, with its
    staged state (``batchStagedDiff``): ids seen, counter totals, subjects written."""

    def __init__(self, stream: "BatchStream") -> None:
        self.stream = stream
        self.msg_ids: set[str] = set()
        self.counters: dict[str, C.Total] = {}
        self.inflight: dict[str, list[int]] = {}  # subject -> [ops, bytes]
        self.expected: dict[str, int] = {}

    def check_all(self, msgs: list[tuple[str, bytes, bytes]]) -> list[tuple]:
        stream = self.stream
        cfg = stream.config
        store = stream.store
        lseq = store.last_seq
        out: list[tuple] = []
        for i, (subject, hdr, data) in enumerate(msgs):
            h = H.parse(hdr) if hdr else {}
            if h.get(H.EXPECTED_LAST_MSG_ID):
                raise E.atomic_publish_unsupported_header_batch(H.EXPECTED_LAST_MSG_ID)
            incr = None
            ttl = 0
            msg_id = ""
            if hdr:
                if len(hdr) > _MAX_HEADER:
                    raise E.stream_header_exceeds_maximum()
                incr = C.check_incr(h, data, cfg.allow_msg_counter)
                exp = h.get(H.EXPECTED_STREAM)
                if exp and exp != stream.name:
                    raise E.expected_stream_mismatch()
                ttl_text = h.get(H.TTL)
                if ttl_text is not None:
                    if not cfg.allow_msg_ttl:
                        raise E.ttl_disabled()
                    ttl = H.parse_msg_ttl(ttl_text)
                msg_id = h.get(H.MSG_ID, "")
                if msg_id:
                    if msg_id in self.msg_ids or stream._check_dedup(msg_id):
                        raise E.atomic_publish_contains_duplicate_message()
                    self.msg_ids.add(msg_id)
                if H.STREAM_SOURCE in h:
                    raise E.message_source_hdr_not_allowed()
            if cfg.allow_msg_counter:
                if incr is None:
                    raise E.message_incr_missing()
                total = self.counters.get(subject)
                if total is None:
                    total = self.counters[subject] = stream.counter_total(subject)
                hdr, data = C.apply(total, subject, hdr, data, incr,
                                    min(stream.bus.config.max_payload,
                                        cfg.max_msg_size if cfg.max_msg_size >= 0 else 1 << 62))
            rollup = ""
            if hdr:
                if H.EXPECTED_LAST_SEQ in h:
                    want = _parse_uint(h[H.EXPECTED_LAST_SEQ])
                    if want != lseq + i:
                        raise E.wrong_last_sequence(lseq + i)
                    if self.inflight:
                        raise E.stream_wrong_last_sequence_constant()
                if H.EXPECTED_LAST_SUBJ_SEQ in h:
                    want = _parse_uint(h[H.EXPECTED_LAST_SUBJ_SEQ])
                    on = h.get(H.EXPECTED_LAST_SUBJ_SEQ_SUBJ) or subject
                    if on in self.inflight:
                        raise E.stream_wrong_last_sequence_constant()
                    have = self.expected.get(on)
                    if have is None:
                        have = store.last_seq_for_subject(on)
                        if have != want:
                            raise E.wrong_last_sequence(have)
                        self.expected[on] = have
                    elif have != want:
                        raise E.wrong_last_sequence(have)
                elif h.get(H.EXPECTED_LAST_SUBJ_SEQ_SUBJ):
                    raise E.stream_expected_last_seq_per_subject_invalid()
                if b"Nats-Schedul" in hdr:
                    hdr = _schedules.check_publish(stream, subject, hdr, h)
                    h = H.parse(hdr)
                rollup = h.get(H.ROLLUP, "").lower()
                if rollup:
                    if not cfg.allow_rollup_hdrs or cfg.deny_purge:
                        raise E.rollup_not_permitted()
                    if rollup == "sub":
                        if subject in self.inflight:
                            raise E.stream_rollup_failed("batch rollup sub invalid")
                    elif rollup == "all":
                        if self.inflight:
                            raise E.stream_rollup_failed("batch rollup all invalid")
                    else:
                        raise E.rollup_value_invalid(h[H.ROLLUP])
            entry = self.inflight.setdefault(subject, [0, 0])
            entry[0] += 1
            entry[1] += store.msg_size(subject, hdr or None, data)
            if cfg.discard == "new":
                self._check_discard_new(subject, bool(rollup))
            out.append((subject, hdr, data, ttl, msg_id, rollup))
        return out

    def _check_discard_new(self, subject: str, rollup: bool) -> None:
        cfg = self.stream.config
        store = self.stream.store
        if cfg.max_msgs > 0 or cfg.max_bytes > 0:
            msgs = store.msgs + sum(e[0] for e in self.inflight.values())
            size = store.bytes + sum(e[1] for e in self.inflight.values())
            if cfg.max_msgs > 0 and msgs > cfg.max_msgs:
                raise E.max_msgs_exceeded()
            if cfg.max_bytes > 0 and size > cfg.max_bytes:
                raise E.max_bytes_exceeded()
        if cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0 and not rollup:
            if store.msgs_for_subject(subject) + self.inflight[subject][0] > cfg.max_msgs_per_subject:
                raise E.max_msgs_per_subject_exceeded()
