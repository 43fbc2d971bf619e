"""The one seam between the nodes of an in-process cluster: a simulated network.

Nodes never call each other. Each node attaches a receiver under its name, and every message
between nodes (route interest and routed messages, Raft votes, appends and snapshots, node
hellos) is handed to :meth:`Network.send`. The network delivers it to the receiver on a later
turn of the event loop, or, with a delay set, after that delay on the server clock. So what
real networks do to a cluster is a property of this object alone:

* a **partition** (:meth:`partition`) cuts the links between groups of nodes: messages sent
  across are lost, and both ends are told the link went down (as a route connection closes);
* a **down** node (:meth:`detach`: killed, crashed) has no links at all;
* a link **delay** holds each message on the clock; a **drop** fraction loses messages at
  random, drawn from the network's seeded source.

Invariants:

* messages on one link (one sender, one receiver) arrive in the order they were sent, or not at
  all; nothing is delivered to a node that is down, nor across a cut link: a message in flight
  when its link is cut is lost;
* a receiver runs on the event loop that owns the cluster, never inside ``send`` (no node ever
  runs inside another node's call stack);
* every link change is announced to both attached ends (``on_link(peer, up)``), in the order
  the changes happened, on a later loop turn; a link is up exactly when both nodes are
  attached and no partition separates them.

The messages are plain Python values; their meaning belongs to the layers that send them
(:mod:`minijs.core.routes`, :mod:`minijs.cluster.raft`). A transport between processes would
carry the same values encoded.
"""
from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from minijs.randomness import RandomSource

#: A receiver: ``receive(sender_name, message)``.
Receiver = Callable[[str, Any], None]


class NodeEndpoint(Protocol):
    """What a node attaches to the network."""

    def receive(self, sender: str, message: Any) -> None:
        """A message from ``sender``."""

    def on_link(self, peer: str, up: bool) -> None:
        """The link to ``peer`` came up or went down."""


class NetworkError(ValueError):
    """A network operation named something that is not there (the message names the fix)."""


class Network:
    """Links between named nodes, on one event loop and one clock."""

    def __init__(self, clock: Any, rng: RandomSource | random.Random | None = None) -> None:
        self.clock = clock
        self.rng = rng or random.Random(0)
        #: Every node ever registered, attached or not (names are fixed for a cluster).
        self.names: list[str] = []
        self._attached: dict[str, NodeEndpoint] = {}
        #: The groups of a partition: node name -> group index (empty: no partition).
        self._group: dict[str, int] = {}
        #: Per-link delay in seconds and drop fraction, by (sender, receiver).
        self._delay: dict[tuple[str, str], float] = {}
        self._drop: dict[tuple[str, str], float] = {}
        #: Links up now, as (a, b) with a < b.
        self._up: set[tuple[str, str]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Messages sent, delivered and lost (for inspection and benchmarks).
        self.sent = 0
        self.delivered = 0
        self.lost = 0

    # ------------------------------------------------------------------ membership

    def register(self, name: str) -> None:
        if name in self.names:
            raise NetworkError(f"node {name!r} is registered twice")
        self.names.append(name)

    def attach(self, name: str, endpoint: NodeEndpoint) -> None:
        """``name`` is up: its links to the other attached nodes come up (unless cut)."""
        self._check(name)
        self._loop = asyncio.get_running_loop()
        self._attached[name] = endpoint
        self._relink()

    def detach(self, name: str) -> None:
        """``name`` is down: every link of it goes down."""
        self._check(name)
        self._attached.pop(name, None)
        self._relink()

    def is_attached(self, name: str) -> bool:
        return name in self._attached

    # ------------------------------------------------------------------ faults

    def partition(self, *groups: list[str]) -> None:
        """Cut every link between nodes of different ``groups``; nodes not named form one more
        group of their own. A node may be named once only."""
        seen: dict[str, int] = {}
        for i, group in enumerate(groups):
            for name in group:
                self._check(name)
                if name in seen:
                    raise NetworkError(f"node {name!r} is named in more than one place of the "
                                       "partition; name each node once")
                seen[name] = i
        rest = len(groups)
        self._group = {name: seen.get(name, rest) for name in self.names}
        self._relink()

    def heal(self) -> None:
        """Undo :meth:`partition`: every link between attached nodes is up again."""
        self._group = {}
        self._relink()

    def set_delay(self, sender: str, receiver: str, seconds: float) -> None:
        self._check(sender)
        self._check(receiver)
        if seconds < 0:
            raise NetworkError("a delay cannot be negative")
        if seconds:
            self._delay[(sender, receiver)] = seconds
        else:
            self._delay.pop((sender, receiver), None)

    def set_drop(self, sender: str, receiver: str, fraction: float) -> None:
        self._check(sender)
        self._check(receiver)
        if not 0 <= fraction <= 1:
            raise NetworkError("a drop fraction is between 0 and 1")
        if fraction:
            self._drop[(sender, receiver)] = fraction
        else:
            self._drop.pop((sender, receiver), None)

    def clear_faults(self) -> None:
        self._delay.clear()
        self._drop.clear()
        self.heal()

    def reachable(self, a: str, b: str) -> bool:
        """Is the link between ``a`` and ``b`` up?"""
        return (a, b) in self._up or (b, a) in self._up

    def peers_of(self, name: str) -> list[str]:
        """The nodes ``name`` has a link to now, in registration order."""
        return [other for other in self.names if other != name and self.reachable(name, other)]

    # ------------------------------------------------------------------ sending

    def send(self, sender: str, receiver: str, message: Any) -> bool:
        """Hand ``message`` to the link; False when the link is down (it is lost)."""
        self.sent += 1
        if not self.reachable(sender, receiver):
            self.lost += 1
            return False
        key = (sender, receiver)
        if self._drop and self.rng.random() < self._drop.get(key, 0.0):
            self.lost += 1
            return True  # lost on the way: the sender cannot tell
        delay = self._delay.get(key) if self._delay else None
        if delay:
            self.clock.call_later(delay, self._deliver, sender, receiver, message)
        else:
            loop = self._loop or asyncio.get_running_loop()
            loop.call_soon(self._deliver, sender, receiver, message)
        return True

    def _deliver(self, sender: str, receiver: str, message: Any) -> None:
        endpoint = self._attached.get(receiver)
        if endpoint is None or not self.reachable(sender, receiver):
            self.lost += 1
            return
        self.delivered += 1
        endpoint.receive(sender, message)

    # ------------------------------------------------------------------ links

    def _check(self, name: str) -> None:
        if name not in self.names:
            known = ", ".join(self.names) or "none"
            raise NetworkError(f"unknown node {name!r} (the nodes are: {known})")

    def _relink(self) -> None:
        up: set[tuple[str, str]] = set()
        names = [n for n in self.names if n in self._attached]
        group = self._group
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                if not group or group.get(a) == group.get(b):
                    up.add((a, b))
        came, went = up - self._up, self._up - up
        self._up = up
        if not (came or went):
            return
        loop = self._loop or asyncio.get_running_loop()
        for a, b in sorted(went):
            loop.call_soon(self._announce, a, b, False)
        for a, b in sorted(came):
            loop.call_soon(self._announce, a, b, True)

    def _announce(self, a: str, b: str, up: bool) -> None:
        # Every change is announced, in order, even one undone since (a restart is a down
        # then an up): an endpoint drops what it knew of the peer on each.
        for here, there in ((a, b), (b, a)):
            endpoint = self._attached.get(here)
            if endpoint is not None:
                endpoint.on_link(there, up)
