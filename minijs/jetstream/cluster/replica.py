"""One replica of a replicated stream on one node: its store, its Raft member, and, while it
leads, the running :class:`~minijs.jetstream.streams.stream.Stream`.

The leader's stream writes through a :class:`~minijs.jetstream.cluster.store.RecordingStore`;
at the end of each turn the turn's mutations are proposed as one Raft entry and the turn's pub
acks, ack replies and consumer signals are held until the entry commits (on a majority), so a
publisher is acked only for what survives the loss of a minority. Followers replay committed
entries on their stores. A replica that becomes leader starts a stream on its store as a
restarted single server does (dedup window rebuilt from the stored ``Nats-Msg-Id``\\ s,
expiry timers, schedules, consumers from their persisted state, mirror and source links); one
that stops leading stops that stream (its waiting pull requests are told, as on nats-server).
The consumers of a replicated stream run where the stream's leader runs.

Invariants:

* only the leader's stream accepts publishes or changes the store; a follower's store changes
  only by replaying committed entries (or a snapshot from the leader);
* acks and signals of a turn are released only after the turn's entry commits, in proposal
  order; if leadership is lost first they are dropped (the publisher sees no ack, as from
  nats-server), and the replica asks the next leader for a snapshot before it serves again;
* ``store_index`` is the last Raft index the store reflects (kept in the store's metadata).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from minijs.jetstream.cluster.store import INDEX_KEY, RecordingStore, dump, load, replay

#: Store metadata: a consumer's waiting pull requests (reply subjects, JSON).
PULLS_PREFIX = "pulls/"
#: Store metadata: the node an R1 consumer lives on.
HOME_PREFIX = "home/"

if TYPE_CHECKING:
    from minijs.jetstream.config.stream import StreamConfig
    from minijs.jetstream.engine import JetStream
    from minijs.jetstream.streams.stream import Stream


class StreamReplica:
    """A replicated stream's member on this node (see the module docstring)."""

    def __init__(self, host: Any, engine: "JetStream", cfg: "StreamConfig", created: int,
                 peers: list[str], group: str) -> None:
        self.host = host
        self.engine = engine
        self.account = engine.account_name
        self.name = cfg.name
        self.config = cfg
        self.created = created
        self.group = group
        self.inner = self._open_store(fresh=False)
        self.store_index = int(self.inner.get_meta(INDEX_KEY) or 0)
        self.raft = host.raft_member(group, peers, self, durable=cfg.storage == "file")
        self.stream: Stream | None = None
        self.recording: RecordingStore | None = None
        self._diverged = False
        self.leader_since = 0
        self._flush_due = False
        #: Called once, by the first leader, with its stream (a create's reply).
        self.on_first_leader: Callable[["Stream"], None] | None = None
        self._led = False
        self.closed = False
        #: The Raft group's name as clients see it (see the meta module).
        self.label = group
        #: While moving: the peers the stream goes to (its leader reports their catch-up).
        self._desired: list[str] | None = None
        self._consumer_groups: dict[str, tuple[int, str, int]] = {}
        #: The waiting pull requests last recorded, by consumer.
        self._pulls: dict[str, tuple[str, ...]] = {}
        #: Has the group had a leader since this replica started?
        self.had_leader = False
        #: R1 consumers whose home node is offline (name -> home): not running here.
        self.offline_consumers: dict[str, str] = {}
        self._homes: dict[str, str] = {}

    # ------------------------------------------------------------------ store

    def _open_store(self, *, fresh: bool) -> Any:
        from minijs.jetstream.store import open_store

        cfg = self.config
        if cfg.storage == "file":
            path = self.engine._streams_dir() / cfg.name
            if fresh and path.exists():
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            store = open_store("file", path, sync=False)
        else:
            store = open_store("memory")
        if store.last_seq == 0 and cfg.first_seq > 0 and store.get_meta(INDEX_KEY) is None:
            store.compact(cfg.first_seq)
        return store

    def _flush_soon(self) -> None:
        if not self._flush_due:
            self._flush_due = True
            self.engine.soon(self._flush_inner)

    def _flush_inner(self) -> None:
        self._flush_due = False
        if not self.inner.closed:
            self.inner.flush()

    # ------------------------------------------------------------------ lifecycle

    def start(self, campaign: str | None) -> None:
        self.raft.start(campaign)

    def stop(self, *, crash: bool = False) -> None:
        """The node goes down (or the replica is removed from it): stop leading, keep data."""
        if self.closed:
            return
        self.closed = True
        self.raft.stop()
        self._demote(shutdown=not crash)
        if crash:
            self.inner.abandon()
        else:
            self.inner.flush()
            self.inner.close()

    def delete(self) -> None:
        """The stream is deleted: stop and remove its data."""
        if not self.closed:
            self.closed = True
            self.raft.stop()
            self._demote(shutdown=False, deleted=True)
        if not self.inner.closed:
            self.inner.delete()

    def update_config(self, cfg: "StreamConfig") -> None:
        """A committed config change: the leader's stream applies it (its limits enforced
        there are replicated as any write); a follower keeps it for when it leads."""
        self.config = cfg
        stream = self.stream
        if stream is not None:
            self.engine.update_stream(stream, cfg)

    # ------------------------------------------------------------------ the state machine

    def apply(self, index: int, ops: Any) -> None:
        if index <= self.store_index:
            return  # the store holds it already (our own proposal, or before a restart)
        replay(self.inner, ops)
        self.inner.put_meta(INDEX_KEY, str(index).encode())
        self.store_index = index
        self._flush_soon()

    def snapshot(self) -> Any:
        return dump(self.inner)

    def restore(self, data: Any) -> None:
        self._demote(shutdown=False)
        self.inner.delete()
        self.inner = self._open_store(fresh=True)
        load(self.inner, data)
        self.store_index = int(self.inner.get_meta(INDEX_KEY) or 0)
        self.inner.flush()
        self._diverged = False

    def conflict(self, index: int) -> None:
        if index <= self.store_index:
            self._diverged = True

    def needs_snapshot(self) -> bool:
        return self._diverged

    def leader_changed(self, leader: str | None, is_me: bool) -> None:
        log = self.engine.log
        if log.debug_enabled:
            log.debug(f"JetStream stream '{self.account} > {self.name}' leader: {leader} "
                      f"(diverged: {self._diverged})")
        if leader is not None:
            self.had_leader = True
        if is_me:
            if self._diverged:
                return  # cannot lead what we do not hold; wait for a snapshot
            self._promote()
        else:
            self._demote(shutdown=False)
        self.host.replica_leader_changed(self, leader)

    # ------------------------------------------------------------------ leading

    def _promote(self) -> None:
        if self.stream is not None or self.closed:
            return
        from minijs.jetstream.consumers.consumer import recover_consumers
        from minijs.jetstream.streams.stream import Stream

        engine = self.engine
        recording = RecordingStore(self.inner, self._recorded)
        stream = Stream(engine, self.config, self.created, recording)
        stream.replicated = True
        stream.commit_gate = self._gate
        stream.cluster_info = self.cluster_info
        stream.consumer_cluster_info = self.consumer_cluster_info
        self.recording = recording
        self.stream = stream
        self.leader_since = engine.clock.time_ns()
        engine.streams[self.name] = stream
        stream.start()
        recover_consumers(stream)
        self._park_offline_consumers(stream)
        self._release_pulls(stream)
        engine.replicator.attach(stream)
        if not self._led:
            self._led = True
            callback, self.on_first_leader = self.on_first_leader, None
            if callback is not None:
                callback(stream)

    def _demote(self, *, shutdown: bool, deleted: bool = False) -> None:
        stream = self.stream
        if stream is None:
            return
        self.stream = None
        engine = self.engine
        if engine.streams.get(self.name) is stream:
            del engine.streams[self.name]
        engine.group.forget(stream)
        engine.replicator.detach(stream, deleted=deleted)
        for consumer in list(stream.consumers.values()):
            if shutdown and consumer.config.num_replicas <= 1:
                # nats-server's signalPullConsumers tells the pulls of consumers configured
                # with 0 or 1 replicas; the next leader tells the replicated ones (below).
                consumer.signal_shutdown()
            consumer.stop()  # a stepped-down leader drops its waiting pulls silently
        stream.stop()
        recording, self.recording = self.recording, None
        if recording is not None and (recording.ops or recording.in_flight):
            self._diverged = True  # writes of ours that may never commit

    # -- waiting pull requests (nats-server's addPendingRequest): known to every replica, so
    #    a new leader tells them that leadership changed

    def pulls_changed(self) -> None:
        """A pull request arrived: the set of waiting requests goes with the turn's writes."""
        stream = self.stream
        if stream is not None:
            self.engine.mark_dirty(stream)

    def _record_pulls(self, stream: "Stream", recording: RecordingStore) -> None:
        for name, consumer in stream.consumers.items():
            replicated = consumer.config.num_replicas != 1 and bool(consumer.config.durable_name)
            replies = (tuple(sorted({wr.reply.decode() for wr in consumer.waiting}))
                       if replicated and consumer.waiting else ())
            if self._pulls.get(name, ()) != replies:
                self._pulls[name] = replies
                key = PULLS_PREFIX + name
                if replies:
                    import json

                    recording.put_meta(key, json.dumps(replies).encode())
                else:
                    recording.delete_meta(key)

    def _release_pulls(self, stream: "Stream") -> None:
        """A new leader: every pull request that waited on the old one hears ``409 Leadership
        Change`` (nats-server's ``checkPendingRequests``)."""
        import json

        header = b"NATS/1.0 409 Leadership Change\r\n\r\n"
        publish = stream.bus.publish
        for key, value in list(self.inner.iter_meta(PULLS_PREFIX)):
            for reply in json.loads(value):
                publish(reply.encode(), None, header, b"")
            self.recording.delete_meta(key)  # type: ignore[union-attr]
        self._pulls = {}

    # -- R1 consumers live on one node (their home): offline while it is shut down

    def _record_homes(self, stream: "Stream", recording: RecordingStore) -> None:
        for name, consumer in stream.consumers.items():
            if consumer.config.num_replicas == 1 and name not in self._homes:
                home = self.inner.get_meta(HOME_PREFIX + name)
                if home is None:
                    recording.put_meta(HOME_PREFIX + name, self.host.me.encode())
                    home = self.host.me.encode()
                self._homes[name] = home.decode()

    def home_of(self, consumer: Any) -> str:
        """The node an R1 consumer lives on (this one until recorded)."""
        return self._homes.get(consumer.name, self.host.me)

    def _park_offline_consumers(self, stream: "Stream") -> None:
        """A new leader: an R1 consumer whose home node was shut down stays offline there
        (nats-server's consumer lives on that node), until the node is back."""
        self._homes = {}
        for key, value in self.inner.iter_meta(HOME_PREFIX):
            name, home = key[len(HOME_PREFIX):], value.decode()
            self._homes[name] = home
            consumer = stream.consumers.get(name)
            if consumer is not None and home != self.host.me and home in self.host.offline:
                consumer.stop()
                del stream.consumers[name]
                self.offline_consumers[name] = home

    def node_back(self, peer: str) -> None:
        """``peer`` is reachable again: its offline R1 consumers run again (on the leader)."""
        stream = self.stream
        names = [n for n, home in self.offline_consumers.items() if home == peer]
        if stream is None or not names:
            return
        import json

        from minijs.jetstream.consumers.consumer import Consumer
        from minijs.jetstream.consumers.state import STATE_PREFIX

        for name in names:
            del self.offline_consumers[name]
            raw = self.inner.get_meta(STATE_PREFIX + name)
            if raw is None or name in stream.consumers:
                continue
            consumer = Consumer.restore(stream, json.loads(raw))
            stream.consumers[consumer.name] = consumer
            consumer.start()

    def leaderless_info(self) -> dict[str, Any]:
        """STREAM.INFO from a member of a leaderless group: what this replica holds, and a
        cluster object without a leader that lists every peer."""
        from minijs.jetstream.consumers.state import STATE_PREFIX
        from minijs.jetstream.streams.stream import Stream

        view = Stream(self.engine, self.config, self.created, self.inner)
        info = view.info_json(cluster=False, domain=self.engine.domain)
        info["state"]["consumer_count"] = len(self.inner.iter_meta(STATE_PREFIX))
        cluster = self.host.group_info(self.raft, 0, self.label, leaderless=True)
        out: dict[str, Any] = {"total": 0, "offset": 0, "limit": 0}
        for key, value in info.items():
            out[key] = value
            if key == "state":
                out["cluster"] = cluster
        return out

    def flush_now(self) -> None:
        """(Leader) propose what this turn wrote now (before a hand-over), consumers' state
        writes scheduled for the end of the turn included."""
        stream = self.stream
        if stream is None:
            return
        for consumer in list(stream.consumers.values()):
            consumer.durable.write_now()
        self.engine.flush_now(stream)

    def _recorded(self) -> None:
        stream = self.stream
        if stream is not None:
            self.engine.mark_dirty(stream)

    def _gate(self, acks: list, signals: list) -> None:
        """The end of a turn on the leader: propose its writes; release its acks and signals
        once they commit (see the module docstring)."""
        recording = self.recording
        stream = self.stream
        if recording is None or stream is None:
            return
        self._record_pulls(stream, recording)
        self._record_homes(stream, recording)
        ops = recording.take()
        if not ops and not recording.in_flight:
            self.inner.flush()
            self._release(stream, acks, signals)
            return
        from minijs.cluster.raft import NotLeader

        done = (lambda ok: self._committed(ok, stream, acks, signals))
        try:
            if ops:
                index = self.raft.propose(ops, done)
                self.inner.put_meta(INDEX_KEY, str(index).encode())
                self.store_index = index
                recording.in_flight += 1
            else:  # nothing new: these wait for what is in flight
                self.raft.after_last(done)
        except NotLeader:
            self._diverged = True
            return
        self.inner.flush()

    def _committed(self, ok: bool, stream: "Stream", acks: list, signals: list) -> None:
        recording = self.recording
        if recording is not None and recording.inner is self.inner and recording.in_flight:
            recording.in_flight -= 1
        if ok and self.stream is stream:
            self._release(stream, acks, signals)

    @staticmethod
    def _release(stream: "Stream", acks: list, signals: list) -> None:
        publish = stream.bus.publish
        for reply, ack in acks:
            publish(reply, None, None, ack)
        if signals:
            stream.signals.queued.extend(signals)
        stream.signals.release()

    # ------------------------------------------------------------------ what clients see

    def cluster_info(self) -> dict[str, Any]:
        info = self.host.group_info(self.raft, self.leader_since, self.label)
        if self._desired is not None and len(self.raft.peers) > 1:
            info["desired"] = self.host._desired_info({"replicas": self._desired})
        return info

    def watch_desired(self, target: list[str] | None) -> None:
        """A move under way: once every peer of ``target`` has caught up, the leader tells the
        meta leader (:meth:`JetStreamCluster.moved`)."""
        self._desired = target
        self.raft.on_progress = self._check_desired if target else None
        if target:
            self._check_desired()

    def _check_desired(self) -> None:
        target = self._desired
        raft = self.raft
        if target is None or not raft.is_leader():
            return
        if all(raft.caught_up(p) for p in target):
            self.host.report_moved(self.account, self.name, target)

    def consumer_cluster_info(self, consumer: Any) -> dict[str, Any]:
        """A consumer's ``cluster`` object: a replicated stream's consumers run where the
        stream leads, so their group is the stream's under the consumer's own group name
        (``C-R<n><storage>-<id>``); an R1 consumer shows its name and leader only."""
        config = consumer.config
        ephemeral = not config.durable_name
        size = 1 if ephemeral else min(config.num_replicas or len(self.raft.peers),
                                       len(self.raft.peers))
        created, label, last = self._consumer_groups.get(consumer.name, (size, "", 0))
        if not label and size > 1:  # an R1 consumer has no group; one is made as it grows
            created = size
            storage = "M" if config.mem_storage or self.config.storage == "memory" else "F"
            from minijs.jetstream.cluster.peers import node_hash

            label = f"C-R{created}{storage}-{node_hash(self.group + '/' + consumer.name)}"
        self._consumer_groups[consumer.name] = (created, label, size)
        if size == 1:  # an R1 consumer lives on its home node (see _record_homes)
            return {"name": self.host.env.cluster_name,
                    "leader": self._homes.get(consumer.name, self.host.me)}
        peers = [self.host.me] + sorted(p for p in self.raft.peers if p != self.host.me)
        peers = peers[:size]
        info = self.host.group_info(self.raft, self.leader_since, label, peers)
        if last and size > last:  # grown since the last report: the reply shows where to
            info["desired"] = self.host._desired_info({"replicas": sorted(peers)})
        return info
