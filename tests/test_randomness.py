"""One seeded source for every random choice the server makes (minijs.randomness): the same
seed gives the same choices in two runs, another seed other choices."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest
from nats.js.api import ConsumerConfig

from minijs.clock import VirtualClock
from minijs.randomness import RandomSource, seed_servers, server_source
from minijs.server import Server


def test_same_seed_same_draws_children_independent() -> None:
    a, b = RandomSource(7), RandomSource(7)
    assert [a.random() for _ in range(5)] == [b.random() for _ in range(5)]
    assert RandomSource(7).random() != RandomSource(8).random()
    # A child's stream does not depend on how much the parent (or a sibling) drew.
    fresh = RandomSource(7).child("n2")
    used = RandomSource(7)
    for _ in range(100):
        used.random()
        used.child("n1").random()
    assert [used.child("n2").randrange(1000) for _ in range(5)] == \
        [fresh.randrange(1000) for _ in range(5)]
    assert RandomSource(7).child("n1").random() != RandomSource(7).child("n2").random()
    assert RandomSource(7).child("a").child("b").random() == RandomSource(7).child("a/b").random()
    # The same name is the same stream (it continues).
    src = RandomSource(3)
    assert src.child("x") is src.child("x")
    assert src.child("n2").seed == 3 and src.child("n2").path == "n2"


def test_unseeded_source_reports_its_seed() -> None:
    src = RandomSource()
    again = RandomSource(src.seed)
    assert [src.getrandbits(32) for _ in range(3)] == [again.getrandbits(32) for _ in range(3)]
    with pytest.raises(ValueError, match="non-negative integer"):
        RandomSource(-1)
    with pytest.raises(ValueError, match="non-negative integer"):
        RandomSource("7")  # type: ignore[arg-type]


def test_seed_servers_gives_servers_made_without_a_seed_a_repeatable_source() -> None:
    try:
        seed_servers(RandomSource(11).child("tests/test_x.py::test_y"))
        first = [Server().server_id, Server().server_id]
        seed_servers(RandomSource(11).child("tests/test_x.py::test_y"))
        assert [Server().server_id, Server().server_id] == first
        assert first[0] != first[1]
        assert Server(seed=5).server_id == Server(seed=5).server_id  # its own seed wins
    finally:
        seed_servers(None)
    assert server_source().seed != server_source().seed


def test_timers_due_at_the_same_instant_fire_in_a_seeded_order() -> None:
    def order(seed: int | None) -> list[int]:
        clock = VirtualClock()
        if seed is not None:
            clock.draw_ties_from(RandomSource(seed).child("timers"))
        out: list[int] = []
        for i in range(12):
            clock.call_later(5, out.append, i)
        clock.call_later(4, out.append, -1)  # due order still comes first
        clock.advance(5)
        return out

    assert order(None) == [-1, *range(12)]  # no source: scheduling order
    first = order(1)
    assert first[0] == -1 and sorted(first[1:]) == list(range(12))
    assert order(1) == first
    assert order(2) != first


async def _server_choices(seed: int) -> dict[str, Any]:
    """What a server chooses at random, seen from a client: its id and xkey, which queue
    member gets each of 30 messages, the jitter of its first PING, a fault rule's fraction
    draws, the order of timers due at one instant, the names of auto-named consumers and the
    ids of advisories."""
    async with Server(port=0, jetstream=True, seed=seed, clock="virtual") as server:
        nc = await nats.connect(server.client_url)
        js = nc.jetstream()
        advisories = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED.S.*")
        await js.add_stream(name="S", subjects=["s"], storage="memory")
        names = [(await js.add_consumer("S", ConsumerConfig(deliver_subject=f"d{i}"))).name
                 for i in range(3)]
        ids = [json.loads((await advisories.next_msg(timeout=2)).data)["id"] for _ in range(3)]
        got: list[str] = []
        for name in ("a", "b", "c"):
            async def cb(msg: Any, name: str = name) -> None:
                got.append(name)
            await nc.subscribe("work", queue="q", cb=cb)
        await nc.flush()
        for _ in range(30):
            await nc.publish("work", b"")
        await nc.flush()
        for _ in range(50):
            if len(got) == 30:
                break
            await asyncio.sleep(0.01)
        conn = next(iter(server.connections.values()))
        ping_due = conn._ping_timer.when() - asyncio.get_running_loop().time()
        rule = server.faults.fail_requests("svc", status=503, count=None, fraction=0.5)
        draws = [rule._rng.random() for _ in range(5)]
        fired: list[int] = []
        for i in range(6):
            server.clock.call_later(1, fired.append, i)
        await server.clock.advance_async(1)
        await nc.close()
        return {"id": server.server_id, "xkey": server.xkey, "queue": got, "names": names,
                "advisory_ids": ids,
                "ping": round(ping_due, 1), "faults": draws, "timers": fired}


async def test_same_seed_same_server_choices_in_two_runs() -> None:
    first = await _server_choices(1234)
    second = await _server_choices(1234)
    assert first.pop("ping") <= 2.4 and second.pop("ping") <= 2.4  # real-time jitter: not exact
    assert first == second
    other = await _server_choices(99)
    other.pop("ping")
    assert other["id"] != first["id"] and other["queue"] != first["queue"]
    assert other["faults"] != first["faults"] and other["names"] != first["names"]
