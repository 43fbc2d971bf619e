"""A consumer: a view of one stream with its own delivery position, pending acks and waiting
pull requests, as nats-server's ``consumer`` keeps them.

A consumer lives inside its stream (``stream.consumers[name]``) and is driven by:

* the engine's hooks (:meth:`Consumer.signal` on every stored message it takes, or for an
  unfiltered consumer :meth:`Consumer.wake_new` while it may deliver;
  :meth:`Consumer.on_removed`, :meth:`Consumer.on_purged`, :meth:`Consumer.delete`);
* ``CONSUMER.MSG.NEXT`` requests (:meth:`Consumer.next_request`), queued FIFO and served
  round-robin;
* acks on its own internal subscription ``$JS.ACK.<stream>.<consumer>.>`` — nats-server only
  subscribes when the ack policy is not ``none``, so an ack with a reply on an ack-none
  consumer gets the core 503, and so does it here;
* timers on the server clock: one ack-wait timer for the earliest pending deadline, one expiry
  timer per pull request with ``expires``.

:class:`Consumer` owns the lifecycle (start, config updates, pause, stop, delete, inactivity),
the delivery position (``sseq`` the next stream sequence to consider, ``dseq`` the next
consumer sequence, the ``last_per_subject`` start list ``lps``), the choice of the next
message (:meth:`Consumer.peek`) and the commit of its delivery (:meth:`Consumer.deliver`),
replay timing and the signal interface its stream calls. Each other part owns its state in
its own module and reaches the rest through the interface it declares there (a Protocol the
consumer satisfies):

=====================  ===========================================  ==========================
part (module)          owns                                         reaches the consumer by
=====================  ===========================================  ==========================
:mod:`.pending`        ``num_pending``, kept running                ``CountHost``
:mod:`.acks`           pending acks, delivery counts, redelivery    ``AckHost``
                       queue, ack floor, ack-wait timer, ack sub
:mod:`.pull`           the queue of waiting ``MSG.NEXT`` requests   ``PullHost``; asks the
                                                                    priority groups as a
                                                                    ``RequestChooser``
:mod:`.push`           deliver-subject binding, flow control, idle  ``PushHost``
                       heartbeat, rate limit (push consumers only)
:mod:`.priority`       the pinned client and its timer              ``PriorityHost``; works on
                                                                    the pull queue as a
                                                                    ``WaitQueue``
:mod:`.state`          write scheduling, ack replies awaiting       ``StateHost``
                       commit, the persisted document's format
=====================  ===========================================  ==========================

The parts write their own state only; the others read what each declares public (the
consumer reads ``acks.pending``/``acks.rdq``, ``counts.n``...). The consumer's
:attr:`Consumer.wake` is the delivery loop of its kind (push delivery, or the pull queue's
dispatch), chosen at creation, so an ack that frees room costs one call.

Invariants of the position and delivery:

* The next message is, in this order: the first one due for redelivery (one delivered
  ``max_deliver`` times is given up here instead); nothing new while
  ``max_ack_pending`` messages await acks; the next of a ``last_per_subject`` start list; the
  next message matching the filters at or after ``sseq``. ``sseq`` never moves back except by
  ``CONSUMER.RESET``.
* Every delivery, a redelivery too, takes the next consumer sequence (``dseq``) and carries the
  ack subject ``$JS.ACK.<stream>.<consumer>.<count>.<stream seq>.<consumer seq>.<ts>.<pending>``
  (``pending``: matching messages still to deliver after this one, see
  :mod:`~minijs.jetstream.consumers.pending`). Under ack policy ``none`` a delivery is its own
  ack (the ack floor follows it) and, on a work-queue or interest stream, removes the message.
* An unfiltered consumer is woken by new messages only while it may deliver (the stream's
  ``wakeable``: a pull consumer with waiting requests, a push consumer with interest), so idle
  unfiltered consumers cost nothing per message; nor are consumers without pending acks or
  delivery counts visited when a message is removed (the stream's ``holders``; ``_holding``
  is true while it is there).
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
* ``pause_until`` stops deliveries until the deadline; a push consumer is removed after
  ``inactive_threshold`` without interest, a pull consumer after that long without requests
  or acks (and no ack still expected). Everything that waits runs on the server clock.

Consumers of file streams (unless ``mem_storage``) keep their config and delivery state across
restarts, as :mod:`~minijs.jetstream.consumers.state` describes.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from minijs.jetstream.config import consumer as C
from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.consumers import state as S
from minijs.jetstream.consumers.acks import AckTracker
from minijs.jetstream.consumers.pending import PendingCount
from minijs.jetstream.consumers.priority import PriorityGroups
from minijs.jetstream.consumers.pull import (NEXT_REQUEST, NextRequest, PriorityGroup,
                                             PullRequest, PullRequests, parse_next_request)
from minijs.jetstream.consumers.push import MAX_FLOW_CONTROL, PushDelivery
from minijs.jetstream.consumers.state import STATE_PREFIX, DurableState
from minijs.core.subjects import is_subset
from minijs.jetstream.store.base import StoredMessage, subject_matches

#: The most deliveries one run takes (a larger batch or more room goes in several runs).
RUN_LIMIT = 1024

if TYPE_CHECKING:
    from minijs.clock import Timer
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.store.base import Store
    from minijs.jetstream.streams.stream import Stream

#: What other modules import from here.
__all__ = ["Consumer", "recover_consumers", "parse_next_request", "NextRequest", "PullRequest",
           "PriorityGroup", "NEXT_REQUEST", "STATE_PREFIX", "MAX_FLOW_CONTROL"]


class Consumer:
    """One consumer of a stream: pull (``MSG.NEXT`` requests) or push (``deliver_subject``)."""

    #: The delivery loop of this consumer's kind: ``push.push`` or ``pull.wake``.
    wake: Callable[[], None]
    #: The durable state's ``changed``: the persisted state changed (written this turn).
    changed: Callable[[], None]

    def __init__(self, stream: "Stream", name: str, config: C.ConsumerConfig,
                 created: int | None = None) -> None:
        self.stream = stream
        self.bus: MessageBus = stream.bus
        self.clock = stream.clock
        self.name = name
        self.config = config
        self.created = created if created is not None else self.clock.time_ns()
        self.closed = False
        self.filters: list[str] = []
        self._ack_prefix = ""
        # the delivery position
        self.sseq = 1
        self.dseq = 1
        self.delivered_at: int | None = None
        self.lps: deque[int] = deque()  # last_per_subject start list
        self.lps_resume = 0
        self._holding = False  # in the stream's holders
        # replay_policy original: deliveries spaced like the stored timestamps until caught up
        self.replaying = config.replay_policy == "original"
        self._lts = 0  # stored timestamp of the last delivered message
        self._replay_pass = False  # the wait for the next message is over
        self._replay_timer: Timer | None = None
        # inactivity and pause
        self.delete_timer: Timer | None = None
        self.last_activity = self.clock.monotonic()
        self._pause_timer: Timer | None = None
        #: a mirror's or source's link (mirrors.py) that feeds from this consumer on a
        #: work-queue or interest stream: it reads the store itself, so push stays idle, and
        #: the consumer counts as push-bound while the link follows (:meth:`feed_from`)
        self.feeder: Any = None
        # the parts
        self.counts = PendingCount(self)
        self.acks = AckTracker(self)
        # (a replicated stream's consumers always keep their state in its store's metadata,
        # which is what its other replicas resume from)
        self.durable = DurableState(
            self, (stream.config.storage == "file" and not config.mem_storage)
            or stream.replicated)
        self.priority = PriorityGroups(self)
        self.pull = PullRequests(self, self.priority)
        self.push: PushDelivery | None = PushDelivery(self) if config.deliver_subject else None
        self.wake = self.push.push if self.push is not None else self.pull.wake
        self.changed = self.durable.changed
        self._apply_config(config)
        self._select_start()

    # ------------------------------------------------------------------ what others read

    @property
    def inactive_threshold(self) -> int:
        return self.config.inactive_threshold

    @property
    def max_ack_pending(self) -> int:
        return self.config.max_ack_pending

    @property
    def pending(self) -> dict[int, list[int]]:
        """Pending acks: stream seq -> [consumer seq, deadline ns, timestamp ns]."""
        return self.acks.pending

    @property
    def rdc(self) -> dict[int, int]:
        """Delivery counts by stream seq (missing: 1)."""
        return self.acks.rdc

    @property
    def waiting(self) -> deque[PullRequest]:
        """The waiting pull requests (read only: the pull queue owns them)."""
        return self.pull.waiting

    @property
    def is_push(self) -> bool:
        """Bound to a deliver subject."""
        return self.push is not None and bool(self.push.dsubj)

    @property
    def active(self) -> bool:
        """A push consumer with a subscription on exactly its deliver subject."""
        return self.push is not None and self.push.active

    def feed_from(self, link: Any) -> None:
        """A mirror's or source's link feeds from this consumer (None: no more). It records
        deliveries itself (:meth:`record_feed`), so the consumer hears of removals while it
        feeds."""
        self.feeder = link
        if link is not None:
            self.hold()

    def matches(self, subject: str) -> bool:
        """Does the filter select ``subject``? (Interest retention asks every consumer.)"""
        if not self.filters:
            return True
        return any(subject_matches(f, subject) for f in self.filters)

    def needs(self, seq: int, subject: str) -> bool:
        """Does this consumer still have to deliver or see an ack for ``seq``?"""
        if not self.matches(subject):
            return False
        # A message given up at max_deliver stays until acked (its rdc entry), as in
        # nats-server's needAck.
        acks = self.acks
        return (seq >= self.sseq or seq in acks.pending or seq in self.lps
                or seq in acks.rdc)

    # ------------------------------------------------------------------ the stream's signals

    def signal(self, seq: int, subject: str) -> None:
        """A message was stored: count it as pending and serve waiting requests. The stream
        calls this for filtered consumers only; an unfiltered one counts lazily and is woken
        through :meth:`wake_new`."""
        if self.closed:
            return
        self.counts.signal(seq, subject)
        self.wake()

    def wake_new(self) -> bool:
        """An unfiltered consumer in the stream's ``wakeable`` set hears of a new message:
        deliver what it can and return True, or return False (and leave the set) when a new
        message cannot make it deliver: closed, now filtered, a pull consumer without
        waiting requests, a push consumer without interest. It registers again
        (:meth:`want_wake`) when that changes."""
        if self.closed or not self.counts.lazy:
            return False
        push = self.push
        if push is not None:
            if not push.active:
                return False
            push.push()
        elif self.pull.waiting:
            self.pull.dispatch()
        else:
            return False
        return True

    def np_gap(self, seq: int) -> None:
        """The stream announces ``seq`` after a gap in the announced sequences (an unfiltered
        consumer): see :meth:`PendingCount.gap`."""
        if not self.closed:
            self.counts.gap(seq)

    def hold(self) -> None:
        """Hear of messages removed from the stream one by one (:meth:`on_removed`): this
        consumer may hold pending acks or delivery counts of them."""
        if not self._holding and not self.closed:
            self._holding = True
            self.stream.signals.holders[self] = None

    def want_wake(self) -> None:
        """Be woken by new messages (an unfiltered consumer that may deliver now)."""
        if self.counts.lazy and not self.closed:
            self.stream.signals.wakeable[self] = None

    def on_removed(self, seqs: list[int]) -> None:
        """Messages left the stream one by one (a limit, expiry, MSG.DELETE, retention;
        nats-server ``decStreamPending``): one still awaiting an ack is acked as a ``+TERM``
        (``Unacknowledged message was deleted``); one given up at max_deliver forgets its
        delivery count; pending is recounted on the next ask."""
        self.counts.invalidate()
        if self.closed:
            return
        if self.acks.on_removed(seqs):
            asyncio.get_running_loop().call_soon(self.wake)

    def on_purged(self, subject: str | None, fseq: int, first: int, lseq: int) -> None:
        """A purge (the API's, a rollup's, a subject delete marker's; nats-server
        ``purgeLocked``): ``first`` is the stream's first sequence after it, ``lseq`` its
        last, ``fseq`` where the consumers of the purged subject resume (its first message
        left, 0 for none). Delivery counts below ``first`` go; a consumer whose filter is the
        purged subject or inside it moves to ``fseq``, one whose filter is wider (or none) to
        ``first``, dropping pending acks of messages gone; others keep their position."""
        self.counts.invalidate()
        if self.closed:
            return
        self.acks.forget_below(first)
        if subject is None or any(f == subject or is_subset(f, subject) for f in self.filters):
            self._purge(fseq, lseq, False)
        elif not self.filters or any(f == subject or is_subset(subject, f)
                                     for f in self.filters):
            self._purge(first, lseq, True)
        self.changed()

    def _purge(self, sseq: int, lseq: int, wider: bool) -> None:
        """nats-server ``consumer.purge``: move the position to ``sseq`` (0 = past ``lseq``);
        the start list keeps only messages still there at or after it. The ack tracking
        follows (:meth:`AckTracker.on_purge`)."""
        if sseq == 0 and not wider:
            sseq = lseq + 1
        if self.sseq < sseq:
            self.sseq = sseq
        if self.lps:
            store = self.stream.store
            self.lps = deque(s for s in self.lps
                             if s >= self.sseq and store.subject_for_seq(s) is not None)
        self.acks.on_purge(sseq, wider)

    # ------------------------------------------------------------------ what the parts call

    def next_request(self, reply: bytes, payload: bytes) -> None:
        """A ``CONSUMER.MSG.NEXT`` request (or an ack's ``+NXT``)."""
        self.pull.next_request(reply, payload)

    def confirm_ack(self, reply: bytes) -> None:
        self.durable.confirm(reply)

    def note_activity(self) -> None:
        """A pull request or an ack: the inactivity threshold counts from now."""
        self.last_activity = self.clock.monotonic()

    def last_delivered_headers(self) -> list[tuple[str, str]]:
        """What idle heartbeats (push and pull) say about the last delivery."""
        return [("Nats-Last-Consumer", str(self.dseq - 1)),
                ("Nats-Last-Stream", str(self.sseq - 1))]

    def advise(self, what: str, event_type: str, fields: dict[str, Any]) -> None:
        """``$JS.EVENT.ADVISORY.CONSUMER.<what>.<stream>.<consumer>`` (sent only when
        someone listens)."""
        self.stream.engine.advisories.advise(
            f"$JS.EVENT.ADVISORY.CONSUMER.{what}.{self.stream.name}.{self.name}",
            event_type, fields)

    def num_pending(self) -> int:
        """Matching messages at or after the delivery position not yet delivered."""
        return self.counts.num_pending()

    def signal_shutdown(self) -> None:
        """Server shutdown: waiting pull requests hear ``409 Server Shutdown``."""
        self.pull.signal_shutdown()

    def unpin(self, group: str) -> None:
        """``CONSUMER.UNPIN``."""
        self.priority.unpin(group)

    def record_feed(self, seq: int, now: int, deadline: int) -> None:
        """The feeding link read stream ``seq`` (at ``now``): a delivery, pending until the
        link's flow-control ack (``deadline``)."""
        self.acks.track_fed(seq, self.dseq, deadline, now)
        self.dseq += 1
        self.sseq = seq + 1
        self.delivered_at = now
        self.counts.invalidate()
        self.changed()

    def state_document(self) -> bytes:
        """The persisted document of this consumer (also what a stream snapshot carries)."""
        return self.durable.document()

    # ------------------------------------------------------------------ choosing and delivering

    def peek(self) -> tuple[StoredMessage, int] | None:
        """The next message to deliver and its delivery count, without committing to it."""
        acks = self.acks
        if acks.rdq:
            nxt = acks.next_redelivery()
            if nxt is not None:
                return nxt
        cfg = self.config
        if cfg.ack_policy != "none" and 0 < cfg.max_ack_pending <= len(acks.pending):
            return None
        store = self.stream.store
        if self.lps:
            lps = self.lps
            while lps:
                sm = store.load(lps[0])
                if sm is not None:
                    return sm, 1
                lps.popleft()
            self.sseq = max(self.sseq, self.lps_resume)
            self.counts.invalidate()
        # _next_new(store), its one-filter and no-filter cases inlined
        filters = self.filters
        if not filters:
            sm = store.load_next(self.sseq)
        elif len(filters) == 1:
            sm = store.load_next(self.sseq, filters[0])
        else:
            return self._next_new(store)
        return None if sm is None else (sm, 1)

    def _next_new(self, store: "Store") -> tuple[StoredMessage, int] | None:
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

    def payload(self, sm: StoredMessage) -> tuple[bytes | None, bytes]:
        """Headers and data of a delivery: ``headers_only`` sends the size instead of the
        data (callers test ``headers_only`` first and take ``sm.hdr``/``sm.data`` as they
        are otherwise)."""
        hdr, data = sm.hdr, sm.data
        if self.config.headers_only:
            hdr = H.append(hdr, [("Nats-Msg-Size", str(len(data)))])
            data = b""
        return hdr, data

    def delivery_size(self, subject: bytes, sm: StoredMessage, dc: int, hdr: bytes | None,
                      data: bytes) -> int:
        """What nats-server counts of the next delivery of ``sm`` on ``subject`` against a
        byte budget, the flow-control window or the rate limit: subject, ack reply subject,
        headers and data."""
        n = self.num_pending()
        pending = n if dc > 1 or n == 0 else n - 1
        ack = f"{self._ack_prefix}{dc}.{sm.seq}.{self.dseq}.{sm.ts}.{pending}".encode()
        return len(subject) + len(ack) + (len(hdr) if hdr else 0) + len(data)

    def deliver(self, reply: bytes, subject: bytes, hdr: bytes | None, data: bytes,
                sm: StoredMessage, dc: int) -> None:
        """Commit the delivery of ``sm`` (position, pending count; the ack tracking records
        it) and send it."""
        now = self.clock.time_ns()
        seq = sm.seq
        ts = sm.ts
        dseq = self.dseq
        self.dseq = dseq + 1
        self._lts = ts
        self._replay_pass = False
        lps = self.lps
        counts = self.counts
        if dc > 1:
            pass  # a redelivery: the position stays
        elif lps and lps[0] == seq:
            lps.popleft()
            if not lps:
                self.sseq = max(seq + 1, self.lps_resume)
                counts.invalidate()
            else:
                self.sseq = seq + 1  # nats-server: right after the delivered one
        else:
            if counts.valid:
                counts.took()  # (before the position moves)
            self.sseq = seq + 1
        # num_pending() without the call in the common case (a valid count, no lps list).
        pending = (counts.n if counts.valid and not lps
                   and counts.rm_epoch == self.stream.signals.rm_epoch else counts.num_pending())
        self.delivered_at = now
        acks = self.acks
        acks.track(seq, dseq, dc, now)
        if not self._holding and acks.pending:
            self.hold()
        durable = self.durable
        if durable.persist and not durable.scheduled:  # self.changed()
            durable.changed()
        ack = f"{self._ack_prefix}{dc}.{seq}.{dseq}.{ts}.{pending}".encode()
        self.bus.deliver_as(reply, subject, ack, hdr, data)
        if self.config.ack_policy == "none" and self.stream.config.retention != "limits":
            acks.remove_if_unneeded(seq, sm.subject)

    def peek_run(self, limit: int) -> list[StoredMessage]:
        """Up to ``limit`` (at most :data:`RUN_LIMIT`) messages that :meth:`peek` and
        :meth:`deliver` would give one after another as first deliveries, room under
        ``max_ack_pending`` allowing, for
        :meth:`deliver_run`; empty when the next deliveries are not plain first ones (a
        redelivery due, a start list, several filters, ack policy ``none``) or fewer than
        two: then they go one by one."""
        acks = self.acks
        cfg = self.config
        if acks.rdq or self.lps or len(self.filters) > 1 or cfg.ack_policy == "none":
            return []
        limit = min(limit, RUN_LIMIT)
        if cfg.max_ack_pending > 0:
            limit = min(limit, cfg.max_ack_pending - len(acks.pending))
        if limit < 2:
            return []
        filters = self.filters
        return self.stream.store.load_run(self.sseq, limit, filters[0] if filters else None)

    def deliver_run(self, reply: bytes, sms: list[StoredMessage]) -> None:
        """:meth:`deliver` of each of ``sms`` (from :meth:`peek_run`), in order, to
        ``reply``: the same positions, pending counts, ack subjects and tracking, the
        messages handed to the bus as one run."""
        now = self.clock.time_ns()
        counts = self.counts
        signals = self.stream.signals
        prefix = self._ack_prefix + "1."
        first = dseq = self.dseq
        acks: list[bytes] = []
        for sm in sms:
            seq = sm.seq
            if counts.valid:
                counts.took()  # (before the position moves)
            self.sseq = seq + 1
            pending = (counts.n if counts.valid and counts.rm_epoch == signals.rm_epoch
                       else counts.num_pending())
            acks.append(f"{prefix}{seq}.{dseq}.{sm.ts}.{pending}".encode())
            dseq += 1
        self.dseq = dseq
        self._lts = sms[-1].ts
        self._replay_pass = False
        self.delivered_at = now
        tracker = self.acks
        tracker.track_run([sm.seq for sm in sms], first, now)
        if not self._holding:
            self.hold()
        durable = self.durable
        if durable.persist and not durable.scheduled:  # self.changed()
            durable.changed()
        self.bus.deliver_run_as(reply, [sm.subject.encode() for sm in sms], acks,
                                [sm.hdr for sm in sms], [sm.data for sm in sms])

    # ------------------------------------------------------------------ replay original

    def replay_hold(self, ts: int) -> bool:
        """Replay ``original``: must the message stored at ``ts`` wait? Like nats-server, the
        gap to the previously delivered message's timestamp is waited out (when over 1 ms),
        then the message goes without a second check."""
        if not self._lts or self._replay_pass:
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
        self.wake()

    def replay_done(self) -> None:
        """Replay ends for good once the consumer has passed the stream's last message."""
        if self._replay_timer is None and self.sseq > self.stream.store.last_seq:
            self.replaying = False

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        cfg = self.config
        self.acks.start()
        push = self.push
        if push is not None:
            push.start()
        elif cfg.inactive_threshold > 0:
            self.delete_timer = self.clock.call_later(cfg.inactive_threshold / 1e9,
                                                      self._check_inactive)
        self._schedule_unpause()
        if self.acks.pending or self.acks.rdc:
            self.hold()
        if not self.durable.restored:
            self.changed()
        if push is not None and push.active:
            # Deliver from the next loop turn: the create reply reports the state at creation.
            asyncio.get_running_loop().call_soon(push.push)

    def _apply_config(self, cfg: C.ConsumerConfig) -> None:
        self.config = cfg
        self.durable.config_changed()
        self.acks.apply_config(cfg)
        self.filters = [f for f in C.filters_of(cfg) if f != ">"]
        counts = self.counts
        counts.set_lazy(not self.filters)
        if counts.lazy and (self.pull.waiting or self.active):
            self.want_wake()
        self.stream.consumers.changed()  # the stream's index of who takes which subject is stale
        self._ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}."
        if self.push is not None:
            self.push.apply_config(cfg)

    def update_config(self, cfg: C.ConsumerConfig) -> None:
        """An allowed update (``check_update`` passed): filters, limits, waits and (for an
        unbound push consumer) the deliver subject may change."""
        old = self.config
        self._apply_config(cfg)
        self.counts.invalidate()
        push = self.push
        if push is not None and cfg.deliver_subject != old.deliver_subject:
            # nats-server re-watches the new subject and redelivers what was pending there.
            push.rebind()
            self.acks.redeliver_all()
        if cfg.ack_wait != old.ack_wait or cfg.backoff != old.backoff:
            self.acks.waits_changed(cfg.ack_wait != old.ack_wait)
        if cfg.inactive_threshold != old.inactive_threshold and push is None:
            self.stop_delete_timer()
            if cfg.inactive_threshold > 0:
                self.delete_timer = self.clock.call_later(cfg.inactive_threshold / 1e9,
                                                          self._check_inactive)
        self.changed()
        self.wake()

    def delete(self) -> None:
        """Stop: waiting requests hear ``409 Consumer Deleted``; timers and the ack
        subscription go away, and so does the persisted state."""
        if self.closed:
            return
        self.pull.end_all(409, "Consumer Deleted")
        persisted = self.durable.release()
        self.stop()
        if persisted:
            self.durable.drop()

    def stop(self) -> None:
        """Release timers and subscriptions silently (server shutdown: state not yet
        written is written now, the stream's close commits it)."""
        self.durable.flush_on_stop()
        self.closed = True
        self.stream.signals.wakeable.pop(self, None)
        self.stream.signals.holders.pop(self, None)
        self._holding = False
        self.pull.stop()
        for name in ("delete_timer", "_pause_timer", "_replay_timer"):
            timer = getattr(self, name)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)
        self.priority.stop()
        self.acks.stop()
        if self.push is not None:
            self.push.stop()

    # ------------------------------------------------------------------ inactivity

    def start_delete_timer(self) -> None:
        """Start counting ``inactive_threshold`` (unless already counting)."""
        thresh = self.config.inactive_threshold
        if thresh > 0 and self.delete_timer is None:
            self.delete_timer = self.clock.call_later(thresh / 1e9, self._check_inactive)

    def stop_delete_timer(self) -> None:
        if self.delete_timer is not None:
            self.delete_timer.cancel()
            self.delete_timer = None

    def _check_inactive(self) -> None:
        """``deleteNotActive``: a push consumer without interest, or a pull consumer without
        requests or acks (and no ack still expected), for ``inactive_threshold`` is
        deleted."""
        self.delete_timer = None
        if self.closed:
            return
        thresh = self.config.inactive_threshold
        if thresh <= 0:
            return
        clock = self.clock
        if self.is_push:
            if self.active or self.feeder is not None:
                return
        else:
            elapsed = clock.monotonic() - self.last_activity
            if elapsed < thresh / 1e9:
                self.delete_timer = clock.call_later(thresh / 1e9 - elapsed,
                                                     self._check_inactive)
                return
            self.pull.prune()
            if self.pull.waiting:
                self.delete_timer = clock.call_later(thresh / 1e9, self._check_inactive)
                return
            now = clock.time_ns()
            latest = self.acks.latest_deadline()
            if latest and latest + thresh > now:
                self.delete_timer = clock.call_later((latest + thresh - now) / 1e9,
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
        changed = ((old is None) != (until is None)
                   or (old is not None and int(old) != int(until or 0)))
        cfg = self.config.copy()
        cfg.pause_until = until
        C.set_static_metadata(cfg)
        self.config = cfg
        self.durable.config_changed()
        self.changed()
        self._schedule_unpause()
        if changed:
            self.advise_pause()
        if not self.is_paused():
            self.wake()
        return changed

    def advise_pause(self) -> None:
        pu = self.config.pause_until
        self.advise("PAUSE", "advisory.v1.consumer_pause",
                    {"stream": self.stream.name, "consumer": self.name,
                     "paused": self.is_paused(),
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
        self.wake()

    # ------------------------------------------------------------------ start position, reset

    def _select_start(self) -> None:
        """The first stream sequence to consider, as nats-server's ``selectStartingSeqNo``
        chooses it (``all`` starts at the stream's first sequence even with a filter)."""
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
            self.lps = deque(seqs)
            self.lps_resume = last + 1
            seq = seqs[0] if seqs else last + 1
        else:
            seq = first
        self.sseq = max(seq, 1)
        self.acks.reset(self.sseq)

    def reset(self, seq: int) -> int:
        """``CONSUMER.RESET``: forget deliveries and acks and continue from stream sequence
        ``seq`` (0 = right after the ack floor). A non-zero ``seq`` is allowed for deliver
        policy ``all`` and, from their own start on, ``by_start_sequence``/``by_start_time``;
        else 400/10204. Returns the sequence the consumer now starts from."""
        from minijs.jetstream import errors as E

        cfg = self.config
        if seq == 0:
            seq = self.acks.asflr + 1
        elif cfg.deliver_policy == "by_start_sequence":
            if seq < cfg.opt_start_seq:
                raise E.consumer_invalid_reset("below start seq")
        elif cfg.deliver_policy == "by_start_time":
            start = self.stream.store.first_seq_at_or_after_time(int(cfg.opt_start_time or 0))
            if seq < start:
                raise E.consumer_invalid_reset("below start time")
        elif cfg.deliver_policy != "all":
            raise E.consumer_invalid_reset("not allowed")
        self.acks.reset(seq)
        self.lps = deque()
        self.sseq, self.dseq = seq, 1
        self.delivered_at = None
        self.counts.invalidate()
        self._lts = 0
        self.changed()
        # Deliver from the next loop turn: the reply reports the state right after the reset.
        asyncio.get_running_loop().call_soon(self.wake)
        return seq

    # ------------------------------------------------------------------ info

    def info(self, *, dynamic_metadata: bool = True) -> dict[str, Any]:
        # Like nats-server's processWaiting, reporting drops requests nobody listens to.
        pull = self.pull
        if pull.waiting:
            pull.prune()
        acks = self.acks
        priority = self.priority
        return C.consumer_info_dict(
            stream_name=self.stream.name,
            name=self.name,
            created=self.created,
            config=self.config,
            delivered=C.sequence_info_dict(self.dseq - 1, self.sseq - 1, self.delivered_at),
            ack_floor=C.sequence_info_dict(*acks.reported_floor(), acks.acked_at),
            num_ack_pending=len(acks.pending),
            num_redelivered=acks.num_redelivered(),
            num_waiting=len(pull.waiting),
            num_pending=self.num_pending(),
            ts=self.clock.time_ns(),
            push_bound=self.is_push and (self.active or self.feeder is not None),
            pinned_client_id=priority.pin_id,
            pinned_ts=priority.pinned_ts,
            dynamic_metadata=dynamic_metadata,
            cluster=(self.stream.consumer_cluster_info(self)
                     if self.stream.consumer_cluster_info is not None else None),
        )

    # ------------------------------------------------------------------ persisted consumers

    @classmethod
    def restore(cls, stream: "Stream", doc: dict[str, Any]) -> "Consumer":
        """A consumer from its persisted document (not started). Nothing is queued for
        redelivery until the first ack-wait check; a ``last_per_subject`` consumer resumes
        like a plain one from its position (nats-server keeps no start list), its pending
        counted once as the subjects whose last message is still ahead
        (``calculateNumPending``), then kept up by deliveries and stores."""
        store = stream.store
        saved = S.read_document(doc, store.last_seq)
        consumer = cls(stream, saved.name, saved.config, created=saved.created)
        consumer.durable.restored = True
        consumer.dseq, consumer.sseq = saved.dseq, saved.sseq
        consumer.lps = deque()
        consumer.acks.restore(saved.adflr, saved.asflr, saved.pending, saved.rdc)
        counts = consumer.counts
        counts.invalidate()
        if saved.config.deliver_policy == "last_per_subject" and store.msgs:
            lasts = store.multi_last_seqs(consumer.filters or [">"])
            counts.set_counted(sum(1 for q in lasts if q >= consumer.sseq), store.last_seq)
        return consumer

    @classmethod
    def recover(cls, stream: "Stream") -> int:
        """Bring back the persisted consumers of a recovered file stream and start them;
        returns how many."""
        return S.recover(stream, cls.restore)


#: The engine's entry after a file stream is recovered: bring back and start its consumers.
recover_consumers = Consumer.recover
