"""Push delivery (reference ``jetstream-behavior.md`` §6): a consumer with a ``deliver_subject``
sends its messages there, as nats-server does, while someone listens.

* Interest: the deliver subject is watched with the ``deliver_group`` it had when bound (like
  nats-server's sublist notification, a later ``deliver_group`` update does not change what is
  watched). ``active`` is true while a subscription on exactly that subject and group exists;
  delivery stops when it goes and resumes when it comes back, and without one for
  ``inactive_threshold`` the consumer is removed.
* Flow control (``flow_control``): the window ``maxpb`` starts at 1/16 of
  :data:`MAX_FLOW_CONTROL`. Once the delivered bytes not yet covered by an answered request
  (``pbytes``) pass half the window, ``100 FlowControl Request`` goes out with the reply subject
  ``$JS.FC.<stream>.<consumer>.<4 random characters>`` (``fcid``); delivery stops while
  ``pbytes`` is over the window. Only the answer to the latest request counts: it frees the
  bytes that request covered (``fcsz``) and doubles the window, up to 32 MiB.
* Idle heartbeats (``idle_heartbeat``): after each such interval without a delivery,
  ``100 Idle Heartbeat`` with the last consumer and stream sequences, plus
  ``Nats-Consumer-Stalled: <fcid>`` while a flow-control request is unanswered; sent only while
  the consumer is active.
* Rate limit (``rate_limit_bps``): a token bucket of ``rate_limit_bps / 8`` bytes a second whose
  burst is the stream's max message size (else the server's max payload); a message that does
  not fit waits for a timer.

Invariants:

* Delivery runs in one loop that never re-enters itself (``_pushing``). It sends only while the
  consumer is open, active and not paused, within the flow-control window, the rate limit and
  replay timing, and stops at the first that says no; whatever lifts the stop (interest back,
  the flow-control answer, the rate or replay timer, the end of a pause) starts it again.
* Flow control and the rate limit count a message as nats-server does: deliver subject, ack
  reply subject, headers and data.
"""
from __future__ import annotations

from typing import Any

from minijs.protocol import wire

#: Flow control: the largest window (nats-server ``maxFlowControl``); a consumer starts at 1/16.
MAX_FLOW_CONTROL = 32 * 1024 * 1024
_FC_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


class PushDelivery:
    """Delivery of a :class:`~minijs.jetstream.consumers.consumer.Consumer` to its deliver subject:
    interest, flow control, idle heartbeats and the rate limit."""

    @property
    def is_push(self) -> bool:
        return bool(self._dsubj)

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
        elif self._lazy:
            self._want_wake()

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
            if self._lazy:
                self._want_wake()
            if not was:
                self._push()
        else:
            self._start_delete_timer()

    def _push(self) -> None:
        """Deliver to the deliver subject while there is interest, nothing pauses it, flow
        control has room and the rate limit allows."""
        if not self._dsubj or self._pushing or self._feeder is not None:
            return  # (a feeder: a mirror's or source's link delivers by reading the store)
        self._pushing = True
        try:
            while not self.closed and self.active:
                cfg = self.config
                if self.maxpb > 0 and self.pbytes > self.maxpb:
                    break
                if self._rl_timer is not None or (cfg.pause_until and self.is_paused()):
                    break
                # No room under max_ack_pending and nothing due for redelivery: _peek would
                # say None (checked first here, as every ack wakes this loop).
                if (0 < cfg.max_ack_pending <= len(self.pending) and not self.rdq
                        and cfg.ack_policy != "none"):
                    break
                nxt = self._peek()
                if nxt is None:
                    break
                sm, dc = nxt
                subject = sm.subject.encode()
                if cfg.headers_only:
                    hdr, data = self._payload(sm)
                else:
                    hdr, data = sm.hdr, sm.data
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
                if self._hb_timer is not None:  # idle heartbeats: the only reader of _last_out
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

    def _rate_ready(self) -> None:
        self._rl_timer = None
        if not self.closed:
            self._push()

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
            self.server.publish(self._dsubj, None,
                                wire.status_header(100, "Idle Heartbeat", pairs), b"")
        self._last_out = self.clock.monotonic()
        self._hb_timer = self.clock.call_later(hb, self._idle_heartbeat)

    def _send_flow_control(self) -> None:
        suffix = self.server.randomness.child("flow-control").text(_FC_ALPHABET, 4)
        self.fcid = f"$JS.FC.{self.stream.name}.{self.name}.{suffix}"
        self.fcsz = self.pbytes
        self.server.publish(self._dsubj, self.fcid.encode(),
                            wire.status_header(100, "FlowControl Request"), b"")

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
