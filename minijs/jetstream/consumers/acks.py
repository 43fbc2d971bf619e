"""Acks and redelivery (reference ``jetstream-behavior.md`` §5): what a consumer owes, when it
delivers again, and how its ack floor moves — as nats-server's ``processAck``, ``processNak``,
``checkPending`` and ack floor rules do.

Acks arrive on the consumer's own subscription ``$JS.ACK.<stream>.<consumer>.>`` (only when the
ack policy is not ``none``), as replies to the ack subject each delivery carries:
``…<delivery count>.<stream seq>.<consumer seq>.<timestamp>.<pending>`` (9 tokens, or 11 and
more with a domain and account hash; anything else is ignored). The body says what to do:

* empty, ``+ACK`` or ``+OK``: acked (``ack_policy`` ``all``: every pending message up to it);
* ``-NAK`` [a Go duration or ``{"delay": ns}``]: deliver again at once, or after the delay;
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
* The ack deadline is the delivery time plus ``backoff[delivery count - 1]`` (its last entry
  repeating), else ``ack_wait``. One timer runs for the earliest deadline (``_ack_timer_at``,
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
* A pending message that leaves the stream by itself (limit, expiry, ``MSG.DELETE``) is acked
  as a ``+TERM`` with reason ``Unacknowledged message was deleted`` (``_term_removed``, called
  by the consumer's ``on_removed``); a purge drops pending acks below the consumer's new
  position without advisories (the consumer's ``_purge``).
* Retention: on work-queue and interest streams an acked message is removed from the stream
  unless (interest) another consumer still needs it — also a late ack of a message given up at
  ``max_deliver``. Freed ``max_ack_pending`` room resumes delivery.
* ``sample_freq`` N%: plain acks and ``+NXT`` (not ``+TERM``, not under ``ack_policy`` ``all``)
  send the ``consumer_ack`` metric when nats-server's draw ``rand(100) <= N`` says so.
  Advisories and metrics go out only when someone listens.
"""
from __future__ import annotations

from typing import Any

from minijs.jetstream.config import consumer as C
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.headers import parse_go_duration


class AckTracking:
    """Pending acks of a :class:`~minijs.jetstream.consumers.consumer.Consumer`: ack handling, the ack
    wait timer, redelivery, ``max_deliver``, the ack floor and retention after acks."""

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
        if self._dtimer is not None:
            # Activity for the inactivity check (the only reader of _last_request), which is
            # armed whenever it can matter: reading the clock costs more than the ack.
            self._last_request = self.clock.monotonic()
        if not payload or payload == b"+ACK":  # empty (nats-py), +ACK (the Go and C clients)
            self._ack(sseq, dseq, dc)
            if reply:
                self._confirm(reply)
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
            self._confirm(reply)

    def _confirm(self, reply: bytes) -> None:
        """Answer an ack sent as a request (``ack_sync``): at once on a memory consumer; on a
        durable one only after the commit that carries the state the ack left (the state is
        written at the end of this turn and committed with the stream's next grouped flush)."""
        if not self._persist:
            self.server.publish(reply, None, None, b"")
            return
        self._ack_replies.append(reply)
        if not self._save_scheduled:
            self._schedule_save()

    def _ack(self, sseq: int, dseq: int, sample_dc: int = 0, wake: bool = True) -> None:
        """Apply an ack; ``sample_dc`` (the delivery count of the ack subject) asks for an
        ack metric sample (plain acks and +NXT on explicit-ack consumers, not +TERM);
        ``wake=False`` when called while choosing the next message (no delivery from here)."""
        policy = self.config.ack_policy
        if policy == "all":
            self._ack_all(sseq, dseq, wake)
            return
        pending = self.pending
        p = pending.pop(sseq, None)
        if p is None:
            self._ack_not_pending(sseq)
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
        if self._sflr is not None:
            self._store_floor_ack(p[0], sseq)
        if self._persist and not self._save_scheduled:  # _changed()
            self._schedule_save()
        if self.stream.config.retention == "limits":  # _after_acks() has nothing to remove
            if wake:  # _wake(), inlined
                if self._dsubj:
                    self._push()
                elif self.waiting:
                    self._dispatch()
        else:
            self._after_acks((sseq,), wake)

    def _ack_not_pending(self, sseq: int) -> None:
        """An explicit ack of a message not pending (acked before, or given up at
        max_deliver): nats-server forgets its delivery count, and a work-queue or interest
        stream may now drop it."""
        if sseq >= self.sseq and not self.config.flow_control:
            return  # never delivered: ignored
        if self.rdc.pop(sseq, None) is not None:
            self._changed()
        if self.stream.config.retention != "limits":
            self._after_acks((sseq,))

    def _ack_all(self, sseq: int, dseq: int, wake: bool = True) -> None:
        """``ack_policy`` ``all`` (nats-server ``processAckMsg``): an ack above the floor sets
        the floor to its own consumer and stream sequences and clears everything pending up to
        it; the store floor follows only when the acked sequence was still pending."""
        asflr = self.asflr
        if (sseq >= self.sseq and not self.config.flow_control) or dseq <= self.adflr \
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
        self.acked_at = self.clock.time_ns()
        self._changed()
        if sseq not in done:
            done.append(sseq)
        self._after_acks(sorted(done), wake)

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

    def _store_floor_ack(self, dseq: int, sseq: int) -> None:
        """The store floor's rule for an explicit ack of pending ``sseq`` (already removed from
        ``pending``) while it differs from the in-memory floor (nats-server ``UpdateAcks``)."""
        sflr = self._sflr
        if dseq <= sflr[0]:
            pass
        elif not self.pending:
            sflr[0], sflr[1] = self.dseq - 1, self.sseq - 1
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
        retention = self.stream.config.retention
        if retention != "limits":
            store = self.stream.store
            for seq in seqs:
                subject = store.subject_for_seq(seq)
                if subject is not None:
                    self._maybe_remove(seq, subject)
        if wake:
            self._wake()

    def _maybe_remove(self, seq: int, subject: str) -> None:
        # Work queues too: a mirror's or source's consumer may still need it (nats-server
        # ackMsg asks every consumer; other work-queue consumers never overlap).
        stream = self.stream
        if stream.config.retention != "limits":
            for other in stream.signals.consumers_of(subject):
                if other is not self and other.needs(seq, subject):
                    return
        stream.remove_msg(seq, False)

    def needs(self, seq: int, subject: str) -> bool:
        """Does this consumer still have to deliver or see an ack for ``seq``?"""
        if not self.matches(subject):
            return False
        # A message given up at max_deliver stays until acked (its rdc entry), as in
        # nats-server's needAck.
        return (seq >= self.sseq or seq in self.pending or seq in self._lps
                or seq in self.rdc)

    # ------------------------------------------------------------------ NAK and progress

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

    # ------------------------------------------------------------------ ack wait / redelivery

    def _ack_wait(self, dc: int) -> int:
        backoff = self.config.backoff
        if backoff:
            return backoff[min(dc - 1, len(backoff) - 1)]
        return self.config.ack_wait or C.DEFAULT_ACK_WAIT

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
        delay = max(0.0, (when - self.clock.time_ns()) / 1e9)
        if not getattr(self.clock, "virtual", False):
            # On real time a hair late rather than early (a loop timer may fire a little
            # before its due time, find nothing expired and re-arm); a virtual clock fires a
            # timer exactly when it is due, so advance(ack_wait) redelivers.
            delay += 0.001
        self._ack_timer_at = when
        self._ack_timer = self.clock.call_later(delay, self._check_pending)

    def _check_pending(self) -> None:
        """Ack waits ran out (nats-server ``checkPending``): queue those messages for
        redelivery, in stream order; give up at once only what ``max_deliver`` 1 allows no
        second delivery of. With nothing pending the in-memory floor moves to the delivery
        position (the store floor stays)."""
        self._ack_timer = None
        if self.closed:
            return
        now = self.clock.time_ns()
        max_deliver = self.config.max_deliver
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
            self._arm_ack_timer()
        else:
            self.rdq = []
            floor = (self.dseq - 1, self.sseq - 1)
            if (self.adflr, self.asflr) != floor:
                if self._sflr is None:
                    self._sflr = [self.adflr, self.asflr]
                self.adflr, self.asflr = floor
                if self._sflr == [self.adflr, self.asflr]:
                    self._sflr = None
        if queued:
            self._wake()

    def _queue_redelivery(self, seq: int) -> None:
        if seq not in self.rdq:
            self.rdq.append(seq)

    def _give_up(self, seq: int, count: int) -> None:
        """``max_deliver`` reached: forget the pending ack (the message stays in the stream,
        its delivery count stays in ``rdc``); the ack floor does not move (nats-server
        2.15.1)."""
        self.rdc[seq] = count
        if self.pending.pop(seq, None) is not None:
            self._changed()

    def _term_removed(self, seq: int, dseq: int, dc: int, wake: bool = False) -> None:
        """A pending message left the stream (nats-server ``decStreamPending``): acked as a
        ``+TERM`` with the reason ``Unacknowledged message was deleted``."""
        self._ack(seq, dseq, 0, wake)
        self._advise_terminated(seq, dseq, dc, b"Unacknowledged message was deleted")

    # ------------------------------------------------------------------ advisories and metrics

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
        if freq < 100 and self.server.randomness.child("ack-sampling").randrange(100) > freq:
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

    def num_redelivered(self) -> int:
        if self.config.max_deliver == 1:
            return 0  # nats-server hides them: redeliveries are off
        return sum(1 for dc in self.rdc.values() if dc > 1)
