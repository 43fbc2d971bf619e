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


def test_a_stream_draws_what_random_random_seeded_with_its_text_draws() -> None:
    """A stream is random.Random's generator and draws, seeded with ``minijs:<seed>:<path>``;
    a copy or a pickled copy of its generator continues the stream where it was (a fault
    rule's ``asdict`` deep-copies its source)."""
    import copy
    import pickle
    import random

    for seed, path in ((0, ""), (7, "n2/queue"), (2**48 - 1, "ids"), (12345, "é/ü")):
        ours, theirs = RandomSource(seed, path), random.Random(f"minijs:{seed}:{path}")
        for _ in range(3):
            assert ours.random() == theirs.random()
            assert ours.getrandbits(130) == theirs.getrandbits(130)
            assert ours.randbytes(35) == theirs.randbytes(35)
            assert ours.randrange(10**12) == theirs.randrange(10**12)
            assert ours.randrange(3, 100, 7) == theirs.randrange(3, 100, 7)
            assert ours.uniform(1.5, 9) == theirs.uniform(1.5, 9)
            assert ours.choice("abcdefgh") == theirs.choice("abcdefgh")
            assert ours.text("xyz", 12) == "".join(theirs.choice("xyz") for _ in range(12))
            mine, yours = list(range(30)), list(range(30))
            ours.shuffle(mine)
            theirs.shuffle(yours)
            assert mine == yours
        for twin in (copy.deepcopy(ours._rng), pickle.loads(pickle.dumps(ours._rng))):
            again = copy.deepcopy(theirs)
            assert [twin.random(), twin.randrange(99)] == [again.random(), again.randrange(99)]


def test_random_module_loads_with_the_first_draw_written_in_python() -> None:
    """``random()``, ``getrandbits()`` and ``randbytes()`` need only the generator's C core;
    the first ``randrange()`` (or ``uniform()``, ``choice()``, ``shuffle()``) loads the
    ``random`` module, and a started server has not (see test_lazy_imports)."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    code = textwrap.dedent("""
        import sys
        from minijs.randomness import RandomSource
        src = RandomSource(7).child("a")
        src.random(), src.getrandbits(9), src.randbytes(4), src.text
        before = "random" in sys.modules
        draw = src.child("b").randrange
        print(before, "random" in sys.modules, draw(10) in range(10))
    """)
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]
