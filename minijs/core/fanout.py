"""The fan-out: which of the subscriptions a subject matched receive a message, and the
delivery to them.

nats-server's ``processMsgResults``: every live plain subscription gets a copy, except the
publisher's own when it connected with ``echo: false``; each queue group gives one copy to a
random live member (not the publisher's own without echo), drawn from the router's seeded
source (``queue_draw``). An internal subscription (no connection: a stream, the JetStream API,
a consumer's ack handler) is called with the message; a client's subscription queues it on its
connection.

Invariants:

* :func:`fan_out` is the walk every untraced delivery takes (``Router.publish``,
  ``Router.deliver_as_in``, the account links of ``minijs.core.imports``); every receiver,
  internal ones too, counts once in the router's ``out_msgs`` / ``out_bytes``;
* :func:`receivers` walks the same choice one receiver at a time, for the paths that record a
  trace event per receiver or deliver under other accounting (message tracing, trace events);
* a closed subscription never receives anything: it is skipped, not removed (its owner removes
  it from the index).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

if TYPE_CHECKING:
    from minijs.core.sublist import MatchResult, Subscription


class DeliveryStats(Protocol):
    """The counters a fan-out adds its deliveries to (the router's ``ServerStats``)."""

    out_msgs: int
    out_bytes: int


class FanOutHost(Protocol):
    """What a fan-out uses of the router: its counters and its queue-member draw (read
    only: a fan-out adds to the counters, never replaces them)."""

    @property
    def stats(self) -> DeliveryStats: ...

    @property
    def queue_draw(self) -> Callable[[int], int]:
        """``randrange(n)`` from the server's seeded source."""


def pick_member(members: list["Subscription"], origin: Any,
                draw: Callable[[int], int]) -> "Subscription | None":
    """One random live member of a queue group (not the publisher's own when its echo is off);
    ``draw(n)`` picks where the search starts. In a cluster a peer node's members (route
    subscriptions) are candidates like local ones: nats-server spreads a client's messages
    over every member cluster-wide."""
    n = len(members)
    start = draw(n) if n > 1 else 0
    for i in range(n):
        sub = members[(start + i) % n]
        if sub.closed:
            continue
        if sub.conn is not None and sub.conn is origin and not origin.echo:
            continue
        return sub
    return None


def fan_out(host: FanOutHost, result: "MatchResult", subject: bytes, reply: bytes | None,
            header: bytes | None, payload: bytes, origin: Any) -> int:
    """Deliver one message to the receivers in ``result`` (see the module docstring); returns
    how many received it. ``origin`` is the publishing connection (None for the server's own
    messages); internal handlers are given it."""
    sub: Subscription | None  # (an annotation: no code) a plain one, then a group's pick
    delivered = 0
    for sub in result.plain:
        if sub.closed:
            continue
        conn = sub.conn
        if conn is None:
            sub.callback(sub, subject, reply, header, payload, origin)
        elif conn is origin and not conn.echo:
            continue
        else:
            conn.deliver(sub, subject, reply, header, payload)
        delivered += 1
    groups = result.groups
    if groups:
        for members in groups.values():
            sub = pick_member(members, origin, host.queue_draw)
            if sub is None:
                continue
            if sub.conn is None:
                sub.callback(sub, subject, reply, header, payload, origin)
            else:
                sub.conn.deliver(sub, subject, reply, header, payload)
            delivered += 1
    if delivered:
        stats = host.stats
        stats.out_msgs += delivered
        stats.out_bytes += delivered * (len(payload) + (len(header) if header else 0))
    return delivered


def receivers(result: "MatchResult", origin: Any, draw: Callable[[int], int], *,
              with_own: bool = False) -> Iterator["Subscription"]:
    """The subscriptions :func:`fan_out` would deliver to, in its order: the live plain ones,
    then one member per queue group, picked as the walk reaches it (after the plain ones were
    handled, as in :func:`fan_out`). ``with_own`` keeps the publisher's own plain
    subscriptions that its ``echo: false`` excludes (a tracer records them as not delivered)."""
    sub: Subscription | None  # (an annotation: no code) a plain one, then a group's pick
    skip_own = not with_own and origin is not None and not origin.echo
    for sub in result.plain:
        if not sub.closed and not (skip_own and sub.conn is origin):
            yield sub
    for members in result.groups.values():
        sub = pick_member(members, origin, draw)
        if sub is not None:
            yield sub
