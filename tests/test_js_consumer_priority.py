"""Priority groups on the virtual clock: the pin's ``priority_timeout`` fires (and is pushed
back by the pinned client's requests) with no real waiting; overflow thresholds count a
redelivery as nats-server does; pin state is not persisted. The wire behaviour itself is in
conformance/test_js_consumer_priority.py."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from jsapi import api, pull_consumer

from minijs.clock import VirtualClock

S = 1_000_000_000
NEXT = "$JS.API.CONSUMER.MSG.NEXT.S.c"


setup = pull_consumer


async def settle(nc: Any) -> None:
    await nc.flush()
    await asyncio.sleep(0.01)


async def pull(nc: Any, reply: str, **body: Any) -> None:
    await nc.publish(NEXT, json.dumps(body).encode(), reply=reply)


async def pinned_id(nc: Any) -> str:
    return (await api(nc, "CONSUMER.INFO.S.c"))["priority_groups"][0].get("pinned_client_id", "")


async def test_pin_expires_on_virtual_clock(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, msgs=2, priority_groups=["A"], priority_policy="pinned_client",
                      priority_timeout=10 * S)
    events = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.*.S.c")
    await pull(nc, "pull.a", batch=1, group="A")
    m = await sub.next_msg(timeout=2)
    pin = m.headers["Nats-Pin-Id"]
    assert json.loads((await events.next_msg(timeout=2)).data)["pinned_id"] == pin
    clock.advance(6)
    await pull(nc, "pull.a2", batch=1, group="A", id=pin, expires=S)  # restarts the timer
    assert (await sub.next_msg(timeout=2)).data == b"m1"
    clock.advance(6)  # 12 s after the pin, 6 s after the last request: still pinned
    await settle(nc)
    assert await pinned_id(nc) == pin
    clock.advance(4.1)
    await settle(nc)
    ev = json.loads((await events.next_msg(timeout=2)).data)
    assert (ev["type"], ev["reason"]) == ("io.nats.jetstream.advisory.v1.consumer_group_unpinned",
                                          "timeout")
    assert await pinned_id(nc) == ""
    info = await api(nc, "CONSUMER.INFO.S.c")
    assert info["priority_groups"][0]["pinned_ts"] == "0001-01-01T00:00:00Z"


async def test_standby_request_pinned_after_timeout(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, msgs=1, priority_groups=["A"], priority_policy="pinned_client",
                      priority_timeout=5 * S)
    await pull(nc, "pull.a", batch=1, group="A")
    first = (await sub.next_msg(timeout=2)).headers["Nats-Pin-Id"]
    await pull(nc, "pull.b", batch=1, group="A", expires=60 * S)
    await nc.request("s.m", b"later", timeout=2)
    await settle(nc)
    assert (await api(nc, "CONSUMER.INFO.S.c"))["num_waiting"] == 1  # standby
    clock.advance(5.1)
    m = await sub.next_msg(timeout=2)
    assert (m.subject, m.data) == ("s.m", b"later")
    second = m.headers["Nats-Pin-Id"]
    assert second and second != first and await pinned_id(nc) == second


async def test_overflow_counts_redeliveries_like_nats_server(nc: Any, clock: VirtualClock) -> None:
    """nats-server compares ``min_pending`` with its pending count plus one whatever the
    message is; for a redelivery that count was not lowered first, so a request asking for
    ``num_pending + 1`` is served a redelivery but not a new message."""
    sub = await setup(nc, msgs=2, priority_groups=["A"], priority_policy="overflow",
                      ack_wait=5 * S)
    await pull(nc, "pull.plain", batch=1, group="A")
    first = await sub.next_msg(timeout=2)
    assert first.data == b"m0"
    # num_pending is 1 now: min_pending 2 is not met for the new message m1 ...
    await pull(nc, "pull.over", batch=1, group="A", min_pending=2, expires=60 * S)
    await settle(nc)
    assert (await api(nc, "CONSUMER.INFO.S.c"))["num_waiting"] == 1
    # ... but m0's redelivery comes first once its ack wait is over, and 1 + 1 >= 2.
    clock.advance(5.1)
    m = await sub.next_msg(timeout=2)
    assert (m.subject, m.data, m.reply.split(".")[4]) == ("s.m", b"m0", "2")  # pull.over is the only request


async def test_pin_not_persisted_and_dropped_on_delete(nc: Any, server: Any) -> None:
    sub = await setup(nc, msgs=1, priority_groups=["A"], priority_policy="pinned_client")
    await pull(nc, "pull.a", batch=1, group="A")
    assert (await sub.next_msg(timeout=2)).headers["Nats-Pin-Id"]
    consumer = server.jetstream.streams["S"].consumers["c"]
    assert consumer.priority.pin_timer is not None
    out = await api(nc, "CONSUMER.DELETE.S.c")
    assert out["success"] is True
    assert consumer.priority.pin_timer is None
