"""Raft: one replicated log per group (the meta group, each replicated stream), on the server
clock, over the cluster's network.

A :class:`RaftNode` is one member of one group on one node. It elects leaders, replicates
entries the leader proposes and tells its state machine (:class:`StateMachine`) about each
entry once a majority holds it. Timings are nats-server's defaults (``raft.go``): an election
timeout drawn between 4 and 9 s, heartbeats every second, a leader that has not heard from a
majority for 10 s steps down; a new group's preferred member campaigns after 50 ms, a
leadership transfer after 10 ms. On a virtual clock the campaigns a healthy cluster starts by
itself (a new group's preferred member, a transfer) take no time, so a create does not wait for
the test to move time; elections after a lost leader do. A new cluster's first meta election is
started at once by one node the cluster picks (nats-server's members campaign after 100 to
800 ms; the cluster is not ready before it has a leader, so no client sees the difference).

Invariants (Raft's, as kept here):

* at most one leader per term; a member votes once per term, for a candidate whose log is at
  least as up to date as its own;
* an entry is committed once the leader of its term has it on a majority; committed entries
  are applied in index order, each exactly once per member incarnation, and never rolled back;
* a follower's log agrees with the leader's up to the entries the leader sent it: entries
  after a mismatch are dropped before new ones are appended;
* a new leader's state machine hears that it leads only once it has applied every entry an
  earlier term left in its log (nats-server's applied floor): the group knows its leader at
  once, but what the leader serves includes everything committed before it took over;
* the durable part (term, vote, log, snapshot) lives in a :class:`RaftDisk`, which the cluster
  keeps across a member's restarts for groups whose storage survives one;
* every wait is a timer on the server clock; every random draw comes from the member's seeded
  source. An election timer is marked ``housekeeping`` while the member's leader is reachable,
  so an idle auto clock does not race through healthy heartbeats, and becomes a real wait as
  soon as the link to the leader is gone.

Messages (the node protocol's ``("RAFT", group, kind, ...)``): ``VOTE`` (term, candidate,
last index, last term), ``VOTED`` (term, granted), ``APPEND`` (term, leader, prev index, prev
term, entries, commit), ``APPENDED`` (term, success, match index), ``SNAP`` (term, leader,
index, term at index, data), ``SNAPPED`` (term, index), ``TIMEOUT_NOW`` (term).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from minijs.randomness import RandomSource

FOLLOWER, CANDIDATE, LEADER = "follower", "candidate", "leader"

ELECTION_MIN, ELECTION_MAX = 4.0, 9.0
CAMPAIGN_NOW = 0.05
TRANSFER = 0.01
HEARTBEAT = 1.0
LOST_QUORUM = 10.0
#: Entries a leader sends in one APPEND.
MAX_APPEND = 512
#: Applied entries kept before the log is compacted behind a snapshot.
COMPACT_AFTER = 8192


class NotLeader(Exception):
    """A proposal reached a member that is not the leader (``leader``: who is, if known)."""

    def __init__(self, leader: str | None) -> None:
        super().__init__(f"not the leader (leader: {leader})")
        self.leader = leader


class StateMachine(Protocol):
    """What a group replicates into."""

    def apply(self, index: int, entry: Any) -> None:
        """``entry`` is committed (called in index order on every member)."""

    def snapshot(self) -> Any:
        """The state after the last applied entry, for a member too far behind."""

    def restore(self, data: Any) -> None:
        """Replace the state with a :meth:`snapshot` (a lagging member catching up)."""

    def leader_changed(self, leader: str | None, is_me: bool) -> None:
        """The group's known leader changed (None: no leader now)."""

    def conflict(self, index: int) -> None:
        """Entries from ``index`` on were dropped (an old leader's, never committed)."""

    def needs_snapshot(self) -> bool:
        """The state cannot be brought up to date by entries (it diverged): ask for a
        snapshot."""


@dataclass
class RaftDisk:
    """A member's durable Raft state: what survives its restarts."""

    term: int = 0
    voted_for: str | None = None
    #: Entries after the snapshot: (term, entry); the first is at ``base + 1``.
    log: list[tuple[int, Any]] = field(default_factory=list)
    base: int = 0
    base_term: int = 0
    snapshot: Any = None
    #: The peers of the group (changed by membership entries).
    peers: list[str] = field(default_factory=list)


class RaftNode:
    """One member of one Raft group."""

    def __init__(self, group: str, me: str, disk: RaftDisk, *, send: Callable[[str, tuple], Any],
                 clock: Any, rng: RandomSource | random.Random, fsm: StateMachine,
                 reachable: Callable[[str], bool], log: Any = None) -> None:
        self.group = group
        self.me = me
        self.disk = disk
        self._send = send
        self.clock = clock
        self.rng = rng
        self.fsm = fsm
        self._reachable = reachable
        self.log = log
        self.state = FOLLOWER
        self.leader: str | None = None
        self.commit = disk.base
        self.applied = disk.base
        self._votes: set[str] = set()
        self._next: dict[str, int] = {}
        self._match: dict[str, int] = {}
        #: Monotonic time each peer was last heard from (leader) / the leader last was.
        self._heard: dict[str, float] = {}
        self._timer: Any = None
        self._hb_timer: Any = None
        self._deadline = 0.0
        self._stopped = False
        #: A snapshot is being sent to these peers (no appends meanwhile).
        self._snapping: set[str] = set()
        #: Callbacks waiting for an index to commit: index -> [callback(ok)].
        self._waiting: dict[int, list[Callable[[bool], None]]] = {}
        self.transferring = False
        #: (Leader) the last index of an earlier term: the state machine is told it leads once
        #: it is applied (None: told, or not leading).
        self._lead_from: int | None = None
        #: Entries at or below this index were committed before this member (re)started:
        #: applying them rebuilds state rather than reacting to something new.
        self.replay_upto = 0
        self._synced = False
        #: When a follower last heard from its leader (monotonic), None before.
        self.last_heard_from_leader: float | None = None
        #: Called on the leader after a peer reports progress (a move waits for catch-up).
        self.on_progress: Callable[[], None] | None = None

    def caught_up(self, peer: str) -> bool:
        """(Leader) does ``peer`` hold everything committed?"""
        return peer == self.me or self._match.get(peer, 0) >= self.commit

    def is_replay(self, index: int) -> bool:
        """Was the entry at ``index`` committed before this member (re)started?"""
        return index <= self.replay_upto

    # ------------------------------------------------------------------ reading

    @property
    def term(self) -> int:
        return self.disk.term

    @property
    def peers(self) -> list[str]:
        return self.disk.peers

    @property
    def last_index(self) -> int:
        return self.disk.base + len(self.disk.log)

    def _term_at(self, index: int) -> int:
        disk = self.disk
        if index == disk.base:
            return disk.base_term
        if index < disk.base or index > self.last_index:
            return -1
        return disk.log[index - disk.base - 1][0]

    @property
    def quorum(self) -> int:
        return len(self.peers) // 2 + 1

    def is_leader(self) -> bool:
        """Leading, with the state machine told so (nats-server's ``Leader()``: false while
        a new leader still applies what an earlier term committed)."""
        return self.state == LEADER and self._lead_from is None

    def replicas(self) -> list[dict[str, Any]]:
        """For the leader: each other peer's ``current`` (holds everything committed),
        ``active`` (seconds since last heard) and ``lag`` (entries behind)."""
        now = self.clock.monotonic()
        out = []
        for peer in self.peers:
            if peer == self.me:
                continue
            match = self._match.get(peer, 0)
            heard = self._heard.get(peer)
            out.append({"name": peer, "current": match >= self.commit and heard is not None
                        and now - heard < 2 * HEARTBEAT,
                        "active": (now - heard) if heard is not None else None,
                        "lag": max(0, self.last_index - match)})
        return out

    # ------------------------------------------------------------------ lifecycle

    def start(self, campaign: str | None = None) -> None:
        """Start as a follower. ``campaign``: ``"now"`` (the preferred member of a new group),
        ``"bootstrap"`` (a new cluster's first election, at once), or None (wait for a
        leader)."""
        self._stopped = False
        self.replay_upto = self.last_index
        self._synced = False
        if len(self.peers) == 1 and self.peers[0] == self.me:
            self._become_candidate()
            return
        if campaign == "now":
            self._arm(0.0 if self.clock.virtual else CAMPAIGN_NOW, real=True)
        elif campaign == "bootstrap":
            # A new cluster's first election: nats-server campaigns after 100 to 800 ms; the
            # one node the cluster picks here campaigns at once (nothing a client can see:
            # the cluster is ready only once it has a meta leader).
            self._arm(0.0, real=True)
        else:
            self._arm_election()

    def set_peers(self, peers: list[str]) -> None:
        """The group's members changed (a scale, a peer replaced): a leader starts bringing
        the new ones up to date at once."""
        old = set(self.disk.peers)
        self.disk.peers = list(peers)
        if self.state == CANDIDATE and len(self._votes & set(peers)) >= self.quorum:
            self._become_leader()
            return
        if self.state != LEADER:
            if peers == [self.me]:
                self.campaign_now()
            return
        now = self.clock.monotonic()
        for peer in peers:
            if peer != self.me and peer not in old:
                self._next[peer] = self.last_index + 1
                self._match[peer] = 0
                self._heard[peer] = now
                self._replicate(peer, heartbeat=True)
        self._advance_commit()

    def campaign_now(self) -> None:
        """Start an election on the next loop turn (unless leading already)."""
        if not self._stopped and self.state != LEADER:
            self._arm(0.0, real=True)

    def start_with_leader(self, leader: str) -> None:
        """Start in an agreed first configuration: ``leader`` leads the current term (every
        member's disk says so; a reset cluster starts this way, without an election)."""
        self._stopped = False
        if leader == self.me:
            self._become_leader()
        else:
            self.state = FOLLOWER
            self._set_leader(leader)
            self._arm_election()

    def stop(self) -> None:
        self._stopped = True
        self._cancel_timers()
        waiting, self._waiting = self._waiting, {}
        for callbacks in waiting.values():
            for cb in callbacks:
                cb(False)

    # ------------------------------------------------------------------ proposing

    def propose(self, entry: Any, on_commit: Callable[[bool], None] | None = None) -> int:
        """Append ``entry`` (leader only) and replicate it; ``on_commit(True)`` once it is
        committed, ``on_commit(False)`` if leadership is lost first."""
        if self.state != LEADER or self.transferring:
            raise NotLeader(self.leader)
        self.disk.log.append((self.term, entry))
        index = self.last_index
        if on_commit is not None:
            self._waiting.setdefault(index, []).append(on_commit)
        if len(self.peers) == 1:
            self._advance_commit()
        else:
            for peer in self.peers:
                if peer != self.me:
                    self._replicate(peer)
        return index

    def after_last(self, on_commit: Callable[[bool], None]) -> None:
        """``on_commit`` once everything proposed so far has committed (at once if it has)."""
        if self.last_index <= self.commit:
            on_commit(True)
        else:
            self._waiting.setdefault(self.last_index, []).append(on_commit)

    def step_down(self, preferred: str | None = None) -> str | None:
        """Hand leadership to ``preferred`` (or the most up-to-date reachable peer); returns
        who was asked to take over, or None when no peer can (nothing changes then)."""
        if self.state != LEADER:
            raise NotLeader(self.leader)
        candidates = [p for p in self.peers if p != self.me and self._reachable(p)]
        if preferred is not None:
            candidates = [p for p in candidates if p == preferred]
        if not candidates:
            return None
        best = max(candidates, key=lambda p: (self._match.get(p, 0), -self.peers.index(p)))
        self._debug(f"Stepping down, handing over to {best}")
        # Bring it up to date first, then tell it to campaign at once.
        self.transferring = True
        self._replicate(best)
        self._send(best, ("TIMEOUT_NOW", self.term))
        self._become_follower(self.term, None)
        return best

    # ------------------------------------------------------------------ timers

    def _cancel_timers(self) -> None:
        for t in (self._timer, self._hb_timer):
            if t is not None:
                t.cancel()
        self._timer = self._hb_timer = None

    def _arm(self, delay: float, *, real: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._deadline = self.clock.monotonic() + delay
        if delay <= 0:  # at once: on the next loop turn, whatever the clock
            import asyncio

            self._timer = asyncio.get_running_loop().call_soon(self._on_election_timeout)
            return
        self._timer = self.clock.call_later(delay, self._on_election_timeout,
                                            housekeeping=not real)

    def _arm_election(self) -> None:
        delay = ELECTION_MIN + self.rng.random() * (ELECTION_MAX - ELECTION_MIN)
        leader = self.leader
        self._arm(delay, real=leader is None or not self._reachable(leader))

    def link(self, peer: str, up: bool) -> None:
        """The link to ``peer`` changed: a follower that lost its leader's link waits for its
        election timeout for real (no longer housekeeping)."""
        if self._stopped:
            return
        self._snapping.discard(peer)
        if self.state == FOLLOWER and peer == self.leader and not up and self._timer is not None:
            remaining = max(0.0, self._deadline - self.clock.monotonic())
            self._arm(remaining, real=True)
        elif self.state == LEADER and up and peer in self.peers:
            self._replicate(peer, heartbeat=True)

    def _on_election_timeout(self) -> None:
        self._timer = None
        if self._stopped or self.state == LEADER:
            return
        self._become_candidate()

    # ------------------------------------------------------------------ roles

    def _debug(self, text: str) -> None:
        log = self.log
        if log is not None and log.debug_enabled:
            log.debug(f"RAFT [{self.me} - {self.group}] {text}")

    def _become_candidate(self) -> None:
        disk = self.disk
        self._debug(f"Switching to candidate (term {disk.term + 1})")
        disk.term += 1
        disk.voted_for = self.me
        self.state = CANDIDATE
        self._set_leader(None)
        self._votes = {self.me}
        if len(self._votes) >= self.quorum:
            self._become_leader()
            return
        self._arm(ELECTION_MIN + self.rng.random() * (ELECTION_MAX - ELECTION_MIN), real=True)
        msg = ("VOTE", disk.term, self.me, self.last_index, self._term_at(self.last_index))
        for peer in self.peers:
            if peer != self.me:
                self._send(peer, msg)

    def _become_follower(self, term: int, leader: str | None) -> None:
        was_leader = self.state == LEADER
        self.transferring = False
        if self._lead_from is not None:  # it led without its state machine hearing so
            self._lead_from = None
            self.leader = None
        if term > self.disk.term:
            self.disk.term = term
            self.disk.voted_for = None
        self.state = FOLLOWER
        if self._hb_timer is not None:
            self._hb_timer.cancel()
            self._hb_timer = None
        if was_leader:
            waiting, self._waiting = self._waiting, {}
            for callbacks in waiting.values():
                for cb in callbacks:
                    cb(False)
        self._set_leader(leader)
        self._arm_election()

    def _become_leader(self) -> None:
        self._debug(f"Switching to leader (term {self.disk.term})")
        self.state = LEADER
        self.transferring = False
        if not self._synced:
            self.replay_upto = max(self.replay_upto, self.last_index)
            self._synced = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        now = self.clock.monotonic()
        for peer in self.peers:
            if peer != self.me:
                self._next[peer] = self.last_index + 1
                self._match[peer] = 0
                self._heard[peer] = now
        self._heard[self.me] = now
        # The state machine learns it leads once it has applied every entry an earlier leader
        # left in the log (nats-server's switchToLeader and its "applied floor"): a new leader
        # that serves before then would serve without what was committed but not yet applied
        # here (a consumer created just before a stepdown, say).
        self._lead_from = self.last_index
        self.leader = self.me  # as the group sees it; the state machine hears it below
        # An entry of our own term commits everything before it (Raft's rule).
        self.disk.log.append((self.term, None))
        self._signal_leading()
        if len(self.peers) == 1:
            self._advance_commit()
        self._heartbeat()

    def _signal_leading(self) -> None:
        """Tell the state machine it leads, once everything before this term is applied."""
        lead_from = self._lead_from
        if lead_from is not None and self.state == LEADER and self.applied >= lead_from:
            self._lead_from = None
            if not self._stopped:
                self.fsm.leader_changed(self.me, True)

    def _set_leader(self, leader: str | None) -> None:
        if leader != self.leader:
            self.leader = leader
            if not self._stopped:
                self.fsm.leader_changed(leader, leader == self.me)

    def _heartbeat(self) -> None:
        self._hb_timer = None
        if self._stopped or self.state != LEADER:
            return
        now = self.clock.monotonic()
        heard = sum(1 for p in self.peers
                    if p == self.me or now - self._heard.get(p, now) < LOST_QUORUM)
        if heard < self.quorum:
            if self.log is not None:
                self.log.warn(f"RAFT [{self.me} - {self.group}] lost quorum, stepping down")
            self._become_follower(self.term, None)
            return
        for peer in self.peers:
            if peer != self.me:
                self._replicate(peer, heartbeat=True)
        self._hb_timer = self.clock.call_later(HEARTBEAT, self._heartbeat, housekeeping=True)

    # ------------------------------------------------------------------ replication

    def _replicate(self, peer: str, *, heartbeat: bool = False) -> None:
        if peer in self._snapping:
            return
        disk = self.disk
        nxt = self._next.get(peer, self.last_index + 1)
        if nxt <= disk.base:
            self._snapping.add(peer)
            data = self.fsm.snapshot()
            self._send(peer, ("SNAP", self.term, self.me, self.applied,
                              self._term_at(self.applied), data, list(self.peers)))
            return
        prev = nxt - 1
        entries = disk.log[prev - disk.base: prev - disk.base + MAX_APPEND]
        if not entries and not heartbeat:
            return
        self._send(peer, ("APPEND", self.term, self.me, prev, self._term_at(prev), entries,
                          self.commit))

    def receive(self, sender: str, msg: tuple) -> None:
        if self._stopped:
            return
        kind, term = msg[0], msg[1]
        if term > self.disk.term:
            leader = msg[2] if kind in ("APPEND", "SNAP") else None
            self._become_follower(term, leader)
        handler = getattr(self, "_on_" + kind)
        handler(sender, *msg[1:])

    def _on_VOTE(self, sender: str, term: int, candidate: str, last_index: int,
                 last_term: int) -> None:
        disk = self.disk
        my_last = self._term_at(self.last_index)
        up_to_date = (last_term, last_index) >= (my_last, self.last_index)
        grant = (term == disk.term and disk.voted_for in (None, candidate) and up_to_date)
        self._debug(f"Vote for {candidate} (term {term}, last {last_term}/{last_index}; ours "
                    f"{disk.term}, {my_last}/{self.last_index}, voted {disk.voted_for}): "
                    f"{'granted' if grant else 'refused'}")
        if grant:
            disk.voted_for = candidate
            self._arm_election()
        self._send(sender, ("VOTED", disk.term, grant))

    def _on_VOTED(self, sender: str, term: int, granted: bool) -> None:
        if self.state != CANDIDATE or term != self.disk.term or not granted:
            return
        self._votes.add(sender)
        if len(self._votes) >= self.quorum:
            self._become_leader()

    def _on_APPEND(self, sender: str, term: int, leader: str, prev: int, prev_term: int,
                   entries: list, commit: int) -> None:
        disk = self.disk
        if term < disk.term:
            self._send(sender, ("APPENDED", disk.term, False, 0))
            return
        if self.state != FOLLOWER:
            self._become_follower(term, leader)
        elif self.leader != leader:
            self._set_leader(leader)
        self._arm_election()
        self.last_heard_from_leader = self.clock.monotonic()
        if self.fsm.needs_snapshot():
            self._send(sender, ("APPENDED", disk.term, False, -1))
            return
        if not self._synced:
            self.replay_upto = max(self.replay_upto, commit)
            self._synced = True
        if prev > self.last_index or (prev >= disk.base and self._term_at(prev) != prev_term):
            # Not there yet, or disagreeing: ask for earlier entries.
            self._send(sender, ("APPENDED", disk.term, False, min(prev - 1, self.last_index)))
            return
        index = prev
        for entry in entries:
            index += 1
            if index <= disk.base:
                continue
            pos = index - disk.base - 1
            if pos < len(disk.log):
                if disk.log[pos][0] == entry[0]:
                    continue
                del disk.log[pos:]  # a conflict: what follows is the old leader's
                self.fsm.conflict(index)
            disk.log.append(entry)
        new_commit = min(commit, index)  # only what agrees with the leader may commit
        if new_commit > self.commit:
            self.commit = new_commit
            self._apply()
        self._send(sender, ("APPENDED", disk.term, True, index))

    def _on_APPENDED(self, sender: str, term: int, success: bool, index: int) -> None:
        if self.state != LEADER or term != self.disk.term:
            return
        self._heard[sender] = self.clock.monotonic()
        if self.on_progress is not None:
            self.on_progress()
        if index < 0:  # its state diverged: it needs a snapshot
            self._next[sender] = 0
            self._replicate(sender)
            return
        if success:
            if index > self._match.get(sender, 0):
                self._match[sender] = index
            self._next[sender] = max(self._next.get(sender, 0), index + 1)
            self._advance_commit()
            if self._next[sender] <= self.last_index:
                self._replicate(sender)
            return
        self._next[sender] = max(1, min(self._next.get(sender, 1) - 1, index + 1))
        self._replicate(sender)

    def _on_SNAP(self, sender: str, term: int, leader: str, index: int, index_term: int,
                 data: Any, peers: list[str]) -> None:
        disk = self.disk
        if term < disk.term:
            self._send(sender, ("SNAPPED", disk.term, 0))
            return
        self._set_leader(leader)
        self._arm_election()
        self.fsm.restore(data)
        disk.log = []
        disk.base, disk.base_term, disk.snapshot = index, index_term, data
        disk.peers = list(peers)
        self.commit = self.applied = index
        self._send(sender, ("SNAPPED", disk.term, index))

    def _on_SNAPPED(self, sender: str, term: int, index: int) -> None:
        self._snapping.discard(sender)
        if self.state != LEADER or term != self.disk.term:
            return
        self._heard[sender] = self.clock.monotonic()
        self._match[sender] = max(self._match.get(sender, 0), index)
        self._next[sender] = index + 1
        self._replicate(sender)

    def _on_TIMEOUT_NOW(self, sender: str, term: int) -> None:
        if self.state != LEADER:
            self._arm(0.0 if self.clock.virtual else TRANSFER, real=True)

    # ------------------------------------------------------------------ commit and apply

    def _advance_commit(self) -> None:
        matches = sorted((self._match.get(p, 0) if p != self.me else self.last_index)
                         for p in self.peers)
        candidate = matches[len(matches) - self.quorum]
        if candidate > self.commit and self._term_at(candidate) == self.term:
            self.commit = candidate
            self._apply()
            # Followers learn the new commit at once (not at the next heartbeat), so what they
            # apply keeps up with the leader on any clock.
            if self.state == LEADER:
                for peer in self.peers:
                    if peer != self.me:
                        self._replicate(peer, heartbeat=True)

    def _apply(self) -> None:
        disk = self.disk
        while self.applied < self.commit:
            self.applied += 1
            entry = disk.log[self.applied - disk.base - 1][1]
            if entry is not None:
                self.fsm.apply(self.applied, entry)
            callbacks = self._waiting.pop(self.applied, None)
            if callbacks:
                for cb in callbacks:
                    cb(True)
            if self._stopped:
                return
            if self._lead_from is not None:
                self._signal_leading()
        if self.applied - disk.base > COMPACT_AFTER:
            self._compact()

    def _compact(self) -> None:
        """Drop applied entries (a leader: those every reachable peer holds); a peer behind
        them gets a snapshot."""
        disk = self.disk
        upto = self.applied
        if self.state == LEADER:
            upto = min([upto] + [self._match.get(p, 0) for p in self.peers
                                 if p != self.me and self._reachable(p)])
        if upto <= disk.base:
            return
        disk.base_term = self._term_at(upto)
        del disk.log[:upto - disk.base]
        disk.base = upto
