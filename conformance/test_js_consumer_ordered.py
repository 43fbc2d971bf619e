"""Ordered consumers as nats-py 2.16 drives them (``js.subscribe(..., ordered_consumer=True)``):
an ephemeral push consumer with ack none, max_deliver 1, flow control, heartbeats and memory
storage; the client answers flow control, and when heartbeats stop it re-creates the consumer
from the next stream sequence."""
from __future__ import annotations

import asyncio

import nats.js.errors
import pytest

from conformance.helpers import NatsFactory


async def collect(sub: nats.js.JetStreamContext.PushSubscription, n: int,
                  timeout: float = 5.0) -> list[nats.aio.msg.Msg]:
    return [await sub.next_msg(timeout=timeout) for _ in range(n)]


async def test_js_ordered_consumer_config_and_order(target: str, js_nats: NatsFactory,
                                                    stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for i in range(5):
            await js.publish(f"{p}.o", b"m%d" % i)
        sub = await js.subscribe(f"{p}.o", ordered_consumer=True)
        msgs = await collect(sub, 5)
        assert [m.data for m in msgs] == [b"m%d" % i for i in range(5)]
        assert [m.metadata.sequence.consumer for m in msgs] == [1, 2, 3, 4, 5]
        ci = await sub.consumer_info()
        c = ci.config
        assert (str(getattr(c.ack_policy, "value", c.ack_policy)), c.max_deliver, c.flow_control, c.idle_heartbeat,
                c.mem_storage, c.num_replicas, c.inactive_threshold, c.durable_name) == (
            "none", 1, True, 5.0, True, 1, 5.0, None)
        assert ci.push_bound is True and ci.num_ack_pending == 0
        await js.publish(f"{p}.o", b"live")
        [m] = await collect(sub, 1)
        assert (m.data, m.metadata.sequence.stream, m.metadata.num_pending) == (b"live", 6, 0)
    finally:
        await js.delete_stream(stream_name)


async def test_js_ordered_consumer_flow_control_large(target: str, js_nats: NatsFactory,
                                                      stream_name: str) -> None:
    """3 MB through a 2 MiB initial window: nats-py answers the flow-control requests and
    every message arrives once, in order."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        body = b"z" * 100_000
        for i in range(30):
            await js.publish(f"{p}.big", body + b"%d" % i)
        got: list[int] = []
        done = asyncio.Event()

        async def cb(msg: nats.aio.msg.Msg) -> None:
            got.append(int(msg.data[100_000:]))
            if len(got) == 30:
                done.set()

        await js.subscribe(f"{p}.big", ordered_consumer=True, cb=cb)
        await asyncio.wait_for(done.wait(), 10)
        assert got == list(range(30))
    finally:
        await js.delete_stream(stream_name)


@pytest.mark.parametrize("reader", ["next_msg", "callback"])
async def test_js_ordered_consumer_reads_5000_messages(target: str, js_nats: NatsFactory,
                                                       stream_name: str, reader: str) -> None:
    """5,000 messages of 1 KiB (2.5 times the first flow-control window) through an ordered
    consumer with flow control and heartbeats: nats-py answers the flow-control requests as it
    catches up, every message arrives once and in order, the consumer ends caught up."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    n = 5000
    try:
        body = b"z" * 1000
        for i in range(n):
            await nc.publish(f"{p}.{i % 10}", body + b"%d" % i)
        await nc.flush()
        for _ in range(400):
            if (await js.stream_info(stream_name)).state.messages == n:
                break
            await asyncio.sleep(0.05)
        got: list[int] = []
        if reader == "next_msg":
            sub = await js.subscribe(f"{p}.>", ordered_consumer=True)
            while len(got) < n:
                m = await sub.next_msg(timeout=10)
                got.append(int(m.data[1000:]))
        else:
            done = asyncio.Event()

            async def cb(msg: nats.aio.msg.Msg) -> None:
                got.append(int(msg.data[1000:]))
                if len(got) == n:
                    done.set()

            sub = await js.subscribe(f"{p}.>", ordered_consumer=True, cb=cb)
            await asyncio.wait_for(done.wait(), 60)
        assert got == list(range(n))
        ci = await sub.consumer_info()
        assert (ci.num_pending, ci.delivered.stream_seq) == (0, n)
        assert ci.config.flow_control is True and ci.config.idle_heartbeat == 5.0
    finally:
        await js.delete_stream(stream_name)


async def test_js_ordered_consumer_recreated_after_missed_heartbeats(
        target: str, js_nats: NatsFactory, stream_name: str) -> None:
    """The consumer disappears server-side: heartbeats stop, nats-py notices after two missed
    ones and creates a new consumer starting at the next stream sequence, on a new inbox."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for i in range(3):
            await js.publish(f"{p}.r", b"a%d" % i)
        sub = await js.subscribe(f"{p}.r", ordered_consumer=True, idle_heartbeat=0.2)
        assert [m.data for m in await collect(sub, 3)] == [b"a0", b"a1", b"a2"]
        first = (await sub.consumer_info()).name
        assert await js.delete_consumer(stream_name, first)
        for _ in range(100):
            await asyncio.sleep(0.05)
            names = await js.consumers_info(stream_name)
            if names:
                break
        [ci] = names
        assert ci.name != first
        assert (str(getattr(ci.config.deliver_policy, "value", ci.config.deliver_policy)), ci.config.opt_start_seq) == ("by_start_sequence", 4)
        await js.publish(f"{p}.r", b"b0")
        [m] = await collect(sub, 1)
        assert (m.data, m.metadata.sequence.stream, m.metadata.sequence.consumer) == (b"b0", 4, 1)
    finally:
        await js.delete_stream(stream_name)


async def test_js_ordered_consumer_old_consumer_cleaned_up(target: str, js_nats: NatsFactory,
                                                           stream_name: str) -> None:
    """After unsubscribing, the ordered consumer (ephemeral, 5 s default threshold shortened
    here through the create call) goes away on its own."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        sub = await js.subscribe(f"{p}.c", ordered_consumer=True, inactive_threshold=0.3)
        name = (await sub.consumer_info()).name
        await sub.unsubscribe()
        for _ in range(100):
            await asyncio.sleep(0.05)
            try:
                await js.consumer_info(stream_name, name)
            except nats.js.errors.NotFoundError:
                break
        else:
            pytest.fail("ordered consumer not removed")
    finally:
        await js.delete_stream(stream_name)
