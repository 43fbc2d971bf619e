"""Push delivery: a consumer with a ``deliver_subject`` sends its messages there, as
nats-server's ``deliverMsg`` does, while someone listens.

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

:class:`PushDelivery` owns the deliver subject's binding, the flow-control window, the idle
heartbeat and the rate limit, and writes them only in its own methods. A consumer without a
``deliver_subject`` has none. It reaches its consumer through :class:`PushHost` (the next
message, its commit, the ack-pending room, pause and replay, the inactivity timer).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from minijs.protocol import wire

if TYPE_CHECKING:
    from minijs.clock import Clock, Timer
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.config.consumer import ConsumerConfig
    from minijs.jetstream.consumers.acks import AckTracker
    from minijs.jetstream.store.base import StoredMessage
    from minijs.jetstream.streams.stream import Stream

#: Flow control: the largest window (nats-server ``maxFlowControl``); a consumer starts at 1/16.
MAX_FLOW_CONTROL = 32 * 1024 * 1024
_FC_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


@runtime_checkable
class PushHost(Protocol):
    """What push delivery needs of its consumer."""

    config: "ConsumerConfig"
    clock: "Clock"
    bus: "MessageBus"
    stream: "Stream"
    name: str
    closed: bool
    #: a mirror's or source's link reading the store for this consumer (push stays idle)
    feeder: Any
    #: read for the ack-pending room (``pending``, ``rdq``)
    acks: "AckTracker"
    #: replay ``original`` still spaces deliveries
    replaying: bool

    def peek(self) -> "tuple[StoredMessage, int] | None": ...

    def payload(self, sm: "StoredMessage") -> tuple[bytes | None, bytes]: ...

    def delivery_size(self, subject: bytes, sm: "StoredMessage", dc: int, hdr: bytes | None,
                      data: bytes) -> int: ...

    def deliver(self, reply: bytes, subject: bytes, hdr: bytes | None, data: bytes,
                sm: "StoredMessage", dc: int) -> None: ...

    def peek_run(self, limit: int) -> "list[StoredMessage]": ...

    def deliver_run(self, reply: bytes, sms: "list[StoredMessage]") -> None: ...

    def is_paused(self) -> bool: ...

    def replay_hold(self, ts: int) -> bool: ...

    def replay_done(self) -> None: ...

    def last_delivered_headers(self) -> list[tuple[str, str]]: ...

    def want_wake(self) -> None: ...

    def start_delete_timer(self) -> None:
        """Interest went: the inactivity threshold starts counting."""

    def stop_delete_timer(self) -> None:
        """Interest came back."""


class PushDelivery:
    """Delivery of one consumer to its deliver subject: interest, flow control, idle
    heartbeats and the rate limit."""

    def __init__(self, host: PushHost) -> None:
        self.host = host
        #: the bound deliver subject (b"" until started) and the group watched with it
        self.dsubj = b""
        self._dgroup: bytes | None = None
        self._watch: Any = None
        #: an exact-subject subscription exists on the deliver subject
        self.active = False
        self._pushing = False
        self._hb_timer: Timer | None = None
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
        self._rl_timer: Timer | None = None

    # ------------------------------------------------------------------ lifecycle

    def apply_config(self, cfg: "ConsumerConfig") -> None:
        """The rate limit of ``cfg`` (a token bucket that keeps its tokens across updates)."""
        if cfg.rate_limit_bps > 0:
            host = self.host
            self._rl_rate = cfg.rate_limit_bps / 8
            mms = host.stream.config.max_msg_size
            self._rl_burst = mms if mms > 0 else host.bus.config.max_payload
            if not self._rl_at:
                self._rl_tokens = float(self._rl_burst)
                self._rl_at = host.clock.monotonic()
        else:
            self._rl_rate = 0.0

    def start(self) -> None:
        """Flow control's subscription, the deliver subject's watch, the idle heartbeat."""
        host = self.host
        cfg = host.config
        if cfg.flow_control:
            self.maxpb = MAX_FLOW_CONTROL // 16
            self._fc_sub = host.bus.subscribe_internal(
                f"$JS.FC.{host.stream.name}.{host.name}.*", self._on_flow_control)
        self._bind()
        if cfg.idle_heartbeat > 0:
            clock = host.clock
            self._last_out = clock.monotonic()
            self._hb_timer = clock.call_later(cfg.idle_heartbeat / 1e9, self._idle_heartbeat)

    def rebind(self) -> None:
        """The deliver subject changed: watch the new one (nats-server re-watches it)."""
        if self._watch is not None:
            self.host.bus.unwatch_interest(self._watch)
            self._watch = None
        self._bind()

    def stop(self) -> None:
        for name in ("_hb_timer", "_rl_timer"):
            timer = getattr(self, name)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)
        bus = self.host.bus
        if self._fc_sub is not None:
            bus.unsubscribe_internal(self._fc_sub)
            self._fc_sub = None
        if self._watch is not None:
            bus.unwatch_interest(self._watch)
            self._watch = None

    def _bind(self) -> None:
        """Watch the deliver subject (with the deliver group as it is now: like nats-server's
        sublist notification, a later deliver_group update does not change what is watched)."""
        host = self.host
        cfg = host.config
        bus = host.bus
        self.dsubj = cfg.deliver_subject.encode()
        self._dgroup = cfg.deliver_group.encode() if cfg.deliver_group else None
        self._watch = bus.watch_interest(self.dsubj, self._interest_changed)
        self.active = bus.has_exact_interest(self.dsubj, self._dgroup)
        if not self.active:
            host.start_delete_timer()
        else:
            host.want_wake()

    def _interest_changed(self) -> None:
        """``updateDeliveryInterest``: a subscription on the deliver subject came or went."""
        host = self.host
        if host.closed or not self.dsubj:
            return
        interest = host.bus.has_exact_interest(self.dsubj, self._dgroup)
        was = self.active
        self.active = interest
        if interest:
            host.stop_delete_timer()
            host.want_wake()
            if not was:
                self.push()
        else:
            host.start_delete_timer()

    # ------------------------------------------------------------------ delivery

    def push(self) -> None:
        """Deliver to the deliver subject while there is interest, nothing pauses it, flow
        control has room and the rate limit allows."""
        host = self.host
        if not self.dsubj or self._pushing or host.feeder is not None:
            return  # (a feeder: a mirror's or source's link delivers by reading the store)
        self._pushing = True
        try:
            acks = host.acks
            # Runs of deliveries: without byte accounting (flow control's window, the rate
            # limit) or headers_only, whose checks go message by message.
            runs = (self.maxpb <= 0 and self._rl_rate <= 0 and not host.config.headers_only)
            while not host.closed and self.active:
                cfg = host.config
                if self.maxpb > 0 and self.pbytes > self.maxpb:
                    break
                if self._rl_timer is not None or (cfg.pause_until and host.is_paused()):
                    break
                # No room under max_ack_pending and nothing due for redelivery: peek would
                # say None (checked first here, as every ack wakes this loop).
                if (0 < cfg.max_ack_pending <= len(acks.pending) and not acks.rdq
                        and cfg.ack_policy != "none"):
                    break
                if runs and not host.replaying:
                    # the next first deliveries, room allowing, go as one run
                    run = host.peek_run(1 << 30)  # (as many as it takes)
                    if run:
                        host.deliver_run(self.dsubj, run)
                        if self._hb_timer is not None:
                            self._last_out = host.clock.monotonic()
                        continue
                nxt = host.peek()
                if nxt is None:
                    break
                sm, dc = nxt
                subject = sm.subject.encode()
                if cfg.headers_only:
                    hdr, data = host.payload(sm)
                else:
                    hdr, data = sm.hdr, sm.data
                size = 0
                if self.maxpb > 0 or self._rl_rate > 0:
                    size = host.delivery_size(self.dsubj, sm, dc, hdr, data)
                if host.replaying and host.replay_hold(sm.ts):
                    break
                if self._rl_rate > 0:
                    wait = self._rate_wait(size)
                    if wait > 0:
                        self._rl_timer = host.clock.call_later(wait, self._rate_ready)
                        break
                host.deliver(self.dsubj, subject, hdr, data, sm, dc)
                if self._hb_timer is not None:  # idle heartbeats: the only reader of _last_out
                    self._last_out = host.clock.monotonic()
                if self.maxpb > 0:
                    self.pbytes += size
                    if not self.fcid and self.pbytes > self.maxpb // 2:
                        self._send_flow_control()
                    elif self.fcid and self.pbytes - self.fcsz >= self.maxpb:
                        self.fcsz += size
            if host.replaying:
                host.replay_done()
        finally:
            self._pushing = False

    def _rate_wait(self, size: int) -> float:
        """Token bucket of ``rate_limit_bps / 8`` bytes a second (burst = the max message
        size): take ``size`` now and return 0, or return how long until it can be taken."""
        now = self.host.clock.monotonic()
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
        if not self.host.closed:
            self.push()

    def _idle_heartbeat(self) -> None:
        """Every ``idle_heartbeat`` without a delivery: ``100 Idle Heartbeat`` with the last
        consumer and stream sequences, and ``Nats-Consumer-Stalled`` while an FC request is
        unanswered (only while the consumer is active)."""
        self._hb_timer = None
        host = self.host
        if host.closed:
            return
        clock = host.clock
        hb = host.config.idle_heartbeat / 1e9
        idle = clock.monotonic() - self._last_out
        if idle < hb - 1e-6:
            self._hb_timer = clock.call_later(hb - idle, self._idle_heartbeat)
            return
        if self.active:
            pairs = host.last_delivered_headers()
            if self.fcid:
                pairs.append(("Nats-Consumer-Stalled", self.fcid))
            host.bus.publish(self.dsubj, None,
                             wire.status_header(100, "Idle Heartbeat", pairs), b"")
        self._last_out = clock.monotonic()
        self._hb_timer = clock.call_later(hb, self._idle_heartbeat)

    def _send_flow_control(self) -> None:
        host = self.host
        suffix = host.bus.randomness.child("flow-control").text(_FC_ALPHABET, 4)
        self.fcid = f"$JS.FC.{host.stream.name}.{host.name}.{suffix}"
        self.fcsz = self.pbytes
        host.bus.publish(self.dsubj, self.fcid.encode(),
                         wire.status_header(100, "FlowControl Request"), b"")

    def _on_flow_control(self, sub: Any, subject: bytes, reply: bytes | None, hdr: bytes | None,
                         payload: bytes, origin: Any) -> None:
        """``processFlowControl``: only the latest request counts; it frees what it covered and
        doubles the window (up to 32 MiB)."""
        if self.host.closed or subject.decode("utf-8", "replace") != self.fcid:
            return
        if self.maxpb < MAX_FLOW_CONTROL:
            self.maxpb = min(self.maxpb * 2, MAX_FLOW_CONTROL)
        self.pbytes = max(0, self.pbytes - self.fcsz)
        self.fcid, self.fcsz = "", 0
        self.push()
