"""A consumer: a view of one stream with its own delivery position, pending acks and waiting
pull requests (reference ``jetstream-behavior.md`` §3, §5; ``jetstream-api.md`` §10).

A consumer lives inside its stream (``stream.consumers[name]``) and is driven by:

* the engine's hooks (:meth:`signal` on every stored message, :meth:`on_removed`,
  :meth:`on_purged`, :meth:`delete`);
* ``CONSUMER.MSG.NEXT`` requests (:meth:`next_request`), queued FIFO and served round-robin;
* acks on its own internal subscription ``$JS.ACK.<stream>.<consumer>.>`` — nats-server only
  subscribes when the ack policy is not ``none``, so an ack with a reply on an ack-none
  consumer gets the core 503, and so does it here;
* timers on the server clock: one ack-wait timer for the earliest pending deadline, one expiry
  timer per pull request with ``expires``.

State mirrors nats-server's: ``sseq`` is the next stream sequence to consider, ``dseq`` the next
consumer (delivery) sequence, ``pending`` maps stream seq → ``[consumer seq, deadline ns]`` for
delivered, unacked messages, ``rdc`` the delivery count of redelivered ones, ``rdq`` the stream
sequences due for redelivery (served before new messages, oldest first).

Push consumers (behavior §6) deliver to ``deliver_subject`` while a subscription on exactly that
subject (and ``deliver_group``) exists: the server tells the consumer when such subscriptions come
and go (:meth:`Server.watch_interest`). They send idle heartbeats and flow-control requests as
nats-server does, throttle to ``rate_limit_bps`` and are removed after ``inactive_threshold``
without interest; pull consumers with a threshold are removed after that long without requests.
``pause_until`` stops deliveries until the deadline (behavior §8). Everything that waits runs on
the server clock.

Durable state (behavior §4): consumers of file streams (unless ``mem_storage``) keep their
config, creation time and delivery state — positions, ack floor, pending acks with delivery
counts and timestamps, redelivery counts — under the key ``consumer/<name>`` of the stream
store's metadata, written once per event-loop turn in which the state changed and committed by
the engine's grouped flush; :func:`recover_consumers` brings them back after a restart (the
engine calls it once the stream is recovered). Like nats-server's file store, pending
timestamps come back truncated to whole seconds, the redelivery queue (NAKs) is not kept, and
the first ack-wait check after a restart runs 0.5–1.5 s after it. Ephemerals come back too and
are then removed by their inactivity threshold, as nats-server does.
"""
from __future__ import annotations

import asyncio
import bisect
import dataclasses
import json
import random
import secrets
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple

from minijs.jetstream import consumer_config as C
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.advisory import new_id
from minijs.jetstream.store.base import StoredMessage, subject_matches
from minijs.protocol import wire

if TYPE_CHECKING:
    from minijs.jetstream.stream import Stream

_SECOND = 1_000_000_000
#: Store metadata key prefix of persisted consumers (``consumer/<name>``).
STATE_PREFIX = "consumer/"
_STATE_VERSION = 1
#: Flow control: the largest window (nats-server ``maxFlowControl``); a consumer starts at 1/16.
MAX_FLOW_CONTROL = 32 * 1024 * 1024
_FC_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

#: ``CONSUMER.MSG.NEXT`` JSON body (``JSApiConsumerGetNextRequest``, lenient: unknown fields
#: ignored). The Go struct is anonymous in error texts (``Go struct field .batch``).
NEXT_REQUEST = J.Struct("", {
    "expires": J.DURATION,
    "batch": J.INT,
    "max_bytes": J.INT,
    "no_wait": J.BOOL,
    "idle_heartbeat": J.DURATION,
    "group": J.STRING,
    "min_pending": J.INT64,
    "min_ack_pending": J.INT64,
    "id": J.STRING,
    "priority": J.INT,
})


#: Sort key of a request without a priority (a plain-text ``MSG.NEXT`` body) in a
#: ``prioritized`` wait queue: after every request that names one (Go's ``math.MaxInt32``).
_NO_PRIORITY = 2**31 - 1


@dataclasses.dataclass
class PriorityGroup:
    """The priority-group fields of a JSON ``MSG.NEXT`` body (ADR-42; nats-server
    ``PriorityGroup``). Every JSON request has one, even when it names no group."""

    group: str = ""
    min_pending: int = 0
    min_ack_pending: int = 0
    id: str = ""
    priority: int = 0


class NextRequest(NamedTuple):
    """A decoded ``MSG.NEXT`` body; ``pg`` is None unless the body was JSON."""

    batch: int
    max_bytes: int = 0
    no_wait: bool = False
    expires: int = 0
    hb: int = 0
    pg: PriorityGroup | None = None


class PullRequest:
    """One waiting ``MSG.NEXT`` request. ``n`` is the batch still wanted (a request asking for
    ``batch`` ≤ 0 still gets one message, then reports ``n`` ≤ 0 like the server), ``b`` the byte
    budget left (``max_bytes`` 0 = unlimited), ``pg`` its priority group (JSON bodies only)."""

    __slots__ = ("b", "delivered", "expires", "hb", "hb_timer", "max_bytes", "n", "no_wait",
                 "pg", "reply", "timer")

    def __init__(self, reply: bytes, batch: int, max_bytes: int, no_wait: bool, expires: int,
                 hb: int, pg: PriorityGroup | None = None) -> None:
        self.reply = reply
        self.n = batch
        self.max_bytes = max_bytes
        self.b = max_bytes
        self.no_wait = no_wait
        self.expires = expires
        self.hb = hb
        self.delivered = 0
        self.timer: Any = None
        self.hb_timer: Any = None
        self.pg = pg

    @property
    def priority(self) -> int:
        return self.pg.priority if self.pg is not None else _NO_PRIORITY

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.hb_timer is not None:
            self.hb_timer.cancel()
            self.hb_timer = None

    def pending_headers(self) -> list[tuple[str, str]]:
        return [("Nats-Pending-Messages", str(self.n)), ("Nats-Pending-Bytes", str(self.b))]


def parse_next_request(payload: bytes) -> NextRequest:
    """``nextReqFromMsg``: body → :class:`NextRequest`.

    Empty → batch 1; an integer text → that batch; other text → batch 1; JSON (starts with
    ``{``) decoded leniently, with its priority-group fields. Raises ``ValueError`` with the
    text that follows ``Bad Request -``.
    """
    req = payload.strip()
    if not req:
        return NextRequest(1)
    if req[:1] == b"{":
        from minijs.jetstream.errors import ApiError

        try:
            d = J.decode_lenient(req, NEXT_REQUEST)
        except ApiError as exc:
            text = exc.description
            if text.startswith("invalid JSON: "):
                text = text[len("invalid JSON: "):]
            raise ValueError(text) from None
        hb = d.get("idle_heartbeat", 0)
        expires = d.get("expires", 0)
        if hb > 0 and hb * 2 > expires:
            raise ValueError("heartbeat value too large")
        pg = PriorityGroup(d.get("group") or "", d.get("min_pending", 0),
                           d.get("min_ack_pending", 0), d.get("id") or "", d.get("priority", 0))
        return NextRequest(d.get("batch", 0), d.get("max_bytes", 0), bool(d.get("no_wait")),
                           expires, hb, pg)
    try:
        return NextRequest(int(req.decode("ascii")))
    except (UnicodeDecodeError, ValueError):
        return NextRequest(1)


def _status(code: int, text: str, pairs: list[tuple[str, str]] | None = None) -> bytes:
    return wire.status_header(code, text, pairs)


class Consumer:
    """One consumer of a stream: pull (``MSG.NEXT`` requests) or push (``deliver_subject``)."""

    def __init__(self, stream: "Stream", name: str, config: C.ConsumerConfig,
                 created: int | None = None) -> None:
        self.stream = stream
        self.server = stream.server
        self.clock = stream.clock
        self.name = name
        self.config = config
        self.created = created if created is not None else self.clock.time_ns()
        self.closed = False
        self.filters: list[str] = []
        self._ack_prefix = ""
        self.sseq = 1
        self.dseq = 1
        self.adflr = 0
        self.asflr = 0
        self.pending: dict[int, list[int]] = {}
        self.rdc: dict[int, int] = {}
        self.rdq: list[int] = []
        self.waiting: deque[PullRequest] = deque()
        self.delivered_at: int | None = None
        self.acked_at: int | None = None
        self._lps: deque[int] = deque()  # last_per_subject start list
        self._lps_resume = 0
        self._npc = 0
        self._npc_valid = False
        self._ack_sub: Any = None
        self._ack_timer: Any = None
        self._ack_timer_at = 0
        # push delivery
        self.active = False  # an exact-subject subscription exists on the deliver subject
        self._dsubj = b""
        self._dgroup: bytes | None = None
        self._watch: Any = None
        self._pushing = False
        self._hb_timer: Any = None
        self._last_out = 0.0  # monotonic time of the last delivery to the deliver subject
        self._fc_sub: Any = None
        self.maxpb = 0  # flow-control window (bytes); 0 = no flow control
        self.pbytes = 0  # delivered bytes not yet covered by an answered FC request
        self.fcid = ""  # reply subject of the outstanding FC request
        self.fcsz = 0
        self._rl_rate = 0.0  # rate_limit_bps as bytes per second
        self._rl_burst = 0
        self._rl_tokens = 0.0
        self._rl_at = 0.0
        self._rl_timer: Any = None
        # replay_policy original: deliveries spaced like the stored timestamps until caught up
        self._replay = config.replay_policy == "original"
        self._lts = 0  # stored timestamp of the last delivered message
        self._replay_pass = False  # the wait for the next message is over
        self._replay_timer: Any = None
        # inactivity and pause
        self._dtimer: Any = None
        self._last_request = self.clock.monotonic()
        self._pause_timer: Any = None
        # priority groups (pinned_client): the current pin, when it was given, its timer
        self.pin_id = ""
        self.pinned_ts = 0
        self._pin_timer: Any = None
        # durable state (file streams, not mem_storage)
        self._persist = stream.config.storage == "file" and not config.mem_storage
        self._save_scheduled = False
        self._cfg_json = ""
        self._restored = False
        self._apply_config(config)
        self._select_start()

    # ------------------------------------------------------------------ engine hooks / attrs

    @property
    def inactive_threshold(self) -> int:
        return self.config.inactive_threshold

    @property
    def max_ack_pending(self) -> int:
        return self.config.max_ack_pending

    def matches(self, subject: str) -> bool:
        """Does the filter select ``subject``? (Interest retention asks every consumer.)"""
        if not self.filters:
            return True
        return any(subject_matches(f, subject) for f in self.filters)

    def signal(self, seq: int, subject: str) -> None:
        """A message was stored: count it as pending and serve waiting requests."""
        if self.closed:
            return
        if self._npc_valid and seq >= self.sseq and not self._lps and self.matches(subject):
            self._npc += 1
        self._wake()

    def _wake(self) -> None:
        """Something may be deliverable now: push it, or serve waiting pull requests."""
        if self._dsubj:
            self._push()
        elif self.waiting:
            self._dispatch()

    @property
    def is_push(self) -> bool:
        return bool(self._dsubj)

    def on_removed(self, seqs: list[int]) -> None:
        """Messages left the stream: recount pending lazily; ones still awaiting an ack stay
        until their ack wait runs out (then they are dropped, as they cannot be redelivered)."""
        self._npc_valid = False

    def on_purged(self, subject: str | None, seq: int, keep: int) -> None:
        """A purge: move past what disappeared and forget acks owed for purged messages."""
        self._npc_valid = False
        store = self.stream.store
        first = store.first_seq if store.msgs else store.last_seq + 1
        if self.sseq < first:
            self.sseq = first
        gone = [s for s in self.pending if store.subject_for_seq(s) is None]
        for s in gone:
            self.pending.pop(s, None)
            self.rdc.pop(s, None)
        if gone:
            self.rdq = [s for s in self.rdq if s in self.pending]
        self._lps = deque(s for s in self._lps if store.subject_for_seq(s) is not None)
        if not self.pending:
            self.asflr = max(self.asflr, self.sseq - 1)
            self.adflr = self.dseq - 1
        self._changed()

    def delete(self) -> None:
        """Stop: waiting requests hear ``409 Consumer Deleted``; timers and the ack
        subscription go away."""
        if self.closed:
            return
        for wr in self.waiting:
            wr.cancel()
            self._send(wr.reply, _status(409, "Consumer Deleted"))
        self.waiting.clear()
        persisted = self._persist
        self._persist = False
        self.stop()
        if persisted:
            self._drop_state()

    def signal_shutdown(self) -> None:
        """Server shutdown (``signalPullConsumers``): each waiting request's reply subject
        hears ``409 Server Shutdown`` with what it still wanted (once per subject)."""
        told: set[bytes] = set()
        for wr in self.waiting:
            if wr.reply not in told:
                told.add(wr.reply)
                self._send(wr.reply, _status(409, "Server Shutdown", wr.pending_headers()))

    def stop(self) -> None:
        """Release timers and the ack subscription silently (server shutdown: state not yet
        written is written now, the stream's close commits it)."""
        if self._save_scheduled and self._persist and not self.closed:
            self._save_scheduled = False
            self._write_state()
        self.closed = True
        for wr in self.waiting:
            wr.cancel()
        self.waiting.clear()
        for name in ("_ack_timer", "_hb_timer", "_rl_timer", "_dtimer", "_pause_timer",
                     "_replay_timer", "_pin_timer"):
            timer = getattr(self, name)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)
        if self._ack_sub is not None:
            self.server.unsubscribe_internal(self._ack_sub)
            self._ack_sub = None
        if self._fc_sub is not None:
            self.server.unsubscribe_internal(self._fc_sub)
            self._fc_sub = None
        if self._watch is not None:
            self.server.unwatch_interest(self._watch)
            self._watch = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        cfg = self.config
        if cfg.ack_policy != "none":
            subject = f"$JS.ACK.{self.stream.name}.{self.name}.>"
            self._ack_sub = self.server.subscribe_internal(subject, self._on_ack)
        if cfg.deliver_subject:
            if cfg.flow_control:
                self.maxpb = MAX_FLOW_CONTROL // 16
                self._fc_sub = self.server.subscribe_internal(
                    f"$JS.FC.{self.stream.name}.{self.name}.*", self._on_flow_control)
            self._bind_deliver_subject()
            if cfg.idle_heartbeat > 0:
                self._last_out = self.clock.monotonic()
                self._hb_timer = self.clock.call_later(cfg.idle_heartbeat / 1e9, self._idle_heartbeat)
        elif cfg.inactive_threshold > 0:
            self._dtimer = self.clock.call_later(cfg.inactive_threshold / 1e9, self._check_inactive)
        self._schedule_unpause()
        if not self._restored:
            self._changed()
        if self._dsubj and self.active:
            # Deliver from the next loop turn: the create reply reports the state at creation.
            asyncio.get_running_loop().call_soon(self._push)

    def _apply_config(self, cfg: C.ConsumerConfig) -> None:
        self.config = cfg
        self._cfg_json = ""
        try:
            self._sfreq = int(cfg.sample_freq.removesuffix("%")) if cfg.sample_freq else 0
        except ValueError:
            self._sfreq = 0
        self.filters = [f for f in C.filters_of(cfg) if f != ">"]
        self._ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}."
        if cfg.rate_limit_bps > 0:
            self._rl_rate = cfg.rate_limit_bps / 8
            mms = self.stream.config.max_msg_size
            self._rl_burst = mms if mms > 0 else self.server.config.max_payload
            if not self._rl_at:
                self._rl_tokens = float(self._rl_burst)
                self._rl_at = self.clock.monotonic()
        else:
            self._rl_rate = 0.0

    def update_config(self, cfg: C.ConsumerConfig) -> None:
        """An allowed update (``check_update`` passed): filters, limits, waits and (for an
        unbound push consumer) the deliver subject may change."""
        old = self.config
        self._apply_config(cfg)
        self._npc_valid = False
        if cfg.deliver_subject and cfg.deliver_subject != old.deliver_subject:
            # nats-server re-watches the new subject and redelivers what was pending there.
            if self._watch is not None:
                self.server.unwatch_interest(self._watch)
                self._watch = None
            self._bind_deliver_subject()
            for seq, p in self.pending.items():
                p[1] = 0
                self._queue_redelivery(seq)
        if cfg.inactive_threshold != old.inactive_threshold and not self._dsubj:
            if self._dtimer is not None:
                self._dtimer.cancel()
                self._dtimer = None
            if cfg.inactive_threshold > 0:
                self._dtimer = self.clock.call_later(cfg.inactive_threshold / 1e9,
                                                     self._check_inactive)
        self._changed()
        self._wake()

    # ------------------------------------------------------------------ push: interest

    def _bind_deliver_subject(self) -> None:
        """Watch the deliver subject (with the deliver group as it is now: like nats-server's
        sublist notification, a later deliver_group update does not change what is watched)."""
        cfg = self.config
        self._dsubj = cfg.deliver_subject.encode()
        self._dgroup = cfg.deliver_group.encode() if cfg.deliver_group else None
        self._watch = self.server.watch_interest(self._dsubj, self._interest_changed)
        self.active = self.server.has_exact_interest(self._dsubj, self._dgroup)
        if not self.active:
            self._start_delete_timer()

    def _interest_changed(self) -> None:
        """``updateDeliveryInterest``: a subscription on the deliver subject came or went."""
        if self.closed or not self._dsubj:
            return
        interest = self.server.has_exact_interest(self._dsubj, self._dgroup)
        was = self.active
        self.active = interest
        if interest:
            if self._dtimer is not None:
                self._dtimer.cancel()
                self._dtimer = None
            if not was:
                self._push()
        else:
            self._start_delete_timer()

    def _start_delete_timer(self) -> None:
        thresh = self.config.inactive_threshold
        if thresh > 0 and self._dtimer is None:
            self._dtimer = self.clock.call_later(thresh / 1e9, self._check_inactive)

    def _check_inactive(self) -> None:
        """``deleteNotActive``: a push consumer without interest, or a pull consumer without
        requests (and no ack still expected), for ``inactive_threshold`` is deleted."""
        self._dtimer = None
        if self.closed:
            return
        thresh = self.config.inactive_threshold
        if thresh <= 0:
            return
        if self._dsubj:
            if self.active:
                return
        else:
            elapsed = self.clock.monotonic() - self._last_request
            if elapsed < thresh / 1e9:
                self._dtimer = self.clock.call_later(thresh / 1e9 - elapsed, self._check_inactive)
                return
            self._prune_waiting()
            if self.waiting:
                self._dtimer = self.clock.call_later(thresh / 1e9, self._check_inactive)
                return
            now = self.clock.time_ns()
            latest = max((p[1] for p in self.pending.values() if p[1] > 0), default=0)
            if latest and latest + thresh > now:
                self._dtimer = self.clock.call_later((latest + thresh - now) / 1e9,
                                                     self._check_inactive)
                return
        if self.stream.consumers.get(self.name) is self:
            self.stream.remove_consumer(self)
        else:
            self.delete()

    # ------------------------------------------------------------------ pause

    def is_paused(self) -> bool:
        pu = self.config.pause_until
        return bool(pu) and int(pu) > self.clock.time_ns()  # type: ignore[arg-type]

    def set_pause(self, until: int | None) -> bool:
        """``CONSUMER.PAUSE``: store ``pause_until`` (None resumes); True when it changed (the
        server then sends a pause advisory)."""
        old = self.config.pause_until
        changed = (old is None) != (until is None) or (old is not None and int(old) != int(until or 0))
        cfg = self.config.copy()
        cfg.pause_until = until
        C.set_static_metadata(cfg)
        self.config = cfg
        self._cfg_json = ""
        self._changed()
        self._schedule_unpause()
        if changed:
            self.advise_pause()
        if not self.is_paused():
            self._wake()
        return changed

    def advise_pause(self) -> None:
        pu = self.config.pause_until
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.CONSUMER.PAUSE.{self.stream.name}.{self.name}",
            "advisory.v1.consumer_pause",
            {"stream": self.stream.name, "consumer": self.name, "paused": self.is_paused(),
             "pause_until": J.go_time(int(pu) if pu else J.ZERO_TIME)})

    def _schedule_unpause(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None
        if self.is_paused():
            delay = (int(self.config.pause_until) - self.clock.time_ns()) / 1e9  # type: ignore[arg-type]
            self._pause_timer = self.clock.call_later(delay, self._unpause)

    def _unpause(self) -> None:
        self._pause_timer = None
        if self.closed:
            return
        if self.is_paused():  # the clock is not quite there yet
            self._schedule_unpause()
            return
        self.advise_pause()
        self._wake()

    # ------------------------------------------------------------------ push: delivery

    def _push(self) -> None:
        """Deliver to the deliver subject while there is interest, nothing pauses it, flow
        control has room and the rate limit allows."""
        if not self._dsubj or self._pushing:
            return
        self._pushing = True
        try:
            while not self.closed and self.active:
                if self.maxpb > 0 and self.pbytes > self.maxpb:
                    break
                if self._rl_timer is not None or self.is_paused():
                    break
                nxt = self._peek()
                if nxt is None:
                    break
                sm, dc = nxt
                subject = sm.subject.encode()
                hdr, data = self._payload(sm)
                size = 0
                if self.maxpb > 0 or self._rl_rate > 0:
                    ack = self._ack_subject(dc, sm, self.dseq, self._pending_after(dc))
                    size = len(self._dsubj) + len(ack) + (len(hdr) if hdr else 0) + len(data)
                if self._replay and self._lts and self._replay_wait(sm.ts):
                    break
                if self._rl_rate > 0:
                    wait = self._rate_wait(size)
                    if wait > 0:
                        self._rl_timer = self.clock.call_later(wait, self._rate_ready)
                        break
                self._deliver(self._dsubj, subject, hdr, data, sm, dc)
                self._last_out = self.clock.monotonic()
                if self.maxpb > 0:
                    self.pbytes += size
                    if not self.fcid and self.pbytes > self.maxpb // 2:
                        self._send_flow_control()
                    elif self.fcid and self.pbytes - self.fcsz >= self.maxpb:
                        self.fcsz += size
            if self._replay:
                self._replay_caught_up()
        finally:
            self._pushing = False

    def _payload(self, sm: StoredMessage) -> tuple[bytes | None, bytes]:
        hdr, data = sm.hdr, sm.data
        if self.config.headers_only:
            hdr = H.append(hdr, [("Nats-Msg-Size", str(len(data)))])
            data = b""
        return hdr, data

    def _rate_wait(self, size: int) -> float:
        """Token bucket of ``rate_limit_bps / 8`` bytes a second (burst = the max message
        size): take ``size`` now and return 0, or return how long until it can be taken."""
        now = self.clock.monotonic()
        self._rl_tokens = min(float(self._rl_burst),
                              self._rl_tokens + (now - self._rl_at) * self._rl_rate)
        self._rl_at = now
        need = min(size, self._rl_burst)
        if self._rl_tokens >= need:
            self._rl_tokens -= need
            return 0.0
        return (need - self._rl_tokens) / self._rl_rate

    def _replay_wait(self, ts: int) -> bool:
        """Replay ``original``: must the message stored at ``ts`` wait? Like nats-server, the
        gap to the previously delivered message's timestamp is waited out (when over 1 ms),
        then the message goes without a second check."""
        if self._replay_pass:
            return False
        delay = ts - self._lts
        if delay <= 1_000_000:
            return False
        if self._replay_timer is None:
            self._replay_timer = self.clock.call_later(delay / 1e9, self._replay_ready)
        return True

    def _replay_ready(self) -> None:
        self._replay_timer = None
        if self.closed:
            return
        self._replay_pass = True
        self._wake()

    def _replay_caught_up(self) -> None:
        """Replay ends for good once the consumer has passed the stream's last message."""
        if self._replay_timer is None and self.sseq > self.stream.store.last_seq:
            self._replay = False

    def _rate_ready(self) -> None:
        self._rl_timer = None
        if not self.closed:
            self._push()

    # ------------------------------------------------------------------ push: heartbeats, FC

    def _idle_heartbeat(self) -> None:
        """Every ``idle_heartbeat`` without a delivery: ``100 Idle Heartbeat`` with the last
        consumer and stream sequences, and ``Nats-Consumer-Stalled`` while an FC request is
        unanswered (only while the consumer is active)."""
        self._hb_timer = None
        if self.closed:
            return
        hb = self.config.idle_heartbeat / 1e9
        idle = self.clock.monotonic() - self._last_out
        if idle < hb - 1e-6:
            self._hb_timer = self.clock.call_later(hb - idle, self._idle_heartbeat)
            return
        if self.active:
            pairs = self._last_delivered_headers()
            if self.fcid:
                pairs.append(("Nats-Consumer-Stalled", self.fcid))
            self.server.publish(self._dsubj, None, _status(100, "Idle Heartbeat", pairs), b"")
        self._last_out = self.clock.monotonic()
        self._hb_timer = self.clock.call_later(hb, self._idle_heartbeat)

    def _send_flow_control(self) -> None:
        suffix = "".join(secrets.choice(_FC_ALPHABET) for _ in range(4))
        self.fcid = f"$JS.FC.{self.stream.name}.{self.name}.{suffix}"
        self.fcsz = self.pbytes
        self.server.publish(self._dsubj, self.fcid.encode(), _status(100, "FlowControl Request"),
                            b"")

    def _on_flow_control(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                         payload: bytes, origin: Any) -> None:
        """``processFlowControl``: only the latest request counts; it frees what it covered and
        doubles the window (up to 32 MiB)."""
        if self.closed or subject.decode("utf-8", "replace") != self.fcid:
            return
        if self.maxpb < MAX_FLOW_CONTROL:
            self.maxpb = min(self.maxpb * 2, MAX_FLOW_CONTROL)
        self.pbytes = max(0, self.pbytes - self.fcsz)
        self.fcid, self.fcsz = "", 0
        self._push()

    def _select_start(self) -> None:
        """The first stream sequence to consider (behavior §3.1; verified: ``all`` starts at
        the stream's first sequence even with a filter)."""
        cfg = self.config
        store = self.stream.store
        dp = cfg.deliver_policy
        last = store.last_seq
        first = store.first_seq if store.msgs else last + 1
        if dp == "all":
            seq = first
        elif dp == "last":
            if self.filters:
                seq = max((store.last_seq_for_subject(f) for f in self.filters), default=0)
                seq = seq or last + 1
            else:
                seq = last if store.msgs else last + 1
        elif dp == "new":
            seq = last + 1
        elif dp == "by_start_sequence":
            seq = max(cfg.opt_start_seq, first) if cfg.opt_start_seq < first else cfg.opt_start_seq
        elif dp == "by_start_time":
            seq = store.first_seq_at_or_after_time(int(cfg.opt_start_time or 0))
        elif dp == "last_per_subject":
            seqs = store.multi_last_seqs(self.filters or [">"]) if store.msgs else []
            self._lps = deque(seqs)
            self._lps_resume = last + 1
            seq = seqs[0] if seqs else last + 1
        else:
            seq = first
        self.sseq = max(seq, 1)
        self.asflr = self.sseq - 1

    # ------------------------------------------------------------------ counters

    def num_pending(self) -> int:
        """Matching messages at or after the delivery position not yet delivered."""
        if self._lps:
            store = self.stream.store
            return len(self._lps) + self._count_from(self._lps_resume, store)
        if not self._npc_valid:
            self._npc = self._count_from(self.sseq, self.stream.store)
            self._npc_valid = True
        return self._npc

    def _count_from(self, seq: int, store: Any) -> int:
        if not self.filters:
            return store.num_pending(seq)
        return sum(store.num_pending(seq, f) for f in self.filters)

    def num_redelivered(self) -> int:
        return sum(1 for dc in self.rdc.values() if dc > 1)

    def info(self, *, dynamic_metadata: bool = True) -> dict:
        # Like nats-server's processWaiting, reporting drops requests nobody listens to.
        if self.waiting:
            self._prune_waiting()
        return C.consumer_info_dict(
            stream_name=self.stream.name,
            name=self.name,
            created=self.created,
            config=self.config,
            delivered=C.sequence_info_dict(self.dseq - 1, self.sseq - 1, self.delivered_at),
            ack_floor=C.sequence_info_dict(self.adflr, self.asflr, self.acked_at),
            num_ack_pending=len(self.pending),
            num_redelivered=self.num_redelivered(),
            num_waiting=len(self.waiting),
            num_pending=self.num_pending(),
            ts=self.clock.time_ns(),
            push_bound=bool(self._dsubj) and self.active,
            pinned_client_id=self.pin_id,
            pinned_ts=self.pinned_ts,
            dynamic_metadata=dynamic_metadata,
        )

    # ------------------------------------------------------------------ pull requests

    def next_request(self, reply: bytes, payload: bytes) -> None:
        """``processNextMsgRequest``: reject, answer at once, or queue the request."""
        if self.closed:
            return
        cfg = self.config
        if cfg.deliver_subject:
            self._send(reply, _status(409, "Consumer is push based"))
            return
        self._last_request = self.clock.monotonic()
        try:
            batch, max_bytes, no_wait, expires, hb, pg = parse_next_request(payload)
        except ValueError as exc:
            self._send(reply, _status(400, f"Bad Request - {exc}"))
            return
        if cfg.max_batch > 0 and batch > cfg.max_batch:
            self._send(reply, _status(409, f"Exceeded MaxRequestBatch of {cfg.max_batch}"))
            return
        if expires > 0 and cfg.max_expires > 0 and expires > cfg.max_expires:
            self._send(reply, _status(409, "Exceeded MaxRequestExpires of "
                                      + J.go_duration(cfg.max_expires)))
            return
        if max_bytes > 0 and cfg.max_bytes > 0 and max_bytes > cfg.max_bytes:
            self._send(reply, _status(409, f"Exceeded MaxRequestMaxBytes of {cfg.max_bytes}"))
            return
        if pg is not None:
            problem = self._check_priority(pg)
            if problem:
                code, text = problem
                self._send(reply, _status(code, text))
                return
        if len(self.waiting) >= cfg.max_waiting:
            self._prune_waiting()
        if no_wait:
            available = self.num_pending() + len(self.rdq)
            if available == 0 and expires == 0:
                self._send(reply, _status(404, "No Messages"))
                return
            if available > 0:
                claimed = sum(max(wr.n, 1) for wr in self.waiting)
                if available < claimed:
                    self._send(reply, _status(408, "Requests Pending"))
                    return
        if len(self.waiting) >= cfg.max_waiting:
            if hb == 0:
                self._send(reply, _status(409, "Exceeded MaxWaiting"))
            return
        wr = PullRequest(reply, batch, max_bytes, no_wait, expires, hb, pg)
        if expires > 0:
            wr.timer = self.clock.call_later(expires / 1e9, self._expire_request, wr)
        if hb > 0:
            wr.hb_timer = self.clock.call_later(hb / 1e9, self._heartbeat, wr)
        if cfg.priority_policy == "prioritized":
            self._insert_by_priority(wr)
        else:
            self.waiting.append(wr)
        self._dispatch()

    def _check_priority(self, pg: PriorityGroup) -> tuple[int, str] | None:
        """``processNextMsgRequest``'s priority-group checks, in its order: fields another
        policy owns, the priority range, then (for a consumer with a policy) the group and,
        while a client is pinned, the pin id — a matching id restarts the pin's timer."""
        policy = self.config.priority_policy
        if (pg.min_pending or pg.min_ack_pending) and policy != "overflow":
            return 400, "Bad Request - Not a Overflow Priority consumer"
        if pg.id and policy != "pinned_client":
            return 400, "Bad Request - Not a Pinned Client Priority consumer"
        if not 0 <= pg.priority <= 9:
            return 400, "Bad Request - Priority must be between 0 and 9"
        if policy == "none":
            return None
        if not pg.group:
            return 400, "Bad Request - Priority Group missing"
        if pg.group not in (self.config.priority_groups or ()):
            return 400, "Bad Request - Invalid Priority Group"
        if self.pin_id:
            if pg.id == self.pin_id:
                self._set_pin_timer(pg.group)
            elif pg.id:
                return 423, "Nats-Pin-Id mismatch"
        return None

    def _insert_by_priority(self, wr: PullRequest) -> None:
        """``prioritized``: the queue stays ordered by priority (0 first), FIFO within one."""
        waiting = self.waiting
        prio = wr.priority
        i = len(waiting)
        while i > 0 and waiting[i - 1].priority > prio:
            i -= 1
        waiting.insert(i, wr)

    def _prune_waiting(self) -> None:
        """Drop requests nobody listens to any more (their reply subject lost interest)."""
        has_interest = self.server.has_interest
        keep: deque[PullRequest] = deque()
        for wr in self.waiting:
            if has_interest(wr.reply):
                keep.append(wr)
            else:
                wr.cancel()
        self.waiting = keep

    def _last_delivered_headers(self) -> list[tuple[str, str]]:
        """What idle heartbeats (push and pull) say about the last delivery."""
        return [("Nats-Last-Consumer", str(self.dseq - 1)), ("Nats-Last-Stream", str(self.sseq - 1))]

    def _expire_request(self, wr: PullRequest) -> None:
        wr.timer = None
        try:
            self.waiting.remove(wr)
        except ValueError:
            return
        wr.cancel()
        self._send(wr.reply, _status(408, "Request Timeout", wr.pending_headers()))

    def _heartbeat(self, wr: PullRequest) -> None:
        wr.hb_timer = None
        if self.closed or wr not in self.waiting:
            return
        self._send(wr.reply, _status(100, "Idle Heartbeat", self._last_delivered_headers()))
        wr.hb_timer = self.clock.call_later(wr.hb / 1e9, self._heartbeat, wr)

    def _finish(self, wr: PullRequest) -> None:
        """Remove the head request ``wr`` (it got its batch or ended)."""
        self.waiting.popleft()
        wr.cancel()

    def _dispatch(self) -> None:
        """Hand available messages to waiting requests, head first, round-robin (priority
        order for ``prioritized``; the pinned client only for ``pinned_client``)."""
        if self.is_paused():
            return
        has_interest = self.server.has_interest
        waiting = self.waiting
        policy = self.config.priority_policy
        plain = policy == "none"
        pinned = policy == "pinned_client"
        prioritized = policy == "prioritized"
        while waiting and not self.closed:
            wr = waiting[0]
            if not has_interest(wr.reply):
                self._finish(wr)
                continue
            nxt = self._peek()
            if nxt is None:
                break
            sm, dc = nxt
            subject = sm.subject.encode()
            hdr, data = self._payload(sm)
            size = 0
            if plain:
                # The head request takes it (its interest was just checked), budget allowing.
                if wr.b > 0:
                    ack = self._ack_subject(dc, sm, self.dseq, self._pending_after(dc))
                    size = len(subject) + len(ack) + (len(hdr) if hdr else 0) + len(data)
                    if size > wr.b:
                        self._end_head(wr, 409, "Message Size Exceeds MaxBytes")
                        continue
            else:
                chosen = self._next_waiting(sm, dc, subject, hdr, data)
                if chosen is None:
                    break
                wr, size = chosen
            if self._replay and self._lts and self._replay_wait(sm.ts):
                break
            if wr.b > 0:
                wr.b -= size
                if wr.b == 0:
                    wr.n = 1  # the budget is spent: this delivery ends the request
            if pinned:
                hdr = H.append(hdr, [("Nats-Pin-Id", self.pin_id)])
            self._deliver(wr.reply, subject, hdr, data, sm, dc)
            wr.n -= 1
            wr.delivered += 1
            if wr.hb_timer is not None:
                wr.hb_timer.cancel()
                wr.hb_timer = self.clock.call_later(wr.hb / 1e9, self._heartbeat, wr)
            if wr.n > 0:
                if prioritized and len(waiting) > 1:
                    waiting.popleft()
                    self._insert_by_priority(wr)
                else:
                    waiting.rotate(-1)
            else:
                self._finish(wr)
                if wr.b > 0:
                    self._send(wr.reply, _status(409, "Batch Completed", wr.pending_headers()))
        if self._replay:
            self._replay_caught_up()
        if waiting and not self.closed and not self.rdq and self.num_pending() == 0:
            # Nothing left in the stream: no-wait requests end now (404 when they got
            # something or cannot wait; with expires and nothing delivered they keep waiting).
            keep: deque[PullRequest] = deque()
            for wr in waiting:
                if wr.no_wait and (wr.delivered > 0 or wr.expires == 0):
                    wr.cancel()
                    self._send(wr.reply, _status(404, "No Messages"))
                else:
                    keep.append(wr)
            self.waiting = keep

    def _pending_after(self, dc: int) -> int:
        n = self.num_pending()
        return n if dc > 1 or n == 0 else n - 1

    def _next_waiting(self, sm: StoredMessage, dc: int, subject: bytes, hdr: bytes | None,
                      data: bytes) -> tuple[PullRequest, int] | None:
        """``nextWaiting``: the request that gets this message (moved to the head of the queue)
        and the message's size against its byte budget, or None when no waiting request may
        take it now.

        In nats-server's order: with ``pinned_client`` and nobody pinned, the head request
        without a pin id is pinned (one carrying a stale id gets ``423 Nats-Wrong-Pin-Id``);
        while a client is pinned, requests without an id stand by (cycled to the tail) and
        ones with another id get the 423. With ``overflow``, a request with ``min_pending`` /
        ``min_ack_pending`` stands by until either threshold is reached. A message larger than
        the remaining budget ends the request with ``409 Message Size Exceeds MaxBytes``.
        Requests nobody listens to any more are dropped."""
        waiting = self.waiting
        policy = self.config.priority_policy
        need_pin = policy == "pinned_client" and not self.pin_id
        has_interest = self.server.has_interest
        size = -1
        cycled = 0
        while waiting:
            wr = waiting[0]
            pg = wr.pg
            assigned = False
            if need_pin:
                if pg is None or not pg.id:
                    assigned = self._assign_pin(wr)
                else:
                    self._end_head(wr, 423, "Nats-Wrong-Pin-Id")
                    continue
            elif self.pin_id and not (pg is not None and pg.id == self.pin_id):
                if pg is not None and pg.id:
                    self._end_head(wr, 423, "Nats-Wrong-Pin-Id")
                    continue
                waiting.rotate(-1)  # standby while another client is pinned
                cycled += 1
                if cycled >= len(waiting):
                    return None
                continue
            if (policy == "overflow" and pg is not None
                    and (pg.min_pending > 0 or pg.min_ack_pending > 0)):
                # nats-server compares with its pending count before a *new* message is taken.
                npc = self.num_pending() + (1 if dc > 1 else 0)
                if not ((0 < pg.min_pending <= npc)
                        or (0 < pg.min_ack_pending <= len(self.pending))):
                    waiting.rotate(-1)
                    cycled += 1
                    if cycled >= len(waiting):
                        return None
                    continue
            if wr.b > 0:
                if size < 0:
                    ack = self._ack_subject(dc, sm, self.dseq, self._pending_after(dc))
                    size = len(subject) + len(ack) + (len(hdr) if hdr else 0) + len(data)
                if size > wr.b:
                    self._end_head(wr, 409, "Message Size Exceeds MaxBytes")
                    if assigned:
                        self._unassign_pin()
                    continue
            if has_interest(wr.reply):
                return wr, max(size, 0)
            self._finish(wr)
        return None

    def _end_head(self, wr: PullRequest, code: int, text: str) -> None:
        """End the head request with a status carrying what it still wanted."""
        self._finish(wr)
        self._send(wr.reply, _status(code, text, wr.pending_headers()))

    # ------------------------------------------------------------------ choosing and delivering

    def _peek(self) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, without committing to it."""
        store = self.stream.store
        cfg = self.config
        while self.rdq:
            seq = self.rdq[0]
            sm = store.load(seq) if seq in self.pending else None
            dc = self.rdc.get(seq, 1) + 1
            if sm is None or (cfg.max_deliver > 0 and dc > cfg.max_deliver):
                self.rdq.pop(0)
                if seq in self.pending:
                    self._drop_pending(seq)
                    if sm is not None:
                        self._advise_max_deliveries(seq, dc - 1)
                continue
            return sm, dc
        if cfg.ack_policy != "none" and 0 < cfg.max_ack_pending <= len(self.pending):
            return None
        if self._lps:
            while self._lps:
                sm = store.load(self._lps[0])
                if sm is not None:
                    return sm, 1
                self._lps.popleft()
            self.sseq = max(self.sseq, self._lps_resume)
            self._npc_valid = False
        # _next_new(store), its one-filter and no-filter cases inlined
        filters = self.filters
        if not filters:
            sm = store.load_next(self.sseq)
        elif len(filters) == 1:
            sm = store.load_next(self.sseq, filters[0])
        else:
            return self._next_new(store)
        return None if sm is None else (sm, 1)

    def _next_new(self, store: Any) -> tuple[StoredMessage, int] | None:
        if not self.filters:
            sm = store.load_next(self.sseq)
        elif len(self.filters) == 1:
            sm = store.load_next(self.sseq, self.filters[0])
        else:
            seqs = [q for q in (store.next_seq(self.sseq, f) for f in self.filters) if q]
            sm = store.load(min(seqs)) if seqs else None
        if sm is None:
            return None
        return sm, 1

    def _ack_subject(self, dc: int, sm: StoredMessage, dseq: int, pending: int) -> bytes:
        return f"{self._ack_prefix}{dc}.{sm.seq}.{dseq}.{sm.ts}.{pending}".encode()

    def _deliver(self, reply: bytes, subject: bytes, hdr: bytes | None, data: bytes,
                 sm: StoredMessage, dc: int) -> None:
        """Commit the delivery of ``sm`` (position, pending, counters) and send it."""
        now = self.clock.time_ns()
        seq = sm.seq
        dseq = self.dseq
        self.dseq = dseq + 1
        self._lts = sm.ts
        self._replay_pass = False
        if dc > 1:
            self.rdq.pop(0)
        elif self._lps and self._lps[0] == seq:
            self._lps.popleft()
            if not self._lps:
                self.sseq = max(seq + 1, self._lps_resume)
                self._npc_valid = False
            else:
                self.sseq = self._lps[0]
        else:
            self.sseq = seq + 1
            if self._npc_valid and self._npc > 0:
                self._npc -= 1
        # num_pending() without the call in the common case (a valid count, no lps list).
        pending = self._npc if self._npc_valid and not self._lps else self.num_pending()
        self.delivered_at = now
        cfg = self.config
        policy = cfg.ack_policy
        if policy == "none":
            self.adflr, self.asflr = dseq, seq
        else:
            # [consumer seq, ack deadline (0 while queued for redelivery), timestamp]: the
            # timestamp is nats-server's Pending.Timestamp (delivery, WPI or NAK-delay time).
            # A redelivery keeps the original consumer sequence (nats-server trackPending):
            # the ack floor moves by it.
            backoff = cfg.backoff
            if backoff:  # _ack_wait(dc), inlined
                deadline = now + backoff[min(dc - 1, len(backoff) - 1)]
            else:
                deadline = now + (cfg.ack_wait or C.DEFAULT_ACK_WAIT)
            if dc > 1:
                p = self.pending.get(seq)
                if p is not None:
                    p[1] = deadline
                    p[2] = now
                else:
                    self.pending[seq] = [dseq, deadline, now]
                self.rdc[seq] = dc
            else:
                self.pending[seq] = [dseq, deadline, now]
                # A first delivery counts 1, which is what rdc.get(seq, 1) answers: no entry.
                if self.rdc:
                    self.rdc.pop(seq, None)
            if self._ack_timer is None or self._ack_timer_at > deadline:
                self._arm_ack_timer(deadline)
        if self._persist and not self._save_scheduled:
            self._schedule_save()
        # _ack_subject(dc, sm, dseq, pending), inlined
        ack = f"{self._ack_prefix}{dc}.{seq}.{dseq}.{sm.ts}.{pending}".encode()
        self.server.deliver_as(reply, subject, ack, hdr, data)
        if policy == "none" and self.stream.config.retention != "limits":
            self._maybe_remove(seq, sm.subject)

    def _ack_wait(self, dc: int) -> int:
        backoff = self.config.backoff
        if backoff:
            return backoff[min(dc - 1, len(backoff) - 1)]
        return self.config.ack_wait or C.DEFAULT_ACK_WAIT

    def _send(self, reply: bytes, hdr: bytes) -> None:
        self.server.publish(reply, None, hdr, b"")

    # ------------------------------------------------------------------ ack wait / redelivery

    def _arm_ack_timer(self, deadline: int = 0) -> None:
        """Make sure a timer fires at the earliest ack deadline. ``deadline``: the one deadline
        that just changed (a delivery), so an armed timer due no later needs no scan."""
        if not self.pending:
            return
        if deadline and self._ack_timer is not None and self._ack_timer_at <= deadline:
            return
        due = [p[1] for s, p in self.pending.items() if p[1] > 0]
        if not due:
            return
        when = min(due)
        if self._ack_timer is not None:
            if self._ack_timer_at <= when:
                return
            self._ack_timer.cancel()
        delay = max(0.0, (when - self.clock.time_ns()) / 1e9) + 0.001
        self._ack_timer_at = when
        self._ack_timer = self.clock.call_later(delay, self._check_pending)

    def _check_pending(self) -> None:
        """Ack waits ran out: queue those messages for redelivery (or give up at max_deliver)."""
        self._ack_timer = None
        if self.closed:
            return
        now = self.clock.time_ns()
        max_deliver = self.config.max_deliver
        expired = sorted(s for s, p in self.pending.items() if 0 < p[1] <= now)
        for seq in expired:
            p = self.pending[seq]
            p[1] = 0  # no deadline while queued for redelivery
            if max_deliver > 0 and self.rdc.get(seq, 1) >= max_deliver:
                self._drop_pending(seq)
                self._advise_max_deliveries(seq, self.rdc.get(seq, 1))
                continue
            self._queue_redelivery(seq)
        self._arm_ack_timer()
        if self.rdq:
            self._wake()

    def _queue_redelivery(self, seq: int) -> None:
        if seq not in self.rdq:
            bisect.insort(self.rdq, seq)

    def _drop_pending(self, seq: int) -> None:
        """Forget an unacked message that will never be delivered again."""
        p = self.pending.pop(seq, None)
        if p is not None:
            self._advance_floor(p[0], seq)
            self._changed()

    def _advise(self, what: str, event_type: str, fields: dict) -> None:
        """``$JS.EVENT.ADVISORY.CONSUMER.<what>.<stream>.<consumer>`` (sent only when
        someone listens)."""
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.CONSUMER.{what}.{self.stream.name}.{self.name}",
            event_type, fields)

    def _advise_terminated(self, sseq: int, dseq: int, dc: int, reason: bytes) -> None:
        """``MSG_TERMINATED``: nats-server sends it for every +TERM, pending or not."""
        fields: dict[str, Any] = {"stream": self.stream.name, "consumer": self.name,
                                  "consumer_seq": dseq, "stream_seq": sseq, "deliveries": dc}
        if reason:
            fields["reason"] = reason.decode("utf-8", "replace")
        self._advise("MSG_TERMINATED", "advisory.v1.terminated", fields)

    def _sample_ack(self, sseq: int, dseq: int, dc: int, ts: int) -> None:
        """``sample_freq``: an ack metric for this ack with probability N/100 (as nats-server
        draws it: ``rand(100) <= N``), only when someone subscribes."""
        freq = self._sfreq
        if freq < 100 and random.randrange(100) > freq:
            return
        now = self.clock.time_ns()
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.METRIC.CONSUMER.ACK.{self.stream.name}.{self.name}",
            "metric.v1.consumer_ack",
            {"stream": self.stream.name, "consumer": self.name, "consumer_seq": dseq,
             "stream_seq": sseq, "ack_time": now - ts, "deliveries": dc})

    def _advise_max_deliveries(self, seq: int, deliveries: int) -> None:
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{self.stream.name}.{self.name}",
            "advisory.v1.max_deliver",
            {"stream": self.stream.name, "consumer": self.name, "stream_seq": seq,
             "deliveries": deliveries})

    # ------------------------------------------------------------------ acks

    def _on_ack(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                payload: bytes, origin: Any) -> None:
        toks = subject.split(b".")
        n = len(toks)
        try:
            if n == 9:
                dc, sseq, dseq = int(toks[4]), int(toks[5]), int(toks[6])
            elif n >= 11:
                dc, sseq, dseq = int(toks[6]), int(toks[7]), int(toks[8])
            else:
                return
        except ValueError:
            return
        self._last_request = self.clock.monotonic()
        if not payload:  # nats-py's msg.ack(): an empty body
            self._ack(sseq, dseq, dc)
            if reply:
                self.server.publish(reply, None, None, b"")
            return
        body = payload.strip()
        nxt: bytes | None = None
        if body in (b"", b"+ACK", b"+OK") or body.startswith(b"+ACK "):
            self._ack(sseq, dseq, dc)
        elif body.startswith(b"-NAK"):
            self._nak(sseq, body[4:].strip(), dseq, dc)
        elif body.startswith(b"+WPI"):
            self._progress(sseq)
        elif body.startswith(b"+TERM"):
            self._ack(sseq, dseq)
            self._advise_terminated(sseq, dseq, dc, body[5:].strip())
        elif body.startswith(b"+NXT"):
            self._ack(sseq, dseq, dc)
            nxt = body[4:].strip()
        if nxt is not None and reply:
            self.next_request(reply, nxt)
        elif reply:
            self.server.publish(reply, None, None, b"")

    def _ack(self, sseq: int, dseq: int, sample_dc: int = 0) -> None:
        """Apply an ack; ``sample_dc`` (the delivery count of the ack subject) asks for an
        ack metric sample (plain acks and +NXT on explicit-ack consumers, not +TERM)."""
        policy = self.config.ack_policy
        if policy == "all":
            done = sorted(s for s in self.pending if s <= sseq)
            if not done:
                return
            for s in done:
                self.pending.pop(s)
                self.rdc.pop(s, None)
            self.rdq = [s for s in self.rdq if s > sseq]
            self.acked_at = self.clock.time_ns()
            if not self.pending:
                self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            elif dseq > self.adflr:
                self.adflr, self.asflr = dseq, sseq
            self._changed()
            self._after_acks(done)
            return
        pending = self.pending
        p = pending.pop(sseq, None)
        if p is None:
            return
        if sample_dc and self._sfreq > 0:
            self._sample_ack(sseq, dseq, sample_dc, p[2])
        if self.rdc:
            self.rdc.pop(sseq, None)
        if self.rdq and sseq in self.rdq:
            self.rdq.remove(sseq)
        self.acked_at = self.clock.time_ns()
        # _advance_floor(p[0], sseq), with its most common case inlined: in-order acks, the
        # acked delivery right above the floor and the next sequence still pending.
        if pending and p[0] == self.adflr + 1 and (nxt := pending.get(sseq + 1)) is not None:
            self.adflr, self.asflr = nxt[0] - 1, sseq
        else:
            self._advance_floor(p[0], sseq)
        if self._persist and not self._save_scheduled:  # _changed()
            self._schedule_save()
        if self.stream.config.retention == "limits":  # _after_acks() has nothing to remove
            self._wake()
        else:
            self._after_acks((sseq,))

    def _advance_floor(self, dseq: int, sseq: int) -> None:
        """nats-server's floor rule: everything acked → floor at the delivery position; else
        move only when the acked delivery is the one right after the floor."""
        pending = self.pending
        if not pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        elif dseq == self.adflr + 1:
            # The oldest still-pending message above the acked one: in the common in-order
            # case the very next sequence, found without a scan.
            p = pending.get(sseq + 1)
            if p is not None:
                self.adflr, self.asflr = p[0] - 1, sseq
                return
            self.adflr, self.asflr = dseq, sseq
            # Else scan (dicts keep delivery order: usually the first keys answer).
            nxt = 0
            for s in pending:
                if s > sseq and (nxt == 0 or s < nxt):
                    nxt = s
                    if s == sseq + 1:
                        break
            if nxt:
                self.adflr, self.asflr = self.pending[nxt][0] - 1, nxt - 1

    def _after_acks(self, seqs: list[int] | tuple[int, ...]) -> None:
        """Retention: work queues drop acked messages; interest streams drop those no consumer
        still needs. Then freed ack-pending room may let deliveries resume."""
        retention = self.stream.config.retention
        if retention != "limits":
            store = self.stream.store
            for seq in seqs:
                subject = store.subject_for_seq(seq)
                if subject is not None:
                    self._maybe_remove(seq, subject)
        self._wake()

    def _maybe_remove(self, seq: int, subject: str) -> None:
        stream = self.stream
        if stream.config.retention == "interest":
            for other in stream.consumers.values():
                if other is not self and other.needs(seq, subject):
                    return
        stream.remove_msg(seq, False)

    def needs(self, seq: int, subject: str) -> bool:
        """Does this consumer still have to deliver or see an ack for ``seq``?"""
        if not self.matches(subject):
            return False
        return seq >= self.sseq or seq in self.pending or seq in self._lps

    def _nak(self, sseq: int, arg: bytes, dseq: int = 0, dc: int = 0) -> None:
        p = self.pending.get(sseq)
        if p is None:
            return
        if dseq:
            if dseq <= self.adflr or dseq > self.dseq:
                return  # out of range (nats-server processNak)
            self._advise("MSG_NAKED", "advisory.v1.nak", {
                "stream": self.stream.name, "consumer": self.name, "consumer_seq": dseq,
                "stream_seq": sseq, "deliveries": dc})
        delay = 0
        if arg:
            if arg[:1] == b"{":
                try:
                    delay = int(J.parse_json(arg).get("delay", 0) or 0)
                except Exception:
                    delay = 0
            else:
                from minijs.jetstream.stream import parse_go_duration

                delay = parse_go_duration(arg.decode("utf-8", "replace")) or 0
        if delay > 0:
            p[1] = self.clock.time_ns() + delay
            p[2] = p[1] - self._ack_wait(self.rdc.get(sseq, 1))
            self._changed()
            if sseq in self.rdq:
                self.rdq.remove(sseq)
            self._arm_ack_timer()
            return
        p[1] = 0
        self._queue_redelivery(sseq)
        self._wake()

    def _progress(self, sseq: int) -> None:
        p = self.pending.get(sseq)
        if p is None or sseq in self.rdq:
            return
        p[2] = self.clock.time_ns()
        p[1] = p[2] + self._ack_wait(self.rdc.get(sseq, 1))
        self._changed()
        if self._ack_timer is not None and self._ack_timer_at < p[1]:
            return
        self._arm_ack_timer()

    # ------------------------------------------------------------------ unpin / reset

    def unpin(self, group: str) -> None:
        """``CONSUMER.UNPIN``: drop the pin (if any) and announce the group unpinned by an
        administrator; the next delivery pins a new client."""
        self._unassign_pin()
        self._advise_unpinned(group, "admin")
        self._wake()

    def _assign_pin(self, wr: PullRequest) -> bool:
        """Pin the client behind ``wr`` (a request naming a group): a new NUID, its time, the
        ``priority_timeout`` timer and the PINNED advisory. The request now carries the id."""
        pg = wr.pg
        if pg is None or not pg.group:
            return False

        self.pin_id = new_id()
        self.pinned_ts = self.clock.time_ns()
        pg.id = self.pin_id
        self._set_pin_timer(pg.group)
        self._advise("PINNED", "advisory.v1.consumer_group_pinned", {
            "account": "$G", "stream": self.stream.name, "consumer": self.name,
            "group": pg.group, "pinned_id": self.pin_id})
        return True

    def _unassign_pin(self) -> None:
        self.pin_id = ""
        self.pinned_ts = 0
        if self._pin_timer is not None:
            self._pin_timer.cancel()
            self._pin_timer = None

    def _set_pin_timer(self, group: str) -> None:
        """(Re)start the pin's ``priority_timeout``: the pinned client keeps its pin while it
        sends requests with its id at least that often."""
        if self._pin_timer is not None:
            self._pin_timer.cancel()
        self._pin_timer = self.clock.call_later(self.config.priority_timeout / 1e9,
                                                self._pin_expired, group)

    def _pin_expired(self, group: str) -> None:
        self._pin_timer = None
        if self.closed or not self.pin_id:
            return
        self._unassign_pin()
        self._advise_unpinned(group, "timeout")
        self._wake()

    def _advise_unpinned(self, group: str, reason: str) -> None:
        self._advise("UNPINNED", "advisory.v1.consumer_group_unpinned", {
            "account": "$G", "stream": self.stream.name, "consumer": self.name,
            "group": group, "reason": reason})

    def reset(self, seq: int) -> int:
        """``CONSUMER.RESET``: forget deliveries and acks and continue from stream sequence
        ``seq`` (0 = right after the ack floor). A non-zero ``seq`` is allowed for deliver
        policy ``all`` and, from their own start on, ``by_start_sequence``/``by_start_time``;
        else 400/10204. Returns the sequence the consumer now starts from."""
        from minijs.jetstream import errors as E

        cfg = self.config
        if seq == 0:
            seq = self.asflr + 1
        elif cfg.deliver_policy == "by_start_sequence":
            if seq < cfg.opt_start_seq:
                raise E.consumer_invalid_reset("below start seq")
        elif cfg.deliver_policy == "by_start_time":
            start = self.stream.store.first_seq_at_or_after_time(int(cfg.opt_start_time or 0))
            if seq < start:
                raise E.consumer_invalid_reset("below start time")
        elif cfg.deliver_policy != "all":
            raise E.consumer_invalid_reset("not allowed")
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        self.pending = {}
        self.rdc = {}
        self.rdq = []
        self._lps = deque()
        self.sseq, self.dseq = seq, 1
        self.adflr, self.asflr = 0, seq - 1
        self.delivered_at = self.acked_at = None
        self._npc_valid = False
        self._lts = 0
        self._changed()
        # Deliver from the next loop turn: the reply reports the state right after the reset.
        asyncio.get_running_loop().call_soon(self._wake)
        return seq

    # ------------------------------------------------------------------ durable state

    def _changed(self) -> None:
        """The persisted part of the state changed: write it at the end of this turn."""
        if self._persist and not self._save_scheduled:
            self._schedule_save()

    def _schedule_save(self) -> None:
        self._save_scheduled = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (direct use in a test): write at once
            self._save_soon()
            return
        loop.call_soon(self._save_soon)

    def _save_soon(self) -> None:
        self._save_scheduled = False
        if self.closed or not self._persist:
            return
        stream = self.stream
        if stream.closed or stream.store.closed:
            return
        self._write_state()
        stream.engine.mark_dirty(stream)

    def _write_state(self) -> None:
        """Buffer the state document in the store metadata (committed by the next flush)."""
        if not self._cfg_json:
            self._cfg_json = json.dumps(dataclasses.asdict(self.config), separators=(",", ":"))
        # The same JSON as json.dumps of {"dseq", "sseq", "adflr", "asflr", "pending": [[seq,
        # dseq, ts], ...], "rdc": [[seq, count], ...]}, written by hand:
        # this runs once per event-loop turn with deliveries or acks, and every value is an int.
        pending = ",".join([f"[{s},{p[0]},{p[2]}]" for s, p in self.pending.items()])
        rdc = ",".join([f"[{s},{dc}]" for s, dc in self.rdc.items() if dc > 1])
        state = (f'{{"dseq":{self.dseq},"sseq":{self.sseq},"adflr":{self.adflr},'
                 f'"asflr":{self.asflr},"pending":[{pending}],"rdc":[{rdc}]')
        doc = (f'{{"v":{_STATE_VERSION},"name":{json.dumps(self.name)},"created":{self.created},'
               f'"config":{self._cfg_json},"state":{state}}}}}')
        self.stream.store.put_meta(STATE_PREFIX + self.name, doc.encode())

    def _drop_state(self) -> None:
        stream = self.stream
        store = stream.store
        if store.closed:
            return
        store.delete_meta(STATE_PREFIX + self.name)
        stream.engine.mark_dirty(stream)

    @classmethod
    def restore(cls, stream: "Stream", doc: dict) -> "Consumer":
        """A consumer from its persisted document (not started). As in nats-server, an
        auto-named ephemeral now shows its name in the config, pending timestamps are whole
        seconds and nothing is queued for redelivery until the first ack-wait check."""
        name = doc["name"]
        cfg = C.consumer_config_from_dict(doc["config"])
        if not cfg.name:
            cfg.name = name
        consumer = cls(stream, name, cfg, created=int(doc["created"]))
        consumer._restored = True
        st = doc["state"]
        consumer.dseq, consumer.sseq = int(st["dseq"]), int(st["sseq"])
        consumer.adflr, consumer.asflr = int(st["adflr"]), int(st["asflr"])
        # nats-server keeps no last-per-subject start list: delivery resumes as for a plain
        # consumer from the position, and pending is counted once as the subjects whose last
        # message is still ahead (calculateNumPending), then kept up by deliveries and stores.
        consumer._lps = deque()
        rdc = {int(s): int(dc) for s, dc in st.get("rdc", ())}
        last = stream.store.last_seq
        rdc = {s: dc for s, dc in rdc.items() if consumer.asflr <= s <= last}
        pending: dict[int, list[int]] = {}
        for s, dseq, ts in st.get("pending", ()):
            ts = (int(ts) // _SECOND) * _SECOND
            dc = rdc.get(s, 1)
            pending[int(s)] = [int(dseq), ts + consumer._ack_wait(dc), ts]
            rdc.setdefault(int(s), 1)
        consumer.pending = pending
        consumer.rdc = rdc
        consumer._npc_valid = False
        if cfg.deliver_policy == "last_per_subject" and stream.store.msgs:
            lasts = stream.store.multi_last_seqs(consumer.filters or [">"])
            consumer._npc = sum(1 for q in lasts if q >= consumer.sseq)
            consumer._npc_valid = True
        if pending and cfg.ack_policy != "none":
            # nats-server checks restored pending acks after 0.5–1.5 s (or one ack wait).
            delay = 0.5 + random.randrange(1000) / 1000
            aw = consumer.config.ack_wait or C.DEFAULT_ACK_WAIT
            if aw / 1e9 < delay:
                delay = aw / 1e9 + 0.001
            consumer._ack_timer_at = consumer.clock.time_ns() + int(delay * 1e9)
            consumer._ack_timer = consumer.clock.call_later(delay, consumer._check_pending)
        return consumer


def recover_consumers(stream: "Stream") -> int:
    """Bring back the persisted consumers of a recovered file stream and start them; returns
    how many. A document that cannot be read is logged and skipped."""
    log = stream.engine.log
    found = stream.store.iter_meta(STATE_PREFIX)
    if not found:
        return 0
    log.info(f"  Recovering {len(found)} consumers for stream - '$G > {stream.name}'")
    restored: list[Consumer] = []
    for key, raw in found:
        try:
            consumer = Consumer.restore(stream, json.loads(raw))
        except Exception as exc:
            log.error(f"  Error recovering consumer {key[len(STATE_PREFIX):]!r} "
                      f"of stream '{stream.name}': {exc!r}")
            continue
        stream.consumers[consumer.name] = consumer
        restored.append(consumer)
    for consumer in restored:
        consumer.start()
    return len(restored)
