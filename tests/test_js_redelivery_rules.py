"""nats-server's redelivery-time rule on the virtual clock, at the scale users meet it (seconds
to minutes, no real waiting): a NAK delay on a consumer with a backoff, zero and unparsable NAK
delays, an ``ack_wait`` update with messages pending. The same rule checked as a class against
nats-server in real time: conformance/test_js_redelivery_timing.py."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.consumers.acks import nak_delay

from jsapi import api, pull_consumer

S = 1_000_000_000
NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.c"


async def settle(nc: Any) -> None:
    await nc.flush()
    await asyncio.sleep(0.01)


async def quiet(sub: Any) -> None:
    with pytest.raises(asyncio.TimeoutError):
        await sub.next_msg(timeout=0.05)


class Timeline:
    """Advances the virtual clock to absolute times (seconds from the start)."""

    def __init__(self, clock: VirtualClock, nc: Any) -> None:
        self.clock = clock
        self.nc = nc
        self.now = 0.0

    async def to(self, t: float) -> None:
        await settle(self.nc)
        self.clock.advance(t - self.now)
        self.now = t
        await settle(self.nc)


def deliveries(m: Any) -> int:
    return int(m.reply.split(".")[4])


@pytest.mark.parametrize("arg, want", [
    (b"0", 0), (b"{}", 0), (b'{"delay": null}', 0), (b'{"other": 5}', 0),
    (b"1.5s", 1_500_000_000), (b"-1s", -S), (b'{"delay": 5}', 5), (b'{"Delay": 7}', 7),
    (b'{"delay": 1, "DELAY": 2}', 2),
    (b"5", None), (b"soon", None), (b'{"delay": 1e9}', None), (b'{"delay": 1.5}', None),
    (b'{"delay": "1s"}', None), (b'{"delay": true}', None), (b"{bad", None), (b"[1]", None),
    (b'{"delay": 9223372036854775808}', None),
])
def test_nak_delay_parse(arg: bytes, want: int | None) -> None:
    """As nats-server's processNak reads a delay: None means a plain NAK."""
    assert nak_delay(arg) == want


async def test_nak_delay_on_backoff_issue_timeline(nc: Any, clock: VirtualClock) -> None:
    """``backoff`` [1 s, 5 s, 30 s], ``max_deliver`` 4, a worker that NAKs each delivery with
    the next backoff step as delay: deliveries at 0, 1, 10 and 69 s, the MAX_DELIVERIES
    advisory at 128 s (a NAK delay on the n-th delivery waits delay + backoff[n-1] -
    backoff[0])."""
    sub = await pull_consumer(nc, backoff=[S, 5 * S, 30 * S], max_deliver=4)
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.c")
    await nc.publish(NEXT, json.dumps({"batch": 10}).encode(), reply="pull.1")
    t = Timeline(clock, nc)
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 1
    for delay, due, n in (("1s", 1, 2), ("5s", 10, 3), ("30s", 69, 4)):
        await nc.publish(m.reply, f"-NAK {delay}".encode())
        await t.to(due - 0.1)
        await quiet(sub)
        await t.to(due + 0.1)
        m = await sub.next_msg(timeout=2)
        assert deliveries(m) == n, (due, m.reply)
    await nc.publish(m.reply, b"-NAK 30s")
    await t.to(127.9)
    await quiet(adv)
    await t.to(128.1)
    body = json.loads((await adv.next_msg(timeout=2)).data)
    assert (body["stream_seq"], body["deliveries"]) == (1, 4)
    await quiet(sub)


async def test_zero_and_unparsable_nak_delays_on_backoff(nc: Any, clock: VirtualClock) -> None:
    """On the second delivery (backoff [2 s, 6 s]): ``-NAK 0`` waits backoff[1] - backoff[0] =
    4 s; ``-NAK 5`` (no unit) is a plain NAK: at once."""
    sub = await pull_consumer(nc, backoff=[2 * S, 6 * S])
    await nc.publish(NEXT, json.dumps({"batch": 10}).encode(), reply="pull.1")
    t = Timeline(clock, nc)
    m = await sub.next_msg(timeout=2)
    await nc.publish(m.reply, b"-NAK")
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 2
    await nc.publish(m.reply, b"-NAK 0")
    await t.to(3.9)
    await quiet(sub)
    await t.to(4.1)
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 3
    await nc.publish(m.reply, b"-NAK 5")
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 4


async def test_ack_wait_update_applies_to_pending(nc: Any, clock: VirtualClock) -> None:
    """``ack_wait`` 30 s lowered to 4 s at 2 s: the pending message is redelivered at 4 s (its
    delivery plus the new wait); raised back to 30 s at 5 s: the next one at 34 s."""
    sub = await pull_consumer(nc, ack_wait=30 * S)
    await nc.publish(NEXT, json.dumps({"batch": 10}).encode(), reply="pull.1")
    t = Timeline(clock, nc)
    m = await sub.next_msg(timeout=2)
    await t.to(2)
    config = {"durable_name": "c", "ack_policy": "explicit", "ack_wait": 4 * S}
    out = await api(nc, "CONSUMER.CREATE.S.c", {"stream_name": "S", "config": config})
    assert out["config"]["ack_wait"] == 4 * S
    await t.to(3.9)
    await quiet(sub)
    await t.to(4.1)
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 2
    await t.to(5)
    config["ack_wait"] = 30 * S
    out = await api(nc, "CONSUMER.CREATE.S.c", {"stream_name": "S", "config": config})
    assert "error" not in out, out
    await t.to(33.9)
    await quiet(sub)
    await t.to(34.2)
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 3


async def test_nak_delay_then_ack_wait_update(nc: Any, clock: VirtualClock) -> None:
    """``-NAK 10s`` under ``ack_wait`` 20 s keeps the timestamp now - 20 s + 10 s; lowering
    ``ack_wait`` to 5 s then makes it due 5 s after the NAK, checked 100 ms after the update."""
    sub = await pull_consumer(nc, ack_wait=20 * S)
    await nc.publish(NEXT, json.dumps({"batch": 10}).encode(), reply="pull.1")
    t = Timeline(clock, nc)
    m = await sub.next_msg(timeout=2)
    await nc.publish(m.reply, b"-NAK 10s")
    await t.to(6)
    config = {"durable_name": "c", "ack_policy": "explicit", "ack_wait": 5 * S}
    out = await api(nc, "CONSUMER.CREATE.S.c", {"stream_name": "S", "config": config})
    assert "error" not in out, out
    await t.to(6.05)
    await quiet(sub)
    await t.to(6.15)
    m = await sub.next_msg(timeout=2)
    assert deliveries(m) == 2
