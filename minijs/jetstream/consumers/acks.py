"""Acks and redelivery: what a consumer owes, when it delivers again, and how its ack floor
moves — as nats-server's ``processAck``, ``processNak``, ``checkPending`` and ack floor rules do.

Acks arrive on the consumer's own subscription ``$JS.ACK.<stream>.<consumer>.>`` (only when the
ack policy is not ``none``), as replies to the ack subject each delivery carries:
``…<delivery count>.<stream seq>.<consumer seq>.<timestamp>.<pending>`` (9 tokens, or 11 and
more with a domain and account hash; anything else is ignored). The body says what to do:

* empty, ``+ACK`` or ``+OK``: acked (``ack_policy`` ``all``: every pending message up to it);
* ``-NAK`` [a Go duration or ``{"delay": ns}``]: deliver again at once, or after the delay
  (counted as the deadline rule below says);
* ``+WPI``: still working — the ack wait starts again (not for a message queued for
  redelivery);
* ``+TERM`` [reason]: acked without being processed, with the ``MSG_TERMINATED`` advisory;
* ``+NXT`` [a ``MSG.NEXT`` body]: acked, and the reply subject becomes a pull request.

An ack's reply subject hears an empty message (after ``+NXT`` it hears the pull request's
answers instead): on a durable consumer (file stream, not ``mem_storage``) only once the state
the ack left is committed, so a confirmed ack survives a crash; on others at once. An ack counts
as activity for the inactivity threshold of a pull consumer.

Invariants:

* ``pending`` maps each delivered, unacked stream sequence to ``[consumer seq, ack deadline ns,
  timestamp ns]``; the consumer sequence is the first delivery's (a redelivery keeps it), the
  timestamp nats-server's ``Pending.Timestamp`` (delivery, ``+WPI`` or NAK-delay time). The
  deadline is 0 exactly while the message waits in ``rdq``.
* ``rdq`` holds stream sequences in ``pending`` due for redelivery, without repeats, in the order
  they became due (an ack-wait expiry adds its batch in stream order, a NAK appends); they are
  served before new messages, first in first out.
* ``rdc`` holds delivery counts (a missing entry counts 1). As nats-server's ``rdc``, an entry
  outlives the pending ack when a message is given up at ``max_deliver``; it goes with an ack of
  that sequence (pending or not) or when the message leaves the stream. ``num_redelivered`` is
  the number of entries over 1 (always 0 under ``max_deliver`` 1).
* The ack deadline is the timestamp plus ``backoff[delivery count - 1]`` (its last entry
  repeating), else ``ack_wait`` (nats-server ``checkPending``). ``-NAK <delay>`` sets the
  timestamp to the NAK time minus the configured ``ack_wait`` (``backoff[0]`` under a backoff)
  plus the delay (``processNak``), so on the n-th delivery it waits ``delay + backoff[n-1] -
  backoff[0]``. An update of ``ack_wait`` or ``backoff`` recomputes the running deadlines from
  their timestamps; a changed ``ack_wait`` is checked 100 ms after the update
  (``updateConfig``), a ``backoff`` change alone when the armed check fires. One timer runs for the earliest deadline (``_ack_timer_at``,
  never later than it; firing early only re-arms). When it fires, expired messages are queued
  for redelivery — except under ``max_deliver`` 1, where they are given up at once. A message
  delivered ``max_deliver`` times is given up (``MAX_DELIVERIES`` advisory, dropped from
  ``pending``, kept in the stream) only when the next delivery would pick it from ``rdq``: a
  pull request or an active push subscription must be there, as in nats-server 2.15.1. Giving
  up does not move the ack floor.
* The ack floor (``adflr``, ``asflr``) is nats-server's in-memory floor: every delivery up to it
  is acked, or gone with a purge. Explicit acks: with nothing pending it is the delivery position
  (``dseq - 1``, ``sseq - 1``); otherwise it moves only when the ack is for the delivery right
  after it, up to just below the next message still pending. ``ack_policy`` ``all``: an ack
  above the floor sets it to that ack's consumer and stream sequences and clears everything
  pending up to it. An ack-wait check that finds nothing pending sets it to the delivery
  position.
* The reported floor (consumer info, the persisted state) is nats-server's consumer store floor:
  the same except after an ack-wait check that found nothing pending or an ``ack_policy``
  ``all`` ack of a sequence no longer pending, which move only the in-memory floor. Then
  ``_sflr`` holds the store floor, moved by the store's own rule (an ack of a still pending
  message), until both agree again (``_sflr`` None).
* Every delivery is recorded here (:meth:`AckTracker.track`): under ``ack_policy`` ``none`` it
  is its own ack (the floor follows it), otherwise it becomes (or, redelivered, refreshes) a
  pending ack with its deadline, and the ack-wait timer covers it.
* A pending message that leaves the stream by itself (limit, expiry, ``MSG.DELETE``) is acked
  as a ``+TERM`` with reason ``Unacknowledged message was deleted`` (:meth:`AckTracker.on_removed`);
  a purge drops pending acks below the consumer's new position without advisories
  (:meth:`AckTracker.on_purge`).
* Retention: on work-queue and interest streams an acked message is removed from the stream
  unless (interest) another consumer still needs it — also a late ack of a message given up at
  ``max_deliver``. Freed ``max_ack_pending`` room resumes delivery.
* ``sample_freq`` N%: plain acks and ``+NXT`` (not ``+TERM``, not under ``ack_policy`` ``all``)
  send the ``consumer_ack`` metric when nats-server's draw ``rand(100) <= N`` says so.
  Advisories and metrics go out only when someone listens.

:class:`AckTracker` owns this state (``pending``, ``rdc``, ``rdq``, the floors, the ack-wait
timer, the ack subscription) and writes it only in its own methods; the rest of the consumer
reads ``pending``, ``rdc``, ``rdq`` and the floors. It reaches its consumer through
:class:`AckHost`: the config, the clock, the bus and stream, the delivery position, and the
consumer's wake-up, state-change, activity and advisory hooks.
"""
from __future__ import annotations

from itertools import repeat
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from minijs.jetstream.config import consumer as C
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.headers import parse_go_duration

if TYPE_CHECKING:
    from minijs.clock import Clock, Timer
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.store.base import StoredMessage
    from minijs.jetstream.streams.stream import Stream


#: Go's int64 range: a JSON ``delay`` is a ``time.Duration``.
_INT64 = (-(1 << 63), (1 << 63) - 1)


def nak_delay(arg: bytes) -> int | None:
    """The delay of ``-NAK <arg>`` in ns as nats-server's ``processNak`` reads it, or None when
    it cannot (the NAK is then a plain one). ``{...}`` is JSON decoded into ``{"delay":
    <time.Duration>}``: an integer; the key in any case, the last one winning; missing or
    null is 0; a float, a string or a non-object fails. Anything else is a Go duration (``0``
    is one; a number without a unit is not)."""
    if arg[:1] == b"{":
        try:
            doc = J.parse_json(arg)
        except Exception:
            return None
        if not isinstance(doc, dict):
            return None
        value = 0
        for key, v in doc.items():
            if key.lower() != "delay" or v is None:
                continue
            if type(v) is not int or not _INT64[0] <= v <= _INT64[1]:
                return None
            value = v
        return value
    return parse_go_duration(arg.decode("utf-8", "replace"))


@runtime_checkable
class StateChanges(Protocol):
    """The consumer's durable state, as the ack path tells it of a change (its flags are read
    first, so an ack on a consumer that does not persist, or whose write is already scheduled
    this turn, costs no call)."""

    persist: bool
    scheduled: bool

    def changed(self) -> None: ...


@runtime_checkable
class AckHost(Protocol):
    """What the ack tracking needs of its consumer."""

    config: C.ConsumerConfig
    clock: "Clock"
    bus: "MessageBus"
    stream: "Stream"
    name: str
    closed: bool
    #: the delivery position (only read here): the next stream and consumer sequences
    sseq: int
    dseq: int
    #: the inactivity timer: an ack counts as activity while it runs
    delete_timer: "Timer | None"
    durable: StateChanges

    def wake(self) -> None:
        """Something may be deliverable now (ack-pending room freed, a redelivery due)."""

    def changed(self) -> None:
        """The persisted state changed."""

    def note_activity(self) -> None:
        """Activity for the inactivity threshold."""

    def confirm_ack(self, reply: bytes) -> None:
        """Answer an ack sent as a request, once the state it left is safe."""

    def next_request(self, reply: bytes, payload: bytes) -> None:
        """A ``MSG.NEXT`` request (``+NXT`` turns the ack's reply into one)."""

    def hold(self) -> None:
        """Hear of messages removed from the stream one by one (pending acks or delivery
        counts are held)."""

    def advise(self, what: str, event_type: str, fields: dict[str, Any]) -> None:
        """Send a ``$JS.EVENT.ADVISORY.CONSUMER.<what>`` advisory of this consumer."""


class AckTracker:
    """Pending acks of one consumer: ack handling, the ack wait timer, redelivery,
    ``max_deliver``, the ack floor and retention after acks."""

    def __init__(self, host: AckHost) -> None:
        self.host = host
        #: stream seq -> [consumer seq, ack deadline ns (0 while queued), timestamp ns]
        self.pending: dict[int, list[int]] = {}
        #: stream seq -> delivery count (missing: 1)
        self.rdc: dict[int, int] = {}
        #: stream seqs due for redelivery, in the order they became due
        self.rdq: list[int] = []
        self.adflr = 0
        self.asflr = 0
        self._sflr: list[int] | None = None  # the store's ack floor while it differs
        self.acked_at: int | None = None
        self.sample_freq = 0
        self._timer: Timer | None = None
        self._timer_at = 0
        self._sub: Any = None
        #: While a run of acks is routed here (:meth:`begin_run` to :meth:`end_run`): 1, or 2
        #: once an ack owes the consumer a wake-up, done once at the run's end; else 0.
        self._run = 0

    # ------------------------------------------------------------------ lifecycle

    def apply_config(self, cfg: C.ConsumerConfig) -> None:
        try:
            self.sample_freq = int(cfg.sample_freq.removesuffix("%")) if cfg.sample_freq else 0
        except ValueError:
            self.sample_freq = 0

    def start(self) -> None:
        """Subscribe to the consumer's acks (not under ack policy ``none``: nats-server then
        has no subscription, so an ack sent as a request gets the core 503)."""
        host = self.host
        if host.config.ack_policy != "none":
            subject = f"$JS.ACK.{host.stream.name}.{host.name}.>"
            self._sub = host.bus.subscribe_internal(subject, self.on_ack, run_receiver=self)

    def stop(self) -> None:
        """Cancel the ack-wait timer and drop the ack subscription."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sub is not None:
            self.host.bus.unsubscribe_internal(self._sub)
            self._sub = None

    def reset(self, seq: int) -> None:
        """``CONSUMER.RESET`` to stream sequence ``seq``: nothing pending, nothing counted,
        the floor just below ``seq``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.pending = {}
        self.rdc = {}
        self.rdq = []
        self.adflr, self.asflr = 0, seq - 1
        self._sflr = None
        self.acked_at = None

    def restore(self, adflr: int, asflr: int, pending: list[tuple[int, int, int]],
                rdc: dict[int, int]) -> None:
        """The persisted state (``pending``: stream seq, consumer seq, timestamp): deadlines
        from the timestamps, nothing queued for redelivery, and the first ack-wait check at
        once: nats-server checks pending acks when the consumer starts (``setLeader`` →
        ``checkPending``), so a message whose wait ran out while the server was down is
        queued right away and the others come due at their deadlines. (``applyState``'s
        0.5–1.5 s timer is replaced by that check's own before it fires.)"""
        host = self.host
        self.adflr, self.asflr = adflr, asflr
        restored: dict[int, list[int]] = {}
        for s, dseq, ts in pending:
            restored[s] = [dseq, max(ts + self.ack_wait(rdc.get(s, 1)), 1), ts]
            rdc.setdefault(s, 1)
        self.pending = restored
        self.rdc = rdc
        if restored and host.config.ack_policy != "none":
            self._arm()

    # ------------------------------------------------------------------ deliveries

    def track(self, seq: int, dseq: int, dc: int, now: int) -> None:
        """The consumer delivers stream ``seq`` as consumer ``dseq``, delivery count ``dc``
        (over 1: the head of ``rdq``), at ``now``. Under ack policy ``none`` the delivery is
        its own ack; otherwise it is pending until its deadline."""
        if dc > 1:
            self.rdq.pop(0)
        cfg = self.host.config
        if cfg.ack_policy == "none":
            self.adflr, self.asflr = dseq, seq
            return
        # [consumer seq, ack deadline (0 while queued for redelivery), timestamp]: the
        # timestamp is nats-server's Pending.Timestamp (delivery, WPI or NAK-delay time).
        # A redelivery keeps the original consumer sequence (nats-server trackPending):
        # the ack floor moves by it.
        backoff = cfg.backoff
        if backoff:  # ack_wait(dc), inlined
            deadline = now + backoff[min(dc - 1, len(backoff) - 1)]
        else:
            deadline = now + (cfg.ack_wait or C.DEFAULT_ACK_WAIT)
        pending = self.pending
        if dc > 1:
            p = pending.get(seq)
            if p is not None:
                p[1] = deadline
                p[2] = now
            else:
                pending[seq] = [dseq, deadline, now]
            self.rdc[seq] = dc
        else:
            pending[seq] = [dseq, deadline, now]
            # A first delivery counts 1, which is what rdc.get(seq, 1) answers: no entry.
            if self.rdc:
                self.rdc.pop(seq, None)
        if self._timer is None or self._timer_at > deadline:
            self._arm(deadline)

    def track_run(self, seqs: list[int], dseq: int, now: int) -> None:
        """:meth:`track` of first deliveries (delivery count 1) of stream ``seqs`` as consumer
        sequences ``dseq``, ``dseq + 1``, ... at ``now``, under an ack policy other than
        ``none``."""
        cfg = self.host.config
        backoff = cfg.backoff
        deadline = now + (backoff[0] if backoff else (cfg.ack_wait or C.DEFAULT_ACK_WAIT))
        pending = self.pending
        for seq in seqs:
            pending[seq] = [dseq, deadline, now]
            dseq += 1
        rdc = self.rdc
        if rdc:
            for seq in seqs:
                rdc.pop(seq, None)
        if self._timer is None or self._timer_at > deadline:
            self._arm(deadline)

    def track_fed(self, seq: int, dseq: int, deadline: int, now: int) -> None:
        """A mirror's or source's link read stream ``seq`` through this consumer (it delivers
        by reading the store): pending as consumer ``dseq`` until the link's own ack."""
        self.pending[seq] = [dseq, deadline, now]

    def next_redelivery(self) -> "tuple[StoredMessage, int] | None":
        """The first message due for redelivery and its delivery count, or None. On the way
        (nats-server ``getNextMsg``) one delivered ``max_deliver`` times is given up, and one
        removed from the stream meanwhile is acked as a ``+TERM``."""
        host = self.host
        store = host.stream.store
        max_deliver = host.config.max_deliver
        while self.rdq:
            seq = self.rdq[0]
            dc = self.rdc.get(seq, 1) + 1
            if max_deliver > 0 and dc > max_deliver:
                self.rdq.pop(0)
                if dc == max_deliver + 1:
                    self._advise_max_deliveries(seq, dc - 1)
                self._give_up(seq, dc)
                host.hold()
                continue
            sm = store.load(seq) if seq in self.pending else None
            if sm is None:
                self.rdq.pop(0)
                p = self.pending.get(seq)
                if p is not None:  # removed from the stream meanwhile: acked, as a +TERM
                    self._term_removed(seq, p[0], dc - 1)
                continue
            return sm, dc
        return None

    # ------------------------------------------------------------------ acks

    def take_run(self, subject: bytes, replies: list[bytes | None],
                 payloads: list[bytes]) -> bool:
        """Acks on one subject are not taken as a whole (see :meth:`begin_run`)."""
        return False

    def take_shared_run(self, subjects: list[bytes], replies: list[bytes | None],
                        payloads: list[bytes]) -> bool:
        """Take a run of a client's plain acks (one read's: empty bodies or ``+ACK``) as one
        step, with each ack's effects (:meth:`on_ack` and :meth:`ack`): an explicit-ack
        consumer of a limits stream, not sampling acks. The consumer's activity, the ack
        time and its wake-up come once, after the last (:meth:`begin_run` says why that is
        nats-server's order too). Otherwise it does nothing and returns False."""
        host = self.host
        if (host.config.ack_policy != "explicit" or self.sample_freq > 0
                or host.stream.config.retention != "limits"):
            return False
        if payloads.count(b"+ACK") + payloads.count(b"") != len(payloads):
            return False
        if (self._sflr is None and not self.rdc and not self.rdq
                and replies.count(None) == len(replies) and self._take_in_order(subjects)):
            return True
        pending = self.pending
        durable = host.durable
        acked = False
        for subject, reply in zip(subjects, replies):
            toks = subject.split(b".")
            n = len(toks)
            try:
                if n == 9:
                    sseq, dseq = int(toks[5]), int(toks[6])
                elif n >= 11:
                    sseq, dseq = int(toks[7]), int(toks[8])
                else:
                    continue
            except ValueError:
                continue
            p = pending.pop(sseq, None)
            if p is None:
                self._ack_not_pending(sseq)
            else:
                acked = True
                if self.rdc:
                    self.rdc.pop(sseq, None)
                if self.rdq and sseq in self.rdq:
                    self.rdq.remove(sseq)
                # as in ack(): the in-order case inlined
                if (pending and p[0] == self.adflr + 1
                        and (nxt := pending.get(sseq + 1)) is not None):
                    self.adflr, self.asflr = nxt[0] - 1, sseq
                else:
                    self._advance_floor(p[0], sseq)
                if self._sflr is not None:
                    self._store_floor_ack(p[0], sseq)
                if durable.persist and not durable.scheduled:
                    durable.changed()
            if reply:
                host.confirm_ack(reply)
        if host.delete_timer is not None:
            host.note_activity()
        if acked:
            self.acked_at = host.clock.time_ns()
            host.wake()
        return True

    def _take_in_order(self, subjects: list[bytes]) -> bool:
        """:meth:`take_shared_run` for its most common run, in one step: acks (9-token
        subjects, no replies) of consecutive stream sequences, all pending, whose consumer
        sequences run on from the ack floor without a gap (the deliveries right above it, in
        order, none redelivered). One by one, each would move the floor to itself; so the
        floor moves to the last as :meth:`ack` moves it. False (nothing done) for any other
        run."""
        n = len(subjects)
        tokens = b".".join(subjects).split(b".")
        if len(tokens) != 9 * n or list(map(bytes.count, subjects, repeat(b"."))).count(8) != n:
            return False
        try:
            seqs = list(map(int, tokens[5::9]))
        except ValueError:
            return False
        pending = self.pending
        first = seqs[0]
        if seqs != list(range(first, first + n)) or not all(map(pending.__contains__, seqs)):
            return False
        floor = self.adflr
        if [pending[seq][0] for seq in seqs] != list(range(floor + 1, floor + 1 + n)):
            return False
        last = pending[seqs[-1]]
        for seq in seqs:
            del pending[seq]
        # the last ack, as ack() applies it, the floor right below it
        self.adflr, self.asflr = last[0] - 1, seqs[-1] - 1
        if pending and (nxt := pending.get(seqs[-1] + 1)) is not None:
            self.adflr, self.asflr = nxt[0] - 1, seqs[-1]
        else:
            self._advance_floor(last[0], seqs[-1])
        host = self.host
        durable = host.durable
        if durable.persist and not durable.scheduled:
            durable.changed()
        if host.delete_timer is not None:
            host.note_activity()
        self.acked_at = host.clock.time_ns()
        host.wake()
        return True

    def begin_run(self) -> None:
        """A run of a client's acks (one read's, ``Router.publish_shared_run``) comes one
        by one to :meth:`on_ack`; the wake-up the acks owe the consumer (freed ack-pending
        room) comes once, after the last (:meth:`end_run`). nats-server's consumer delivers
        from its own loop, after the acks it has already read, so deliveries after the run's
        acks are among the orders it produces."""
        self._run = 1

    def end_run(self) -> None:
        owed = self._run == 2
        self._run = 0
        if owed and not self.host.closed:
            self.host.wake()

    def on_ack(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
               payload: bytes, origin: Any) -> None:
        """An ack on ``$JS.ACK.<stream>.<consumer>.>``."""
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
        host = self.host
        if host.delete_timer is not None:
            # Activity for the inactivity check, which is armed whenever it can matter:
            # reading the clock costs more than the ack.
            host.note_activity()
        if not payload or payload == b"+ACK":  # empty (nats-py), +ACK (the Go and C clients)
            self.ack(sseq, dseq, dc)
            if reply:
                host.confirm_ack(reply)
            return
        body = payload.strip()
        nxt: bytes | None = None
        if body in (b"", b"+ACK", b"+OK") or body.startswith(b"+ACK "):
            self.ack(sseq, dseq, dc)
        elif body.startswith(b"-NAK"):
            self._nak(sseq, body[4:].strip(), dseq, dc)
        elif body.startswith(b"+WPI"):
            self._progress(sseq)
        elif body.startswith(b"+TERM"):
            self.ack(sseq, dseq)
            self._advise_terminated(sseq, dseq, dc, body[5:].strip())
        elif body.startswith(b"+NXT"):
            self.ack(sseq, dseq, dc)
            nxt = body[4:].strip()
        if nxt is not None and reply:
            host.next_request(reply, nxt)
        elif reply:
            host.confirm_ack(reply)

    def ack(self, sseq: int, dseq: int, sample_dc: int = 0, wake: bool = True) -> None:
        """Apply an ack; ``sample_dc`` (the delivery count of the ack subject) asks for an
        ack metric sample (plain acks and +NXT on explicit-ack consumers, not +TERM);
        ``wake=False`` when called while choosing the next message (no delivery from here)."""
        host = self.host
        if host.config.ack_policy == "all":
            self.ack_all(sseq, dseq, wake)
            return
        pending = self.pending
        p = pending.pop(sseq, None)
        if p is None:
            self._ack_not_pending(sseq)
            return
        if sample_dc and self.sample_freq > 0:
            self._sample_ack(sseq, dseq, sample_dc, p[2])
        if self.rdc:
            self.rdc.pop(sseq, None)
        if self.rdq and sseq in self.rdq:
            self.rdq.remove(sseq)
        self.acked_at = host.clock.time_ns()
        # _advance_floor(p[0], sseq), with its most common case inlined: in-order acks, the
        # acked delivery right above the floor and the next sequence still pending.
        if pending and p[0] == self.adflr + 1 and (nxt := pending.get(sseq + 1)) is not None:
            self.adflr, self.asflr = nxt[0] - 1, sseq
        else:
            self._advance_floor(p[0], sseq)
        if self._sflr is not None:
            self._store_floor_ack(p[0], sseq)
        durable = host.durable
        if durable.persist and not durable.scheduled:  # host.changed()
            durable.changed()
        if host.stream.config.retention == "limits":  # _after_acks() has nothing to remove
            if wake:
                if self._run:
                    self._run = 2
                else:
                    host.wake()
        else:
            self._after_acks((sseq,), wake)

    def _ack_not_pending(self, sseq: int) -> None:
        """An explicit ack of a message not pending (acked before, or given up at
        max_deliver): nats-server forgets its delivery count, and a work-queue or interest
        stream may now drop it."""
        host = self.host
        if sseq >= host.sseq and not host.config.flow_control:
            return  # never delivered: ignored
        if self.rdc.pop(sseq, None) is not None:
            host.changed()
        if host.stream.config.retention != "limits":
            self._after_acks((sseq,))

    def ack_all(self, sseq: int, dseq: int, wake: bool = True) -> None:
        """``ack_policy`` ``all`` (nats-server ``processAckMsg``; also the flow-control acks
        of a mirror's or source's link): an ack above the floor sets the floor to its own
        consumer and stream sequences and clears everything pending up to it; the store floor
        follows only when the acked sequence was still pending."""
        host = self.host
        asflr = self.asflr
        if (sseq >= host.sseq and not host.config.flow_control) or dseq <= self.adflr \
                or sseq <= asflr:
            return
        pending = self.pending
        sflr = self._sflr if self._sflr is not None else [self.adflr, asflr]
        if dseq > sflr[0] and sseq in pending:
            sflr = [dseq, sseq]
        self.adflr, self.asflr = dseq, sseq
        self._sflr = None if sflr == [dseq, sseq] else sflr
        # nats-server walks whichever is shorter: the pending acks, or the sequences from the
        # ack down to the old floor (forgetting delivery counts on the way).
        done: list[int] = []
        if sseq - asflr > len(pending):
            done = [s for s in pending if s <= sseq]
            for s in done:
                del pending[s]
                self.rdc.pop(s, None)
        else:
            s = sseq
            while s > asflr and pending:
                if pending.pop(s, None) is not None:
                    done.append(s)
                self.rdc.pop(s, None)
                s -= 1
        if done and self.rdq:
            self.rdq = [s for s in self.rdq if s in pending]
        self.acked_at = host.clock.time_ns()
        host.changed()
        if sseq not in done:
            done.append(sseq)
        self._after_acks(sorted(done), wake)

    def _advance_floor(self, dseq: int, sseq: int) -> None:
        """nats-server's floor rule: everything acked → floor at the delivery position; else
        move only when the acked delivery is the one right after the floor."""
        pending = self.pending
        if not pending:
            host = self.host
            self.adflr, self.asflr = host.dseq - 1, host.sseq - 1
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
                self.adflr, self.asflr = pending[nxt][0] - 1, nxt - 1

    def _store_floor_ack(self, dseq: int, sseq: int) -> None:
        """The store floor's rule for an explicit ack of pending ``sseq`` (already removed from
        ``pending``) while it differs from the in-memory floor (nats-server ``UpdateAcks``)."""
        sflr = self._sflr
        assert sflr is not None
        if dseq <= sflr[0]:
            pass
        elif not self.pending:
            sflr[0], sflr[1] = self.host.dseq - 1, self.host.sseq - 1
        elif dseq == sflr[0] + 1:
            sflr[0], sflr[1] = dseq, sseq
            nxt = min((s for s in self.pending if s > sseq), default=0)
            if nxt:
                sflr[0], sflr[1] = self.pending[nxt][0] - 1, nxt - 1
        if sflr[0] == self.adflr and sflr[1] == self.asflr:
            self._sflr = None

    def reported_floor(self) -> tuple[int, int]:
        """The ack floor consumer info reports and the durable state keeps."""
        sflr = self._sflr
        return (self.adflr, self.asflr) if sflr is None else (sflr[0], sflr[1])

    # ------------------------------------------------------------------ retention after acks

    def _after_acks(self, seqs: list[int] | tuple[int, ...], wake: bool = True) -> None:
        """Retention: work queues drop acked messages; interest streams drop those no consumer
        still needs. Then freed ack-pending room may let deliveries resume."""
        stream = self.host.stream
        if stream.config.retention != "limits":
            store = stream.store
            for seq in seqs:
                subject = store.subject_for_seq(seq)
                if subject is not None:
                    self.remove_if_unneeded(seq, subject)
        if wake:
            if self._run:
                self._run = 2
            else:
                self.host.wake()

    def remove_if_unneeded(self, seq: int, subject: str) -> None:
        """An acked message leaves a work-queue or interest stream unless another consumer
        still needs it. Work queues too: a mirror's or source's consumer may still need it
        (nats-server ``ackMsg`` asks every consumer; other work-queue consumers never
        overlap)."""
        host = self.host
        stream = host.stream
        if stream.config.retention != "limits":
            for other in stream.signals.consumers_of(subject):
                if other is not host and other.needs(seq, subject):
                    return
        stream.remove_msg(seq, False)

    # ------------------------------------------------------------------ NAK and progress

    def _nak(self, sseq: int, arg: bytes, dseq: int = 0, dc: int = 0) -> None:
        """``processNak``: with a delay nats-server can parse (:func:`nak_delay`; ``0`` and
        ``{}`` are zero delays) the timestamp becomes now minus the configured ``ack_wait``
        plus the delay, so the message is due after the delay plus the difference between its
        own wait (its backoff step) and ``ack_wait``; without a delay, or with one that does
        not parse, it is due at once."""
        p = self.pending.get(sseq)
        if p is None:
            return
        host = self.host
        if dseq:
            if dseq <= self.adflr or dseq > host.dseq:
                return  # out of range (nats-server processNak)
            host.advise("MSG_NAKED", "advisory.v1.nak", {
                "stream": host.stream.name, "consumer": host.name, "consumer_seq": dseq,
                "stream_seq": sseq, "deliveries": dc})
        delay = nak_delay(arg) if arg else None
        if delay is not None:
            p[2] = host.clock.time_ns() - (host.config.ack_wait or C.DEFAULT_ACK_WAIT) + delay
            # Never 0 (that marks a message queued for redelivery); one already due is
            # queued by the check armed below.
            p[1] = max(p[2] + self.ack_wait(self.rdc.get(sseq, 1)), 1)
            host.changed()
            if sseq in self.rdq:
                self.rdq.remove(sseq)
            self._arm()
            return
        p[1] = 0
        self._queue_redelivery(sseq)
        host.wake()

    def _progress(self, sseq: int) -> None:
        p = self.pending.get(sseq)
        if p is None or sseq in self.rdq:
            return
        host = self.host
        p[2] = host.clock.time_ns()
        p[1] = p[2] + self.ack_wait(self.rdc.get(sseq, 1))
        host.changed()
        if self._timer is not None and self._timer_at < p[1]:
            return
        self._arm()

    # ------------------------------------------------------------------ ack wait / redelivery

    def ack_wait(self, dc: int) -> int:
        """How long delivery ``dc`` waits for its ack: ``backoff[dc - 1]`` (its last entry
        repeating), else ``ack_wait``."""
        cfg = self.host.config
        backoff = cfg.backoff
        if backoff:
            return backoff[min(dc - 1, len(backoff) - 1)]
        return cfg.ack_wait or C.DEFAULT_ACK_WAIT

    def latest_deadline(self) -> int:
        """The last ack deadline still running (0: none); the inactivity threshold of a pull
        consumer counts from it."""
        return max((p[1] for p in self.pending.values() if p[1] > 0), default=0)

    def _arm(self, deadline: int = 0) -> None:
        """Make sure a timer fires at the earliest ack deadline. ``deadline``: the one deadline
        that just changed (a delivery), so an armed timer due no later needs no scan."""
        if not self.pending:
            return
        if deadline and self._timer is not None and self._timer_at <= deadline:
            return
        due = [p[1] for s, p in self.pending.items() if p[1] > 0]
        if not due:
            return
        when = min(due)
        if self._timer is not None:
            if self._timer_at <= when:
                return
            self._timer.cancel()
        clock = self.host.clock
        delay = max(0.0, (when - clock.time_ns()) / 1e9)
        if not clock.virtual:
            # On real time a hair late rather than early (a loop timer may fire a little
            # before its due time, find nothing expired and re-arm); a virtual clock fires a
            # timer exactly when it is due, so advance(ack_wait) redelivers.
            delay += 0.001
        self._timer_at = when
        self._timer = clock.call_later(delay, self.check_pending)

    def waits_changed(self, ack_wait_changed: bool) -> None:
        """An update changed ``ack_wait`` or ``backoff``: every running deadline follows from
        its timestamp with the new waits (nats-server's ``checkPending`` reads the config each
        time). A changed ``ack_wait`` is checked 100 ms after the update (``updateConfig``
        resets the timer); a ``backoff`` change alone leaves the armed check where it is, so a
        shortened step is noticed only then, as on nats-server."""
        if not self.pending:
            return
        for seq, p in self.pending.items():
            if p[1] > 0:
                p[1] = max(p[2] + self.ack_wait(self.rdc.get(seq, 1)), 1)
        if ack_wait_changed:
            if self._timer is not None:
                self._timer.cancel()
            clock = self.host.clock
            self._timer_at = clock.time_ns() + 100_000_000
            self._timer = clock.call_later(0.1, self.check_pending)
        elif self._timer is None:
            self._arm()

    def check_pending(self) -> None:
        """Ack waits ran out (nats-server ``checkPending``): queue those messages for
        redelivery, in stream order; give up at once only what ``max_deliver`` 1 allows no
        second delivery of. With nothing pending the in-memory floor moves to the delivery
        position (the store floor stays)."""
        self._timer = None
        host = self.host
        if host.closed:
            return
        now = host.clock.time_ns()
        max_deliver = host.config.max_deliver
        expired = sorted(s for s, p in self.pending.items() if 0 < p[1] <= now)
        queued = False
        for seq in expired:
            if seq in self.rdq:
                continue
            # nats-server's deliveryCount() is its rdc (deliveries - 1), at least 1.
            count = self.rdc.get(seq, 1)
            ndc = max(count - 1, 1)
            if max_deliver > 0 and ndc >= max_deliver:
                if ndc == max_deliver:
                    self._advise_max_deliveries(seq, ndc)
                self._give_up(seq, ndc + 1)
                continue
            self.pending[seq][1] = 0  # no deadline while queued for redelivery
            self.rdq.append(seq)
            queued = True
        if self.pending:
            self._arm()
        else:
            self.rdq = []
            floor = (host.dseq - 1, host.sseq - 1)
            if (self.adflr, self.asflr) != floor:
                if self._sflr is None:
                    self._sflr = [self.adflr, self.asflr]
                self.adflr, self.asflr = floor
                if self._sflr == [self.adflr, self.asflr]:
                    self._sflr = None
        if queued:
            host.wake()

    def _queue_redelivery(self, seq: int) -> None:
        if seq not in self.rdq:
            self.rdq.append(seq)

    def redeliver_all(self) -> None:
        """Everything pending is due again now (the deliver subject changed: nats-server
        redelivers what was pending there)."""
        for seq, p in self.pending.items():
            p[1] = 0
            self._queue_redelivery(seq)

    def _give_up(self, seq: int, count: int) -> None:
        """``max_deliver`` reached: forget the pending ack (the message stays in the stream,
        its delivery count stays in ``rdc``); the ack floor does not move (nats-server
        2.15.1)."""
        self.rdc[seq] = count
        if self.pending.pop(seq, None) is not None:
            self.host.changed()

    def _term_removed(self, seq: int, dseq: int, dc: int, wake: bool = False) -> None:
        """A pending message left the stream (nats-server ``decStreamPending``): acked as a
        ``+TERM`` with the reason ``Unacknowledged message was deleted``."""
        self.ack(seq, dseq, 0, wake)
        self._advise_terminated(seq, dseq, dc, b"Unacknowledged message was deleted")

    # ------------------------------------------------------------------ messages leaving

    def on_removed(self, seqs: list[int]) -> bool:
        """Messages left the stream one by one: one still awaiting an ack is acked as a
        ``+TERM``; one given up at max_deliver forgets its delivery count. True when an ack
        freed room (the consumer may deliver again)."""
        pending, rdc = self.pending, self.rdc
        termed = False
        for seq in seqs:
            p = pending.get(seq)
            if p is not None:
                self._term_removed(seq, p[0], max(rdc.get(seq, 1) - 1, 1))
                termed = True
            elif rdc and rdc.pop(seq, None) is not None:
                self.host.changed()
        return termed

    def forget_below(self, first: int) -> None:
        """A purge left the stream starting at ``first``: delivery counts below it go (and
        their redeliveries)."""
        rdc = self.rdc
        if rdc:
            below = [s for s in rdc if s < first]
            for s in below:
                del rdc[s]
            if below and self.rdq:
                self.rdq = [s for s in self.rdq if s >= first]

    def on_purge(self, sseq: int, wider: bool) -> None:
        """The consumer's position moved to (at least) ``sseq`` by a purge (nats-server
        ``consumer.purge``): the ack floor moves to just below it, dropping pending acks
        under it (and, when the filter is wider than what was purged, of messages gone);
        with nothing pending the floor is the delivery position. The redelivery queue keeps
        only what is at or above the position: the rest waits for its ack wait again (from
        its last delivery)."""
        host = self.host
        pending = self.pending
        if self.asflr < sseq:
            self.asflr = sseq - 1
            store = host.stream.store
            for seq, p in list(pending.items()):
                if seq <= self.asflr or (wider and store.subject_for_seq(seq) is None):
                    if p[0] > self.adflr:
                        self.adflr = p[0]
                    del pending[seq]
                    self.rdc.pop(seq, None)
                    self.acked_at = host.clock.time_ns()  # acked as gone: ack activity
        if not pending:
            self.rdc = {}
            self.adflr, self.asflr = host.dseq - 1, host.sseq - 1
        if self.rdq:
            keep = [s for s in self.rdq if s >= host.sseq and s in pending]
            for s in self.rdq:
                q = pending.get(s)
                if q is not None and s not in keep:
                    q[1] = q[2] + self.ack_wait(self.rdc.get(s, 1))
            self.rdq = keep
            self._arm()
        self._sflr = None

    # ------------------------------------------------------------------ advisories and metrics

    def _advise_terminated(self, sseq: int, dseq: int, dc: int, reason: bytes) -> None:
        """``MSG_TERMINATED``: nats-server sends it for every +TERM, pending or not."""
        host = self.host
        fields: dict[str, Any] = {"stream": host.stream.name, "consumer": host.name,
                                  "consumer_seq": dseq, "stream_seq": sseq, "deliveries": dc}
        if reason:
            fields["reason"] = reason.decode("utf-8", "replace")
        host.advise("MSG_TERMINATED", "advisory.v1.terminated", fields)

    def _sample_ack(self, sseq: int, dseq: int, dc: int, ts: int) -> None:
        """``sample_freq``: an ack metric for this ack with probability N/100 (as nats-server
        draws it: ``rand(100) <= N``), only when someone subscribes."""
        freq = self.sample_freq
        host = self.host
        if freq < 100 and host.bus.randomness.child("ack-sampling").randrange(100) > freq:
            return
        now = host.clock.time_ns()
        stream = host.stream
        stream.engine.advisories.advise(
            f"$JS.EVENT.METRIC.CONSUMER.ACK.{stream.name}.{host.name}",
            "metric.v1.consumer_ack",
            {"stream": stream.name, "consumer": host.name, "consumer_seq": dseq,
             "stream_seq": sseq, "ack_time": now - ts, "deliveries": dc})

    def _advise_max_deliveries(self, seq: int, deliveries: int) -> None:
        host = self.host
        host.advise("MAX_DELIVERIES", "advisory.v1.max_deliver",
                    {"stream": host.stream.name, "consumer": host.name, "stream_seq": seq,
                     "deliveries": deliveries})

    def num_redelivered(self) -> int:
        if self.host.config.max_deliver == 1:
            return 0  # nats-server hides them: redeliveries are off
        return sum(1 for dc in self.rdc.values() if dc > 1)
