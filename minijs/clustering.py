"""An in-process cluster: N nodes, one event loop, one clock, one simulated network.

``Server(cluster_size=N)`` (N from 2 to 5) returns a :class:`Cluster`. Each node is a whole
:class:`~minijs.server.Server` as clients see it (its own server id and name, client port,
monitoring port, INFO with the cluster's name and ``connect_urls``), and the nodes reach each
other only through the cluster's :class:`~minijs.cluster.network.Network`: routes carry core
NATS between them (:mod:`minijs.core.routes`). A test kills, crashes and restarts nodes by
name, and cuts the network into groups (:meth:`Cluster.partition`) and heals it.

The cluster offers the single server's front-door methods (``start``/``stop``/``async with``,
``client_url``, ``clock``, ``reset``, inspection) so code written for a ``Server`` works on
it; ``client_urls`` lists every node's address for clients that fail over.

Invariants:

* node names are fixed for the cluster's life (``n1``..``nN``, or ``<server_name>-1``..);
  a node keeps its name, client port and store across kill/crash and restart;
* one clock for every node: the cluster binds it once, and a virtual clock's settle step
  settles every live node;
* a node that is down is detached from the network: no link, no message reaches it.
"""
from __future__ import annotations

import asyncio
import os
import random
from typing import Any

from minijs.clock import Clock, make_clock
from minijs.cluster.network import Network, NetworkError
from minijs.cluster.raft import RaftDisk, RaftNode
from minijs.config import ServerConfig
from minijs.core.routes import Routes
from minijs.log import NULL_LOGGER, Logger
from minijs.server import Server

#: How many nodes an in-process cluster may have.
MIN_NODES, MAX_NODES = 2, 5
#: The cluster's name when none is given.
DEFAULT_CLUSTER_NAME = "minijs"


class ClusterError(ValueError):
    """A cluster operation or option that cannot be done; the message names the fix."""


def check_size(size: Any) -> int:
    """``cluster_size`` as an int from 1 to 5, or a :class:`ClusterError` naming the range."""
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_NODES:
        raise ClusterError(f"cluster_size must be a whole number from 1 to {MAX_NODES} "
                           f"(1 is a single server), not {size!r}")
    return size


class Node:
    """One node of a :class:`Cluster`: a server, its name, and what kills and restarts it."""

    def __init__(self, cluster: "Cluster", index: int, name: str, config: ServerConfig,
                 logger: Logger) -> None:
        self.cluster = cluster
        self.index = index
        self.name = name
        self.config = config
        self.server = Server(config, clock=cluster.clock, logger=logger, membership=self)
        #: The private file-store directory a kill or crash keeps for the restart.
        self._temp_dir: str | None = None

    # ------------------------------------------------------------------ what tests see

    @property
    def up(self) -> bool:
        return self.server.running

    @property
    def client_url(self) -> str:
        return self.server.client_url

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def server_id(self) -> str:
        return self.server.server_id

    def __repr__(self) -> str:
        return f"<Node {self.name} {'up' if self.up else 'down'} {self.client_url}>"

    async def kill(self) -> None:
        """Shut this node down (its clients are disconnected, its port closed, its links
        cut); what it stored in files stays for :meth:`restart`."""
        self._require(up=True, doing="kill")
        self._temp_dir = await self.server._shutdown(keep_files=True)
        self.cluster.forget_volatile(self.name)

    async def crash(self) -> None:
        """Like :meth:`kill`, as ``kill -9``: nothing buffered is committed, nobody is told."""
        self._require(up=True, doing="crash")
        self._temp_dir = await self.server._shutdown(keep_files=True, crash=True)
        self.cluster.forget_volatile(self.name)

    async def restart(self) -> None:
        """Start this node again on the same port with the same store (after a kill or a
        crash; a running node is restarted as ``Server.restart`` does)."""
        server = self.server
        if server.running:
            await server.restart()
            return
        port = server.port
        server.config = server.config.with_overrides(port=port)
        temp, self._temp_dir = self._temp_dir, None
        await server._startup(temp)

    def _require(self, *, up: bool, doing: str) -> None:
        if self.up != up:
            state = "down" if up else "up"
            raise ClusterError(f"cannot {doing} node {self.name!r}: it is {state}"
                               + (" (restart() it first)" if up else ""))

    # ------------------------------------------------------------------ the server's membership

    def attached(self, server: Server) -> None:
        cluster = self.cluster
        network = cluster.network
        routes = Routes(server, self.name, cluster.name,
                        lambda peer, msg: network.send(self.name, peer, msg), self._hello)
        routes.on_peers_changed = self._peers_changed
        server.routes = routes
        for sublist in server.account_sublists.values():
            sublist.interest_hook = routes.interest_changed
        # What is subscribed already (the server's own handlers) is this node's interest.
        for sublist in server.account_sublists.values():
            for sub in sublist.all_subscriptions():
                routes.interest_changed(sublist.account, sub, 1)
        network.attach(self.name, self)

    def detached(self, server: Server) -> None:
        self.cluster.network.detach(self.name)
        routes = server.routes
        if routes is not None:
            routes.close()
            for sublist in server.account_sublists.values():
                sublist.interest_hook = None
            server.routes = None

    def _hello(self) -> dict[str, Any]:
        server = self.server
        url = server.client_url
        return {"name": self.name, "id": server.server_id, "cluster": self.cluster.name,
                "client_url": url.split("://", 1)[1]}

    def receive(self, sender: str, message: Any) -> None:
        if message[0] in ("RAFT", "JS"):
            jsc = self.server.jetstream_cluster
            if jsc is not None:
                jsc.receive(sender, message)
            return
        routes = self.server.routes
        if routes is not None:
            routes.receive(sender, message)

    def on_link(self, peer: str, up: bool) -> None:
        routes = self.server.routes
        if routes is not None:
            routes.link(peer, up)
        jsc = self.server.jetstream_cluster
        if jsc is not None:
            jsc.link(peer, up)

    def cluster_env(self, server: Server) -> "NodeEnv":
        return NodeEnv(self)

    def bootstraps(self) -> bool:
        return self.cluster.bootstrap_node == self.name

    def _peers_changed(self) -> None:
        """connect_urls changed: clients that take async INFO hear the new list."""
        self.server.send_async_info()


class NodeEnv:
    """What one node's JetStream is given by the cluster (see
    :class:`minijs.jetstream.cluster.meta.ClusterEnv`): the network seen from this node, the
    node's durable Raft state, its seeded random sources."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.cluster = node.cluster
        self.name = node.name
        self.cluster_name = node.cluster.name
        self.clock = node.cluster.clock

    def node_names(self) -> list[str]:
        return [n.name for n in self.cluster.nodes]

    def node_tags(self, name: str) -> list[str]:
        return list(self.cluster.node(name).config.tags)

    def send(self, peer: str, message: tuple) -> bool:
        return self.cluster.network.send(self.name, peer, message)

    def reachable(self, peer: str) -> bool:
        return self.cluster.network.reachable(self.name, peer)

    def online(self, peer: str) -> bool:
        return peer == self.name or self.reachable(peer)

    def disk(self, group: str, peers: list[str], *, durable: bool) -> RaftDisk:
        return self.cluster.raft_disk(self.name, group, peers, durable)

    def rng(self, purpose: str) -> random.Random:
        return self.cluster.rng(f"{self.name}/{purpose}")

    def make_raft(self, group: str, disk: RaftDisk, fsm: Any) -> RaftNode:
        network = self.cluster.network
        me = self.name
        return RaftNode(group, me, disk,
                        send=lambda peer, msg: network.send(me, peer, ("RAFT", group) + msg),
                        clock=self.clock, rng=self.rng(f"raft/{group}"), fsm=fsm,
                        reachable=self.reachable, log=self.node.server.log)


class Cluster:
    """N nodes in this process, on one clock and one network (``Server(cluster_size=N)``)."""

    def __init__(self, config: ServerConfig | None = None, *, clock: Clock | str | None = None,
                 logger: Logger | None = None, **overrides: Any) -> None:
        config = config or ServerConfig()
        if overrides:
            config = config.with_overrides(**overrides)
        size = check_size(config.cluster_size)
        if size < MIN_NODES:
            raise ClusterError("a cluster has 2 to 5 nodes; cluster_size=1 is a single Server")
        self.config = config
        self.clock: Clock = make_clock(clock)
        self.log = logger or NULL_LOGGER
        self.name = config.cluster_name or DEFAULT_CLUSTER_NAME
        #: Every random choice of the cluster (election timeouts, placement, ids) derives
        #: from this seed, per node and purpose (:meth:`rng`).
        self.seed = 0
        self.network = Network(self.clock, self.rng("network"))
        #: Each node's durable Raft state by group: (node, group) -> (RaftDisk, durable).
        self._disks: dict[tuple[str, str], tuple[RaftDisk, bool]] = {}
        base = config.server_name
        names = [f"{base}-{i}" if base else f"n{i}" for i in range(1, size + 1)]
        self._store_root: str | None = None
        self.nodes: list[Node] = []
        for i, name in enumerate(names):
            self.network.register(name)
            self.nodes.append(Node(self, i, name, self._node_config(i, name),
                                   self.log.child(name) if self.log.enabled else self.log))
        self._stopped: asyncio.Event | None = None
        self.running = False
        #: The node that starts the first meta election (the others wait for it).
        self.bootstrap_node = self.rng("bootstrap").choice(names)

    def rng(self, purpose: str) -> random.Random:
        """A random source for ``purpose``, derived from the cluster's seed."""
        return random.Random(f"{self.seed}/{purpose}")

    def raft_disk(self, node: str, group: str, peers: list[str], durable: bool) -> RaftDisk:
        """A node's durable Raft state of ``group`` (kept across its restarts when
        ``durable``: a file stream's or the meta group's; a memory stream's is lost with it)."""
        key = (node, group)
        found = self._disks.get(key)
        if found is None:
            found = self._disks[key] = (RaftDisk(peers=list(peers)), durable)
        return found[0]

    def forget_volatile(self, node: str) -> None:
        """``node`` went down: what it held only in memory is gone."""
        for key in [k for k, (_, durable) in self._disks.items() if k[0] == node and not durable]:
            del self._disks[key]

    def _node_config(self, i: int, name: str) -> ServerConfig:
        config = self.config
        changes: dict[str, Any] = {"server_name": name, "cluster_size": 1,
                                   "cluster_name": self.name}
        if config.port > 0:
            changes["port"] = config.port + i
        else:
            changes["port"] = 0
        if config.http_port is not None and config.http_port > 0:
            changes["http_port"] = config.http_port + i
        if config.store_dir:
            changes["store_dir"] = os.path.join(config.store_dir, name)
        return config.with_overrides(**changes)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start every node; returns once each is listening and linked to the others."""
        if self.running:
            return
        self._stopped = asyncio.Event()
        for node in self.nodes:
            await node.server.start()
        bind = getattr(self.clock, "bind", None)
        if bind is not None:
            bind(asyncio.get_running_loop(), self.settle)
        self.running = True
        # Links come up on the next loop turns: let every node learn of the others; with
        # JetStream, the first meta leader is elected before the cluster is ready.
        for _ in range(4):
            await asyncio.sleep(0)
        if self.config.jetstream:
            await self._wait_for_meta_leader()

    async def _wait_for_meta_leader(self, timeout: float = 10.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.meta_leader() is None:
            if loop.time() > deadline:
                raise ClusterError("the cluster elected no JetStream meta leader within "
                                   f"{timeout:.0f} s")
            await asyncio.sleep(0 if self.clock.virtual else 0.005)

    def meta_leader(self) -> str | None:
        """The meta leader, as the live nodes know it (None during an election)."""
        for node in self.live_nodes:
            jsc = node.server.jetstream_cluster
            if jsc is not None and jsc.meta_leader is not None:
                return jsc.meta_leader
        return None

    async def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        for node in self.nodes:
            if node.up:
                await node.server.stop()
        unbind = getattr(self.clock, "unbind", None)
        if unbind is not None:
            unbind()
        if self._stopped is not None:
            self._stopped.set()

    async def serve_forever(self) -> None:
        assert self._stopped is not None, "start() first"
        await self._stopped.wait()

    async def __aenter__(self) -> "Cluster":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def settle(self) -> None:
        """Commit and write out what every live node has pending (a virtual clock's step)."""
        for node in self.nodes:
            if node.up:
                node.server.settle()

    # ------------------------------------------------------------------ nodes and faults

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        known = ", ".join(n.name for n in self.nodes)
        raise ClusterError(f"unknown node {name!r} (the nodes are: {known})")

    def partition(self, *groups: list[str]) -> None:
        """Cut the links between ``groups`` of node names (nodes not named form one more
        group); :meth:`heal` joins them again."""
        if not groups:
            raise ClusterError("name the groups to cut apart, e.g. "
                               "partition(['n1'], ['n2', 'n3'])")
        try:
            self.network.partition(*[list(g) for g in groups])
        except NetworkError as exc:
            raise ClusterError(str(exc)) from None

    def heal(self) -> None:
        self.network.heal()

    # ------------------------------------------------------------------ front door

    @property
    def live_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.up]

    @property
    def client_url(self) -> str:
        """The first live node's address (clients learn the others from INFO)."""
        live = self.live_nodes
        return (live[0] if live else self.nodes[0]).client_url

    @property
    def client_urls(self) -> list[str]:
        return [n.client_url for n in self.nodes]

    @property
    def port(self) -> int:
        return self.nodes[0].port

    @property
    def connections(self) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for node in self.live_nodes:
            out.update(node.server.connections)
        return out

    def reset(self, *, disconnect: bool = False) -> None:
        clock_reset = getattr(self.clock, "reset", None)
        if clock_reset is not None:
            clock_reset()
        for node in self.live_nodes:
            node.server.reset(disconnect=disconnect)

    def cluster(self) -> dict[str, Any]:
        """A snapshot: the cluster's name and each node, up or down."""
        return {
            "name": self.name,
            "nodes": [{"name": n.name, "id": n.server_id, "up": n.up,
                       "client_url": n.client_url} for n in self.nodes],
        }
