"""Replay policy ``original`` under the virtual clock: deliveries are spaced like the stored
timestamps until the consumer has caught up with the stream, then new messages go at once
(pull and push). Wire timing against nats-server: conformance/test_js_consumer_events.py."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server

from jsapi import api

S = 1_000_000_000


@pytest.fixture
async def nc(clock: VirtualClock, tmp_path: Path) -> Any:
    srv = Server(port=0, jetstream=True, clock=clock, store_dir=str(tmp_path / "js"))
    await srv.start()
    client = await nats.connect(srv.client_url)
    yield client
    await client.close()
    await srv.stop()


async def publish_spaced(nc: Any, clock: VirtualClock, gaps: list[float]) -> None:
    out = await api(nc, "STREAM.CREATE.R", {"name": "R", "subjects": ["r.>"], "storage": "memory"})
    assert "error" not in out, out
    for i, gap in enumerate(gaps):
        clock.advance(gap)
        await nc.request(f"r.{i}", b"m%d" % i, timeout=5)


async def settle(nc: Any) -> None:
    await nc.flush()
    await asyncio.sleep(0.01)


def drain(sub: Any) -> list[str]:
    out = []
    while True:
        try:
            m = sub._pending_queue.get_nowait()
        except asyncio.QueueEmpty:
            return out
        out.append(m.subject)


@pytest.mark.parametrize("mode", ["pull", "push"])
async def test_replay_original_paces_then_catches_up(nc: Any, clock: VirtualClock,
                                                      mode: str) -> None:
    await publish_spaced(nc, clock, [0, 2.0, 5.0])
    sub = await nc.subscribe("got")
    config: dict[str, Any] = {"durable_name": "c", "ack_policy": "explicit",
                              "replay_policy": "original"}
    if mode == "push":
        config["deliver_subject"] = "got"
    out = await api(nc, "CONSUMER.CREATE.R.c", {"stream_name": "R", "config": config})
    assert "error" not in out, out
    if mode == "pull":
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.R.c", b'{"batch": 10}', reply="got")
    await settle(nc)
    assert drain(sub) == ["r.0"]
    clock.advance(1.9)
    await settle(nc)
    assert drain(sub) == []
    clock.advance(0.2)
    await settle(nc)
    assert drain(sub) == ["r.1"]
    clock.advance(4.8)  # the next wait started with the r.1 delivery (at 2.0)
    await settle(nc)
    assert drain(sub) == []
    clock.advance(0.3)
    await settle(nc)
    assert drain(sub) == ["r.2"]
    # Caught up: a message stored much later is delivered at once.
    clock.advance(20)  # (within the 30 s ack wait: no redeliveries)
    await nc.request("r.late", b"x", timeout=5)
    await settle(nc)
    assert drain(sub) == ["r.late"]


async def test_replay_instant_is_not_paced(nc: Any, clock: VirtualClock) -> None:
    await publish_spaced(nc, clock, [0, 2.0, 5.0])
    sub = await nc.subscribe("got")
    out = await api(nc, "CONSUMER.CREATE.R.c", {"stream_name": "R", "config": {
        "durable_name": "c", "deliver_subject": "got"}})
    assert "error" not in out, out
    await settle(nc)
    assert drain(sub) == ["r.0", "r.1", "r.2"]


async def test_replay_wait_survives_an_expiring_request(nc: Any, clock: VirtualClock) -> None:
    """A pull request that expires during the wait gets its 408; the next one gets the
    message when the gap has passed."""
    await publish_spaced(nc, clock, [0, 10.0])
    sub = await nc.subscribe("got")
    out = await api(nc, "CONSUMER.CREATE.R.c", {"stream_name": "R", "config": {
        "durable_name": "c", "ack_policy": "explicit", "replay_policy": "original"}})
    assert "error" not in out, out
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.R.c",
                     b'{"batch": 2, "expires": 3000000000}', reply="got")
    msg = await sub.next_msg(timeout=2)
    assert msg.subject == "r.0"
    clock.advance(3.1)
    st = await sub.next_msg(timeout=2)
    assert st.headers and st.headers.get("Status") == "408"
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.R.c", b'{"batch": 1}', reply="got")
    clock.advance(7.0)
    msg = await sub.next_msg(timeout=2)
    assert msg.subject == "r.1"
