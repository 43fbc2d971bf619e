"""One node's share of a clustered JetStream (nats-server's ``jetStreamCluster``): the meta
group, the stream assignments it replicates, this node's replicas, and which node answers which
API request.

The **meta group** (every node, one Raft log) holds the assignments: each stream's config,
creation time, peers (placed by :meth:`JetStreamCluster.place`: nodes of the cluster whose tags
match the placement, the least loaded first, ties broken by the seeded source) and Raft group
name. Only the meta leader validates and proposes stream creates, updates and deletes; every
node applies the committed assignments and keeps a :class:`~.replica.StreamReplica` for each
stream it is a peer of, so placement, scale up and down, and deletion follow from the log.

Who answers (as nats-server's API handlers decide in a cluster): account info, stream create,
update, delete, names and list are the meta leader's; everything about one stream (info,
purge, message get and delete, direct get, snapshots, its consumers) is that stream's leader's,
and the other nodes stay silent. A create's reply comes from the stream's first leader, an
update's from its leader once applied, a delete's from the meta leader once applied. With no
meta leader, the other nodes answer meta requests 503/10008 after nats-server's half-second
delay.

Invariants:

* the assignments on every node are the meta log applied in order; a node hosts a replica
  exactly for the assigned streams whose peers name it;
* a request is answered by at most one node, except where nats-server itself lets several
  answer (a leaderless meta group's delayed 503s);
* node-to-node questions (a stream list's infos) travel as node-protocol messages
  (``("JS", kind, ...)``), never as calls into another node.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.jetstream import errors as E
from minijs.jetstream import jsonfmt as J
from minijs.jetstream.cluster.peers import DIGITS as _DIGITS
from minijs.jetstream.cluster.peers import node_hash
from minijs.jetstream.cluster.replica import StreamReplica

if TYPE_CHECKING:
    from minijs.cluster.raft import RaftDisk, RaftNode
    from minijs.jetstream.config.stream import StreamConfig
    from minijs.jetstream.engine import JetStream

META_GROUP = "_meta_"
#: nats-server's errRespDelay: a non-leader's error answer waits this long.
ERROR_DELAY = 0.5
#: How long a stream list waits for the other nodes' answers.
GATHER_TIMEOUT = 2.0
TYPE_PREFIX = "io.nats.jetstream.api.v1."


class ClusterEnv(Protocol):
    """What a node's JetStream is given by its cluster (the seam and the seeded source)."""

    name: str
    cluster_name: str
    clock: Any

    def node_names(self) -> list[str]: ...
    def node_tags(self, name: str) -> list[str]: ...
    def send(self, peer: str, message: tuple) -> bool: ...
    def reachable(self, peer: str) -> bool: ...
    def online(self, peer: str) -> bool: ...
    def disk(self, group: str, peers: list[str], *, durable: bool) -> "RaftDisk": ...
    def rng(self, purpose: str) -> random.Random: ...
    def make_raft(self, group: str, disk: "RaftDisk", fsm: Any) -> "RaftNode": ...


@dataclass
class StreamAssignment:
    account: str
    config: "StreamConfig"
    created: int
    peers: list[str]
    #: The Raft group's id (fixed for the stream's life) and the name clients see (a stream
    #: created R1 gets a new one, sized as it grows, when it first becomes replicated).
    group: str
    preferred: str
    label: str = ""
    #: While the peers change to another set (a move): the set wanted, and since when.
    desired: list[str] | None = None
    desired_created: int = 0


class JetStreamCluster:
    """This node's part of the cluster's JetStream (see the module docstring)."""

    def __init__(self, server: Any, env: ClusterEnv) -> None:
        self.server = server
        self.env = env
        self.me = env.name
        self.clock = env.clock
        self.log = server.log
        self.assignments: dict[tuple[str, str], StreamAssignment] = {}
        self.replicas: dict[tuple[str, str], StreamReplica] = {}
        self._groups: dict[str, Any] = {}
        self._rng = env.rng("placement")
        disk = env.disk(META_GROUP, env.node_names(), durable=True)
        self.meta = env.make_raft(META_GROUP, disk, self)
        self._groups[META_GROUP] = self.meta
        self._applying_snapshot = False
        self._replaying = False
        self._gathers: dict[int, dict[str, Any]] = {}
        self._next_gather = 0
        self.meta_leader: str | None = None
        self.stopped = False
        #: When this node's meta group started (server clock, monotonic).
        self.started_at = 0.0
        #: Nodes that said they were shutting down (their assets are offline until they are
        #: back), as nats-server's meta layer learns from a server's shutdown event.
        self.offline: set[str] = set()
        #: Called when the meta leader changes (the cluster's front door waits for the first).
        self.on_meta_leader: Callable[[str | None], None] | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, bootstrap: bool) -> None:
        self.started_at = self.clock.monotonic()
        self.meta.start("bootstrap" if bootstrap else None)

    def stop(self, *, crash: bool = False) -> None:
        self.stopped = True
        self.meta.stop()
        for replica in list(self.replicas.values()):
            replica.stop(crash=crash)
        self.replicas.clear()
        self._groups = {}

    def reset(self, leader: str) -> None:
        """Forget every stream and start the meta group afresh with ``leader`` leading term 1
        (a test's reset: every live node does this at once, on disks the cluster emptied)."""
        for replica in list(self.replicas.values()):
            replica.delete()
        self.replicas.clear()
        self.assignments.clear()
        self.meta.stop()
        disk = self.env.disk(META_GROUP, self.env.node_names(), durable=True)
        disk.term, disk.voted_for = 1, leader
        self.meta = self.env.make_raft(META_GROUP, disk, self)
        self._groups = {META_GROUP: self.meta}
        self.meta_leader = None
        self.meta.start_with_leader(leader)

    def kick(self, live: list[str]) -> None:
        """After the whole cluster restarted: where no leader is known, the first live member
        campaigns at once (the cluster's restart stands in for the nodes' election timers)."""
        if self.meta.leader is None and live and live[0] == self.me:
            self.meta.campaign_now()
        for replica in self.replicas.values():
            peers = [p for p in replica.raft.peers if p in live]
            if replica.raft.leader is None and peers and peers[0] == self.me:
                replica.raft.campaign_now()

    def engine(self, account: str) -> "JetStream | None":
        return self.server.engines().get(account)

    # ------------------------------------------------------------------ Raft plumbing

    def raft_member(self, group: str, peers: list[str], fsm: Any, *, durable: bool) -> "RaftNode":
        disk = self.env.disk(group, peers, durable=durable)
        if not disk.peers:
            disk.peers = list(peers)
        node = self.env.make_raft(group, disk, fsm)
        self._groups[group] = node
        return node

    def receive(self, sender: str, message: tuple) -> None:
        kind = message[0]
        if kind == "RAFT":
            node = self._groups.get(message[1])
            if node is not None:
                node.receive(sender, message[2:])
        elif kind == "JS":
            self._on_js(sender, message)

    def link(self, peer: str, up: bool) -> None:
        if up:
            self.offline.discard(peer)
        for node in list(self._groups.values()):
            node.link(peer, up)
        if up:
            for replica in self.replicas.values():
                replica.node_back(peer)

    # ------------------------------------------------------------------ the meta state machine

    def apply(self, index: int, entry: tuple) -> None:
        #: A replayed entry (committed before this node started) re-creates replicas without
        #: the first campaign or the reply a new one gets.
        self._replaying = self.meta.is_replay(index)
        kind = entry[0]
        if kind == "stream":
            self._apply_stream(*entry[1:])
        elif kind == "stream-":
            self._apply_delete(*entry[1:])
        elif kind == "server-":
            self._apply_server_remove(entry[1])

    def snapshot(self) -> Any:
        from minijs.jetstream.config.stream import to_json_dict

        return [(sa.account, to_json_dict(sa.config, dynamic_metadata=False), sa.created,
                 list(sa.peers), sa.group, sa.preferred,
                 {"label": sa.label, "desired": sa.desired})
                for sa in self.assignments.values()]

    def restore(self, data: Any) -> None:
        wanted = {(acc, cfg["name"]) for acc, cfg, *_ in data}
        for key in list(self.assignments):
            if key not in wanted:
                self._apply_delete(key[0], key[1], None)
        for acc, cfg, created, peers, group, preferred, more in data:
            self._apply_stream(acc, cfg, created, peers, group, preferred, None, "restore", more)

    def conflict(self, index: int) -> None:
        return

    def needs_snapshot(self) -> bool:
        return False

    def leader_changed(self, leader: str | None, is_me: bool) -> None:
        self.meta_leader = leader
        if is_me:
            self.log.info(f"JetStream cluster new metadata leader: {self.me}/"
                          f"{self.env.cluster_name}")
        if self.on_meta_leader is not None:
            self.on_meta_leader(leader)

    def is_meta_leader(self) -> bool:
        return self.meta.is_leader()

    def leaderless(self) -> bool:
        """nats-server's ``isLeaderless``: no meta leader, and this node's meta group has run
        longer than the lost-quorum interval (a starting node waits for one instead)."""
        from minijs.cluster.raft import LOST_QUORUM

        return (self.meta.leader is None
                and self.clock.monotonic() - self.started_at > LOST_QUORUM)

    # ------------------------------------------------------------------ assignments

    def _apply_stream(self, account: str, cfg_doc: dict, created: int, peers: list[str],
                      group: str, preferred: str, reply: bytes | None, action: str,
                      more: dict | None = None) -> None:
        from minijs.jetstream.config.stream import stream_config_from_dict

        more = more or {}
        cfg = stream_config_from_dict(cfg_doc)
        key = (account, cfg.name)
        old = self.assignments.get(key)
        sa = self.assignments[key] = StreamAssignment(
            account, cfg, created, list(peers), group, preferred, more.get("label") or group,
            more.get("desired"), self.clock.time_ns() if more.get("desired") else 0)
        engine = self.engine(account)
        replica = self.replicas.get(key)
        if self.me not in peers or engine is None:
            if replica is not None:
                self.replicas.pop(key, None)
                self._groups.pop(replica.group, None)
                if replica.raft.is_leader():
                    # Leaving the group it leads (a move): hand over to a member first.
                    replica.raft.step_down(next((p for p in peers if p in replica.raft.peers),
                                                None) or (peers[0] if peers else None))
                replica.delete()
            return
        if replica is None or replica.group != group:
            if replica is not None:
                self._groups.pop(replica.group, None)
                replica.delete()
            replica = StreamReplica(self, engine, cfg, created, list(peers), group)
            self.replicas[key] = replica
            fresh = action == "create" and not self._replaying
            if reply and fresh:
                replica.on_first_leader = (lambda stream, r=reply: self._created(r, stream))
            replica.start("now" if preferred == self.me and fresh else None)
            return
        if old is not None and list(old.peers) != list(peers):
            replica.raft.set_peers(list(peers))
        replica.label = sa.label
        replica.update_config(cfg)
        replica.watch_desired(sa.desired)
        if reply and action == "update" and replica.stream is not None and not self._replaying:
            info = replica.stream.info_json(domain=engine.domain)
            change = more.get("change")
            if change:
                info["cluster"]["desired"] = self._desired_info(change)
            self._respond(reply, "stream_update_response", info, bus=engine.bus)

    def _desired_info(self, change: dict) -> dict[str, Any]:
        """The ``desired`` object of a reply whose change of peers is under way (2.15): when
        it started, the cluster, the peers wanted (not for a scale down) and, for a stream,
        what it was before."""
        out: dict[str, Any] = {"created": J.go_time(self.clock.time_ns()),
                               "name": self.env.cluster_name}
        target = change.get("replicas")
        if target:
            out["replicas"] = [{"name": p, "peer": node_hash(p)} for p in target]
        if change.get("origin"):
            out["origin"] = change["origin"]
        return out

    def moved(self, account: str, name: str, target: list[str]) -> None:
        """A stream's leader says every peer it is moving to has caught up: the move ends
        (the meta leader takes the old peers out)."""
        sa = self.assignments.get((account, name))
        if sa is None or sa.desired != target or not self.is_meta_leader():
            return
        from minijs.jetstream.config.stream import to_json_dict

        self.meta.propose(("stream", account, to_json_dict(sa.config, dynamic_metadata=False),
                           sa.created, list(target), sa.group, sa.preferred, None, "update",
                           {"label": sa.label, "desired": None}))

    def _apply_delete(self, account: str, name: str, reply: bytes | None) -> None:
        key = (account, name)
        sa = self.assignments.pop(key, None)
        replica = self.replicas.pop(key, None)
        if replica is not None:
            self._groups.pop(replica.group, None)
            engine = replica.engine
            stream = replica.stream
            if stream is not None:
                engine.delete_consumers(stream)
                engine.advisories.stream_action(name, "delete")
            replica.delete()
        if reply and sa is not None and self.is_meta_leader():
            account_engine = self.engine(account)
            self._respond(reply, "stream_delete_response", {"success": True},
                          bus=account_engine.bus if account_engine is not None else None)

    def _apply_server_remove(self, name: str) -> None:
        """A node leaves the meta group: the group counts one member fewer."""
        if name == self.me:
            return  # removed: this node goes on, outside the group, until it stops
        self.meta.set_peers([p for p in self.meta.peers if p != name])

    def _created(self, reply: bytes, stream: Any) -> None:
        engine = stream.engine
        engine.advisories.stream_action(stream.name, "create")
        info = stream.info_json(domain=engine.domain)
        info["did_create"] = True
        self._respond(reply, "stream_create_response", info, bus=engine.bus)

    def replica_leader_changed(self, replica: StreamReplica, leader: str | None) -> None:
        """A replica of this node learned of a new leader of its stream (or of none)."""
        return

    def report_moved(self, account: str, name: str, target: list[str]) -> None:
        """(A stream's leader) the peers of a move have caught up: tell the meta leader."""
        leader = self.meta_leader
        if leader == self.me:
            self.moved(account, name, target)
        elif leader is not None:
            self.env.send(leader, ("JS", "MOVED", account, name, list(target)))

    def group_info(self, raft: "RaftNode", leader_since: int, label: str | None = None,
                   peers: list[str] | None = None, leaderless: bool = False) -> dict[str, Any]:
        """The ``cluster`` object of stream info, as nats-server's ``clusterInfo`` fills it:
        an R1 group shows its name and leader only; a replicated one its Raft group, leader,
        the system account carrying its traffic and the other peers by name (every peer when
        it has no leader), each with ``current``, ``active`` (ns since heard), ``lag`` when
        behind and ``peer`` (the hash of its name)."""
        leader = None if leaderless else raft.leader
        if len(raft.peers) == 1:
            return {"name": self.env.cluster_name, "leader": leader or self.me}
        out: dict[str, Any] = {"name": self.env.cluster_name,
                               "raft_group": label or raft.group}
        if leader is not None:
            out["leader"] = leader
            if raft.is_leader() and leader_since:
                out["leader_since"] = J.go_time(leader_since)
        out["system_account"] = True
        out["traffic_account"] = self.system_account
        known = {r["name"]: r for r in raft.replicas()} if raft.is_leader() else {}
        replicas = []
        for peer in sorted(peers if peers is not None else raft.peers):
            if peer == leader:
                continue
            r = known.get(peer)
            info: dict[str, Any] = {"name": peer, "current": bool(r and r["current"])}
            if not self.env.online(peer):
                info["offline"] = True
            active = r["active"] if r and r["active"] is not None else 0
            info["active"] = int(active * 1_000_000_000)
            if r and r["lag"]:
                info["lag"] = r["lag"]
            info["peer"] = node_hash(peer)
            replicas.append(info)
        if replicas:
            out["replicas"] = replicas
        return out

    def meta_info(self) -> dict[str, Any]:
        """``/jsz``'s ``meta_cluster``: the cluster, its meta leader and the other members
        as this node knows them (a follower tracks only its leader)."""
        meta = self.meta
        out: dict[str, Any] = {"name": self.env.cluster_name}
        leader = meta.leader
        if leader is not None:
            out["leader"] = leader
            out["peer"] = node_hash(leader)
        known = {r["name"]: r for r in meta.replicas()} if meta.is_leader() else {}
        now = self.clock.monotonic()
        replicas = []
        for peer in sorted(meta.peers):
            if peer == self.me:
                continue
            r = known.get(peer)
            if peer == leader and not meta.is_leader():
                heard = meta.last_heard_from_leader
                r = {"current": True, "active": (now - heard) if heard is not None else 0,
                     "lag": 0}
            info: dict[str, Any] = {"name": peer, "current": bool(r and r["current"])}
            if not self.env.online(peer):
                info["offline"] = True
            info["active"] = int(((r or {}).get("active") or 0) * 1_000_000_000)
            if r and r.get("lag"):
                info["lag"] = r["lag"]
            info["peer"] = node_hash(peer)
            replicas.append(info)
        if replicas:
            out["replicas"] = replicas
        out["cluster_size"] = len(meta.peers)
        out["quorum_needed"] = meta.quorum
        out["pending"] = 0
        out["pending_requests"] = 0
        out["pending_infos"] = 0
        out["snapshot"] = {"pending_entries": meta.applied - meta.disk.base,
                           "pending_size": 0, "last_time": "0001-01-01T00:00:00Z"}
        return out

    # ------------------------------------------------------------------ system account requests

    def system_request(self, api: Any, subject: bytes, reply: bytes | None,
                       payload: bytes) -> None:
        """``$JS.API.META.LEADER.STEPDOWN`` and ``$JS.API.SERVER.REMOVE`` from the system
        account (only there: nats-server answers nobody else); the meta leader answers."""
        name = subject.decode("utf-8", "replace")
        if name == "$JS.API.META.LEADER.STEPDOWN":
            rtype, handler = "meta_leader_stepdown_response", self._meta_stepdown
        elif name == "$JS.API.SERVER.REMOVE":
            rtype, handler = "meta_server_remove_response", self._server_remove
        else:
            return
        if not self.is_meta_leader():
            if self.leaderless() and reply:
                self._not_available(api, rtype, reply)
            return
        try:
            result = handler(payload)
        except E.ApiError as err:
            if reply:
                self._respond(reply, rtype, error=err, api=api)
            return
        if reply:
            self._respond(reply, rtype, result, api=api)

    def _meta_stepdown(self, payload: bytes) -> dict:
        return self._step_down(self.meta, payload)

    def _server_remove(self, payload: bytes) -> dict:
        """``SERVER.REMOVE`` ``{"peer": name}`` or ``{"peer_id": id}``: a member leaves the
        meta group."""
        if J.is_empty_request(payload):
            raise E.bad_request()
        req = J.decode_strict(payload, {"peer": J.STRING, "peer_id": J.STRING},
                              "JSApiMetaServerRemoveRequest")
        peer, peer_id = req.get("peer") or "", req.get("peer_id") or ""
        if not peer and not peer_id:
            raise E.bad_request()
        found = [p for p in self.meta.peers if p == peer or (peer_id and node_hash(p) == peer_id)]
        if not found:
            raise E.make(10044)
        self.meta.propose(("server-", found[0]))
        return {"success": True}

    @property
    def system_account(self) -> str:
        return self.server.config.system_account or "$SYS"

    def transfer_leaders(self) -> None:
        """A graceful shutdown: every group this node leads hands its leadership to a peer
        first (nats-server's ``stepdownRaftNodes``), so nothing waits for an election. The
        pull requests waiting on consumers configured with 0 or 1 replicas hear ``409 Server
        Shutdown`` first (``signalPullConsumers``)."""
        for replica in self.replicas.values():
            stream = replica.stream
            if stream is not None:
                replica.flush_now()
                for consumer in list(stream.consumers.values()):
                    replicas = consumer.config.num_replicas
                    # (an R1 consumer that lives on another node is not shutting down)
                    if replicas == 0 or (replicas == 1 and replica.home_of(consumer) == self.me):
                        consumer.signal_shutdown()
        for node in list(self._groups.values()):
            if node.is_leader():
                node.step_down()
        for peer in self.env.node_names():
            if peer != self.me:
                self.env.send(peer, ("JS", "BYE"))

    # ------------------------------------------------------------------ placement

    def place(self, cfg: "StreamConfig") -> list[str]:
        """Peers for a new stream (nats-server's ``selectPeerGroup``), or 400/10005."""
        replicas = cfg.num_replicas or 1
        placement = cfg.placement or {}
        cluster = placement.get("cluster") or self.env.cluster_name
        tags = placement.get("tags") or []
        missing: list[str] = []
        excluded: list[str] = []
        if cluster != self.env.cluster_name:
            raise E.cluster_no_peers("no suitable peers for placement")
        load: dict[str, int] = {}
        for sa in self.assignments.values():
            for peer in sa.peers:
                load[peer] = load.get(peer, 0) + (1 if len(sa.peers) > 1 else 0)
        names = list(self.env.node_names())
        self._rng.shuffle(names)
        nodes = []
        online = 0
        for name in names:
            node_tags = [t.lower() for t in self.env.node_tags(name)]
            ok = True
            for tag in tags:
                exclude = tag.startswith("!")
                tag = tag[1:] if exclude else tag
                given = tag
                tag = tag.lower()
                present = tag in node_tags
                if exclude and present:
                    excluded.append(given)
                    ok = False
                    break
                if not exclude and not present:
                    missing.append(given)
                    ok = False
                    break
            if not ok:
                continue
            up = self.env.online(name)
            online += up
            nodes.append((not up, load.get(name, 0), name))
        if len(nodes) < replicas or online < replicas // 2 + 1:
            reason = "no suitable peers for placement"
            if len(nodes) >= replicas:
                reason += ", peer offline"
            if missing:
                reason += ", tags not matched [" + ", ".join(
                    f"'{t}'" for t in dict.fromkeys(missing)) + "]"
            if excluded:
                reason += ", tags excluded [" + ", ".join(
                    f"'{t}'" for t in dict.fromkeys(excluded)) + "]"
            raise E.cluster_no_peers(reason)
        nodes.sort(key=lambda n: (n[0], n[1]) if replicas > 1 else (n[0],))
        return [n[2] for n in nodes[:replicas]]

    def _group_name(self, peers: list[str], storage: str) -> str:
        token = "".join(self._rng.choice(_DIGITS) for _ in range(8))
        return f"S-R{len(peers)}{storage[:1].upper()}-{token}"

    def _preferred(self, peers: list[str]) -> str:
        online = [p for p in peers if self.env.online(p)]
        return self._rng.choice(online or peers)

    # ------------------------------------------------------------------ the API

    def intercept(self, api: Any, rtype: str, subject: bytes, reply: bytes | None,
                  hdr: bytes | None, payload: bytes, origin: Any) -> bool:
        """Decide who answers a request on this node: True when it is taken here (answered,
        proposed, or left to another node), False when this node's own handler answers it
        (it leads the stream concerned)."""
        tokens = subject.decode("utf-8", "replace").split(".")[2:]
        account = api.js.account_name
        handler = _META_HANDLERS.get(rtype)
        if handler is not None:
            if self.is_meta_leader():
                self._run(api, rtype, handler, tokens, account, reply, hdr, payload)
            elif self.leaderless() and reply:
                self._not_available(api, rtype, reply)
            return True
        name = _stream_of(tokens)
        if name is None:
            return False
        key = (account, name)
        replica = self.replicas.get(key)
        if replica is not None and replica.stream is not None:
            leader_handler = _LEADER_HANDLERS.get(rtype)
            if (rtype == "consumer_info_response" and reply and len(tokens) >= 4
                    and tokens[3] in replica.offline_consumers):
                self._later(api, rtype, reply, E.make(10119))
                return True
            if leader_handler is None:
                if tokens[:3] == ["CONSUMER", "MSG", "NEXT"]:
                    self.clock_soon(replica.pulls_changed)
                return False  # the stream's leader: the normal handler answers
            self._run(api, rtype, leader_handler, tokens, account, reply, hdr, payload)
            return True
        sa = self.assignments.get(key)
        if sa is None:
            if self.is_meta_leader() and reply and rtype:
                self._respond(reply, rtype, error=E.stream_not_found(), api=api)
            elif self.leaderless() and reply and rtype:
                self._not_available(api, rtype, reply)
            return True
        if rtype == "stream_info_response" and reply:
            if replica is not None and replica.raft.leader is None and replica.had_leader:
                # A leaderless group: its members answer with what they hold (nats-server's
                # isGroupLeaderless), the cluster object listing every peer.
                self._respond(reply, rtype, replica.leaderless_info(), api=api)
            elif self.is_meta_leader() and all(p in self.offline for p in sa.peers):
                self._later(api, rtype, reply, E.make(10118))
        return True

    def _not_available(self, api: Any, rtype: str, reply: bytes) -> None:
        # nats-server's errRespDelay lets a leader answer first. It is a real-time race guard:
        # on a virtual clock it would hold the answer until time moves, and in one process a
        # leader answers within a few loop turns, so a short real wait keeps the order.
        import asyncio

        delay = 0.01 if self.clock.virtual else ERROR_DELAY
        asyncio.get_running_loop().call_later(delay, self._respond, reply, rtype, None,
                                              E.cluster_not_avail(), api)

    def _later(self, api: Any, rtype: str, reply: bytes, error: E.ApiError) -> None:
        """An error a non-leader sends after nats-server's errRespDelay (see above)."""
        import asyncio

        delay = 0.01 if self.clock.virtual else ERROR_DELAY
        asyncio.get_running_loop().call_later(delay, self._respond, reply, rtype, None, error,
                                              api)

    @staticmethod
    def clock_soon(callback: Callable[[], None]) -> None:
        import asyncio

        asyncio.get_running_loop().call_soon(callback)

    def _run(self, api: Any, rtype: str, handler: Callable[..., Any], tokens: list[str],
             account: str, reply: bytes | None, hdr: bytes | None, payload: bytes) -> None:
        api.js.api_total += 1
        try:
            result = handler(self, api, tokens, account, reply, payload)
        except E.ApiError as err:
            api.js.api_errors += 1
            if reply:
                self._respond(reply, rtype, error=err, api=api)
            return
        if result is not None and reply:
            self._respond(reply, rtype, result, api=api)

    def _respond(self, reply: bytes, rtype: str, fields: dict | None = None,
                 error: E.ApiError | None = None, api: Any = None, bus: Any = None) -> None:
        """Publish an API reply in the requester's account (``api``'s or ``bus``)."""
        body: dict[str, Any] = {"type": TYPE_PREFIX + rtype}
        if error is not None:
            body["error"] = error.to_json()
            if api is not None:
                body.update(api.error_extras(rtype))
        elif fields:
            body.update(fields)
        if bus is None:
            bus = api.bus if api is not None else self.server
        bus.publish(reply, None, None, J.dumps(body))

    def lookup_config(self, account: str) -> Callable[[str], "StreamConfig | None"]:
        def lookup(name: str) -> "StreamConfig | None":
            sa = self.assignments.get((account, name))
            return sa.config if sa is not None else None
        return lookup

    # -- meta handlers

    def _stream_create(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                       payload: bytes) -> dict | None:
        from minijs.jetstream.config import stream as C
        from minijs.jetstream.config.stream import to_json_dict

        name = tokens[2]
        js = api.js
        cfg, pedantic = C.parse_stream_config(payload)
        if cfg.name != name:
            raise E.stream_mismatch()
        if (cfg.placement or {}).get("preferred"):
            raise E.stream_invalid_config("preferred server not permitted in placement")
        lookup = self.lookup_config(account)
        cfg = C.validate_and_default(cfg, create=True, pedantic=pedantic, lookup=lookup,
                                     unsupported=False, clustered=True,
                                     max_duplicate_window=js.js_limits.duplicate_window)
        existing = self.assignments.get((account, name))
        if existing is not None:
            if not C.same_config(cfg, existing.config):
                raise E.stream_name_exist()
            # Identical: the stream's leader answers with its info (as nats-server forwards).
            self._forward_info(account, name, reply, "stream_create_response", api)
            return None
        if sum(1 for k in self.assignments if k[0] == account) >= js.account_limits.max_streams >= 0 \
                and js.account_limits.max_streams > 0:
            raise E.maximum_streams_limit()
        js.check_max_bytes_limits(cfg)
        for (acc, other), sa in self.assignments.items():
            if acc != account:
                continue
            from minijs.core import subjects as S
            for a in cfg.subjects or ():
                for b in sa.config.subjects or ():
                    if S.subjects_overlap(a, b):
                        raise E.stream_subject_overlap()
        C.check_unsupported(cfg, lookup)
        peers = self.place(cfg)
        group = self._group_name(peers, cfg.storage)
        entry = ("stream", account, to_json_dict(cfg, dynamic_metadata=False),
                 self.clock.time_ns(), peers, group, self._preferred(peers), reply, "create")
        self.meta.propose(entry)
        return None

    def _stream_update(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                       payload: bytes) -> dict | None:
        from minijs.jetstream.config import stream as C
        from minijs.jetstream.config.stream import to_json_dict

        name = tokens[2]
        js = api.js
        cfg, pedantic = C.parse_stream_config(payload)
        lookup = self.lookup_config(account)
        cfg = C.validate_and_default(cfg, create=False, pedantic=pedantic, lookup=lookup,
                                     unsupported=False, clustered=True,
                                     max_duplicate_window=js.js_limits.duplicate_window)
        js.check_max_bytes_limits(cfg)
        if cfg.name != name:
            raise E.stream_mismatch()
        sa = self.assignments.get((account, name))
        if sa is None:
            raise E.stream_not_found()
        cfg = C.check_update(sa.config, cfg, pedantic=pedantic, lookup=lookup,
                             unsupported=False, clustered=True)
        C.check_unsupported(cfg, lookup)
        current = list(sa.peers)
        want = cfg.num_replicas or 1
        moved = (cfg.placement or {}) != (sa.config.placement or {})
        if moved:
            # A new placement: the peers it allows, those already holding the stream first.
            fits = self.place(cfg)
            target = [p for p in current if p in fits][:want]
            target += [p for p in fits if p not in target][:want - len(target)]
        elif want > len(current):
            target = current + [p for p in self.place(cfg) if p not in current]
            target = target[:want]
            if len(target) < want:
                raise E.cluster_no_peers("no suitable peers for placement")
        elif want < len(current):
            leader = self._leader_of(account, name)
            target = [leader] if leader in current else []
            target += [p for p in current if p not in target][:want - len(target)]
        else:
            target = current
        label = sa.label or sa.group
        if len(current) == 1 and want > 1:  # first replicated: named for its new size
            label = self._group_name(target, cfg.storage)
        origin: dict[str, Any] = {"replicas": len(current)}
        if moved:
            origin["placement"] = to_json_dict(sa.config, dynamic_metadata=False).get(
                "placement", {})
        more: dict[str, Any] = {"label": label}
        if set(target) == set(current):
            peers = current
        elif set(target) >= set(current) or set(target) <= set(current):
            peers = target  # grown (new peers catch up) or shrunk: in one step
            more["change"] = {"replicas": target if len(target) > len(current) else None,
                              "origin": origin}
        else:
            # Moving: the new peers join first; once they hold everything, the stream's leader
            # tells the meta leader, which takes the old ones out.
            peers = current + [p for p in target if p not in current]
            more["desired"] = target
            more["change"] = {"replicas": target, "origin": origin}
        entry = ("stream", account, to_json_dict(cfg, dynamic_metadata=False), sa.created,
                 peers, sa.group, sa.preferred, reply, "update", more)
        self.meta.propose(entry)
        return None

    # -- leader handlers (the stream's leader answers)

    def _stepdown_target(self, raft: "RaftNode", payload: bytes) -> str | None:
        """nats-server's ``getStepDownPreferredPlacement``: the peer a body's placement names
        (or one matching its cluster and tags), None for any; 400/10005 when none fits."""
        if not J.is_object_or_array(payload):
            return None
        from minijs.jetstream.config import stream as C

        req = J.decode_strict(payload, {"placement": J.Ptr(C.PLACEMENT_TYPE)},
                              "JSApiLeaderStepdownRequest")
        placement = req.get("placement")
        if not placement:
            return None
        preferred = placement.get("preferred") or ""
        if preferred:
            if preferred == raft.me:
                raise E.cluster_no_peers(f'preferred server "{preferred}" is already leader')
            if preferred not in raft.peers:
                raise E.cluster_no_peers(f'preferred server "{preferred}" not known')
            return preferred
        cluster = placement.get("cluster") or ""
        tags = [t.lower() for t in placement.get("tags") or ()]
        possible = [p for p in sorted(raft.peers) if p != raft.me and self.env.online(p)
                    and (not cluster or cluster == self.env.cluster_name)
                    and all(t in [x.lower() for x in self.env.node_tags(p)] for t in tags)]
        if not possible:
            raise E.cluster_no_peers("no replacement peer connected")
        return self._rng.choice(possible)

    def _stream_stepdown(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                         payload: bytes) -> dict:
        replica = self.replicas[(account, tokens[3])]
        replica.flush_now()  # what this turn wrote goes to the log before the hand-over
        return self._step_down(replica.raft, payload)

    def _consumer_stepdown(self, api: Any, tokens: list[str], account: str,
                           reply: bytes | None, payload: bytes) -> dict:
        replica = self.replicas[(account, tokens[3])]
        stream = replica.stream
        if stream is None or tokens[4] not in stream.consumers:
            raise E.consumer_not_found()
        consumer = stream.consumers[tokens[4]]
        if consumer.config.num_replicas == 1 or not consumer.config.durable_name:
            self._stepdown_target(replica.raft, payload)  # (the body is still checked)
            return {"success": True}  # an R1 consumer: nothing to hand over
        # A replicated stream's consumers run where the stream leads: they move with it.
        replica.flush_now()
        return self._step_down(replica.raft, payload)

    def _step_down(self, raft: "RaftNode", payload: bytes) -> dict:
        target = self._stepdown_target(raft, payload)
        if len(raft.peers) > 1:
            if raft.step_down(target) is None:
                raise E.cluster_no_peers("no replacement peer connected")
        return {"success": True}

    def _leader_of(self, account: str, name: str) -> str | None:
        replica = self.replicas.get((account, name))
        return replica.raft.leader if replica is not None else None

    def _stream_delete(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                       payload: bytes) -> dict | None:
        if not J.is_empty_request(payload):
            raise E.not_empty_request()
        name = tokens[2]
        if (account, name) not in self.assignments:
            raise E.stream_not_found()
        self.meta.propose(("stream-", account, name, reply))
        return None

    def _stream_remove_peer(self, api: Any, tokens: list[str], account: str,
                            reply: bytes | None, payload: bytes) -> dict | None:
        """``STREAM.PEER.REMOVE``: the peer leaves the stream's group and another node takes
        its place (a new replica catching up from the leader); without a spare node,
        503/10075 and nothing changes."""
        if J.is_empty_request(payload):
            raise E.bad_request()
        req = J.decode_strict(payload, {"peer": J.STRING}, "JSApiStreamRemovePeerRequest")
        peer = req.get("peer") or ""
        if not peer:
            raise E.bad_request()
        sa = self.assignments.get((account, tokens[3]))
        if sa is None:
            raise E.stream_not_found()
        if peer not in sa.peers:
            by_hash = [p for p in sa.peers if node_hash(p) == peer]
            if not by_hash:
                raise E.make(10040)
            peer = by_hash[0]
        spare = [n for n in self.place_candidates(sa.config) if n not in sa.peers]
        if not spare:
            raise E.make(10075)
        peers = [p if p != peer else spare[0] for p in sa.peers]
        from minijs.jetstream.config.stream import to_json_dict

        self.meta.propose(("stream", account, to_json_dict(sa.config, dynamic_metadata=False),
                           sa.created, peers, sa.group, sa.preferred, None, "update"))
        return {"success": True}

    def place_candidates(self, cfg: "StreamConfig") -> list[str]:
        """The nodes a stream's placement allows, online first, least loaded first."""
        try:
            single = cfg.copy()
            single.num_replicas = 1
            everyone = list(self.env.node_names())
            return [n for n in self._ordered(single, everyone)]
        except E.ApiError:
            return []

    def _ordered(self, cfg: "StreamConfig", names: list[str]) -> list[str]:
        out = []
        for name in names:
            tags = [t.lower() for t in self.env.node_tags(name)]
            want = [t.lower() for t in (cfg.placement or {}).get("tags") or ()]
            if all((t[1:] not in tags) if t.startswith("!") else (t in tags) for t in want):
                out.append(name)
        return sorted(out, key=lambda n: (not self.env.online(n), n))

    def _matching(self, account: str, payload: bytes, struct: str) -> tuple[list[str], int]:
        from minijs.core import subjects as S

        offset = 0
        subject = ""
        if J.is_object_or_array(payload):
            req = J.decode_strict(payload, {"offset": J.INT, "subject": J.STRING}, struct)
            offset = max(0, req.get("offset", 0))
            subject = req.get("subject") or ""
        names = sorted(name for (acc, name), sa in self.assignments.items() if acc == account
                       and (not subject or any(S.subjects_overlap(subject, s)
                                               for s in sa.config.subjects or ())))
        return names, min(offset, len(names))

    def _stream_names(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                      payload: bytes) -> dict:
        names, offset = self._matching(account, payload, "JSApiStreamNamesRequest")
        page = names[offset:offset + 1024]
        return {"total": len(names), "offset": offset, "limit": 1024, "streams": page or None}

    def _stream_list(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                     payload: bytes) -> dict | None:
        names, offset = self._matching(account, payload, "JSApiStreamListRequest")
        page = names[offset:offset + 256]

        def done(infos: dict[str, dict]) -> None:
            streams = []
            missing = []
            for n in page:
                info = infos.get(n)
                if info is None:
                    missing.append(n)
                    sa = self.assignments.get((account, n))
                    if sa is not None and all(p in self.offline for p in sa.peers):
                        streams.append(self._offline_entry(api, sa))
                else:
                    streams.append(info)
            out: dict[str, Any] = {"total": len(names), "offset": offset, "limit": 256,
                                   "streams": streams}
            if missing:
                out["missing"] = missing
            if reply:
                self._respond(reply, "stream_list_response", out, api=api)

        self._gather(account, page, done)
        return None

    def _offline_entry(self, api: Any, sa: StreamAssignment) -> dict[str, Any]:
        """A stream whose every peer shut down, listed from its assignment: its config, no
        state, and a cluster object naming its offline peers (as nats-server lists it)."""
        from minijs.jetstream.store import open_store
        from minijs.jetstream.streams.stream import Stream

        view = Stream(api.js, sa.config, sa.created, open_store("memory"))
        info = view.info_json(dynamic_metadata=False, cluster=False, domain=api.js.domain)
        cluster = {"name": self.env.cluster_name, "raft_group": sa.label or sa.group,
                   "replicas": [{"name": p, "current": False, "offline": True, "active": 0,
                                 "peer": node_hash(p)} for p in sorted(sa.peers)]}
        out: dict[str, Any] = {}
        for key, value in info.items():
            if key == "ts":
                out["cluster"] = cluster
            out[key] = value
        return out

    def _account_info(self, api: Any, tokens: list[str], account: str, reply: bytes | None,
                      payload: bytes) -> dict | None:
        js = api.js
        names = [name for (acc, name) in self.assignments if acc == account]

        def done(infos: dict[str, dict]) -> None:
            out = js.account_info()
            memory = storage = consumers = 0
            for name in names:
                info = infos.get(name)
                if info is None:
                    continue
                st = info.get("state", {})
                sa = self.assignments.get((account, name))
                copies = len(sa.peers) if sa is not None else 1  # every replica counts
                if info.get("config", {}).get("storage") == "memory":
                    memory += st.get("bytes", 0) * copies
                else:
                    storage += st.get("bytes", 0) * copies
                consumers += st.get("consumer_count", 0)
            out["memory"], out["storage"] = memory, storage
            out["streams"], out["consumers"] = len(names), consumers
            if reply:
                self._respond(reply, "account_info_response", out, api=api)

        self._gather(account, names, done)
        return None

    def _forward_info(self, account: str, name: str, reply: bytes | None, rtype: str,
                      api: Any) -> None:
        def done(infos: dict[str, dict]) -> None:
            info = infos.get(name)
            if reply and info is not None:
                self._respond(reply, rtype, info, api=api)
        self._gather(account, [name], done)

    # -- asking the other nodes (node protocol)

    def _gather(self, account: str, names: list[str], done: Callable[[dict], None]) -> None:
        """Collect the infos of ``names`` from their leaders, then call ``done``."""
        self._next_gather += 1
        gid = self._next_gather
        peers = [p for p in self.env.node_names() if p != self.me and self.env.reachable(p)]
        state = {"infos": self._local_infos(account, names), "waiting": set(peers),
                 "done": done, "timer": None}
        self._gathers[gid] = state
        for peer in peers:
            self.env.send(peer, ("JS", "ASK", gid, account, names))
        if not peers:
            self._finish_gather(gid)
            return
        state["timer"] = self.clock.call_later(GATHER_TIMEOUT, self._finish_gather, gid)

    def _local_infos(self, account: str, names: list[str]) -> dict[str, dict]:
        out = {}
        for name in names:
            replica = self.replicas.get((account, name))
            if replica is not None and replica.stream is not None:
                out[name] = replica.stream.info_json(dynamic_metadata=False,
                                                     domain=replica.engine.domain)
        return out

    def _on_js(self, sender: str, message: tuple) -> None:
        op = message[1]
        if op == "ASK":
            _, _, gid, account, names = message
            self.env.send(sender, ("JS", "ANS", gid, self._local_infos(account, names)))
        elif op == "BYE":
            self.offline.add(sender)
        elif op == "MOVED":
            _, _, account, name, target = message
            self.moved(account, name, target)
        elif op == "ANS":
            _, _, gid, infos = message
            state = self._gathers.get(gid)
            if state is None:
                return
            state["infos"].update(infos)
            state["waiting"].discard(sender)
            if not state["waiting"]:
                self._finish_gather(gid)

    def _finish_gather(self, gid: int) -> None:
        state = self._gathers.pop(gid, None)
        if state is None:
            return
        if state["timer"] is not None:
            state["timer"].cancel()
        state["done"](state["infos"])


def _stream_of(tokens: list[str]) -> str | None:
    """The stream a request to ``$JS.API.<tokens>`` is about, if it is about one."""
    n = len(tokens)
    if n < 2:
        return None
    head, op = tokens[0], tokens[1]
    if head == "STREAM":
        if n == 3:
            return tokens[2]
        if n >= 4 and op in ("MSG", "LEADER", "PEER"):
            return tokens[3]
        return None
    if head == "DIRECT" and op == "GET" and n >= 3:
        return tokens[2]
    if head == "CONSUMER":
        if op in ("MSG", "LEADER") and n >= 4:
            return tokens[3]
        if op == "DURABLE" and n >= 4:
            return tokens[3]
        if n >= 3:
            return tokens[2]
    return None


_LEADER_HANDLERS: dict[str, Callable[..., Any]] = {
    "stream_leader_stepdown_response": JetStreamCluster._stream_stepdown,
    "consumer_leader_stepdown_response": JetStreamCluster._consumer_stepdown,
}

_META_HANDLERS: dict[str, Callable[..., Any]] = {
    "account_info_response": JetStreamCluster._account_info,
    "stream_create_response": JetStreamCluster._stream_create,
    "stream_update_response": JetStreamCluster._stream_update,
    "stream_delete_response": JetStreamCluster._stream_delete,
    "stream_names_response": JetStreamCluster._stream_names,
    "stream_list_response": JetStreamCluster._stream_list,
    "stream_remove_peer_response": JetStreamCluster._stream_remove_peer,
}
