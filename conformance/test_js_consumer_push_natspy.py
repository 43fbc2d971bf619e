"""nats-py 2.16 push workflows: ``js.subscribe`` with a durable (callback with auto-ack, and
sync ``next_msg``), queue subscriptions bound to a durable with a deliver group, the durable
create/lookup race, and the client-side push-bound / deliver-group mismatch errors that rely on
``push_bound`` and ``deliver_group`` in consumer info (seed: client subscribe workflow)."""
from __future__ import annotations

import asyncio
import json

import nats.js.errors
import pytest
from nats.js.api import ConsumerConfig

from conformance.helpers import NatsFactory, ensure_subs


async def wait_push_bound(js: nats.js.JetStreamContext, stream: str, name: str,
                          bound: bool = True) -> None:
    for _ in range(250):
        ci = await js.consumer_info(stream, name)
        if bool(ci.push_bound) == bound:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"push_bound never became {bound}")


async def test_js_natspy_push_durable_callback_auto_ack(target: str, js_nats: NatsFactory,
                                                        stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for i in range(3):
            await js.publish(f"{p}.a", b"m%d" % i)
        got: list[bytes] = []
        done = asyncio.Event()

        async def cb(msg: nats.aio.msg.Msg) -> None:
            got.append(msg.data)
            if len(got) == 4:
                done.set()

        sub = await js.subscribe(f"{p}.a", durable="dur", cb=cb)
        await js.publish(f"{p}.a", b"m3")
        await asyncio.wait_for(done.wait(), 5)
        assert got == [b"m0", b"m1", b"m2", b"m3"]
        await wait_push_bound(js, stream_name, "dur")
        for _ in range(100):
            ci = await js.consumer_info(stream_name, "dur")
            if ci.num_ack_pending == 0:
                break
            await asyncio.sleep(0.02)
        assert (ci.num_ack_pending, ci.delivered.consumer_seq, ci.ack_floor.stream_seq) == (0, 4, 4)
        assert ci.config.deliver_subject and ci.config.filter_subject == f"{p}.a"
        await sub.unsubscribe()
        await wait_push_bound(js, stream_name, "dur", bound=False)
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_push_sync_next_msg_metadata(target: str, js_nats: NatsFactory,
                                                     stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        await js.publish(f"{p}.s", b"one")
        await js.publish(f"{p}.s", b"two")
        sub = await js.subscribe(f"{p}.s", durable="sync")
        m = await sub.next_msg(timeout=3)
        md = m.metadata
        assert (m.data, md.stream, md.consumer, md.num_delivered, md.num_pending) == (
            b"one", stream_name, "sync", 1, 1)
        await m.ack_sync()
        m2 = await sub.next_msg(timeout=3)
        assert (m2.data, m2.metadata.sequence.stream, m2.metadata.sequence.consumer) == (
            b"two", 2, 2)
        await m2.nak()
        m3 = await sub.next_msg(timeout=3)
        assert (m3.data, m3.metadata.num_delivered) == (b"two", 2)
        await m3.ack_sync()
        ci = await js.consumer_info(stream_name, "sync")
        assert ci.num_ack_pending == 0 and ci.num_redelivered == 0
    finally:
        await js.delete_stream(stream_name)


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_js_natspy_push_durable_manual_ack_pending(target: str, js_nats: NatsFactory,
                                                         stream_name: str, storage: str) -> None:
    """``js.subscribe(subject, durable=..., manual_ack=True)``: num_ack_pending is the number
    delivered and not acked — with messages stored before and after the subscribe, after some
    acks, while unbound, and once bound again."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"], storage=storage)
    try:
        for i in range(3):
            await js.publish(f"{p}.a", b"m%d" % i)
        sub = await js.subscribe(f"{p}.a", durable="man", manual_ack=True)
        for i in range(3, 6):
            await js.publish(f"{p}.a", b"m%d" % i)
        msgs = [await sub.next_msg(timeout=3) for _ in range(6)]
        assert [m.data for m in msgs] == [b"m%d" % i for i in range(6)]
        ci = await js.consumer_info(stream_name, "man")
        assert (ci.num_ack_pending, ci.delivered.consumer_seq, ci.ack_floor.consumer_seq,
                ci.num_pending) == (6, 6, 0, 0)
        await msgs[0].ack_sync()
        await msgs[2].ack_sync()
        ci = await sub.consumer_info()
        assert (ci.num_ack_pending, ci.ack_floor.consumer_seq) == (4, 1)
        await sub.unsubscribe()
        await wait_push_bound(js, stream_name, "man", bound=False)
        ci = await js.consumer_info(stream_name, "man")
        assert (ci.num_ack_pending, ci.delivered.consumer_seq) == (4, 6)
        sub = await js.subscribe(f"{p}.a", durable="man", manual_ack=True)
        await wait_push_bound(js, stream_name, "man")
        ci = await sub.consumer_info()
        assert (ci.num_ack_pending, ci.delivered.consumer_seq, ci.ack_floor.consumer_seq) == (
            4, 6, 1)
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_push_ephemeral_headers_only(target: str, js_nats: NatsFactory,
                                                     stream_name: str) -> None:
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        await js.publish(f"{p}.h", b"12345", headers={"X-K": "v"})
        sub = await js.subscribe(f"{p}.h", headers_only=True)
        m = await sub.next_msg(timeout=3)
        assert m.data == b"" and m.headers == {"X-K": "v", "Nats-Msg-Size": "5"}
        ci = await sub.consumer_info()
        assert ci.config.headers_only is True and ci.config.durable_name is None
        assert ci.config.inactive_threshold == 5.0
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_queue_subscription_bound_to_durable(target: str, js_nats: NatsFactory,
                                                             stream_name: str) -> None:
    """``js.subscribe(subject, queue="workers")`` twice: the queue name becomes durable and
    deliver group; the second member binds to the existing consumer; each message goes to one
    member."""
    nc1 = await js_nats()
    nc2 = await js_nats()
    js1, js2 = nc1.jetstream(), nc2.jetstream()
    p = stream_name.lower()
    await js1.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        got: list[tuple[int, bytes]] = []

        def make(i: int):
            async def cb(msg: nats.aio.msg.Msg) -> None:
                got.append((i, msg.data))
            return cb

        await js1.subscribe(f"{p}.w", queue="workers", cb=make(1))
        await wait_push_bound(js1, stream_name, "workers")
        await js2.subscribe(f"{p}.w", queue="workers", cb=make(2))
        ci = await js1.consumer_info(stream_name, "workers")
        assert (ci.config.durable_name, ci.config.deliver_group) == ("workers", "workers")
        for i in range(20):
            await js1.publish(f"{p}.w", b"%d" % i)
        for _ in range(250):
            if len(got) >= 20:
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert sorted(int(d) for _, d in got) == list(range(20))
    finally:
        await js1.delete_stream(stream_name)


async def test_js_natspy_push_bound_mismatch_errors(target: str, js_nats: NatsFactory,
                                                    stream_name: str) -> None:
    """The client refuses a second plain subscription to a bound durable, a plain
    subscription to a deliver-group durable, and a queue subscription to a durable without a
    deliver group — each decided from consumer info."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        await js.subscribe(f"{p}.b", durable="plain")
        await wait_push_bound(js, stream_name, "plain")
        with pytest.raises(nats.js.errors.Error, match="consumer is already bound"):
            await js.subscribe(f"{p}.b", durable="plain")
        with pytest.raises(nats.js.errors.Error,
                           match="cannot create a queue subscription for a consumer without"):
            await js.subscribe(f"{p}.b", queue="plain")
        await js.subscribe(f"{p}.g", queue="grp")
        with pytest.raises(nats.js.errors.Error,
                           match="cannot create a subscription for a consumer with a deliver group grp"):
            await js.subscribe(f"{p}.g", durable="grp")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_durable_create_lookup_race(target: str, js_nats: NatsFactory,
                                                    stream_name: str) -> None:
    """Two members look the durable up (not found), both try to create it on their own deliver
    inbox: the second gets 400/10013 while the first is bound, then looks it up and binds to
    the existing deliver subject with its queue group."""
    nc1 = await js_nats()
    nc2 = await js_nats()
    js1, js2 = nc1.jetstream(), nc2.jetstream()
    p = stream_name.lower()
    await js1.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        for js in (js1, js2):
            with pytest.raises(nats.js.errors.NotFoundError):
                await js.consumer_info(stream_name, "q")
        in1, in2 = nc1.new_inbox(), nc2.new_inbox()
        s1 = await nc1.subscribe(in1, queue="q")
        await js1.add_consumer(stream_name, ConsumerConfig(
            durable_name="q", deliver_subject=in1, deliver_group="q", filter_subject=f"{p}.r"))
        await wait_push_bound(js1, stream_name, "q")
        s2 = await nc2.subscribe(in2, queue="q")
        with pytest.raises(nats.js.errors.BadRequestError) as err:
            await js2.add_consumer(stream_name, ConsumerConfig(
                durable_name="q", deliver_subject=in2, deliver_group="q", filter_subject=f"{p}.r"))
        assert (err.value.code, err.value.err_code, err.value.description) == (
            400, 10013, "consumer name already in use")
        await s2.unsubscribe()
        ci = await js2.consumer_info(stream_name, "q")
        assert (ci.config.deliver_subject, ci.config.deliver_group, ci.push_bound) == (in1, "q", True)
        s2 = await nc2.subscribe(ci.config.deliver_subject, queue="q")
        await ensure_subs(nc2)
        for i in range(10):
            await js1.publish(f"{p}.r", b"%d" % i)
        seen: list[bytes] = []
        for sub in (s1, s2):
            while True:
                try:
                    seen.append((await sub.next_msg(timeout=0.5)).data)
                except nats.errors.TimeoutError:
                    break
        assert sorted(int(x) for x in seen) == list(range(10))
    finally:
        await js1.delete_stream(stream_name)


async def test_js_natspy_push_deliver_group_update_keeps_binding(
        target: str, js_nats: NatsFactory, stream_name: str) -> None:
    """Adding a deliver group to a bound durable is allowed; the server keeps watching the
    interest it registered (still push bound), while nats-py now refuses a plain subscribe."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        dl = nc.new_inbox()
        await nc.subscribe(dl)
        cfg = ConsumerConfig(durable_name="u", deliver_subject=dl, filter_subject=f"{p}.u")
        await js.add_consumer(stream_name, cfg)
        await wait_push_bound(js, stream_name, "u")
        ci = await js.add_consumer(stream_name, ConsumerConfig(
            durable_name="u", deliver_subject=dl, filter_subject=f"{p}.u", deliver_group="g"))
        assert ci.config.deliver_group == "g"
        await asyncio.sleep(0.2)
        assert (await js.consumer_info(stream_name, "u")).push_bound is True
        with pytest.raises(nats.js.errors.Error, match="with a deliver group g"):
            await js.subscribe(f"{p}.u", durable="u")
    finally:
        await js.delete_stream(stream_name)


async def test_js_natspy_consumer_deleted_advisory_on_inactivity(
        target: str, js_nats: NatsFactory, stream_name: str) -> None:
    """An ephemeral push subscription that unsubscribes: the consumer is removed after its
    inactive threshold with a DELETED advisory."""
    nc = await js_nats()
    js = nc.jetstream()
    p = stream_name.lower()
    await js.add_stream(name=stream_name, subjects=[f"{p}.>"])
    try:
        adv = await nc.subscribe(f"$JS.EVENT.ADVISORY.CONSUMER.DELETED.{stream_name}.*")
        sub = await js.subscribe(f"{p}.e", inactive_threshold=0.5)
        name = (await sub.consumer_info()).name
        await sub.unsubscribe()
        m = await adv.next_msg(timeout=5)
        assert json.loads(m.data)["consumer"] == name
        with pytest.raises(nats.js.errors.NotFoundError):
            await js.consumer_info(stream_name, name)
    finally:
        await js.delete_stream(stream_name)
