"""Routes: core NATS across the nodes of a cluster, as nats-server's routes carry it.

Each node's router keeps the interest of every other node as **route subscriptions** in its own
sublists (one per account), owned by a :class:`RouteConn` standing for that peer, exactly as
nats-server keeps a route's subscriptions. So every question the router already answers about
interest (a publish's receivers, no-responders, a push consumer's deliver-subject watchers,
``has_interest``) takes the whole cluster into account with no change. A message published on
this node reaches a route subscription like any other; the peer's :class:`RouteConn` collects
what one message owes that peer (once for all its plain subscriptions, plus the names of the
queue groups whose member it was picked as) and sends it when the router flushes its output.

The node protocol (messages handed to the cluster's network, see
:mod:`minijs.cluster.network`; names after nats-server's route protocol):

* ``("INFO", fields)`` — who the sender is (``name``, ``id``, ``client_url``, ``cluster``):
  sent on every link-up, before the sender's interest;
* ``("RS+", account, subject, queue)`` / ``("RS-", account, subject, queue)`` — the sender's
  interest in ``subject`` (in ``queue``, or None) began or ended; sent only when the count of
  local subscriptions with that subject and queue goes from 0 to 1 or from 1 to 0;
* ``("RMSG", account, subject, reply, header, payload, queues, target)`` — a message for the
  receiver's local subscribers: every plain subscription matching ``target`` (the routing
  subject: a consumer delivery is routed by its deliver subject while its ``subject`` names the
  stored subject; None means ``subject``), and one member of each group in ``queues``.

Invariants:

* a message crosses at most one route (a node never forwards what it received from a peer),
  and a peer receives it at most once per publish;
* a queue group takes each message once cluster-wide: the publisher's node picks one member
  among its own and its peers' (a peer's route subscription stands for its members); a peer
  picked is sent the group's name and picks one of its own;
* interest a node advertises is exactly its live local subscriptions (client and internal, but
  not those marked ``local_only`` and not route subscriptions); on every link-up a node sends
  its whole interest again and the receiver replaces what it had of that peer; on link-down the
  peer's route subscriptions are removed.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from minijs.core.sublist import Subscription

#: Send a node-protocol message to a peer: ``send(peer, message)``.
Send = Callable[[str, Any], bool]


class RouteConn:
    """A peer node as this node's sublists see it: the owner of that peer's route
    subscriptions. The router's publish loops hand it deliveries like a client connection;
    it sends each message once per publish, with the queue groups it was picked for."""

    is_route = True
    echo = True
    closed = False
    no_responders = False
    cid = 0
    name = ""

    def __init__(self, routes: "Routes", peer: str) -> None:
        self.routes = routes
        self.peer = peer
        self.name = peer
        #: What this peer said of itself (``INFO``).
        self.info: dict[str, Any] = {}
        #: Its route subscriptions: (account, subject, queue) -> Subscription.
        self.subs: dict[tuple[str, bytes, bytes | None], Subscription] = {}
        #: Messages owed to the peer, sent at the router's next flush: [gen, account, subject,
        #: reply, header, payload, queues, target].
        self._out: list[list[Any]] = []
        self.in_msgs = self.out_msgs = self.in_bytes = self.out_bytes = 0
        router = routes.router
        #: The link's id in ``/routez`` (nats-server numbers routes and clients from one
        #: sequence), when it came up and when a message last crossed it (server clock).
        self.rid = router.allocate_id()
        self.start = self.last_activity = router.clock.time()

    # -- the connection face the router's publish loops use

    def deliver(self, sub: Subscription, subject: bytes, reply: bytes | None,
                header: bytes | None, payload: bytes) -> None:
        routes = self.routes
        gen = routes.gen
        out = self._out
        last = out[-1] if out else None
        if last is None or last[0] != gen:
            last = [gen, sub.account, subject, reply, header, payload, [], routes.target]
            out.append(last)
            if len(out) == 1:
                routes.router.mark_dirty(self)
        if sub.queue is not None:
            last[6].append(sub.queue)

    def flush(self) -> None:
        out, self._out = self._out, []
        send = self.routes.send
        if out:
            self.last_activity = self.routes.router.clock.time()
        for _, account, subject, reply, header, payload, queues, target in out:
            self.out_msgs += 1
            self.out_bytes += len(payload) + (len(header) if header else 0)
            send(self.peer, ("RMSG", account, subject, reply, header, payload,
                             tuple(queues), target))

    def pending_bytes(self) -> int:
        return 0


class Routes:
    """One node's routes: its interest told to the peers, theirs kept as route subscriptions,
    messages forwarded and received."""

    def __init__(self, router: Any, name: str, cluster_name: str, send: Send,
                 hello: Callable[[], dict[str, Any]]) -> None:
        self.router = router
        self.name = name
        #: The cluster's name (INFO's ``cluster``).
        self.cluster_name = cluster_name
        self.send = send
        self._hello = hello
        #: Peers with a link up, by name.
        self.peers: dict[str, RouteConn] = {}
        #: Local interest counts: (account, subject, queue) -> live local subscriptions.
        self._counts: dict[tuple[str, bytes, bytes | None], int] = {}
        #: Bumped by the router before each message it routes, so a peer's deliveries of one
        #: message are told apart from the next one's (their bytes may be the same objects).
        self.gen = 0
        #: The routing subject of the message being routed when it differs from its subject.
        self.target: bytes | None = None
        #: Called after a peer's link and INFO change (connect_urls, async INFO to clients).
        self.on_peers_changed: Callable[[], None] | None = None
        #: What a JetStream ``num_replicas > 1`` refusal adds where the nodes do not replicate
        #: (processes joined by routes, :mod:`minijs.core.route_transport`); empty otherwise.
        self.replicas_hint = ""

    def connect_urls(self) -> list[str]:
        """INFO's ``connect_urls``: this node's client address, then each linked peer's (a
        node that listens on every interface has one per address: ``client_urls``, which may
        be empty: a node that never had a peer lists none, as nats-server)."""
        hello = self._hello()
        urls = list(hello["client_urls"] if "client_urls" in hello else [hello["client_url"]])
        for conn in self.peers.values():
            info = conn.info
            for url in info.get("client_urls") or [info.get("client_url")]:
                if url and url not in urls:
                    urls.append(url)
        return urls

    def varz(self) -> dict[str, Any]:
        """``/varz``'s ``cluster`` section (an in-process node has no route port)."""
        return {"name": self.cluster_name}

    def route_records(self) -> list[dict[str, Any]]:
        """What ``/routez`` shows of each peer with a link up (raw values, the fields of
        :meth:`minijs.core.route_transport.RouteTransport.route_records`): one route per peer
        (the simulated network's link has no pool and no route port); every node of an
        in-process cluster is configured with the others."""
        out = []
        for conn in self.peers.values():
            info = conn.info
            host = str(info.get("client_url") or "").rsplit(":", 1)[0].strip("[]")
            out.append({
                "rid": conn.rid, "remote_id": info.get("id", ""),
                "remote_name": info.get("name", conn.peer), "did_solicit": True,
                "is_configured": True, "ip": host, "port": 0, "start": conn.start,
                "last_activity": conn.last_activity, "rtt": 0.0, "pending_size": 0,
                "in_msgs": conn.in_msgs, "out_msgs": conn.out_msgs, "in_bytes": conn.in_bytes,
                "out_bytes": conn.out_bytes, "subs": list(conn.subs), "account": "",
            })
        return out

    # ------------------------------------------------------------------ local interest

    def interest_changed(self, account: str, sub: Subscription, delta: int) -> None:
        """A local subscription of ``account`` was inserted (+1) or removed (-1)."""
        conn = sub.conn
        if (conn is not None and conn.is_route) or sub.local_only:
            return
        key = (account, sub.subject, sub.queue)
        counts = self._counts
        n = counts.get(key, 0) + delta
        if n > 0:
            counts[key] = n
        else:
            counts.pop(key, None)
        if (delta > 0 and n == 1) or (delta < 0 and n == 0):
            op = "RS+" if delta > 0 else "RS-"
            for peer in self.peers:
                self.send(peer, (op, account, sub.subject, sub.queue))

    def local_interest(self) -> Iterable[tuple[str, bytes, bytes | None]]:
        return list(self._counts)

    # ------------------------------------------------------------------ links

    def link(self, peer: str, up: bool) -> None:
        """The network's link to ``peer`` came up or went down: what was known of the peer is
        dropped either way; on up, this node introduces itself and sends its interest."""
        old = self.peers.pop(peer, None)
        if old is not None:
            self._drop(old)
        if up:
            self.peers[peer] = RouteConn(self, peer)
            self.send(peer, ("INFO", self._hello()))
            for account, subject, queue in list(self._counts):
                self.send(peer, ("RS+", account, subject, queue))
        if self.on_peers_changed is not None:
            self.on_peers_changed()

    def _drop(self, conn: RouteConn) -> None:
        conn.closed = True
        for (account, _, _), sub in conn.subs.items():
            sub.closed = True
            self.router.account_sublist(account).remove(sub)
        conn.subs.clear()
        conn._out.clear()

    def close(self) -> None:
        for peer in list(self.peers):
            self._drop(self.peers.pop(peer))

    # ------------------------------------------------------------------ inbound

    def receive(self, peer: str, message: tuple) -> None:
        conn = self.peers.get(peer)
        if conn is None:
            return  # the link went down after this was sent
        op = message[0]
        if op == "RMSG":
            _, account, subject, reply, header, payload, queues, target = message
            conn.in_msgs += 1
            conn.in_bytes += len(payload) + (len(header) if header else 0)
            conn.last_activity = self.router.clock.time()
            self.deliver_routed(account, subject, reply, header, payload, queues, target)
        elif op == "RS+":
            _, account, subject, queue = message
            key = (account, subject, queue)
            if key not in conn.subs:
                sub = Subscription(subject, b"", queue, conn=conn)
                sub.account = account
                conn.subs[key] = sub
                self.router.account_sublist(account).insert(sub)
        elif op == "RS-":
            _, account, subject, queue = message
            gone = conn.subs.pop((account, subject, queue), None)
            if gone is not None:
                gone.closed = True
                self.router.account_sublist(account).remove(gone)
        elif op == "INFO":
            conn.info = message[1]
            if self.on_peers_changed is not None:
                self.on_peers_changed()

    def deliver_routed(self, account: str, subject: bytes, reply: bytes | None,
                       header: bytes | None, payload: bytes, queues: tuple,
                       target: bytes | None) -> None:
        """A message from a peer to this node's own subscribers: every plain one matching,
        one member of each named queue group; never on to another route."""
        router = self.router
        sublist = router.account_sublist(account)
        result = sublist.match(target or subject)
        delivered = 0
        for sub in result.plain:
            conn = sub.conn
            if sub.closed or (conn is not None and conn.is_route):
                continue
            if conn is None:
                sub.callback(sub, subject, reply, header, payload, None)
            else:
                conn.deliver(sub, subject, reply, header, payload)
            delivered += 1
        if queues:
            groups = result.groups
            for queue in queues:
                members = groups.get(queue)
                if not members:
                    continue
                sub = router.pick_local_member(members)
                if sub is None:
                    continue
                if sub.conn is None:
                    sub.callback(sub, subject, reply, header, payload, None)
                else:
                    sub.conn.deliver(sub, subject, reply, header, payload)
                delivered += 1
        if delivered:
            stats = router.stats
            stats.out_msgs += delivered
            stats.out_bytes += delivered * (len(payload) + (len(header) if header else 0))
        router.flush_soon()
