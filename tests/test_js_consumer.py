"""Pull consumers inside minijs under the virtual clock: ack-wait redelivery, NAK delay,
max_deliver and pull expiry fire with no real waiting. Wire behaviour against nats-server is
in conformance/test_js_consumer_*.py.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.consumers.consumer import PriorityGroup, parse_next_request

from jsapi import api, pull_consumer

S = 1_000_000_000


setup = pull_consumer


async def next_msg(sub: Any) -> Any:
    return await sub.next_msg(timeout=2)


async def settle(nc: Any) -> None:
    await nc.flush()
    await asyncio.sleep(0.01)


async def info(nc: Any) -> dict:
    return await api(nc, "CONSUMER.INFO.S.c")


async def test_ack_wait_redelivery_on_virtual_clock(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, ack_wait=30 * S)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.1")
    m = await next_msg(sub)
    assert m.reply.split(".")[4:7] == ["1", "1", "1"]
    clock.advance(29)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.2")
    await settle(nc)
    assert (await info(nc))["num_waiting"] == 1
    clock.advance(1.1)  # ack wait over: the waiting request gets the redelivery
    r = await next_msg(sub)
    assert r.data == b"m0" and r.reply.split(".")[4:7] == ["2", "1", "2"]
    i = await info(nc)
    assert (i["num_redelivered"], i["num_ack_pending"], i["num_waiting"]) == (1, 1, 0)


async def test_wpi_restarts_ack_wait(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, ack_wait=10 * S)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.1")
    m = await next_msg(sub)
    clock.advance(8)
    await nc.request(m.reply, b"+WPI", timeout=2)
    clock.advance(8)  # 16 s after delivery, 8 s after the WPI: not due yet
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b'{"no_wait": true}', reply="pull.2")
    st = await next_msg(sub)
    assert st.headers["Status"] == "404"
    clock.advance(2.1)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.3")
    r = await next_msg(sub)
    assert r.reply.split(".")[4] == "2"


async def test_nak_delay_and_max_deliver(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, ack_wait=5 * S, max_deliver=2)
    advisories = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>")
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.1")
    m = await next_msg(sub)
    await nc.request(m.reply, b'-NAK {"delay": 3000000000}', timeout=2)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.2")
    await settle(nc)
    clock.advance(2.9)
    await settle(nc)
    assert (await info(nc))["num_waiting"] == 1
    clock.advance(0.2)
    r = await next_msg(sub)
    assert r.reply.split(".")[4] == "2"
    clock.advance(5.1)  # second (= max) delivery expires: queued, still pending
    await settle(nc)
    i = await info(nc)
    assert (i["num_ack_pending"], i["num_redelivered"]) == (1, 1)
    # The next pull request finds it due a third delivery: given up, advisory sent.
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="pull.3")
    adv = json.loads((await advisories.next_msg(timeout=2)).data)
    assert adv["type"] == "io.nats.jetstream.advisory.v1.max_deliver"
    assert (adv["stream_seq"], adv["deliveries"]) == (1, 2)
    i = await info(nc)
    assert (i["num_ack_pending"], i["num_redelivered"], i["num_waiting"]) == (0, 1, 1)
    assert (i["ack_floor"]["consumer_seq"], i["ack_floor"]["stream_seq"]) == (0, 0)


async def test_pull_expiry_408_on_virtual_clock(nc: Any, clock: VirtualClock) -> None:
    sub = await setup(nc, msgs=0)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b'{"batch": 3, "expires": 60000000000}',
                     reply="pull.1")
    await settle(nc)
    assert (await info(nc))["num_waiting"] == 1
    clock.advance(60.1)
    st = await next_msg(sub)
    assert st.headers["Status"] == "408"
    assert (st.headers["Nats-Pending-Messages"], st.headers["Nats-Pending-Bytes"]) == ("3", "0")
    assert (await info(nc))["num_waiting"] == 0


async def test_request_past_expiry_never_served_before_its_timer(
        nc: Any, server: Any, clock: VirtualClock) -> None:
    """A busy loop may run the expiry timer late: a request past its expiry on the clock still
    takes no message (nats-server checks the time), it hears its 408 instead."""
    sub = await setup(nc, msgs=0)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b'{"batch": 5, "expires": 1000000000}',
                     reply="pull.1")
    await settle(nc)
    [wr] = server.jetstream.streams["S"].consumers["c"].pull.waiting
    wr.timer.cancel()  # the timer "has not fired yet"
    wr.timer = None
    clock.advance(1)
    await nc.request("s.m", b"late", timeout=2)
    st = await next_msg(sub)
    assert (st.headers["Status"], st.headers["Nats-Pending-Messages"]) == ("408", "5")
    i = await info(nc)
    assert (i["num_waiting"], i["num_pending"], i["delivered"]["consumer_seq"]) == (0, 1, 0)


async def test_info_ends_request_past_expiry(nc: Any, server: Any, clock: VirtualClock) -> None:
    """Consumer info (nats-server processWaiting) ends a request past its expiry with 408."""
    sub = await setup(nc, msgs=0)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b'{"batch": 2, "expires": 1000000000}',
                     reply="pull.1")
    await settle(nc)
    [wr] = server.jetstream.streams["S"].consumers["c"].pull.waiting
    wr.timer.cancel()
    wr.timer = None
    clock.advance(2)
    assert (await info(nc))["num_waiting"] == 0
    st = await next_msg(sub)
    assert st.headers["Status"] == "408"


async def test_interest_dropped_requests_are_not_served(nc: Any, clock: VirtualClock) -> None:
    """A request whose reply subject lost interest is skipped; the message waits."""
    sub = await setup(nc, msgs=0)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.c", b"", reply="gone.1")
    await settle(nc)
    await nc.request("s.m", b"x", timeout=2)
    i = await info(nc)
    assert (i["num_waiting"], i["num_pending"], i["delivered"]["consumer_seq"]) == (0, 1, 0)
    await sub.unsubscribe()


def test_parse_next_request_forms() -> None:
    assert parse_next_request(b"") == (1, 0, False, 0, 0, None)
    assert parse_next_request(b" 7 ") == (7, 0, False, 0, 0, None)
    assert parse_next_request(b"junk") == (1, 0, False, 0, 0, None)
    # Every JSON body carries a priority group, even one naming nothing (nats-server does too).
    assert parse_next_request(b'{"batch":2,"no_wait":true,"zz":1}') == (
        2, 0, True, 0, 0, PriorityGroup())
    assert parse_next_request(b'{"group":"A","min_pending":5,"id":"x","priority":3}').pg == (
        PriorityGroup("A", 5, 0, "x", 3))
    with pytest.raises(ValueError, match="heartbeat value too large"):
        parse_next_request(b'{"expires": 10, "idle_heartbeat": 6}')
