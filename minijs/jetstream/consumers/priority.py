"""Priority groups (ADR-42): which waiting pull request may take a message under the consumer's
``priority_policy`` — nats-server's ``nextWaiting`` and the priority checks of
``processNextMsgRequest``.

A JSON ``MSG.NEXT`` body carries a :class:`~minijs.jetstream.consumers.pull.PriorityGroup`. The policies:

* ``none``: plain round-robin; a request may not use the fields another policy owns (400).
* ``overflow``: a request with ``min_pending`` / ``min_ack_pending`` stands by (cycled to the
  tail) until the consumer's pending count reaches the first or its ack-pending count the
  second.
* ``pinned_client``: one client at a time gets the messages. With nobody pinned, the head
  request without a pin id is pinned when a message is ready: a new NUID in ``pin_id``, its time
  in ``pinned_ts``, the ``PINNED`` advisory, and every delivery carries ``Nats-Pin-Id``.
  Requests without the id stand by; ones with another id end with ``423 Nats-Wrong-Pin-Id``
  (refused on arrival with ``423 Nats-Pin-Id mismatch``). The pin ends after
  ``priority_timeout`` without a request carrying its id (``UNPINNED``, reason ``timeout``) or
  by ``CONSUMER.UNPIN`` (reason ``admin``); the next delivery pins a client again.
* ``prioritized``: the waiting queue stays ordered by request ``priority`` (0 first, FIFO within
  one; plain-text requests, which name none, last).

Invariants:

* Under a policy every JSON request names one of the consumer's ``priority_groups`` (else
  400); a priority outside 0–9 is refused under every policy.
* At most one client is pinned per consumer. While the consumer is open, ``pin_id`` is set
  exactly when the pin's timer runs; a request carrying the pin id restarts it.
* A pin given to a request whose message then exceeds its byte budget is taken back at once
  (the ``PINNED`` advisory has gone out; no ``UNPINNED`` follows).

:class:`PriorityGroups` owns the pin (``pin_id``, ``pinned_ts``, its timer). It works on the
consumer's request queue only when the queue hands itself over (:class:`WaitQueue`), and
reaches its consumer through :class:`PriorityHost` (pending counts, the size of a delivery,
advisories, the wake-up).
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from minijs.jetstream.advisory import new_id
from minijs.jetstream.consumers.pull import PriorityGroup, PullRequest

if TYPE_CHECKING:
    from minijs.clock import Clock, Timer
    from minijs.jetstream.bus import MessageBus
    from minijs.jetstream.config.consumer import ConsumerConfig
    from minijs.jetstream.consumers.acks import AckTracker
    from minijs.jetstream.store.base import StoredMessage
    from minijs.jetstream.streams.stream import Stream


@runtime_checkable
class PriorityHost(Protocol):
    """What the priority groups need of their consumer."""

    config: "ConsumerConfig"
    clock: "Clock"
    bus: "MessageBus"
    stream: "Stream"
    name: str
    closed: bool
    #: read for the ack-pending count (``overflow``'s ``min_ack_pending``)
    acks: "AckTracker"

    def num_pending(self) -> int: ...

    def delivery_size(self, subject: bytes, sm: "StoredMessage", dc: int, hdr: bytes | None,
                      data: bytes) -> int: ...

    def advise(self, what: str, event_type: str, fields: dict[str, Any]) -> None: ...

    def wake(self) -> None: ...


@runtime_checkable
class WaitQueue(Protocol):
    """The consumer's queue of waiting pull requests, as a choice works on it."""

    waiting: deque[PullRequest]

    def end_head(self, wr: PullRequest, code: int, text: str) -> None: ...

    def finish(self, wr: PullRequest) -> None: ...


class PriorityGroups:
    """The ``priority_policy`` of one consumer: request checks, prioritized ordering,
    overflow thresholds and the pinned client."""

    def __init__(self, host: PriorityHost) -> None:
        self.host = host
        #: the pinned client's id ("": nobody pinned), when it was pinned, the pin's timer
        self.pin_id = ""
        self.pinned_ts = 0
        self.pin_timer: Timer | None = None

    def check(self, pg: PriorityGroup) -> tuple[int, str] | None:
        """``processNextMsgRequest``'s priority-group checks, in its order: fields another
        policy owns, the priority range, then (for a consumer with a policy) the group and,
        while a client is pinned, the pin id — a matching id restarts the pin's timer."""
        cfg = self.host.config
        policy = cfg.priority_policy
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
        if pg.group not in (cfg.priority_groups or ()):
            return 400, "Bad Request - Invalid Priority Group"
        if self.pin_id:
            if pg.id == self.pin_id:
                self._set_pin_timer(pg.group)
            elif pg.id:
                return 423, "Nats-Pin-Id mismatch"
        return None

    def insert(self, waiting: deque[PullRequest], wr: PullRequest) -> None:
        """``prioritized``: the queue stays ordered by priority (0 first), FIFO within one."""
        prio = wr.priority
        i = len(waiting)
        while i > 0 and waiting[i - 1].priority > prio:
            i -= 1
        waiting.insert(i, wr)

    def choose(self, queue: WaitQueue, sm: "StoredMessage", dc: int, subject: bytes,
               hdr: bytes | None, data: bytes) -> tuple[PullRequest, int] | None:
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
        host = self.host
        waiting = queue.waiting
        policy = host.config.priority_policy
        need_pin = policy == "pinned_client" and not self.pin_id
        has_interest = host.bus.has_interest
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
                    queue.end_head(wr, 423, "Nats-Wrong-Pin-Id")
                    continue
            elif self.pin_id and not (pg is not None and pg.id == self.pin_id):
                if pg is not None and pg.id:
                    queue.end_head(wr, 423, "Nats-Wrong-Pin-Id")
                    continue
                waiting.rotate(-1)  # standby while another client is pinned
                cycled += 1
                if cycled >= len(waiting):
                    return None
                continue
            if (policy == "overflow" and pg is not None
                    and (pg.min_pending > 0 or pg.min_ack_pending > 0)):
                # nats-server compares with its pending count before a *new* message is taken.
                npc = host.num_pending() + (1 if dc > 1 else 0)
                if not ((0 < pg.min_pending <= npc)
                        or (0 < pg.min_ack_pending <= len(host.acks.pending))):
                    waiting.rotate(-1)
                    cycled += 1
                    if cycled >= len(waiting):
                        return None
                    continue
            if wr.b > 0:
                if size < 0:
                    size = host.delivery_size(subject, sm, dc, hdr, data)
                if size > wr.b:
                    queue.end_head(wr, 409, "Message Size Exceeds MaxBytes")
                    if assigned:
                        self._unassign_pin()
                    continue
            if has_interest(wr.reply):
                return wr, max(size, 0)
            queue.finish(wr)
        return None

    def unpin(self, group: str) -> None:
        """``CONSUMER.UNPIN``: drop the pin (if any) and announce the group unpinned by an
        administrator; the next delivery pins a new client."""
        self._unassign_pin()
        self._advise_unpinned(group, "admin")
        self.host.wake()

    def stop(self) -> None:
        """The consumer stops: the pin's timer goes."""
        if self.pin_timer is not None:
            self.pin_timer.cancel()
            self.pin_timer = None

    def _assign_pin(self, wr: PullRequest) -> bool:
        """Pin the client behind ``wr`` (a request naming a group): a new NUID, its time, the
        ``priority_timeout`` timer and the PINNED advisory. The request now carries the id."""
        pg = wr.pg
        if pg is None or not pg.group:
            return False
        host = self.host
        self.pin_id = new_id(host.bus)
        self.pinned_ts = host.clock.time_ns()
        pg.id = self.pin_id
        self._set_pin_timer(pg.group)
        host.advise("PINNED", "advisory.v1.consumer_group_pinned", {
            "account": host.stream.engine.account_name, "stream": host.stream.name,
            "consumer": host.name, "group": pg.group, "pinned_id": self.pin_id})
        return True

    def _unassign_pin(self) -> None:
        self.pin_id = ""
        self.pinned_ts = 0
        self.stop()

    def _set_pin_timer(self, group: str) -> None:
        """(Re)start the pin's ``priority_timeout``: the pinned client keeps its pin while it
        sends requests with its id at least that often."""
        if self.pin_timer is not None:
            self.pin_timer.cancel()
        host = self.host
        self.pin_timer = host.clock.call_later(host.config.priority_timeout / 1e9,
                                               self._pin_expired, group)

    def _pin_expired(self, group: str) -> None:
        self.pin_timer = None
        if self.host.closed or not self.pin_id:
            return
        self._unassign_pin()
        self._advise_unpinned(group, "timeout")
        self.host.wake()

    def _advise_unpinned(self, group: str, reason: str) -> None:
        host = self.host
        host.advise("UNPINNED", "advisory.v1.consumer_group_unpinned", {
            "account": host.stream.engine.account_name, "stream": host.stream.name,
            "consumer": host.name, "group": group, "reason": reason})
