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
import dataclasses
import os
from typing import Any

from minijs.clock import Clock, make_clock
from minijs.cluster.network import Network, NetworkError
from minijs.cluster.raft import RaftDisk, RaftNode
from minijs.config import ServerConfig
from minijs.control.faults import FaultInjector, FaultRule
from minijs.core.routes import Routes
from minijs.log import NULL_LOGGER, Logger
from minijs.randomness import RandomSource, server_source

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
        self.server = cluster.node_class(config, clock=cluster.clock, logger=logger,
                                         membership=self, seed=cluster.randomness.child(name))
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

    @property
    def monitor_port(self) -> int | None:
        """This node's monitoring port (each node has its own: ``http_port=P`` puts node
        ``i`` on ``P + i``, ``http_port=-1`` on free ports), or None without monitoring."""
        monitor = self.server.monitor
        return monitor.port if monitor is not None else None

    def __repr__(self) -> str:
        return f"<Node {self.name} {'up' if self.up else 'down'} {self.client_url}>"

    async def kill(self) -> None:
        """Shut this node down (its clients are disconnected, its port closed, its links
        cut); what it stored in files stays for :meth:`restart`."""
        self._require(up=True, doing="kill")
        self._keep_monitor_port()
        self._temp_dir = await self.server._shutdown(keep_files=True)
        self.cluster.forget_volatile(self.name)

    async def crash(self) -> None:
        """Like :meth:`kill`, as ``kill -9``: nothing buffered is committed, nobody is told."""
        self._require(up=True, doing="crash")
        self._keep_monitor_port()
        self._temp_dir = await self.server._shutdown(keep_files=True, crash=True)
        self.cluster.forget_volatile(self.name)

    def _keep_monitor_port(self) -> None:
        """A restarted node listens where it did: its monitoring port too."""
        monitor = self.server.monitor
        if monitor is not None and monitor.port:
            self.server.config = self.server.config.with_overrides(http_port=monitor.port)

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

    def attached(self, server: Any) -> None:
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

    def detached(self, server: Any) -> None:
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

    def cluster_env(self, server: Any) -> "NodeEnv":
        return NodeEnv(self)

    def control_target(self) -> "Cluster":
        return self.cluster

    def bootstraps(self) -> bool:
        """No node campaigns as it starts: the cluster starts the first election once every
        node is linked (:meth:`Cluster.start`, :meth:`Cluster.restart`)."""
        return False

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

    def rng(self, purpose: str) -> RandomSource:
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
                 logger: Logger | None = None, seed: "int | RandomSource | None" = None,
                 loop_clock: bool = False, node_class: Any = None, **overrides: Any) -> None:
        if node_class is None:
            raise ClusterError("start a cluster as Server(cluster_size=N) (or ServerThread, or "
                               "the pytest marker), which gives it its nodes' server class")
        #: What each node runs (minijs.server.Server, given by Server(cluster_size=N)): the
        #: cluster sits below the server it is made of, and receives its class.
        self.node_class = node_class
        config = config or ServerConfig()
        if overrides:
            config = config.with_overrides(**overrides)
        size = check_size(config.cluster_size)
        if size < MIN_NODES:
            raise ClusterError("a cluster has 2 to 5 nodes; cluster_size=1 is a single Server")
        base = config.server_name
        names = [f"{base}-{i}" if base else f"n{i}" for i in range(1, size + 1)]
        unknown = sorted(set(config.cluster_tags) - set(names))
        if unknown:
            raise ClusterError(f"cluster_tags names {unknown[0]!r}, which is not a node of this "
                               f"cluster (the nodes are: {', '.join(names)})")
        self.config = config
        #: Every random choice of the cluster and its nodes (election timeouts, placement,
        #: ids, queue picks) draws from this source, per node and purpose (:meth:`rng`).
        self.randomness = server_source(seed)
        self._loop_clock: bool | None = None
        if loop_clock:
            from minijs.loopclock import loop_clock_for

            clock, self._loop_clock = loop_clock_for(clock)
        self.clock: Clock = make_clock(clock)
        draw_ties = getattr(self.clock, "draw_ties_from", None)
        if draw_ties is not None:
            draw_ties(self.randomness.child("timers"))
        self.log = logger or NULL_LOGGER
        self.name = config.cluster_name or DEFAULT_CLUSTER_NAME
        self.network = Network(self.clock, self.rng("network"))
        #: Each node's durable Raft state by group: (node, group) -> (RaftDisk, durable).
        self._disks: dict[tuple[str, str], tuple[RaftDisk, bool]] = {}
        self._store_root: str | None = None
        self.nodes: list[Node] = []
        for i, name in enumerate(names):
            self.network.register(name)
            self.nodes.append(Node(self, i, name, self._node_config(i, name),
                                   self.log.child(name) if self.log.enabled else self.log))
        self._stopped: asyncio.Event | None = None
        self._faults: ClusterFaults | None = None
        self._ports_file: str | None = None
        self.running = False
        #: In lame duck mode (SIGUSR2 to the minijs process: every node at once).
        self.lame_duck = False
        #: The node that starts the first meta election (the others wait for it).
        self.bootstrap_node = self.rng("bootstrap").choice(names)

    @property
    def seed(self) -> int:
        """The seed of every random choice the cluster makes: pass it again to repeat them."""
        return self.randomness.seed

    def rng(self, purpose: str) -> RandomSource:
        """The random source for ``purpose``, derived from the cluster's seed."""
        return self.randomness.child(purpose)

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
                                   "cluster_name": self.name, "ports_file_dir": None,
                                   "cluster_tags": {}}
        if name in config.cluster_tags:
            changes["tags"] = tuple(dict.fromkeys(
                t.strip().lower() for t in config.cluster_tags[name] if t.strip()))
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
        if self._loop_clock is not None:
            self._resolve_loop_clock()
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
            # The first meta election: the node the cluster picked campaigns once every node
            # is linked (its votes would be lost before).
            jsc = self.node(self.bootstrap_node).server.jetstream_cluster
            if jsc is not None:
                jsc.meta.campaign_now()
            await self._wait_for_meta_leader()
        if self.config.preload is not None:
            # Through one node's $JS.API, as a client would: the meta leader places it all.
            await self.live_nodes[0].server._preload(self.config.preload)
        if self.config.ports_file_dir:
            self._write_ports_file(self.config.ports_file_dir)
        self.log.info("Server is ready")

    def _write_ports_file(self, directory: str) -> None:
        """One ports file for the cluster (nats-server's format): every node's client URL."""
        import json
        import sys

        exe = os.path.basename(sys.argv[0])
        if not exe or exe == "__main__.py":
            exe = "minijs"
        path = os.path.join(directory, f"{exe}_{os.getpid()}.ports")
        info: dict[str, list[str]] = {"nats": [n.client_url for n in self.nodes]}
        monitors = [f"http://127.0.0.1:{n.server.monitor.port}" for n in self.nodes
                    if n.server.monitor is not None]
        if monitors:
            info["monitoring"] = monitors
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(info, f, separators=(",", ":"))
        except OSError as exc:
            self.log.error(f"Error writing ports file ({path}): {exc}")
            return
        self._ports_file = path

    def _resolve_loop_clock(self) -> None:
        """``loop_clock=True``: the loop the cluster starts in runs on the cluster's clock
        (the loop's own if another server put it on server time already)."""
        from minijs.loopclock import running_loop_clock

        clock = running_loop_clock(self.clock)  # type: ignore[arg-type]
        if clock is not self.clock:
            self.clock = clock
            self.network.clock = clock
            for node in self.nodes:
                node.server.clock = clock
        self._loop_clock = None

    async def _elect_after_restart(self) -> None:
        """Every node is back: the groups that lost their leaders elect at once."""
        if not self.config.jetstream:
            return
        for _ in range(4):
            await asyncio.sleep(0)
        live = [n.name for n in self.live_nodes]
        for node in self.live_nodes:
            jsc = node.server.jetstream_cluster
            if jsc is not None:
                jsc.kick(live)
        await self._wait_for_meta_leader()
        for _ in range(10):
            await asyncio.sleep(0)
        for node in self.live_nodes:
            jsc = node.server.jetstream_cluster
            if jsc is not None:
                jsc.kick(live)

    async def _wait_for_meta_leader(self, timeout: float = 10.0) -> None:
        """Until every live node knows the meta leader (the cluster is settled)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout

        def settled() -> bool:
            leaders = {n.server.jetstream_cluster.meta_leader for n in self.live_nodes
                       if n.server.jetstream_cluster is not None}
            return len(leaders) == 1 and None not in leaders

        while not settled():
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

    async def lame_duck_mode(self) -> None:
        """nats-server's lame duck mode on every node at once, then a stop."""
        if not self.running or self.lame_duck:
            return
        self.lame_duck = True
        await asyncio.gather(*(n.server.lame_duck_mode() for n in self.live_nodes))
        await self.stop()

    async def stop(self) -> None:
        if not self.running:
            return
        self.running = False
        if self._ports_file is not None:
            try:
                os.remove(self._ports_file)
            except OSError:
                pass
            self._ports_file = None
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
        """Empty the cluster for the next test: every stream and consumer on every node, the
        fault rules, a virtual clock back to its start, and a fresh meta group led by the
        first live node. Down nodes stay down; connections stay unless ``disconnect``."""
        if self._faults is not None:
            self._faults.reset()
        live = self.live_nodes
        for node in live:
            node.server.reset(disconnect=disconnect)  # (each also resets the shared clock)
        self._disks.clear()
        if self.config.jetstream and live:
            leader = live[0].name
            for node in live:
                jsc = node.server.jetstream_cluster
                if jsc is not None:
                    jsc.reset(leader)

    async def restart(self) -> None:
        """Restart every node (as nats-server processes restarted one after another): file
        streams and consumer state are kept, memory streams are gone."""
        for node in self.nodes:
            if node.up:
                await node.kill()
        for node in self.nodes:
            await node.restart()
        await self._elect_after_restart()

    async def crash(self) -> None:
        """Like :meth:`restart`, each node crashing (``kill -9``) instead of stopping."""
        for node in self.nodes:
            if node.up:
                await node.crash()
        for node in self.nodes:
            await node.restart()
        await self._elect_after_restart()

    # ------------------------------------------------------------------ inspection

    @property
    def jetstream_group(self) -> Any:
        """Each account's streams where they are led (what inspection and faults read)."""
        return _LeaderView(self)

    def engines(self) -> dict[str, Any]:
        return dict(self.jetstream_group.engines)

    def streams(self) -> list[Any]:
        """Snapshots of every stream (read on its leader), by account and name."""
        return _snapshots().streams(self)

    def stream(self, name: str, *, account: str | None = None) -> Any:
        return _snapshots().stream(self, name, account)

    def messages(self, stream: str, *, subject: str | None = None, start_seq: int = 1,
                 limit: int = 1000, account: str | None = None) -> list[Any]:
        return _snapshots().messages(self, stream, subject=subject, start_seq=start_seq,
                                     limit=limit, account=account)

    def message(self, stream: str, seq: int, *, account: str | None = None) -> Any:
        return _snapshots().message(self, stream, seq, account)

    def consumer(self, stream: str, name: str, *, account: str | None = None) -> Any:
        return _snapshots().consumer(self, stream, name, account)

    def connections_info(self) -> list[Any]:
        """Open client connections of every live node (``server`` names the node)."""
        out = []
        for node in self.live_nodes:
            for snap in _snapshots().connections(node.server):
                out.append(dataclasses.replace(snap, server=node.name))
        return out

    @property
    def faults(self) -> "ClusterFaults":
        if self._faults is None:
            self._faults = ClusterFaults(self)
        return self._faults

    def fault_log(self) -> list[Any]:
        return list(self._faults.log) if self._faults is not None else []

    @property
    def start_time(self) -> float:
        return min((n.server.start_time for n in self.nodes), default=0.0)

    def cluster(self) -> dict[str, Any]:
        """A snapshot: the cluster's name, each node (up or down), the meta leader, and each
        replicated stream's leader and replicas (with how far each lags)."""
        streams = []
        consumers: list[dict[str, Any]] = []
        seen: set[tuple[str, str]] = set()
        for node in self.live_nodes:
            jsc = node.server.jetstream_cluster
            if jsc is None:
                continue
            for key, sa in sorted(jsc.assignments.items()):
                if key in seen:
                    continue
                leader = self._stream_leader(key)
                info = {"account": key[0], "name": key[1], "leader": leader,
                        "replicas": self._replicas(key, leader, sa.peers)}
                seen.add(key)
                streams.append(info)
                consumers.extend(self._consumers(key, leader))
        return {
            "name": self.name,
            "meta_leader": self.meta_leader(),
            "nodes": [{"name": n.name, "id": n.server_id, "up": n.up,
                       "client_url": n.client_url, "tags": list(n.config.tags)}
                      for n in self.nodes],
            "streams": streams,
            "consumers": consumers,
        }

    def _consumers(self, key: tuple[str, str], leader: str | None) -> list[dict[str, Any]]:
        """The consumers of a replicated stream, as its leader runs them: each one's leader
        (its stream's; an R1 consumer's home node) and replicas."""
        if leader is None:
            return []
        replica = self.node(leader).server.jetstream_cluster.replicas.get(key)
        stream = replica.stream if replica is not None else None
        if stream is None:
            return []
        out = []
        for name, consumer in sorted(stream.consumers.items()):
            info = replica.consumer_cluster_info(consumer)
            peers = [info["leader"]] + [r["name"] for r in info.get("replicas", [])]
            out.append({"account": key[0], "stream": key[1], "name": name,
                        "leader": info["leader"],
                        "replicas": [r for r in self._replicas(key, leader, peers)]})
        return out

    def _stream_leader(self, key: tuple[str, str]) -> str | None:
        for node in self.live_nodes:
            jsc = node.server.jetstream_cluster
            replica = jsc.replicas.get(key) if jsc is not None else None
            if replica is not None and replica.raft.is_leader():
                return node.name
        return None

    def _replicas(self, key: tuple[str, str], leader: str | None,
                  peers: list[str]) -> list[dict[str, Any]]:
        lead = None
        if leader is not None:
            lead = self.node(leader).server.jetstream_cluster.replicas[key].raft
        out = []
        for peer in peers:
            node = self.node(peer)
            jsc = node.server.jetstream_cluster if node.up else None
            replica = jsc.replicas.get(key) if jsc is not None else None
            applied = replica.raft.applied if replica is not None else 0
            lag = max(0, lead.commit - applied) if lead is not None else None
            out.append({"name": peer, "up": node.up, "leader": peer == leader,
                        "current": lag == 0 if lag is not None else False, "lag": lag})
        return out


def _snapshots() -> Any:
    from minijs.control import snapshots

    return snapshots


class _LeaderEngine:
    """One account's JetStream as the cluster's leaders hold it (inspection and faults look
    streams up here: a stream is found on the node that leads it)."""

    def __init__(self, cluster: "Cluster", account: str) -> None:
        self.cluster = cluster
        self.account_name = account

    def _engines(self) -> list[Any]:
        out = []
        for node in self.cluster.live_nodes:
            engine = node.server.engines().get(self.account_name)
            if engine is not None:
                out.append(engine)
        return out

    def lookup(self, name: str) -> Any:
        for engine in self._engines():
            stream = engine.lookup(name)
            if stream is not None:
                return stream
        return None

    @property
    def streams(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for engine in self._engines():
            out.update(engine.streams)
        return out


class _LeaderView:
    """``jetstream_group`` of a cluster: each account's streams where they are led."""

    def __init__(self, cluster: "Cluster") -> None:
        accounts: set[str] = set()
        for node in cluster.live_nodes:
            accounts.update(node.server.engines())
        self.engines = {acc: _LeaderEngine(cluster, acc) for acc in sorted(accounts)}


class _NodeFaults(FaultInjector):
    """One node's share of the cluster's fault rules (the rules, log and ids are the
    cluster's; a rule spent on one node is spent everywhere)."""

    def __init__(self, owner: "ClusterFaults", server: Any) -> None:
        super().__init__(server)
        self.owner = owner
        self.rules = owner.rules
        self.log = owner.log

    def _install(self) -> None:
        self.owner._install()


class ClusterFaults(FaultInjector):
    """``cluster.faults``: fault rules for every node (a delivery rule catches its consumer's
    deliveries on the node that leads it; a request rule catches the messages published on
    whichever node the publisher is connected to)."""

    def __init__(self, cluster: "Cluster") -> None:
        super().__init__(cluster)
        self.cluster = cluster
        self._nodes: dict[str, _NodeFaults] = {}

    def of(self, node: Node) -> _NodeFaults:
        injector = self._nodes.get(node.name)
        if injector is None or injector.server is not node.server:
            injector = self._nodes[node.name] = _NodeFaults(self, node.server)
        return injector

    def of_server(self, server: Any) -> _NodeFaults:
        """The injector of the node that runs ``server``."""
        for node in self.cluster.nodes:
            if node.server is server:
                return self.of(node)
        raise LookupError("that server is not a node of this cluster")

    def _install(self) -> None:
        for node in self.cluster.live_nodes:
            node.server.fault_hook = self.of(node) if self.rules else None

    def remove(self, rule: FaultRule | int) -> bool:
        rid = rule if isinstance(rule, int) else rule.id
        before = len(self.rules)
        self.rules[:] = [r for r in self.rules if r.id != rid]
        self._install()
        return len(self.rules) != before

    def publish_unfaulted(self, subject: bytes, reply: bytes | None, hdr: bytes | None,
                          body: bytes, to: Any = None) -> int:
        node = self.cluster.live_nodes[0]
        return self.of(node).publish_unfaulted(subject, reply, hdr, body, to)
