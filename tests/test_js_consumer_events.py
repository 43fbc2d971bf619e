"""Ack sampling and the NAK/TERM advisories inside minijs under the virtual clock: ``ack_time``
is exactly the time since delivery (or the last +WPI), sampling follows ``sample_freq``, and
nothing is published without a listener. Wire format against nats-server:
conformance/test_js_consumer_events.py."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server

from jsapi import api

S = 1_000_000_000


@pytest.fixture
async def srv(clock: VirtualClock, tmp_path: Path) -> Any:
    server = Server(port=0, jetstream=True, clock=clock, store_dir=str(tmp_path / "js"))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def nc(srv: Server) -> Any:
    client = await nats.connect(srv.client_url)
    yield client
    await client.close()


async def setup(nc: Any, msgs: int, **config: Any) -> list[Any]:
    out = await api(nc, "STREAM.CREATE.E", {"name": "E", "subjects": ["e.>"], "storage": "memory"})
    assert "error" not in out, out
    for i in range(msgs):
        await nc.request("e.m", b"m%d" % i, timeout=5)
    config.setdefault("ack_policy", "explicit")
    out = await api(nc, "CONSUMER.CREATE.E.c", {"stream_name": "E",
                                                "config": {"durable_name": "c", **config}})
    assert "error" not in out, out
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.E.c", json.dumps({"batch": msgs}).encode(),
                     reply=inbox)
    return [await sub.next_msg(timeout=2) for _ in range(msgs)]


async def test_ack_time_is_measured_on_the_server_clock(nc: Any, clock: VirtualClock) -> None:
    got = await setup(nc, 2, sample_freq="100%")
    metrics = await nc.subscribe("$JS.EVENT.METRIC.CONSUMER.ACK.E.c")
    clock.advance(2.5)
    await nc.request(got[0].reply, b"", timeout=2)
    clock.advance(1.0)
    await nc.request(got[1].reply, b"+WPI", timeout=2)
    clock.advance(0.25)
    await nc.request(got[1].reply, b"+ACK", timeout=2)
    first = json.loads((await metrics.next_msg(timeout=2)).data)
    second = json.loads((await metrics.next_msg(timeout=2)).data)
    assert first["type"] == "io.nats.jetstream.metric.v1.consumer_ack"
    assert (first["stream_seq"], first["deliveries"]) == (1, 1)
    assert abs(first["ack_time"] - 2.5 * S) < 10_000  # (float seconds in the virtual clock)
    assert second["stream_seq"] == 2 and abs(second["ack_time"] - 0.25 * S) < 10_000


async def test_sampling_draws_like_nats_server(srv: Server, nc: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``rand(100) <= N``: with N = 40 the draws 40 and below are sampled."""
    draws = iter([10, 40, 41, 99])
    monkeypatch.setattr(srv.randomness.child("ack-sampling"), "randrange",
                        lambda n: next(draws))
    got = await setup(nc, 4, sample_freq="40")
    metrics = await nc.subscribe("$JS.EVENT.METRIC.CONSUMER.ACK.E.c")
    for m in got:
        await nc.request(m.reply, b"", timeout=2)
    seen = [json.loads((await metrics.next_msg(timeout=2)).data)["stream_seq"] for _ in range(2)]
    assert seen == [1, 2]
    with pytest.raises(nats.errors.TimeoutError):
        await metrics.next_msg(timeout=0.1)


async def test_no_draw_without_a_listener_needed(srv: Server, nc: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Without subscribers nothing is published (and acks work as usual); at 100% nothing is
    drawn."""
    def no_draw(n: int) -> int:
        raise AssertionError("sample_freq 100% draws nothing")

    monkeypatch.setattr(srv.randomness.child("ack-sampling"), "randrange", no_draw)
    got = await setup(nc, 2, sample_freq="100%")
    bus = srv.jetstream.bus  # type: ignore[union-attr]
    published: list[bytes] = []
    publish = bus.publish

    def recording(subject: bytes, *args: Any, **kw: Any) -> int:
        published.append(bytes(subject))
        return publish(subject, *args, **kw)

    monkeypatch.setattr(bus, "publish", recording)
    for m in got:
        await nc.request(m.reply, b"", timeout=2)
    i = await api(nc, "CONSUMER.INFO.E.c")
    assert i["num_ack_pending"] == 0 and i["ack_floor"]["stream_seq"] == 2
    assert published and not [s for s in published if s.startswith(b"$JS.EVENT.")]


async def test_nak_and_term_advisories(nc: Any) -> None:
    got = await setup(nc, 3)
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.*.E.c")
    await nc.request(got[0].reply, b"-NAK 10s", timeout=2)
    await nc.request(got[1].reply, b"+TERM  why ", timeout=2)
    await nc.request(got[1].reply, b"-NAK", timeout=2)  # not pending: silent
    await nc.request(got[2].reply, b"+TERM", timeout=2)
    events = [json.loads((await adv.next_msg(timeout=2)).data) for _ in range(3)]
    assert [(e["type"].rsplit(".", 1)[1], e["stream_seq"], e.get("reason")) for e in events] == [
        ("nak", 1, None), ("terminated", 2, "why"), ("terminated", 3, None)]
    i = await api(nc, "CONSUMER.INFO.E.c")
    assert i["num_ack_pending"] == 1  # the delayed NAK stays pending
