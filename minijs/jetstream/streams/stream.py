"""A stream: its config, its store, its subscriptions, and the publish path.

A stream is an internal subscriber on its subjects (the bus's ``subscribe_internal``): every PUB
or HPUB routed to one of them lands in :meth:`Stream._on_publish`, whoever sent it. The checks
run in nats-server's order (its ``processJetStreamMsg``: size and header limits, expected
headers, dedup, rollup and TTL checks, then the discard policy) and the first failure becomes
the pub ack error.

Every message a stream stores takes one path, :meth:`Stream.store_checked` (the tail of
nats-server's ``processJetStreamMsg``): interest skip, discard policy, dedup record, rollup,
limits, expiry, republish, consumer announcement. A published message reaches it through the
publish checks (:meth:`Stream.process`, and an atomic batch's commit); a message another
stream or a message schedule brings (nats-server's ``sourced``) through
:meth:`Stream.store_sourced`, which checks less and stores it verbatim. Its pub ack, or its
error, is built by :mod:`~minijs.jetstream.streams.puback`.

Pub acks of file streams are sent only after the LMDB transaction carrying the message has
committed: the stream queues them and asks its owner for a flush at the end of this event-loop
turn (:meth:`StreamOwner.mark_dirty`), so a pipelined burst of publishes shares one commit.
Memory streams ack at once.

A stream owns its consumers (``stream.consumers``) and tells them, after the commit, about new
messages, at once about messages removed one by one (limits, expiry, ``MSG.DELETE``,
retention) and about purges (the API's, rollups, subject delete markers), through its
consumer-signalling index (``stream.signals``, :mod:`~minijs.jetstream.streams.signals`), so
the cost of a message does not grow with idle consumers.

Mirrors and sources are fed by the engine, not by subscriptions: a stream other streams follow
has ``followers`` (objects with ``wake()`` and ``interested(subject)``, which interest
retention asks beside the consumers), woken after its new messages are committed, and a
followed-into stream stores what they bring with :meth:`Stream.store_sourced`. A stream with
no followers pays one empty-list test per published message for this.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.core import subjects as _subjects
from minijs.core.msgtrace import TRACE_DEST, TRACE_DEST_DISABLED
from minijs.jetstream.streams import counter as C
from minijs.jetstream.streams.puback import PubAcks
from minijs.jetstream.streams.signals import ConsumerMap, ConsumerSignals
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.jetstream.headers import parse_msg_ttl
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.streams import schedules as _schedules
from minijs.jetstream.streams import tracing
from minijs.jetstream.advisory import Advisories
from minijs.jetstream.bus import MessageBus
from minijs.jetstream.config.stream import StreamConfig, to_json_dict
from minijs.jetstream.store import Store
from minijs.jetstream.store.base import StoredMessage

if TYPE_CHECKING:
    from minijs.core.sublist import Subscription
    from minijs.log import Logger


class StreamOwner(Protocol):
    """What a stream needs from the engine that owns it."""

    bus: MessageBus
    log: "Logger"
    advisories: Advisories

    #: The JetStream domain ("" without one): pub acks carry it.
    domain: str
    #: True when a server or account storage bound is configured (publishes check it).
    publish_limits: bool

    def mark_dirty(self, stream: "Stream") -> None:
        """Commit ``stream``'s buffered writes (and send their acks) at the end of this turn."""

    def check_server_room(self, storage: str) -> None:
        """503/10023 when the server's usage of ``storage`` is already above its limit."""

    def check_account_room(self, storage: str, size: int) -> None:
        """400/10002 when ``size`` more bytes would pass the account's limit."""

    #: ``jetstream { max_buffered_size }`` (0: nats-server's default, never reached here).
    max_buffered_size: int
    #: The account's name in log lines (``$G`` without an accounts block).
    account_name: str

    def log_limit(self, key: str, text: str, *, error: bool) -> None:
        """Log ``text`` at most every 10 s per ``key``."""

MAX_HEADER_SIZE = 64 * 1024 - 1
#: Within one burst of file-stream publishes, commit and ack at least every this many messages.
ACK_GROUP = 64
_SECOND = 1_000_000_000
#: a header block that may start an atomic batch (checked before parsing the block)
_BATCH_ID = H.BATCH_ID.encode()


def _parse_uint(value: str) -> int:
    """nats-server's ``parseInt64`` on an expected-sequence header: garbage reads as -1, which
    as a uint64 never matches a real sequence."""
    return int(value) if value.isdigit() else (1 << 64) - 1


class Stream:
    """One stream. Owns its store; the engine owns the streams."""

    #: A replicated stream's leader (a cluster's): its consumers keep their state in the
    #: store whatever the storage, and ``commit_gate(acks, signals)`` takes what waits for a
    #: commit (the replica sends them once its Raft group holds the turn's writes).
    replicated = False
    commit_gate: Callable[[list, list], None] | None = None
    #: In a cluster: the ``cluster`` object of stream info (name, leader, replicas), and of a
    #: consumer's info.
    cluster_info: Callable[[], dict] | None = None
    consumer_cluster_info: Callable[[Any], dict] | None = None

    def __init__(self, engine: StreamOwner, config: StreamConfig, created: int, store: Store) -> None:
        self.engine = engine
        #: The message bus the stream subscribes, publishes and delivers on.
        self.bus = engine.bus
        self.clock = engine.bus.clock
        self.config = config
        self.name = config.name
        self.created = created
        self.store = store
        self.consumers: ConsumerMap = ConsumerMap()
        self.closed = False
        self._subs: list[Subscription] = []
        self._dedup: dict[str, tuple[int, int]] = {}
        self._dedup_order: deque[tuple[int, str]] = deque()
        self._last_msg_id = ""
        self._expiry_timer: Any = None
        self._expiry_at = 0
        self._pending_acks: list[tuple[bytes, bytes]] = []
        #: While a run of a client's publishes is routed here (``Router.publish_run``), the
        #: answers to send at its end, in order: reply subjects and bodies; None otherwise.
        self._run_replies: list[bytes] | None = None
        self._run_bodies: list[bytes] = []
        self._transform: Any = None
        self._republish: Any = None
        #: The pub acks of this stream (its name and domain).
        self.acks = PubAcks(config.name)
        #: Atomic batches being staged (``batch.AtomicBatches``), made on the first batch.
        self.batches: Any = None
        #: Fast batches in flight (``fastbatch.FastBatches``), made on the first ``.$FI`` reply.
        self.fast_batches: Any = None
        #: Mirrors and sourcing streams fed from this stream's store (objects with ``wake()``
        #: and ``interested(subject)``), woken once new messages are committed.
        self.followers: list[Any] = []
        #: Which consumers hear of which message (see signals.py).
        self.signals = ConsumerSignals(self)
        #: ``mirror`` / ``sources`` state for stream info, set by whoever feeds this stream.
        self.links_info: Callable[[], dict] | None = None
        #: Message schedules (``allow_msg_schedules``), see schedules.py.
        self.schedules: _schedules.MsgSchedules | None = None
        #: The trace of the message being processed, if it is traced (``Nats-Trace-Dest``).
        self._trace: Any = None
        self._apply_config(config)

    # ------------------------------------------------------------------ lifecycle

    def _apply_config(self, cfg: StreamConfig) -> None:
        self.config = cfg
        self.acks = PubAcks(cfg.name, getattr(self.engine, "domain", ""))
        self._transform = None
        if cfg.subject_transform and cfg.subject_transform.get("dest"):
            from minijs.core.transform import SubjectTransform
            self._transform = SubjectTransform(cfg.subject_transform.get("src", ""),
                                               cfg.subject_transform["dest"])
        if not cfg.allow_batched and getattr(self, "fast_batches", None) is not None:
            self.fast_batches.stop()
        if cfg.allow_msg_schedules and self.schedules is None:
            self.schedules = _schedules.MsgSchedules(self)
        self._republish = None
        if cfg.republish and cfg.republish.get("dest"):
            from minijs.core.transform import SubjectTransform
            self._republish = SubjectTransform(cfg.republish.get("src", "") or ">",
                                               cfg.republish["dest"])

    def start(self) -> None:
        """Subscribe to the stream's subjects and arm the expiry timer."""
        for subject in self.config.subjects or ():
            self._subs.append(self._subscribe(subject))
        self._rebuild_dedup()
        last = self.store.load_last()
        self._last_msg_id = H.parse(last.hdr).get(H.MSG_ID, "") if last and last.hdr else ""
        self._schedule_expiry()
        if self.schedules is not None:
            self.schedules.recover()

    def update(self, cfg: StreamConfig) -> None:
        """Apply an already validated config change (subjects, limits, flags)."""
        old = self.config
        self._apply_config(cfg)
        if (old.subjects or []) != (cfg.subjects or []):
            for sub in self._subs:
                self.bus.unsubscribe_internal(sub)
            self._subs = [self._subscribe(s) for s in cfg.subjects or ()]
        removed = self.store.enforce_limits(cfg.max_msgs, cfg.max_bytes)
        if cfg.max_msgs_per_subject > 0:
            for subject in list(self.store.subject_state().keys()):
                removed += self.store.enforce_per_subject_limit(subject, cfg.max_msgs_per_subject)
        self.signals.removed(removed)
        self._schedule_expiry()
        self.save_config()

    def after_restore(self, created: int) -> None:
        """A restore wrote the messages straight into the store: take the snapshot's creation
        time and rebuild what :meth:`start` derives from the stored messages."""
        self.created = created
        self._rebuild_dedup()
        last = self.store.load_last()
        self._last_msg_id = H.parse(last.hdr).get(H.MSG_ID, "") if last and last.hdr else ""
        self._schedule_expiry()
        self.save_config()

    def save_config(self) -> None:
        """Persist config and creation time in the store's metadata (file streams recover them;
        a memory stream is never recovered, so it skips the encoding)."""
        if self.store.storage == "file":
            doc = {"config": to_json_dict(self.config, dynamic_metadata=False),
                   "created": self.created}
            self.store.put_meta("stream", J.dumps(doc))
        self.engine.mark_dirty(self)

    def stop(self) -> None:
        if self.batches is not None:
            self.batches.stop()
        if self.fast_batches is not None:
            self.fast_batches.stop()
        for sub in self._subs:
            self.bus.unsubscribe_internal(sub)
        self._subs = []
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        if self.schedules is not None:
            self.schedules.stop()
        self.closed = True

    def close(self) -> None:
        """Stop and release the store (server shutdown: data stays)."""
        self.stop()
        self.flush()
        self.store.close()

    def abandon(self) -> None:
        """Stop without committing buffered writes or sending their acks (a simulated crash)."""
        self.stop()
        self._pending_acks = []
        self.store.abandon()

    def delete(self) -> None:
        """Stop and remove all data."""
        self.stop()
        self._pending_acks = []
        self.store.delete()

    # ------------------------------------------------------------------ publish path

    def _subscribe(self, subject: str) -> "Subscription":
        return self.bus.subscribe_internal(subject, self._on_publish,
                                           on_traced=self._on_traced_publish,
                                           run_receiver=self)

    # A run of one client's publishes (minijs.core.sublist.RunReceiver): taken whole by
    # take_run when nothing in it can need more than storing and acking, else each message
    # through _on_publish with the answers sent together at the end.

    def take_run(self, subject: bytes, replies: list[bytes | None],
                 payloads: list[bytes]) -> bool:
        """Store and answer a run of publishes without headers on one subject as one step
        (one store call; the acks, in order, with one :meth:`MessageBus.publish_replies`), if
        what :meth:`_on_publish` would do with each message is only that: a limits stream
        that no other stream mirrors or sources, not sealed, counting, scheduling,
        republishing, transforming subjects, replicated or under an account's or the
        server's limits,
        with room for the whole run under ``max_msgs``, ``max_bytes`` and
        ``max_msgs_per_subject`` (nothing is removed or refused) and every message within
        ``max_msg_size``, and no fast batch among them. Otherwise it does nothing and
        returns False. A file stream commits and acks at least every ``ACK_GROUP`` messages,
        as one by one."""
        cfg = self.config
        engine = self.engine
        if (self.closed or cfg.retention != "limits" or cfg.sealed or cfg.allow_msg_counter
                or self._transform is not None or self._republish is not None
                or self.schedules is not None or self.commit_gate is not None
                or self.followers or engine.publish_limits or engine.max_buffered_size > 0):
            return False
        store = self.store
        n = len(payloads)
        mms = cfg.max_msg_size
        if mms >= 0 and max(map(len, payloads)) > mms:
            return False
        name = subject.decode("utf-8", "replace")
        if cfg.max_msgs > 0 and store.msgs + n > cfg.max_msgs:
            return False
        if (cfg.max_msgs_per_subject > 0
                and store.msgs_for_subject(name) + n > cfg.max_msgs_per_subject):
            return False
        if cfg.max_bytes > 0:
            size = n * store.msg_size(name, None, b"") + sum(map(len, payloads))
            if store.bytes + size >= cfg.max_bytes:
                return False
        for reply in replies:
            if reply is not None and reply.endswith(b".$FI"):
                return False
        time_ns = self.clock.time_ns
        answer = not cfg.no_ack
        acks = self.acks
        tell = bool(self.consumers)
        file = store.storage != "memory"
        start = 0
        while start < n:
            # (a file stream: at most what brings its waiting acks to ACK_GROUP at a time)
            stop = min(n, start + max(1, ACK_GROUP - len(self._pending_acks))) if file else n
            datas = payloads[start:stop]
            first = store.store_run(name, datas, [time_ns() for _ in datas])
            seqs = range(first, first + len(datas))
            if tell:
                queue = self.signals.queue
                for seq in seqs:
                    queue(seq, name)
            if answer:
                to = [(reply, acks.stored(seq))
                      for reply, seq in zip(replies[start:stop], seqs) if reply]
                if store.pending_writes or self._pending_acks:
                    self._pending_acks.extend(to)  # (after the commit, behind those waiting)
                elif to:
                    self.bus.publish_replies([r for r, _ in to], [a for _, a in to])
            if store.pending_writes:
                if len(self._pending_acks) >= ACK_GROUP:
                    self.flush()
                else:
                    engine.mark_dirty(self)
            elif self.signals.queued:
                self.signals.release()
            start = stop
        self._last_msg_id = ""
        if cfg.max_age and self._expiry_timer is None:
            self._schedule_expiry()
        return True

    def take_shared_run(self, subjects: list[bytes], replies: list[bytes | None],
                        payloads: list[bytes]) -> bool:
        """A run on several subjects goes message by message, between :meth:`begin_run`
        and :meth:`end_run`."""
        return False

    def begin_run(self) -> None:
        """A run goes through :meth:`_on_publish` one message at a time: its answers are kept
        and sent together at its end (:meth:`end_run`), in order. Not with republish, whose
        messages nats-server sends between a publish and its ack, nor with consumers, whose
        deliveries stay each after its message's ack."""
        if self._republish is None and not self.consumers:
            self._run_replies = []

    def end_run(self) -> None:
        replies = self._run_replies
        if replies is None:
            return
        bodies = self._run_bodies
        self._run_replies = None
        self._run_bodies = []
        if replies:
            self.bus.publish_replies(replies, bodies)

    def _answer(self, reply: bytes, body: bytes) -> None:
        """Send an answer without headers (a pub ack, an error) now, or at the end of the run
        this publish is part of; behind the acks that wait for a commit, if any (a refusal
        never overtakes the ack of an earlier publish, as with nats-server)."""
        if self._pending_acks:
            self._pending_acks.append((reply, body))
            return
        replies = self._run_replies
        if replies is None:
            self.bus.publish(reply, None, None, body)
        else:
            replies.append(reply)
            self._run_bodies.append(body)

    def _on_traced_publish(self, sub: "Subscription", trace: Any, subject: bytes,
                           reply: bytes | None, hdr: bytes | None, payload: bytes,
                           origin: Any) -> None:
        """A traced message (``Nats-Trace-Dest``): record the ``js`` event around the usual
        publish path. Trace-only runs every check (a refusal is still answered) but stores and
        acknowledges nothing; a stored message keeps ``Nats-Trace-Dest: trace disabled`` so that
        its deliveries are never traced again (nats-server's ``processInboundJetStreamMsg``)."""
        if self.closed:
            return
        trace.jetstream(self.name)
        if not trace.only and hdr:
            hdr = H.set_value(hdr, TRACE_DEST, TRACE_DEST_DISABLED)
        self._trace = trace
        try:
            self._on_publish(sub, subject, reply, hdr, payload, origin)
        finally:
            self._trace = None
        if not trace.jetstream_settled:  # acknowledged without storing: a duplicate
            trace.jetstream_error(tracing.ERR_DUPLICATE)

    def _on_publish(self, sub: "Subscription", subject: bytes, reply: bytes | None,
                    hdr: bytes | None, payload: bytes, origin: Any) -> None:
        if self.closed:
            return
        limit = self.engine.max_buffered_size
        if limit > 0 and (len(subject) + len(payload) + (len(hdr) if hdr else 0)
                          + (len(reply) if reply else 0)) > limit:
            self._ingest_refused(reply)
            return
        if reply and reply.endswith(b".$FI"):  # fast batch publishing, see fastbatch.py
            if self.fast_batches is None:
                from minijs.jetstream.streams.fastbatch import FastBatches
                self.fast_batches = FastBatches(self)
            for body, if_acked in self.fast_batches.process(
                    subject.decode("utf-8", "replace"), reply.decode("utf-8", "replace"),
                    hdr, payload):
                if not (if_acked and self.config.no_ack):
                    self._send_ack(reply, body)
            self._after_store()
            return
        try:
            ack = self.process(subject.decode("utf-8", "replace"), hdr, payload, reply)
        except Exception as exc:
            err = self.publish_error(exc)
            if self._trace is not None:
                self._trace.jetstream_error(tracing.error_text(err, hdr))
            if reply and not self.config.no_ack:
                self._answer(reply, self.acks.error(err))
            return
        if ack is not None and reply and not self.config.no_ack:
            self._send_ack(reply, ack)
        self._after_store()

    def _send_ack(self, reply: bytes, ack: bytes) -> None:
        """Answer a publish now, or after the commit of the writes it made (file streams)."""
        if self.store.pending_writes:
            self._pending_acks.append((reply, ack))
            if len(self._pending_acks) >= ACK_GROUP:
                self.flush()  # commit part of a long burst now so its acks can go out
            else:
                self.engine.mark_dirty(self)
        else:
            self._answer(reply, ack)

    def _after_store(self) -> None:
        """After a message was stored (or refused, or skipped): its writes are committed at
        the end of the turn and its consumers told then; with nothing to commit (a memory
        stream), they are told now."""
        if self.store.pending_writes:
            # Committed at the end of the turn (then announced), acked or not: a publish
            # without a reply subject is on disk as soon as nats-server's would be.
            self.engine.mark_dirty(self)
        elif self.signals.queued:
            self.signals.release()

    def _ingest_refused(self, reply: bytes | None) -> None:
        """A message larger than ``jetstream { max_buffered_size }`` never fits nats-server's
        stream ingest queue: dropped, answered 429 (minijs has no queue, so only this case of
        the limit applies; ``max_buffered_msgs`` never fills)."""
        self.engine.log_limit(f"ingest {self.name}", "Dropping messages due to excessive "
                              f"stream ingest rate on '{self.engine.account_name}' > "
                              f"'{self.name}': IPQ size limit "
                              "reached", error=False)
        if reply:
            # What was answered before goes first: the run's answers, and the acks waiting
            # for a commit (committed now).
            self.end_run()
            if self._pending_acks:
                self.flush()
            self.bus.publish(reply, None, b"NATS/1.0 429 Too Many Requests\r\n\r\n",
                             self.acks.error(E.stream_too_many_requests()))

    def process(self, subject: str, hdr: bytes | None, data: bytes,
                reply: bytes | None = None, fast_batch: bool = False) -> bytes | None:
        """Store one published message; return the pub ack payload (or raise ``ApiError``).
        A message of a fast batch (``fast_batch``) never takes the atomic batch path."""
        cfg = self.config
        store = self.store
        if self._transform is not None:
            subject = self._transform.apply(subject) or subject
        if cfg.sealed:
            raise E.stream_sealed()
        if hdr and not fast_batch and _BATCH_ID in hdr:
            batch_id = H.parse(H.strip_status(hdr)).get(H.BATCH_ID)
            if batch_id:
                # A batch message goes down nats-server's batch path: size first, then the
                # stream must allow atomic publishes; staging and commit live in batch.py.
                mms = cfg.max_msg_size
                if mms >= 0 and len(data) + len(hdr) > mms:
                    raise E.message_size_exceeds_maximum()
                if not cfg.allow_atomic:
                    raise E.atomic_publish_disabled()
                if self.batches is None:
                    from minijs.jetstream.streams.batch import AtomicBatches
                    # (store_checked returns None only for a traced publish, never a batched one)
                    self.batches = AtomicBatches(self)  # type: ignore[arg-type]
                return self.batches.process(batch_id, subject, H.strip_status(hdr), data)
        ttl = 0
        msg_id = ""
        rollup = ""
        incr = None
        if hdr:
            hdr = H.strip_status(hdr)
            h = H.parse(hdr)
            if H.INCR in h:
                incr = C.check_incr(h, data, cfg.allow_msg_counter)
            exp = h.get(H.EXPECTED_STREAM)
            if exp and exp != self.name:
                raise E.expected_stream_mismatch()
            ttl_text = h.get(H.TTL)
            if ttl_text is not None and not cfg.allow_msg_ttl:
                raise E.ttl_disabled()
            if H.EXPECTED_LAST_SUBJ_SEQ in h:
                want = _parse_uint(h[H.EXPECTED_LAST_SUBJ_SEQ])
                on = h.get(H.EXPECTED_LAST_SUBJ_SEQ_SUBJ) or subject
                have = store.last_seq_for_subject(on)
                if want != have:
                    raise E.wrong_last_sequence(have)
            elif h.get(H.EXPECTED_LAST_SUBJ_SEQ_SUBJ):
                raise E.stream_expected_last_seq_per_subject_invalid()
            if H.EXPECTED_LAST_SEQ in h:
                want = _parse_uint(h[H.EXPECTED_LAST_SEQ])
                if want != store.last_seq:
                    raise E.wrong_last_sequence(store.last_seq)
            if b"Nats-Schedul" in hdr:
                hdr = _schedules.check_publish(self, subject, hdr, h)
                h = H.parse(hdr)
            if H.STREAM_SOURCE in h:
                raise E.message_source_hdr_not_allowed()
            msg_id = h.get(H.MSG_ID, "")
            if msg_id:
                dup = self._check_dedup(msg_id)
                if dup:
                    return self.acks.duplicate(dup)
            exp_id = h.get(H.EXPECTED_LAST_MSG_ID)
            if exp_id and exp_id != self._last_msg_id:
                raise E.wrong_last_msg_id(self._last_msg_id)
            rollup = h.get(H.ROLLUP, "")
            if rollup:
                if not cfg.allow_rollup_hdrs or cfg.deny_purge:
                    raise E.rollup_not_permitted()
                rollup = rollup.lower()
                if rollup not in ("sub", "all"):
                    raise E.rollup_value_invalid(h[H.ROLLUP])
            if ttl_text is not None:
                ttl, hdr = self._msg_ttl(ttl_text, hdr)
        if cfg.allow_msg_counter:
            if incr is None:
                raise E.message_incr_missing()
            hdr, data = C.apply(self.counter_total(subject), subject, hdr, data, incr,
                                self.bus.config.max_payload)
        seq = self.store_checked(subject, hdr, data, ttl, msg_id, rollup)
        if seq is None:  # traced with Nats-Trace-Only: checked, not stored, not acknowledged
            return None
        if cfg.allow_msg_counter:
            return self.acks.counter(seq, C.stored_value(data))
        return self.acks.stored(seq)

    def _msg_ttl(self, ttl_text: str, hdr: bytes) -> tuple[int, bytes]:
        """A message's ``Nats-TTL`` in seconds, and its header: with subject delete markers
        (and more than one message per subject), a shorter TTL is raised to theirs and the
        header says so."""
        ttl = parse_msg_ttl(ttl_text)
        cfg = self.config
        sdm = cfg.subject_delete_marker_ttl
        if sdm > 0 and cfg.max_msgs_per_subject != 1 and 0 < ttl < sdm // _SECOND:
            ttl = sdm // _SECOND
            hdr = H.set_value(hdr, H.TTL, str(ttl))
        return ttl, hdr

    def publish_error(self, exc: Exception) -> E.ApiError:
        """What a publish that raised ``exc`` is answered with: its API error, or, for a bug
        or a store failure (logged), 10077 — the publisher hears about it, the server lives."""
        if isinstance(exc, E.ApiError):
            return exc
        self.engine.log.error(f"JetStream stream '{self.name}' store failed: {exc!r}")
        return E.stream_store_failed(str(exc))

    def counter_total(self, subject: str) -> "C.Total":
        """The running total of a counter subject, from its last stored message."""
        sm = self.store.load_last(subject)
        return C.Total.load((sm.hdr, sm.data) if sm is not None else None)

    def store_sourced(self, subject: str, hdr: bytes | None, data: bytes, *, ts: int = 0,
                      seq: int = 0) -> int:
        """Store a message another stream or a message schedule brought (nats-server's
        ``processJetStreamMsg`` with ``sourced``): a mirror passes the origin's ``seq`` and
        ``ts`` (the store's last sequence must be below ``seq``; skipped sequences become
        gaps), a source or a schedule neither (next sequence, now). No publish-only checks
        (expected headers are stripped by the feeder, the source header is the feeder's, TTL
        headers need no ``allow_msg_ttl``, rollups need no ``allow_rollup_hdrs``); a source's
        ``Nats-Msg-Id`` seen within the duplicate window returns 0 and stores nothing. Limits,
        discard policy, interest retention, republish and consumers work as for a publish.
        Returns the sequence; raises ``ApiError``. Commits (file streams) and announcements
        happen at the end of the turn, as for publishes."""
        cfg = self.config
        if self._transform is not None:
            subject = self._transform.apply(subject) or subject
        if cfg.sealed:
            raise E.stream_sealed()
        msg_id = ""
        rollup = ""
        ttl = 0
        if hdr:
            h = H.parse(hdr)
            msg_id = h.get(H.MSG_ID, "")
            if msg_id and not seq:
                if self._check_dedup(msg_id):
                    return 0
            rollup = h.get(H.ROLLUP, "").lower()
            if rollup not in ("sub", "all"):
                rollup = ""
            if cfg.allow_msg_counter:
                incr = C.check_incr(h, data, True, sourced=True)
                if incr is None:
                    raise E.message_incr_missing()
                hdr, data = C.apply(self.counter_total(subject), subject, hdr, data, incr,
                                    self.bus.config.max_payload)
            ttl_text = h.get(H.TTL)
            if ttl_text is not None and cfg.allow_msg_ttl:
                ttl, hdr = self._msg_ttl(ttl_text, hdr)
        stored = self.store_checked(subject, hdr, data, ttl, msg_id, rollup, sourced=True,
                                    seq=seq, ts=ts)
        self._after_store()
        return stored  # type: ignore[return-value]  # only a traced publish stores nothing

    def store_checked(self, subject: str, hdr: bytes | None, data: bytes, ttl: int, msg_id: str,
                      rollup: str, *, sourced: bool = False, batched: bool = False,
                      seq: int = 0, ts: int = 0) -> int | None:
        """Store a message that passed its checks (the tail of nats-server's
        ``processJetStreamMsg``): size limits and discard policy (unless ``batched``: an
        atomic batch's commit checked them for the whole batch), interest skip, dedup record,
        rollup, limits, expiry, republish, the announcement to consumers, and for a published
        message (not ``sourced``) its trace and message schedule. ``seq`` and ``ts``: a
        mirror's copy of its origin's. Returns the sequence (None for a trace-only message,
        which is not stored)."""
        cfg = self.config
        if not batched:
            mms = cfg.max_msg_size
            if mms >= 0 and len(data) + (len(hdr) if hdr else 0) > mms:
                raise E.message_size_exceeds_maximum()
            if hdr and len(hdr) > MAX_HEADER_SIZE:
                raise E.stream_header_exceeds_maximum()
        store = self.store
        engine = self.engine
        if engine.publish_limits:
            engine.check_server_room(cfg.storage)
        trace = self._trace
        if trace is not None:  # a traced message reached storage (see _on_traced_publish)
            trace.update_jetstream(subject, cfg.retention == "interest"
                                   and not self._has_interest(subject))
            if trace.only:
                return None
        now = self.clock.time_ns()
        if cfg.retention == "interest" and not self._has_interest(subject):
            stored = store.skip_msgs(seq - store.last_seq, ts) if seq else store.skip_msg(now)
            if msg_id:
                self._record_dedup(msg_id, stored, now)
            return stored
        if engine.publish_limits:
            size = len(subject) + (len(hdr) if hdr else 0) + len(data)
            # memStoreMsgSize / fileStoreMsgSize
            size += 16 if cfg.storage == "memory" else (34 if hdr else 30)
            engine.check_account_room(cfg.storage, size)
        if cfg.discard == "new" and not batched:
            self._check_discard_new(subject, hdr, data, bool(rollup))
        stored, ts = store.store_msg(subject, hdr or None, data, ts or now, ttl, seq or None)
        if msg_id:
            self._record_dedup(msg_id, stored, ts)
        self._last_msg_id = msg_id
        removed: list[int] = []
        if rollup == "sub":
            if self._purge_store(subject, stored, 0):
                self._purged(subject)
        elif rollup == "all":
            if self._purge_store(None, 0, 1, compact_at=stored):
                self._purged(None)
        if cfg.max_msgs_per_subject > 0:
            removed += store.enforce_per_subject_limit(subject, cfg.max_msgs_per_subject)
        if cfg.max_msgs > 0 or cfg.max_bytes > 0:
            removed += store.enforce_limits(cfg.max_msgs, cfg.max_bytes)
        if removed:
            self.signals.removed(removed)
        if ttl > 0 or (cfg.max_age and self._expiry_timer is None):
            self._schedule_expiry()  # a TTL may be due before the armed timer
        if self._republish is not None:
            self._do_republish(stored, subject, hdr, data, ts)
        if self.consumers or self.followers:
            self.signals.queue(stored, subject)
        if self.schedules is not None and not sourced:
            self.schedules.stored(stored, subject, hdr, ts)
        return stored

    def _check_discard_new(self, subject: str, hdr: bytes | None, data: bytes, rollup: bool) -> None:
        """Store-level discard-new rules (memstore/filestore ``storeRawMsg``)."""
        cfg = self.config
        store = self.store
        at_subject_limit = False
        first_on_subject = 0
        if cfg.max_msgs_per_subject > 0:
            if store.msgs_for_subject(subject) >= cfg.max_msgs_per_subject:
                if cfg.discard_new_per_subject and not rollup:
                    raise E.max_msgs_per_subject_exceeded()
                at_subject_limit = True
                first_on_subject = store.first_seq_for_subject(subject)
        if cfg.max_msgs > 0 and store.msgs >= cfg.max_msgs and not at_subject_limit:
            raise E.max_msgs_exceeded()
        if cfg.max_bytes > 0:
            if store.storage == "memory":
                size = store.msg_size(subject, hdr, data)
                if store.bytes + size >= cfg.max_bytes:
                    if not at_subject_limit or store.size_of(first_on_subject) < size:
                        raise E.max_bytes_exceeded()
            else:
                raw = len(data) + (len(hdr) if hdr else 0)
                if store.bytes + raw >= cfg.max_bytes:
                    if not at_subject_limit or store.size_of(first_on_subject) <= raw:
                        raise E.max_bytes_exceeded()

    def _has_interest(self, subject: str) -> bool:
        """Interest retention: does any consumer's filter match ``subject``? (A follower
        counts too while it follows with a consumer that is not in ``consumers``.)"""
        if self.consumers and self.signals.consumers_of(subject):
            return True
        for follower in self.followers:
            if follower.interested(subject):
                return True
        return False

    def _do_republish(self, seq: int, subject: str, hdr: bytes | None, data: bytes, ts: int) -> None:
        dest = self._republish.apply(subject)
        if dest is None:
            return
        target = dest.encode("utf-8", "surrogateescape")
        if not _subjects.is_valid_literal_subject(target):
            return  # nats-server drops a republish whose mapped subject is not publishable
        last = self.store.last_seq_for_subject(subject, seq - 1) if seq > 1 else 0
        pairs = [("Nats-Stream", self.name), ("Nats-Subject", subject), ("Nats-Sequence", str(seq)),
                 ("Nats-Time-Stamp", J.go_time(ts)), ("Nats-Last-Sequence", str(last))]
        body = data
        if self.config.republish.get("headers_only"):  # type: ignore[union-attr]  # (set: see _republish)
            pairs.append(("Nats-Msg-Size", str(len(data))))
            body = b""
        self.bus.publish(target, None, H.append(hdr, pairs), body)

    def confirm_after_commit(self, replies: list[bytes]) -> None:
        """Answer these requests (a durable consumer's ``ack_sync`` replies, its state already
        buffered) with an empty message after the next commit, with the pub acks."""
        self._pending_acks.extend((reply, b"") for reply in replies)
        self.engine.mark_dirty(self)

    def flush(self) -> None:
        """Commit buffered writes, then send the acks that waited for them."""
        if self.store.closed:
            return
        gate = self.commit_gate
        if gate is not None:  # replicated: these wait for the turn's writes to commit
            acks, self._pending_acks = self._pending_acks, []
            signals, self.signals.queued = self.signals.queued, []
            gate(acks, signals)
            return
        self.store.flush()
        acks = self._pending_acks
        if acks:
            self._pending_acks = []
            self.bus.publish_replies([reply for reply, _ in acks], [ack for _, ack in acks])
        self.signals.release()

    # ------------------------------------------------------------------ dedup

    def _window(self) -> int:
        return self.config.duplicate_window

    def _prune_dedup(self, now: int) -> None:
        cutoff = now - self._window()
        order = self._dedup_order
        dedup = self._dedup
        while order and order[0][0] <= cutoff:
            ts, msg_id = order.popleft()
            entry = dedup.get(msg_id)
            if entry is not None and entry[1] == ts:
                del dedup[msg_id]

    def _check_dedup(self, msg_id: str) -> int:
        if self._window() <= 0 or not self._dedup:
            return 0
        self._prune_dedup(self.clock.time_ns())
        entry = self._dedup.get(msg_id)
        return entry[0] if entry else 0

    def _record_dedup(self, msg_id: str, seq: int, ts: int) -> None:
        if self._window() <= 0:
            return
        self._dedup[msg_id] = (seq, ts)
        self._dedup_order.append((ts, msg_id))

    def _rebuild_dedup(self) -> None:
        """After a restart: ids of stored messages still inside the window (nats-server does
        the same from its store)."""
        window = self._window()
        if window <= 0 or self.store.msgs == 0:
            return
        now = self.clock.time_ns()
        seq = self.store.first_seq_at_or_after_time(now - window)
        while True:
            sm = self.store.load_next(seq)
            if sm is None:
                break
            if sm.hdr:
                mid = H.parse(sm.hdr).get(H.MSG_ID)
                if mid:
                    self._record_dedup(mid, sm.seq, sm.ts)
            seq = sm.seq + 1

    # ------------------------------------------------------------------ expiry (max_age, TTL)

    def _schedule_expiry(self) -> None:
        if self.closed:
            return
        when = self.store.next_expiration(self.config.max_age)
        if when is None:
            if self._expiry_timer is not None:
                self._expiry_timer.cancel()
                self._expiry_timer = None
            return
        if self._expiry_timer is not None:
            if self._expiry_at <= when:
                return
            self._expiry_timer.cancel()
        delay = (when - self.clock.time_ns()) / 1e9
        if not getattr(self.clock, "virtual", False):
            # A hair late rather than early on real time: a loop timer that fires before its
            # due time would find nothing to expire and re-arm itself with no delay. A virtual
            # clock fires exactly at the due time.
            delay = max(0.001, delay + 1e-6)
        self._expiry_at = when
        self._expiry_timer = self.clock.call_later(delay, self._expire)

    def _expire(self) -> None:
        """``max_age`` and ``Nats-TTL`` expiry. With ``subject_delete_marker_ttl`` the last
        message of a subject leaves a ``MaxAge`` marker (with that TTL, a rollup of its
        subject) unless it is itself a subject delete marker — a ``Nats-Marker-Reason``
        marker or a KV purge marker (nats-server ``isSubjectDeleteMarker``)."""
        self._expiry_timer = None
        if self.closed:
            return
        now = self.clock.time_ns()
        cfg = self.config
        sdm = cfg.subject_delete_marker_ttl
        due: list[int] = []
        if cfg.max_age > 0:
            due += self.store.expire_before(now - cfg.max_age, remove=False)
        due += self.store.expire_ttls(now, remove=False)
        removed: list[int] = []
        markers: list[str] = []
        for seq in sorted(set(due)):
            sm = self.store.load(seq)
            if sm is None:
                continue
            is_marker = H.is_subject_delete_marker(sm.hdr)
            if self.store.remove(seq):
                removed.append(seq)
                if sdm > 0 and not is_marker and self.store.msgs_for_subject(sm.subject) == 0:
                    markers.append(sm.subject)
        if removed:
            self.signals.removed(removed)
        for subject in markers:
            # Stored like a published rollup of its subject (nats-server processes it as one):
            # consumers of the subject move past what it replaces.
            hdr = H.build([(H.MARKER_REASON, "MaxAge"), (H.TTL, J.go_duration(sdm)), (H.ROLLUP, "sub")])
            seq, _ = self.store.store_msg(subject, hdr, b"", self.clock.time_ns(), sdm // _SECOND)
            self._last_msg_id = ""
            self._purged(subject)
            if self.consumers or self.followers:
                self.signals.queue(seq, subject)
        if removed or markers:
            self.engine.mark_dirty(self)  # commits, then announces any markers
        self._schedule_expiry()

    # ------------------------------------------------------------------ consumers

    def remove_consumer(self, consumer: Any) -> None:
        """Remove one consumer (API delete or inactivity); on interest streams drop what only
        it still held; announce ``CONSUMER.DELETED``."""
        self.consumers.pop(consumer.name, None)
        consumer.delete()
        if self.config.retention == "interest":
            self._sweep_interest()
        self.engine.advisories.consumer_action(self.name, consumer.name, "delete")

    def _sweep_interest(self) -> None:
        store = self.store
        if not store.msgs:
            return
        doomed: list[int] = []
        seq = store.first_seq
        while True:
            sm_seq = store.next_seq(seq)
            if sm_seq is None:
                break
            subject = store.subject_for_seq(sm_seq)
            if subject is not None and not any(c.needs(sm_seq, subject)
                                               for c in self.consumers.values()):
                doomed.append(sm_seq)
            seq = sm_seq + 1
        for q in doomed:
            self.remove_msg(q, False)

    # ------------------------------------------------------------------ operations for the API

    def purge(self, subject: str | None, seq: int, keep: int) -> int:
        n = self._purge_store(subject or None, seq, keep)
        self.engine.mark_dirty(self)
        self._purged(subject or None)
        return n

    def _purge_store(self, subject: str | None, seq: int, keep: int, *,
                     compact_at: int = 0) -> int:
        """Purge the store (``compact_at``: a rollup of everything below that sequence, which
        nats-server runs as a purge keeping one). nats-server's stores report a purge that
        took exactly one message through the subject/keep path (not a whole-stream purge or a
        compaction) as a single removal: the consumers whose filter takes the subject reported
        (on a memory stream the message's, on a file stream the purge's own, ``>`` for none)
        see the message deleted, so one they have pending is terminated, before the purge
        moves them."""
        store = self.store
        whole = not compact_at and subject in (None, ">") and ((not keep and not seq) or seq > 1)
        first = first_subject = None
        if not whole and self.consumers and store.msgs:
            first = store.next_seq(store.first_seq, subject)
            first_subject = store.subject_for_seq(first) if first else None
        n = store.compact(compact_at) if compact_at else store.purge(subject, seq, keep)
        if n == 1 and first is not None and first_subject is not None:
            reported = first_subject if store.storage == "memory" else (subject or ">")
            self.signals.purged_one(first, reported)
        return n

    def _purged(self, subject: str | None) -> None:
        """After a purge (API, rollup, delete marker; nats-server ``purgeLocked``): tell the
        consumers where the stream now starts, where the purged subject's messages resume
        (0: none left) and where it ends."""
        if not self.consumers:
            return
        store = self.store
        first = store.first_seq if store.msgs else store.last_seq + 1
        fseq = first
        if subject is not None:
            fseq = store.next_seq(first, subject) or 0
        self.signals.purged(subject, fseq, first, store.last_seq)

    def remove_msg(self, seq: int, erase: bool) -> bool:
        ok = self.store.remove(seq, erase)
        if ok:
            self.engine.mark_dirty(self)
            self.signals.removed([seq])
        return ok

    def load(self, seq: int) -> StoredMessage | None:
        return self.store.load(seq)

    # ------------------------------------------------------------------ JSON views

    def state_json(self, *, deleted_details: bool = False, subjects_filter: str | None = None,
                   subjects_window: tuple[int, int] | None = None) -> dict:
        st = self.store.state(deleted_details=deleted_details)
        out: dict[str, Any] = {
            "messages": st.msgs,
            "bytes": st.bytes,
            "first_seq": st.first_seq,
            "first_ts": J.go_time(st.first_ts),
            "last_seq": st.last_seq,
            "last_ts": J.go_time(st.last_ts),
        }
        if st.num_subjects:
            out["num_subjects"] = st.num_subjects
        if subjects_filter:
            subjects = self.store.subject_state(subjects_filter)
            if subjects_window is not None:
                offset, limit = subjects_window
                keys = list(subjects)[offset:offset + limit]
                subjects = {k: subjects[k] for k in keys}
            if subjects:
                out["subjects"] = J.go_map(subjects)
        if st.num_deleted:
            out["num_deleted"] = st.num_deleted
        if deleted_details and st.deleted:
            out["deleted"] = st.deleted
        out["consumer_count"] = len(self.consumers)
        return out

    def info_json(self, *, dynamic_metadata: bool = True, cluster: bool = True, domain: str = "",
                  **state_kw: Any) -> dict:
        out: dict[str, Any] = {
            "config": to_json_dict(self.config, dynamic_metadata=dynamic_metadata),
            "created": J.go_time(self.created),
            "state": self.state_json(**state_kw),
        }
        if domain:
            out["domain"] = domain
        if cluster:
            info = self.cluster_info
            out["cluster"] = info() if info is not None else {"leader": self.bus.server_name}
        if self.links_info is not None:
            out.update(self.links_info())
        out["ts"] = J.go_time(self.clock.time_ns())
        return out

    def subjects_overlap(self, filter_subject: str) -> bool:
        return any(_subjects.subjects_overlap(s, filter_subject) for s in self.config.subjects or ())
