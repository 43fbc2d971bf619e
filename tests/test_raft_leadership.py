"""Raft (``minijs.cluster.raft``): a new leader's state machine hears that it leads only once
it has applied what an earlier leader committed (nats-server's "applied floor" in
``switchToLeader``), so a stream's new leader never starts without a consumer created just
before a stepdown."""
from __future__ import annotations

import asyncio
from typing import Any

from minijs.cluster.raft import LEADER, RaftDisk, RaftNode
from minijs.randomness import RandomSource
from minijs.virtualclock import VirtualClock


class Recorder:
    """A state machine that records what it is told, in order."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def apply(self, index: int, entry: Any) -> None:
        self.events.append(("apply", index, entry))

    def snapshot(self) -> Any:
        return None

    def restore(self, data: Any) -> None:
        self.events.append(("restore",))

    def leader_changed(self, leader: str | None, is_me: bool) -> None:
        self.events.append(("leader", leader, is_me))

    def conflict(self, index: int) -> None:
        pass

    def needs_snapshot(self) -> bool:
        return False


class Net:
    """Messages between members, delivered only when the test says (or dropped)."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, str, tuple]] = []
        self.nodes: dict[str, RaftNode] = {}

    def sender(self, me: str) -> Any:
        return lambda to, msg: self.queue.append((me, to, msg))

    def deliver(self, keep: Any = lambda sender, to, msg: True,
                hold: Any = lambda sender, to, msg: False) -> None:
        """Deliver until nothing is left but what ``hold`` keeps queued; a message ``keep``
        refuses is dropped."""
        held = []
        while self.queue:
            sender, to, msg = self.queue.pop(0)
            if hold(sender, to, msg):
                held.append((sender, to, msg))
            elif keep(sender, to, msg):
                self.nodes[to].receive(sender, msg)
        self.queue = held


def group(names: list[str]) -> tuple[Net, dict[str, Recorder]]:
    net, fsms = Net(), {}
    clock = VirtualClock()
    for name in names:
        fsms[name] = Recorder()
        net.nodes[name] = RaftNode("G", name, RaftDisk(peers=list(names)),
                                   send=net.sender(name), clock=clock,
                                   rng=RandomSource(7, path=name), fsm=fsms[name],
                                   reachable=lambda peer: True)
    return net, fsms


async def b_leads_unaware_of_a_commit(entry: str) -> tuple[Net, dict[str, Recorder], int]:
    """a leads and commits ``entry`` on b and c, but its news of the commit never arrives; a
    hands over to b, and only the hand-over reaches b (a's appends are lost): b campaigns
    holding the entry, not knowing it is committed, and wins. b's own first appends are held
    in the queue. Returns the net, the state machines and the entry's index."""
    net, fsms = group(["a", "b", "c"])
    for node in net.nodes.values():
        node.start_with_leader("a")
    net.deliver()
    a, b = net.nodes["a"], net.nodes["b"]
    index = a.propose(entry)
    net.deliver(keep=lambda sender, to, msg: not (sender == "a" and msg[0] == "APPEND"
                                                   and msg[6] >= index))
    assert a.commit >= index and b.commit < index and b.last_index >= index
    fsms["b"].events.clear()
    assert a.step_down("b") == "b"
    not_from_a = lambda sender, to, msg: not (sender == "a" and msg[0] == "APPEND")  # noqa: E731
    its_appends = lambda sender, to, msg: sender == "b" and msg[0] == "APPEND"  # noqa: E731
    net.deliver(keep=not_from_a, hold=its_appends)
    await asyncio.sleep(0)  # the transfer's campaign runs on the next loop turn
    net.deliver(keep=not_from_a, hold=its_appends)
    assert b.state == LEADER and b.leader == "b"
    return net, fsms, index


async def test_a_new_leader_is_told_after_applying_what_the_old_one_committed() -> None:
    net, fsms, index = await b_leads_unaware_of_a_commit("consumer created")
    b = net.nodes["b"]
    assert not b.is_leader()
    assert ("leader", "b", True) not in fsms["b"].events  # not before the entry is applied
    net.deliver()  # b's own first entry commits, and everything before it
    events = fsms["b"].events
    assert ("apply", index, "consumer created") in events
    assert ("leader", "b", True) in events and b.is_leader()
    assert events.index(("apply", index, "consumer created")) < events.index(
        ("leader", "b", True))


async def test_a_leader_with_nothing_left_to_apply_is_told_at_once() -> None:
    net, fsms = group(["a", "b", "c"])
    for node in net.nodes.values():
        node.start_with_leader("a")
    assert fsms["a"].events == [("leader", "a", True)]
    net.deliver()
    assert net.nodes["a"].step_down("c") == "c"
    net.deliver()
    await asyncio.sleep(0)
    net.deliver(keep=lambda sender, to, msg: msg[0] in ("VOTE", "VOTED"))
    # c had applied everything a committed: it is told as it wins.
    assert net.nodes["c"].state == LEADER
    assert fsms["c"].events[-1] == ("leader", "c", True)


async def test_a_leader_deposed_before_it_was_told_leaves_its_machine_leaderless() -> None:
    net, fsms, _ = await b_leads_unaware_of_a_commit("x")
    b = net.nodes["b"]
    # A higher term arrives before b's first entry commits: b follows, never having led.
    b.receive("c", ("VOTE", b.term + 1, "c", 0, 0))
    assert b.state != LEADER and b.leader is None
    assert not any(e[0] == "leader" and e[2] for e in fsms["b"].events)
