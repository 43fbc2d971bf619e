"""A consumer: a view of one stream with its own delivery position, pending acks and waiting
pull requests (reference ``jetstream-behavior.md`` §3, §5; ``jetstream-api.md`` §10).

A consumer lives inside its stream (``stream.consumers[name]``) and is driven by:

* the engine's hooks (:meth:`signal` on every stored message it takes, or for an unfiltered
  consumer :meth:`wake_new` while it may deliver; :meth:`on_removed`,
  :meth:`on_purged`, :meth:`delete`);
* ``CONSUMER.MSG.NEXT`` requests (:meth:`next_request`), queued FIFO and served round-robin;
* acks on its own internal subscription ``$JS.ACK.<stream>.<consumer>.>`` — nats-server only
  subscribes when the ack policy is not ``none``, so an ack with a reply on an ack-none
  consumer gets the core 503, and so does it here;
* timers on the server clock: one ack-wait timer for the earliest pending deadline, one expiry
  timer per pull request with ``expires``.

State mirrors nats-server's: ``sseq`` is the next stream sequence to consider, ``dseq`` the next
consumer (delivery) sequence, ``pending`` maps stream seq → ``[consumer seq, deadline ns,
timestamp ns]`` for delivered, unacked messages, ``rdc`` the delivery count of redelivered
ones, ``rdq`` the stream sequences due for redelivery (served before new messages, in the order
they became due), ``adflr``/``asflr`` the ack floor (``_sflr`` the reported one while it
differs, see :mod:`acks`).

:class:`Consumer` is that one state with one mixin per concern working on it through ``self``
(so the delivery and ack paths pay no indirection): :class:`PullDelivery` (pull requests and
their queue), :class:`PushDelivery` (the deliver subject, flow control, idle heartbeats, the
rate limit), :class:`AckTracking` (acks, ack wait, redelivery, the ack floor, retention after
acks), :class:`PriorityGroups` (priority policies and the pinned client) and
:class:`DurableState` (the persisted document, restore, recovery). The class itself owns the
lifecycle (start, config updates, pause, stop, delete, inactivity), the start position, the
choice of the next message and the commit of its delivery.

Invariants of the position and delivery:

* The next message is, in this order: the first one due for redelivery (one delivered
  ``max_deliver`` times is given up here instead); nothing new while
  ``max_ack_pending`` messages await acks; the next of a ``last_per_subject`` start list; the
  next message matching the filters at or after ``sseq``. ``sseq`` never moves back except by
  ``CONSUMER.RESET``.
* Every delivery, a redelivery too, takes the next consumer sequence (``dseq``) and carries the
  ack subject ``$JS.ACK.<stream>.<consumer>.<count>.<stream seq>.<consumer seq>.<ts>.<pending>``
  (``pending``: matching messages still to deliver after this one). Under ack policy ``none`` a
  delivery is its own ack (the ack floor follows it) and, on a work-queue or interest stream,
  removes the message.
* ``num_pending`` (matching messages not yet delivered) is a running count while valid; a
  removal (the stream's ``rm_epoch`` moves), purge or config change makes it recount on the
  next ask (a message stored before the recount, ``_npf``, is not counted twice when its
  signal comes). A filtered consumer counts each message as the stream signals it; an
  unfiltered one takes every message, so it is not signalled one by one: it adds what the
  stream announced since it last looked (``sig_n``/``sig_last``) when asked or before its
  position moves (:meth:`_np_sync`), with the same result. It is woken by new messages only
  while it may deliver (the stream's ``wakeable``: a pull consumer with waiting requests, a
  push consumer with interest), so idle unfiltered consumers cost nothing per message; nor
  are consumers without pending acks or delivery counts visited when a message is removed
  (the stream's ``holders``).
* Messages leaving the stream (nats-server ``decStreamPending`` and ``purgeLocked``): one
  removed by itself (a limit, expiry, ``MSG.DELETE``, retention) while awaiting an ack is
  acked as a ``+TERM`` with its advisory; a purge — the API's, a rollup (a purge of its
  subject or of everything, keeping the rollup message), a subject delete marker (a rollup of
  its subject) — moves the consumers whose filter is the purged subject or inside it past
  it, those with a wider filter (or none) to the stream's new first message, and drops the
  pending acks left behind without advisories.
* Replay ``original`` (push and pull alike): the gap between stored timestamps of consecutive
  deliveries (when over 1 ms) is waited out, until the consumer has passed the stream's last
  message.
* ``pause_until`` stops deliveries until the deadline (behavior §8); a push consumer is removed
  after ``inactive_threshold`` without interest, a pull consumer after that long without
  requests (and no ack still expected). Everything that waits runs on the server clock.

Consumers of file streams (unless ``mem_storage``) keep their config and delivery state across
restarts (behavior §4), as :class:`DurableState` describes.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any

from minijs.jetstream.config import consumer as C
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.consumers.acks import AckTracking
from minijs.jetstream.consumers.state import STATE_PREFIX, DurableState
from minijs.jetstream.consumers.priority import PriorityGroups
from minijs.jetstream.consumers.pull import (NEXT_REQUEST, NextRequest, PriorityGroup, PullDelivery,
                                   PullRequest, _status, parse_next_request)
from minijs.jetstream.consumers.push import MAX_FLOW_CONTROL, PushDelivery
from minijs.core.subjects import is_subset
from minijs.jetstream.store.base import StoredMessage, subject_matches

if TYPE_CHECKING:
    from minijs.jetstream.streams.stream import Stream

#: What other modules import from here.
__all__ = ["Consumer", "recover_consumers", "parse_next_request", "NextRequest", "PullRequest",
           "PriorityGroup", "NEXT_REQUEST", "STATE_PREFIX", "MAX_FLOW_CONTROL"]


class Consumer(PullDelivery, PushDelivery, AckTracking, PriorityGroups, DurableState):
    """One consumer of a stream: pull (``MSG.NEXT`` requests) or push (``deliver_subject``)."""

    def __init__(self, stream: "Stream", name: str, config: C.ConsumerConfig,
                 created: int | None = None) -> None:
        self.stream = stream
        self.server = stream.bus
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
        self._sflr: list[int] | None = None  # the store's ack floor while it differs
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
        self._npf = 0  # the stream's last sequence when _npc was counted
        # Unfiltered consumers (_lazy) add the stream's announced messages to _npc when asked
        # (_np_sync): _npa is a sequence every later announced one is above, _npa_n and
        # _npa_ep the stream's sig_n and sig_epoch when _npa was taken.
        self._lazy = False
        self._np_rm = 0  # the stream's rm_epoch when _npc was counted
        self._holding = False  # in the stream's holders
        self._npa = 0
        self._npa_n = 0
        self._npa_ep = 0
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
        # (a replicated stream's consumers always keep their state in its store's metadata,
        # which is what its other replicas resume from)
        self._persist = (stream.config.storage == "file" and not config.mem_storage) \
            or stream.replicated
        self._save_scheduled = False
        self._ack_replies: list[bytes] = []  # ack_sync replies waiting for the state commit
        self._cfg_json = ""
        self._restored = False
        #: a mirror's or source's link (replication.py) that feeds from this consumer on a
        #: work-queue or interest stream: it reads the store itself, so push stays idle, and
        #: the consumer counts as push-bound while the link follows
        self.feeder: Any = None
        self._apply_config(config)
        self._select_start()

    # ------------------------------------------------------------------ engine hooks / attrs

    @property
    def feeder(self) -> Any:
        return self._feeder

    @feeder.setter
    def feeder(self, link: Any) -> None:
        # A feeder records deliveries itself (no _deliver): hear of removals while it feeds.
        self._feeder = link
        if link is not None:
            self._hold()

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
        """A message was stored: count it as pending and serve waiting requests. The stream
        calls this for filtered consumers only; an unfiltered one counts lazily
        (:meth:`_np_sync`) and is woken through :meth:`wake_new`."""
        if self.closed:
            return
        if self._lazy:
            if self._npc_valid:
                self._np_sync()
            self._wake()
            return
        if (self._npc_valid and seq > self._npf and seq >= self.sseq and not self._lps
                and self.matches(subject)):
            self._npc += 1
        self._wake()

    def wake_new(self) -> bool:
        """An unfiltered consumer in the stream's ``wakeable`` set hears of a new message:
        deliver what it can and return True, or return False (and leave the set) when a new
        message cannot make it deliver: closed, now filtered, a pull consumer without
        waiting requests, a push consumer without interest. It registers again
        (:meth:`_want_wake`) when that changes."""
        if self.closed or not self._lazy:
            return False
        if self._dsubj:
            if not self.active:
                return False
            self._push()
        elif self.waiting:
            self._dispatch()
        else:
            return False
        return True

    def _hold(self) -> None:
        """Hear of messages removed from the stream one by one (:meth:`on_removed`): this
        consumer may hold pending acks or delivery counts of them."""
        if not self._holding and not self.closed:
            self._holding = True
            self.stream.signals.holders[self] = None

    def _want_wake(self) -> None:
        """Be woken by new messages (an unfiltered consumer that may deliver now)."""
        if self._lazy and not self.closed:
            self.stream.signals.wakeable[self] = None

    def _wake(self) -> None:
        """Something may be deliverable now: push it, or serve waiting pull requests."""
        if self._dsubj:
            self._push()
        elif self.waiting:
            self._dispatch()

    def on_removed(self, seqs: list[int]) -> None:
        """Messages left the stream one by one (a limit, expiry, MSG.DELETE, retention;
        nats-server ``decStreamPending``): one still awaiting an ack is acked as a ``+TERM``
        (``Unacknowledged message was deleted``); one given up at max_deliver forgets its
        delivery count; pending is recounted on the next ask."""
        self._npc_valid = False
        if self.closed:
            return
        pending, rdc = self.pending, self.rdc
        termed = False
        for seq in seqs:
            p = pending.get(seq)
            if p is not None:
                self._term_removed(seq, p[0], max(rdc.get(seq, 1) - 1, 1))
                termed = True
            elif rdc and rdc.pop(seq, None) is not None:
                self._changed()
        if termed:
            asyncio.get_running_loop().call_soon(self._wake)

    def on_purged(self, subject: str | None, fseq: int, first: int, lseq: int) -> None:
        """A purge (the API's, a rollup's, a subject delete marker's; nats-server
        ``purgeLocked``): ``first`` is the stream's first sequence after it, ``lseq`` its
        last, ``fseq`` where the consumers of the purged subject resume (its first message
        left, 0 for none). Delivery counts below ``first`` go; a consumer whose filter is the
        purged subject or inside it moves to ``fseq``, one whose filter is wider (or none) to
        ``first``, dropping pending acks of messages gone; others keep their position."""
        self._npc_valid = False
        if self.closed:
            return
        rdc = self.rdc
        if rdc:
            below = [s for s in rdc if s < first]
            for s in below:
                del rdc[s]
            if below and self.rdq:
                self.rdq = [s for s in self.rdq if s >= first]
        if subject is None or any(f == subject or is_subset(f, subject) for f in self.filters):
            self._purge(fseq, lseq, False)
        elif not self.filters or any(f == subject or is_subset(subject, f)
                                     for f in self.filters):
            self._purge(first, lseq, True)
        self._changed()

    def _purge(self, sseq: int, lseq: int, wider: bool) -> None:
        """nats-server ``consumer.purge``: move the position to ``sseq`` (0 = past ``lseq``)
        and the ack floor to just below it, dropping pending acks under it (and, when the
        filter is wider than what was purged, of messages gone); with nothing pending the
        floor is the delivery position. The redelivery queue keeps only what is at or above
        the position: the rest waits for its ack wait again (from its last delivery)."""
        if sseq == 0 and not wider:
            sseq = lseq + 1
        if self.sseq < sseq:
            self.sseq = sseq
        if self._lps:
            store = self.stream.store
            self._lps = deque(s for s in self._lps
                              if s >= self.sseq and store.subject_for_seq(s) is not None)
        pending = self.pending
        if self.asflr < sseq:
            self.asflr = sseq - 1
            store = self.stream.store
            for seq, p in list(pending.items()):
                if seq <= self.asflr or (wider and store.subject_for_seq(seq) is None):
                    if p[0] > self.adflr:
                        self.adflr = p[0]
                    del pending[seq]
                    self.rdc.pop(seq, None)
                    self.acked_at = self.clock.time_ns()  # acked as gone: ack activity
        if not pending:
            self.rdc = {}
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        if self.rdq:
            keep = [s for s in self.rdq if s >= self.sseq and s in pending]
            for s in self.rdq:
                p = pending.get(s)
                if p is not None and s not in keep:
                    p[1] = p[2] + self._ack_wait(self.rdc.get(s, 1))
            self.rdq = keep
            self._arm_ack_timer()
        self._sflr = None

    def delete(self) -> None:
        """Stop: waiting requests hear ``409 Consumer Deleted``; timers and the ack
        subscription go away."""
        if self.closed:
            return
        for wr in self.waiting:
            wr.cancel()
            self._send(wr.reply, _status(409, "Consumer Deleted"))
        self.waiting.clear()
        for reply in self._ack_replies:  # applied before the delete: nats-server answered
            self.server.publish(reply, None, None, b"")
        self._ack_replies = []
        persisted = self._persist
        self._persist = False
        self.stop()
        if persisted:
            self._drop_state()

    def stop(self) -> None:
        """Release timers and the ack subscription silently (server shutdown: state not yet
        written is written now, the stream's close commits it)."""
        if self._save_scheduled and self._persist and not self.closed:
            self._save_scheduled = False
            self._write_state()
            if self._ack_replies:  # committed by the stream's close, then answered
                replies, self._ack_replies = self._ack_replies, []
                self.stream.confirm_after_commit(replies)
        self.closed = True
        self.stream.signals.wakeable.pop(self, None)
        self.stream.signals.holders.pop(self, None)
        self._holding = False
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
        if self.pending or self.rdc:
            self._hold()
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
        if self._lazy != (not self.filters):
            self._lazy = not self.filters
            self._npc_valid = False
        if self._lazy and (self.waiting or (self._dsubj and self.active)):
            self._want_wake()
        changed = getattr(self.stream.consumers, "changed", None)
        if changed is not None:
            changed()  # the stream's index of who takes which subject is stale
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

    # ------------------------------------------------------------------ inactivity

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
            if self.active or self.feeder is not None:
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

    # ------------------------------------------------------------------ start position

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
        self._sflr = None
        self.delivered_at = self.acked_at = None
        self._npc_valid = False
        self._lts = 0
        self._changed()
        # Deliver from the next loop turn: the reply reports the state right after the reset.
        asyncio.get_running_loop().call_soon(self._wake)
        return seq

    # ------------------------------------------------------------------ counters

    def num_pending(self) -> int:
        """Matching messages at or after the delivery position not yet delivered."""
        if self._lps:
            store = self.stream.store
            return len(self._lps) + self._count_from(self._lps_resume, store)
        if not self._npc_valid or self._np_rm != self.stream.signals.rm_epoch:
            store = self.stream.store
            self._npc = self._count_from(self.sseq, store)
            self._np_base(store.last_seq)
        elif self._lazy:
            self._np_sync()
        return self._npc

    def _np_base(self, last: int) -> None:
        """``_npc`` was just counted with the stream's last sequence at ``last``."""
        self._npf = last
        self._npc_valid = True
        st = self.stream.signals
        self._np_rm = st.rm_epoch
        # Every message announced from now on is above the last one stored, unless some
        # stored ones still wait to be announced: then above the last one announced.
        self._npa = last if st.sig_queued <= st.sig_last else st.sig_last
        self._npa_n = st.sig_n
        self._npa_ep = st.sig_epoch

    def _np_sync(self) -> None:
        """Count the messages the stream announced since the last sync as :meth:`signal`
        would have one by one: those above ``_npf`` and at or after the position. The
        announced ones lie above ``_npa``; when the bound is higher, they are counted by
        sequence: they have no gaps (the stream calls :meth:`np_gap` at each gap), else
        pending would be recounted on the next ask."""
        st = self.stream.signals
        n = st.sig_n - self._npa_n
        if n <= 0:
            return
        if st.sig_epoch != self._npa_ep:
            self._npc_valid = False
            return
        lo = self._npf
        if self.sseq - 1 > lo:
            lo = self.sseq - 1
        last = st.sig_last
        if lo <= self._npa:
            self._npc += n
        elif lo < last:
            if last - self._npa != n:
                self._npc_valid = False
                return
            self._npc += last - lo
        self._npa = last
        self._npa_n = st.sig_n

    def np_gap(self, seq: int) -> None:
        """The stream announces ``seq`` after a gap in the announced sequences (an unfiltered
        consumer): count what was announced up to the gap (consecutive since the last gap),
        then ``seq`` as :meth:`signal` would, so :meth:`_np_sync` only ever sees consecutive
        sequences."""
        if self.closed or not self._npc_valid:
            return
        self._np_sync()
        if not self._npc_valid:
            return
        if seq > self._npf and seq >= self.sseq and not self._lps:
            self._npc += 1
        self._npa = seq
        self._npa_n = self.stream.signals.sig_n + 1  # the stream counts this one right after

    def _count_from(self, seq: int, store: Any) -> int:
        if not self.filters:
            return store.num_pending(seq)
        return sum(store.num_pending(seq, f) for f in self.filters)

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
            ack_floor=C.sequence_info_dict(*self.reported_floor(), self.acked_at),
            num_ack_pending=len(self.pending),
            num_redelivered=self.num_redelivered(),
            num_waiting=len(self.waiting),
            num_pending=self.num_pending(),
            ts=self.clock.time_ns(),
            push_bound=bool(self._dsubj) and (self.active or self.feeder is not None),
            pinned_client_id=self.pin_id,
            pinned_ts=self.pinned_ts,
            dynamic_metadata=dynamic_metadata,
            cluster=(self.stream.consumer_cluster_info(self)
                     if self.stream.consumer_cluster_info is not None else None),
        )

    # ------------------------------------------------------------------ choosing and delivering

    def _peek(self) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, without committing to it."""
        store = self.stream.store
        cfg = self.config
        while self.rdq:
            seq = self.rdq[0]
            dc = self.rdc.get(seq, 1) + 1
            if cfg.max_deliver > 0 and dc > cfg.max_deliver:
                # nats-server getNextMsg: delivered max_deliver times, given up now.
                self.rdq.pop(0)
                if dc == cfg.max_deliver + 1:
                    self._advise_max_deliveries(seq, dc - 1)
                self._give_up(seq, dc)
                self._hold()
                continue
            sm = store.load(seq) if seq in self.pending else None
            if sm is None:
                self.rdq.pop(0)
                p = self.pending.get(seq)
                if p is not None:  # removed from the stream meanwhile: acked, as a +TERM
                    self._term_removed(seq, p[0], dc - 1)
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

    def _payload(self, sm: StoredMessage) -> tuple[bytes | None, bytes]:
        hdr, data = sm.hdr, sm.data
        if self.config.headers_only:
            hdr = H.append(hdr, [("Nats-Msg-Size", str(len(data)))])
            data = b""
        return hdr, data

    def _ack_subject(self, dc: int, sm: StoredMessage, dseq: int, pending: int) -> bytes:
        return f"{self._ack_prefix}{dc}.{sm.seq}.{dseq}.{sm.ts}.{pending}".encode()

    def _pending_after(self, dc: int) -> int:
        n = self.num_pending()
        return n if dc > 1 or n == 0 else n - 1

    def _deliver(self, reply: bytes, subject: bytes, hdr: bytes | None, data: bytes,
                 sm: StoredMessage, dc: int) -> None:
        """Commit the delivery of ``sm`` (position, pending, counters) and send it."""
        now = self.clock.time_ns()
        seq = sm.seq
        ts = sm.ts
        dseq = self.dseq
        self.dseq = dseq + 1
        self._lts = ts
        self._replay_pass = False
        lps = self._lps
        if dc > 1:
            self.rdq.pop(0)
        elif lps and lps[0] == seq:
            lps.popleft()
            if not lps:
                self.sseq = max(seq + 1, self._lps_resume)
                self._npc_valid = False
            else:
                self.sseq = seq + 1  # nats-server: right after the delivered one
        elif self._npc_valid:
            if self._lazy:
                self._np_sync()  # count what was announced before the position moves
            self.sseq = seq + 1
            if self._npc > 0:
                self._npc -= 1
        else:
            self.sseq = seq + 1
        # num_pending() without the call in the common case (a valid count, no lps list).
        pending = (self._npc if self._npc_valid and not lps
                   and self._np_rm == self.stream.signals.rm_epoch else self.num_pending())
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
            if not self._holding:
                self._hold()
        if self._persist and not self._save_scheduled:
            self._schedule_save()
        # _ack_subject(dc, sm, dseq, pending), inlined
        ack = f"{self._ack_prefix}{dc}.{seq}.{dseq}.{ts}.{pending}".encode()
        self.server.deliver_as(reply, subject, ack, hdr, data)
        if policy == "none" and self.stream.config.retention != "limits":
            self._maybe_remove(seq, sm.subject)

    # ------------------------------------------------------------------ replay original

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

    # ------------------------------------------------------------------ shared by the concerns

    def _last_delivered_headers(self) -> list[tuple[str, str]]:
        """What idle heartbeats (push and pull) say about the last delivery."""
        return [("Nats-Last-Consumer", str(self.dseq - 1)), ("Nats-Last-Stream", str(self.sseq - 1))]

    def _advise(self, what: str, event_type: str, fields: dict) -> None:
        """``$JS.EVENT.ADVISORY.CONSUMER.<what>.<stream>.<consumer>`` (sent only when
        someone listens)."""
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.CONSUMER.{what}.{self.stream.name}.{self.name}",
            event_type, fields)


#: The engine's entry after a file stream is recovered: bring back and start its consumers.
recover_consumers = Consumer.recover
