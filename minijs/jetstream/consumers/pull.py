"""Pull requests: ``CONSUMER.MSG.NEXT`` bodies, the queue of waiting requests and the dispatch
of messages to them, as nats-server's ``processNextMsgRequest``, ``processWaiting`` and
``getNextMsg`` serve them.

A request body is decoded as nats-server's ``nextReqFromMsg`` does (:func:`parse_next_request`)
and then, in ``processNextMsgRequest``'s order, refused at once or queued:

* ``409 Consumer is push based``; ``400 Bad Request - <why>`` for a body that does not decode
  (or asks for a heartbeat over half its expiry); ``409 Exceeded MaxRequestBatch of N``,
  ``409 Exceeded MaxRequestExpires of D``, ``409 Exceeded MaxRequestMaxBytes of N`` against the
  consumer's limits; the priority-group checks (400 / 423);
* a ``no_wait`` request hears ``404 No Messages`` when nothing is available and it has no
  expiry, and ``408 Requests Pending`` when the waiting requests already claim more than is
  available;
* a full queue (``max_waiting``, after dropping requests nobody listens to) answers
  ``409 Exceeded MaxWaiting`` — silently for a request with a heartbeat, as nats-server does.

Invariants:

* ``waiting`` holds the requests that still want a message, FIFO (ordered by priority, FIFO
  within one, under ``prioritized``), never more than ``max_waiting`` of them. A request with
  ``batch`` ≤ 0 still wants one message. Under ``prioritized`` a new request is served at the
  end of the read that brought it, once the requests that came with it are queued (as
  nats-server takes them in together); other policies serve it at once.
* A request leaves ``waiting`` exactly once, and its timers are cancelled as it leaves: batch
  done (``409 Batch Completed`` when it still had byte budget left), ``expires`` reached
  (``408 Request Timeout``; a request past its expiry on the clock never takes a message, even
  when its timer has not fired yet), the next message over its byte budget (``409 Message Size Exceeds
  MaxBytes``), a ``no_wait`` request once the stream has nothing left (``404 No Messages``
  when it got something or cannot wait), its reply subject lost interest (silently), the
  consumer deleted (``409 Consumer Deleted``) or stopped (silently). Every status that ends
  a request with something still owed carries ``Nats-Pending-Messages`` and
  ``Nats-Pending-Bytes``.
* Dispatch is round-robin: the head request takes one message and goes to the tail; nothing is
  dispatched while the consumer is paused. A message's size against a byte budget is what
  nats-server counts: subject, ack reply subject, headers and data.
* A request with ``idle_heartbeat`` hears ``100 Idle Heartbeat`` (last consumer and stream
  sequences) after each such interval without a delivery to it.

:class:`PullRequests` owns the queue (``waiting``) and writes it only in its own methods. It
reaches its consumer through :class:`PullHost` (the next message comes from the consumer's
``peek`` and is committed by its ``deliver``; pending counts, pause and replay timing are the
consumer's) and, under a priority policy, asks the consumer's priority groups
(:class:`RequestChooser`) which request takes a message.
"""
from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, runtime_checkable

from minijs.jetstream import headers as H
from minijs.jetstream import jsonfmt as J
from minijs.protocol import wire

if TYPE_CHECKING:
    from minijs.clock import Clock
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.config.consumer import ConsumerConfig
    from minijs.jetstream.consumers.acks import AckTracker
    from minijs.jetstream.store.base import StoredMessage

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

    __slots__ = ("b", "deadline", "delivered", "expires", "hb", "hb_timer", "max_bytes", "n",
                 "no_wait", "pg", "reply", "timer")

    def __init__(self, reply: bytes, batch: int, max_bytes: int, no_wait: bool, expires: int,
                 hb: int, pg: PriorityGroup | None = None) -> None:
        self.reply = reply
        self.n = batch
        self.max_bytes = max_bytes
        self.b = max_bytes
        self.no_wait = no_wait
        self.expires = expires
        self.deadline = 0.0  # clock.monotonic() at which it expires (0: never)
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


@runtime_checkable
class PullHost(Protocol):
    """What the request queue needs of its consumer."""

    config: "ConsumerConfig"
    clock: "Clock"
    bus: "MessageBus"
    closed: bool
    #: read for the redeliveries due (``rdq``)
    acks: "AckTracker"
    #: replay ``original`` still spaces deliveries
    replaying: bool

    def peek(self) -> "tuple[StoredMessage, int] | None":
        """The next message to deliver and its delivery count, not committed."""

    def payload(self, sm: "StoredMessage") -> tuple[bytes | None, bytes]:
        """Headers and data of a delivery of ``sm`` (``headers_only``)."""

    def delivery_size(self, subject: bytes, sm: "StoredMessage", dc: int, hdr: bytes | None,
                      data: bytes) -> int:
        """What a delivery of ``sm`` counts against a byte budget."""

    def deliver(self, reply: bytes, subject: bytes, hdr: bytes | None, data: bytes,
                sm: "StoredMessage", dc: int) -> None:
        """Commit the delivery of ``sm`` and send it to ``reply``."""

    def peek_run(self, limit: int) -> "list[StoredMessage]":
        """Up to ``limit`` next first deliveries that may go as one run (or none)."""

    def deliver_run(self, reply: bytes, sms: "list[StoredMessage]") -> None:
        """Commit the deliveries of ``sms`` and send them to ``reply``, in order."""

    def is_paused(self) -> bool: ...

    def num_pending(self) -> int: ...

    def replay_hold(self, ts: int) -> bool:
        """Must the message stored at ``ts`` wait (replay ``original``)?"""

    def replay_done(self) -> None:
        """A dispatch ended: replay may be over for good."""

    def note_activity(self) -> None:
        """A request arrived (activity for the inactivity threshold)."""

    def want_wake(self) -> None:
        """Be woken by new messages (an unfiltered consumer that may deliver now)."""

    def last_delivered_headers(self) -> list[tuple[str, str]]: ...


@runtime_checkable
class RequestChooser(Protocol):
    """The consumer's priority groups, as the queue uses them."""

    #: the pinned client's id ("": none), carried by every delivery under ``pinned_client``
    pin_id: str

    def check(self, pg: PriorityGroup) -> tuple[int, str] | None:
        """A request's priority-group fields: None, or the status refusing it."""

    def insert(self, waiting: "deque[PullRequest]", wr: PullRequest) -> None:
        """Queue ``wr`` in priority order (``prioritized``)."""

    def choose(self, queue: "PullRequests", sm: "StoredMessage", dc: int, subject: bytes,
               hdr: bytes | None, data: bytes) -> tuple[PullRequest, int] | None:
        """The request that takes ``sm`` (moved to the head of the queue) and its size."""


class PullRequests:
    """The ``MSG.NEXT`` requests of one consumer: queueing, expiry, heartbeats and the
    dispatch of messages to them."""

    def __init__(self, host: PullHost, chooser: RequestChooser) -> None:
        self.host = host
        self.chooser = chooser
        #: the requests that still want a message (see the module's invariants)
        self.waiting: deque[PullRequest] = deque()
        #: a dispatch is scheduled for the end of the current read (``prioritized`` only)
        self._dispatch_soon = False

    def next_request(self, reply: bytes, payload: bytes) -> None:
        """``processNextMsgRequest``: reject, answer at once, or queue the request."""
        host = self.host
        if host.closed:
            return
        cfg = host.config
        if cfg.deliver_subject:
            self._send(reply, _status(409, "Consumer is push based"))
            return
        host.note_activity()
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
            problem = self.chooser.check(pg)
            if problem:
                code, text = problem
                self._send(reply, _status(code, text))
                return
        if len(self.waiting) >= cfg.max_waiting:
            self.prune()
        if no_wait:
            available = host.num_pending() + len(host.acks.rdq)
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
        if expires < 0:
            # A negative expires is a deadline already past: nats-server queues the request
            # and its expiry check answers 408 at once, before any message is taken.
            self._send(reply, _status(408, "Request Timeout", wr.pending_headers()))
            return
        clock = host.clock
        if expires > 0:
            wr.deadline = clock.monotonic() + expires / 1e9
            wr.timer = clock.call_later(expires / 1e9, self._expire_request, wr)
        if hb > 0:
            wr.hb_timer = clock.call_later(hb / 1e9, self._heartbeat, wr)
        host.want_wake()
        if cfg.priority_policy == "prioritized":
            self.chooser.insert(self.waiting, wr)
            # nats-server's consumer takes in every request that arrived together
            # (processInboundNextMsgReqs) before it hands out a message: the dispatch waits
            # for the end of this read, so the best priority among them is served first.
            if not self._dispatch_soon:
                self._dispatch_soon = True
                asyncio.get_running_loop().call_soon(self._dispatch_queued)
            return
        self.waiting.append(wr)
        self.dispatch()

    def _dispatch_queued(self) -> None:
        self._dispatch_soon = False
        if not self.host.closed:
            self.dispatch()

    def prune(self) -> None:
        """``processWaiting``: end requests past their expiry (408) and drop those nobody
        listens to any more (their reply subject lost interest)."""
        self._expire_overdue()
        has_interest = self.host.bus.has_interest
        keep: deque[PullRequest] = deque()
        for wr in self.waiting:
            if has_interest(wr.reply):
                keep.append(wr)
            else:
                wr.cancel()
        self.waiting = keep

    def _expire_overdue(self) -> None:
        """End the requests whose expiry has passed even if their timer has not fired yet (a
        busy loop runs timers late): like nats-server, a request past its expiry never takes
        a message and is answered ``408 Request Timeout``."""
        waiting = self.waiting
        if not waiting:
            return
        now = self.host.clock.monotonic()
        for wr in waiting:
            if wr.deadline and now >= wr.deadline:
                break
        else:
            return
        for wr in [w for w in waiting if w.deadline and now >= w.deadline]:
            self._expire_request(wr)

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
        host = self.host
        if host.closed or wr not in self.waiting:
            return
        self._send(wr.reply, _status(100, "Idle Heartbeat", host.last_delivered_headers()))
        wr.hb_timer = host.clock.call_later(wr.hb / 1e9, self._heartbeat, wr)

    def finish(self, wr: PullRequest) -> None:
        """Remove the head request ``wr`` (it got its batch or ended)."""
        self.waiting.popleft()
        wr.cancel()

    def wake(self) -> None:
        """Something may be deliverable now: serve the waiting requests, if any."""
        if self.waiting:
            self.dispatch()

    def dispatch(self) -> None:
        """Hand available messages to waiting requests, head first, round-robin (priority
        order for ``prioritized``; the pinned client only for ``pinned_client``)."""
        host = self.host
        if host.is_paused():
            return
        self._expire_overdue()
        has_interest = host.bus.has_interest
        waiting = self.waiting
        cfg = host.config
        policy = cfg.priority_policy
        plain = policy == "none"
        pinned = policy == "pinned_client"
        prioritized = policy == "prioritized"
        headers_only = cfg.headers_only
        runs = plain and not headers_only
        chooser = self.chooser
        while waiting and not host.closed:
            wr = waiting[0]
            if not has_interest(wr.reply):
                self.finish(wr)
                continue
            if runs and wr.n > 1 and wr.b == 0 and len(waiting) == 1 and not host.replaying:
                # One request waiting for several messages: the first deliveries it can
                # take go as one run (what the steps below do for each of them).
                run = host.peek_run(wr.n)
                if run:
                    host.deliver_run(wr.reply, run)
                    wr.n -= len(run)
                    wr.delivered += len(run)
                    if wr.hb_timer is not None:
                        wr.hb_timer.cancel()
                        wr.hb_timer = host.clock.call_later(wr.hb / 1e9, self._heartbeat, wr)
                    if wr.n <= 0:
                        self.finish(wr)
                    continue
            nxt = host.peek()
            if nxt is None:
                break
            sm, dc = nxt
            subject = sm.subject.encode()
            if headers_only:
                hdr, data = host.payload(sm)
            else:
                hdr, data = sm.hdr, sm.data
            size = 0
            if plain:
                # The head request takes it (its interest was just checked), budget allowing.
                if wr.b > 0:
                    size = host.delivery_size(subject, sm, dc, hdr, data)
                    if size > wr.b:
                        self.end_head(wr, 409, "Message Size Exceeds MaxBytes")
                        continue
            else:
                chosen = chooser.choose(self, sm, dc, subject, hdr, data)
                if chosen is None:
                    break
                wr, size = chosen
            if host.replaying and host.replay_hold(sm.ts):
                break
            if wr.b > 0:
                wr.b -= size
                if wr.b == 0:
                    wr.n = 1  # the budget is spent: this delivery ends the request
            if pinned:
                hdr = H.append(hdr, [("Nats-Pin-Id", chooser.pin_id)])
            host.deliver(wr.reply, subject, hdr, data, sm, dc)
            wr.n -= 1
            wr.delivered += 1
            if wr.hb_timer is not None:
                wr.hb_timer.cancel()
                wr.hb_timer = host.clock.call_later(wr.hb / 1e9, self._heartbeat, wr)
            if wr.n > 0:
                if len(waiting) > 1:  # (alone, it stays the head)
                    if prioritized:
                        waiting.popleft()
                        chooser.insert(waiting, wr)
                    else:
                        waiting.rotate(-1)
            else:
                self.finish(wr)
                if wr.b > 0:
                    self._send(wr.reply, _status(409, "Batch Completed", wr.pending_headers()))
        if host.replaying:
            host.replay_done()
        if waiting and not host.closed and not host.acks.rdq and host.num_pending() == 0:
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

    def end_head(self, wr: PullRequest, code: int, text: str) -> None:
        """End the head request with a status carrying what it still wanted."""
        self.finish(wr)
        self._send(wr.reply, _status(code, text, wr.pending_headers()))

    def _send(self, reply: bytes, hdr: bytes) -> None:
        self.host.bus.publish(reply, None, hdr, b"")

    def signal_shutdown(self) -> None:
        """Server shutdown (``signalPullConsumers``): each waiting request's reply subject
        hears ``409 Server Shutdown`` with what it still wanted (once per subject)."""
        told: set[bytes] = set()
        for wr in self.waiting:
            if wr.reply not in told:
                told.add(wr.reply)
                self._send(wr.reply, _status(409, "Server Shutdown", wr.pending_headers()))

    def end_all(self, code: int, text: str) -> None:
        """The consumer is deleted: every waiting request hears ``code text``."""
        for wr in self.waiting:
            wr.cancel()
            self._send(wr.reply, _status(code, text))
        self.waiting.clear()

    def stop(self) -> None:
        """The consumer stops: waiting requests end silently."""
        for wr in self.waiting:
            wr.cancel()
        self.waiting.clear()
