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
answers instead). An ack counts as activity for the inactivity threshold of a pull consumer.

Invariants:

* ``pending`` maps each delivered, unacked stream sequence to ``[consumer seq, ack deadline ns,
  timestamp ns]``; the consumer sequence is the first delivery's (a redelivery keeps it), the
  timestamp nats-server's ``Pending.Timestamp`` (delivery, ``+WPI`` or NAK-delay time). The
  deadline is 0 exactly while the message waits in ``rdq``.
* ``rdq`` holds stream sequences in ``pending`` due for redelivery, ascending and without
  repeats; they are served before new messages, oldest first.
* ``rdc`` holds delivery counts of pending messages; a missing entry counts 1.
* The ack deadline is the delivery time plus ``backoff[delivery count - 1]`` (its last entry
  repeating), else ``ack_wait``. One timer runs for the earliest deadline (``_ack_timer_at``,
  never later than it; firing early only re-arms): expired messages are queued for
  redelivery, or, once delivered ``max_deliver`` times, dropped from ``pending`` with the
  ``MAX_DELIVERIES`` advisory (the message stays in the stream).
* The ack floor (``adflr``, ``asflr``): every delivery up to it is acked or given up. With
  nothing pending it is the delivery position (``dseq - 1``, ``sseq - 1``); otherwise it moves
  only when the ack is for the delivery right after it, up to just below the next message
  still pending.
* Retention: on work-queue and interest streams an acked message is removed from the stream
  unless (interest) another consumer still needs it. Freed ``max_ack_pending`` room resumes
  delivery.
* ``sample_freq`` N%: plain acks and ``+NXT`` (not ``+TERM``, not under ``ack_policy`` ``all``)
  send the ``consumer_ack`` metric when nats-server's draw ``rand(100) <= N`` says so.
  Advisories and metrics go out only when someone listens.
"""
from __future__ import annotations

import bisect
import random
from typing import Any

from minijs.jetstream import consumer_config as C
from minijs.jetstream import jsonfmt as J


class AckTracking:
    """Pending acks of a :class:`~minijs.jetstream.consumer.Consumer`: ack handling, the ack
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

    # ------------------------------------------------------------------ retention after acks

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

    def num_redelivered(self) -> int:
        return sum(1 for dc in self.rdc.values() if dc > 1)
