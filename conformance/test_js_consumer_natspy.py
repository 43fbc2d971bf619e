"""nats-py 2.16 pull workflows against the server: ``pull_subscribe`` + ``fetch`` (with and
without expiry, no-wait batches), ``msg.ack()``, metadata parsed from the ack subject, and the
consumer management calls."""
from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from conformance.helpers import NatsFactory


async def test_js_natspy_pull_fetch_and_ack(target: str, js_nats: NatsFactory,
                                            stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for i in range(5):
            await js.publish(f"{p}.a", b"m%d" % i)
        sub = await js.pull_subscribe(f"{p}.a", durable="work")
        msgs = await sub.fetch(3, timeout=2)
        assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"]
        assert msgs[0].subject == f"{p}.a"
        md = msgs[0].metadata
        assert (md.stream, md.consumer, md.num_delivered) == (stream_name, "work", 1)
        assert (md.sequence.stream, md.sequence.consumer, md.num_pending) == (1, 1, 4)
        for m in msgs:
            await m.ack()
        await nc.flush()
        [m4] = await sub.fetch(1, timeout=2)
        assert m4.data == b"m3"
        await m4.ack_sync()
        info = await js.consumer_info(stream_name, "work")
        assert info.delivered.consumer_seq == 4 and info.ack_floor.stream_seq == 4
        assert info.num_pending == 1 and info.num_ack_pending == 0
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_fetch_times_out(target: str, js_nats: NatsFactory,
                                         stream_name: str) -> None:
    """fetch(1) and fetch(n) with nothing to deliver end in TimeoutError on the expiry."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        sub = await js.pull_subscribe(f"{p}.x", durable="idle")
        with pytest.raises(nats.errors.TimeoutError):
            await sub.fetch(1, timeout=0.5)
        with pytest.raises(nats.errors.TimeoutError):
            await sub.fetch(5, timeout=0.5)
        # an empty fetch's long request may wait on the server until it expires (0.5 s);
        # under load it could outlive the client's timeout and take the next message
        await asyncio.sleep(0.6)
        await js.publish(f"{p}.x", b"late")
        [m] = await sub.fetch(5, timeout=5)
        assert m.data == b"late"
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_fetch_with_heartbeat_after_timed_out_fetch(
        target: str, js_nats: NatsFactory, stream_name: str) -> None:
    """fetch(20) times out; once the server has ended its request (num_waiting 0 — reading
    consumer info ends a request past its expiry), messages published go to the next
    fetch(4, heartbeat=0.1). Had the expired request taken them into the inbox, nats-py would
    ask without an expiry and hear ``400 heartbeat value too large``. (Without the wait the
    client's and the server's timeouts race, on nats-server too.)"""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        sub = await js.pull_subscribe(f"{p}.x", durable="hb")
        with pytest.raises(nats.errors.TimeoutError):
            await sub.fetch(20, timeout=0.3)
        for _ in range(100):
            if (await js.consumer_info(stream_name, "hb")).num_waiting == 0:
                break
            await asyncio.sleep(0.01)
        for i in range(3):
            await js.publish(f"{p}.x", b"m%d" % i)
        msgs = await sub.fetch(4, timeout=2, heartbeat=0.1)
        assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"]
        assert [m.metadata.sequence.consumer for m in msgs] == [1, 2, 3]
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_fetch_batch_no_wait_partial(target: str, js_nats: NatsFactory,
                                                     stream_name: str) -> None:
    """fetch(10) with 3 available returns the 3 (the no-wait request ends with 404)."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for i in range(3):
            await js.publish(f"{p}.q", b"%d" % i)
        sub = await js.pull_subscribe(f"{p}.q", durable="batch")
        msgs = await sub.fetch(10, timeout=1)
        assert [m.data for m in msgs] == [b"0", b"1", b"2"]
        assert [m.metadata.num_pending for m in msgs] == [2, 1, 0]
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_nak_redelivers(target: str, js_nats: NatsFactory,
                                        stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        await js.publish(f"{p}.n", b"again")
        sub = await js.pull_subscribe(f"{p}.n", durable="nak")
        [m] = await sub.fetch(1, timeout=5)
        await m.nak()
        # (generous timeouts: the message is there at once; a loaded machine may be slow)
        [r] = await sub.fetch(1, timeout=5)
        assert r.data == b"again" and r.metadata.num_delivered == 2
        await r.term()
        await nc.flush()
        # nats-server applies an ack in the consumer's own goroutine: an info right after it
        # may not show it yet
        for _ in range(50):
            info = await js.consumer_info(stream_name, "nak")
            if info.num_ack_pending == 0:
                break
            await asyncio.sleep(0.05)
        assert info.num_ack_pending == 0 and info.num_redelivered == 0
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_consumer_management(target: str, js_nats: NatsFactory,
                                             stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        ci = await js.add_consumer(stream_name, ConsumerConfig(
            durable_name="mgr", ack_policy=AckPolicy.EXPLICIT, filter_subject=f"{p}.m"))
        assert ci.name == "mgr" and ci.config.max_ack_pending == 1000
        assert ci.config.ack_wait == 30.0
        names = [c.name for c in await js.consumers_info(stream_name)]
        assert names == ["mgr"]
        assert await js.delete_consumer(stream_name, "mgr")
        with pytest.raises(nats.js.errors.NotFoundError):
            await js.consumer_info(stream_name, "mgr")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_no_wait_then_long_poll(target: str, js_nats: NatsFactory,
                                                stream_name: str) -> None:
    """The seed workflow: an empty fetch times out, a publish during a long poll is delivered."""
    import asyncio

    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        sub = await js.pull_subscribe(f"{p}.lp", durable="lp")
        with pytest.raises(nats.errors.TimeoutError):
            await sub.fetch(2, timeout=0.3)
        # nats-py's empty fetch may leave its long request waiting on the server for up to
        # its expiry (0.3 s); under load it could outlive the client's timeout and take the
        # next message: let it expire first
        await asyncio.sleep(0.4)
        task = asyncio.create_task(sub.fetch(1, timeout=3))
        await asyncio.sleep(0.3)
        await js.publish(f"{p}.lp", b"wake")
        [m] = await task
        assert m.data == b"wake"
    finally:
        await js.delete_stream(stream_name)
