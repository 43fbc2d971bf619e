"""Test control as a user drives it with nats-py clients: virtual time (in the test's loop and
on a ServerThread), the auto clock, inspection snapshots, reset, restart and crash.

Fault injection is in test_control_faults.py, the ``$MINIJS`` control plane in
test_control_plane.py.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import AutoClock, ClockError, VirtualClock, WallClock
from minijs.control.snapshots import PendingAck, SubscriptionSnapshot, WaitingPull
from minijs.server import Server, ServerThread

from control_kit import (S, Events, SyncNats, arrived, connect, nothing_arrived, pull,
                         status, wait)
from jsapi import api, pull_consumer


def approx(t: float) -> Any:
    """A due time (float seconds since the epoch) to within a microsecond."""
    return pytest.approx(t, abs=1e-6)


# ============================================================================ virtual time


async def test_ack_wait_redelivers_exactly_at_its_due_time_in_both_modes(tmp_path: Path) -> None:
    # In the test's loop: await clock.advance_async().
    clock = VirtualClock()
    async with Server(port=0, jetstream=True, clock=clock) as server:
        nc = await nats.connect(server.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        assert (await sub.next_msg(timeout=2)).metadata.num_delivered == 1
        await pull(nc, "pull.2")  # waits for the redelivery
        await clock.advance_async(29.999)
        await nothing_arrived(nc, sub)
        await clock.advance_async(0.001)  # 30 s exactly
        again = await arrived(nc, sub)
        assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
        await nc.close()

    # On a ServerThread: srv.clock.advance() from another thread.
    with ServerThread(clock="virtual", jetstream=True) as srv:
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        assert (await sub.next_msg(timeout=2)).metadata.num_delivered == 1
        await pull(nc, "pull.2")
        await asyncio.to_thread(srv.clock.advance, 29.999)
        await nothing_arrived(nc, sub)
        await asyncio.to_thread(srv.clock.advance, 0.001)
        again = await arrived(nc, sub)
        assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
        await nc.close()


async def test_in_loop_virtual_clock_drives_ack_wait_redelivery(server: Server, nc: Any,
                                                               clock: VirtualClock) -> None:
    sub = await pull_consumer(nc, ack_wait=30 * S)
    await pull(nc, "pull.1")
    first = await sub.next_msg(timeout=2)
    assert first.metadata.num_delivered == 1
    await pull(nc, "pull.2")
    await clock.advance_async(29.999)
    await nothing_arrived(nc, sub)
    assert server.consumer("S", "c").waiting[0].reply == "pull.2"
    await clock.advance_async(0.5)
    again = await arrived(nc, sub)
    assert (again.data, again.metadata.num_delivered, again.metadata.sequence.stream) == (
        b"m0", 2, 1)
    assert clock.monotonic() == pytest.approx(30.499)


def test_server_thread_virtual_clock_from_a_plain_sync_test() -> None:
    with ServerThread(clock="virtual", jetstream=True) as srv:
        assert srv.clock.virtual and srv.clock.monotonic() == 0
        with SyncNats(srv.client_url) as client:
            sub = client.run(pull_consumer(client.nc, ack_wait=30 * S))
            client.run(pull(client.nc, "pull.1"))
            first = client.run(sub.next_msg(timeout=2))
            assert first.metadata.num_delivered == 1
            client.run(pull(client.nc, "pull.2"))
            assert srv.clock.advance(29.999) == 0  # returns once the effects are written
            client.run(nothing_arrived(client.nc, sub))
            assert srv.clock.advance(0.5) >= 1
            again = client.run(arrived(client.nc, sub))
            assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
            assert srv.consumer("S", "c").num_redelivered == 1


async def test_server_thread_clock_advanced_from_an_async_test() -> None:
    with ServerThread(clock="virtual", jetstream=True) as srv:
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        await sub.next_msg(timeout=2)
        await pull(nc, "pull.2")
        await srv.clock.advance_async(29.999)  # from the test's loop onto the server's
        await nothing_arrived(nc, sub)
        await asyncio.to_thread(srv.clock.advance, 0.5)
        assert (await arrived(nc, sub)).metadata.num_delivered == 2
        await nc.close()


async def test_max_age_expires_exactly_at_its_due_time(server: Server, nc: Any,
                                                      clock: VirtualClock) -> None:
    js = nc.jetstream()
    await js.add_stream(name="AGE", subjects=["age.>"], storage="memory", max_age=60)
    await js.publish("age.a", b"first")  # t = 0
    await clock.advance_async(10)
    await js.publish("age.b", b"second")  # t = 10
    await clock.advance_async(49.999)
    assert [m.seq for m in server.messages("AGE")] == [1, 2]
    await clock.advance_async(0.001)  # t = 60: the first is due
    assert [m.seq for m in server.messages("AGE")] == [2]
    await clock.advance_async(9.999)
    assert [m.seq for m in server.messages("AGE")] == [2]
    await clock.advance_async(0.001)  # t = 70
    assert server.messages("AGE") == []
    info = await js.stream_info("AGE")
    assert (info.state.messages, info.state.first_seq, info.state.last_seq) == (0, 3, 2)


async def test_pull_expires_answers_408_after_advance(server: Server, nc: Any,
                                                     clock: VirtualClock) -> None:
    sub = await pull_consumer(nc, msgs=0)
    await pull(nc, "pull.1", batch=3, expires=5 * S)
    assert server.consumer("S", "c").waiting == [
        WaitingPull(reply="pull.1", batch=3, max_bytes=0, no_wait=False, expires_after=5.0)]
    await clock.advance_async(4.999)
    await nothing_arrived(nc, sub)
    await clock.advance_async(0.001)
    timeout = await arrived(nc, sub)
    assert status(timeout) == ("408", "Request Timeout")
    assert server.consumer("S", "c").waiting == []


async def test_auto_clock_delivers_a_30s_redelivery_without_being_told(tmp_path: Path) -> None:
    clock = AutoClock()
    async with Server(port=0, jetstream=True, clock=clock) as server:
        nc = await nats.connect(server.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        first = await sub.next_msg(timeout=5)
        await pull(nc, "pull.2")
        # Nobody advances the clock: once the server is idle it jumps to the ack deadline.
        again = await sub.next_msg(timeout=5)
        assert (again.data, again.metadata.num_delivered) == (first.data, 2)
        assert clock.monotonic() >= 30
        await nc.close()


async def test_auto_clock_from_make_clock_spec_on_a_server_thread() -> None:
    with ServerThread(clock="auto", jetstream=True) as srv:
        assert isinstance(srv.clock, AutoClock)
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, msgs=0)
        await pull(nc, "pull.1", batch=1, expires=3600 * S)  # an hour of virtual time
        assert status(await sub.next_msg(timeout=5)) == ("408", "Request Timeout")
        await nc.close()


async def test_wall_clock_cannot_advance_and_says_how_to_fix_it() -> None:
    async with Server(port=0) as server:
        assert isinstance(server.clock, WallClock)
        with pytest.raises(ClockError, match=r"Server\(clock=VirtualClock\(\)\)") as err:
            server.clock.advance(30)
        assert "ServerThread(clock='virtual')" in str(err.value)
        assert "--clock virtual" in str(err.value)
        with pytest.raises(ClockError, match="virtual clock"):
            await server.clock.advance_async(30)
    with pytest.raises(ClockError, match="use 'wall', 'virtual' or 'auto'"):
        Server(port=0, clock="sundial")
    with ServerThread() as srv:
        with pytest.raises(ClockError, match="VirtualClock"):
            srv.clock.advance(1)


async def test_reset_while_an_advance_is_under_way_leaves_time_at_zero() -> None:
    clock = VirtualClock()
    async with Server(port=0, jetstream=True, clock=clock) as server:
        fired: list[float] = []
        clock.call_later(10, server.reset)  # e.g. a $MINIJS.RESET from another client
        clock.call_later(20, lambda: fired.append(clock.monotonic()))
        await clock.advance_async(100)
        assert clock.monotonic() == 0 and fired == []
        await clock.advance_async(25)
        assert fired == []  # the reset dropped that timer too


def test_concurrent_advances_from_two_threads_add_up() -> None:
    with ServerThread(clock="virtual") as srv:
        fired: list[int] = []

        def arm() -> None:
            for i in range(1, 41):
                srv.clock.call_later(i / 2, fired.append, i)

        srv.call(arm)
        with ThreadPoolExecutor(2) as pool:
            assert sum(pool.map(srv.clock.advance, [10, 10])) == 40
        assert srv.clock.monotonic() == 20 and fired == list(range(1, 41))
        srv.clock.reset()  # from this thread too: it runs on the server's loop
        assert srv.clock.monotonic() == 0 and srv.clock.pending() == 0


# ============================================================================ inspection


async def _orders(nc: Any) -> Any:
    """Stream ORDERS (memory) with three messages and a pull consumer ``c`` (ack_wait 30 s);
    stream LOGS (file) with one message."""
    js = nc.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"], storage="memory")
    await js.add_stream(name="LOGS", subjects=["logs.>"], storage="file")
    await js.publish("orders.new", b"o1", headers={"Shop": "north"})
    await js.publish("orders.new", b"o2")
    await js.publish("orders.paid", b"o3")
    await js.publish("logs.app", b"l1")
    out = await api(nc, "CONSUMER.CREATE.ORDERS.c", {"stream_name": "ORDERS", "config": {
        "durable_name": "c", "ack_policy": "explicit", "ack_wait": 30 * S}})
    assert "error" not in out, out
    return await nc.subscribe("pull.>")


async def test_inspect_streams_and_messages_in_loop(server: Server, nc: Any,
                                                    clock: VirtualClock) -> None:
    await _orders(nc)
    streams = server.streams()
    assert [s.name for s in streams] == ["LOGS", "ORDERS"]
    orders = server.stream("ORDERS")
    assert (orders.messages, orders.first_seq, orders.last_seq) == (3, 1, 3)
    assert orders.subjects == {"orders.new": 2, "orders.paid": 1}
    assert orders.consumers == ["c"]
    assert orders.config["storage"] == "memory" and orders.bytes > 0
    assert streams[0].config["storage"] == "file" and streams[0].messages == 1

    msgs = server.messages("ORDERS")
    assert [(m.seq, m.subject, m.data) for m in msgs] == [
        (1, "orders.new", b"o1"), (2, "orders.new", b"o2"), (3, "orders.paid", b"o3")]
    assert b"Shop: north" in (msgs[0].headers or b"") and msgs[1].headers is None
    assert msgs[0].time == approx(clock.time())  # stamped on the virtual clock
    assert [m.seq for m in server.messages("ORDERS", subject="orders.new")] == [1, 2]
    assert [m.seq for m in server.messages("ORDERS", subject="orders.*", start_seq=2,
                                           limit=1)] == [2]
    assert server.message("ORDERS", 3).subject == "orders.paid"
    assert server.message("ORDERS", 99) is None
    with pytest.raises(LookupError, match="no stream 'NOPE'"):
        server.stream("NOPE")
    with pytest.raises(LookupError):
        server.messages("NOPE")
    with pytest.raises(ValueError, match="invalid subject filter"):
        server.messages("ORDERS", subject="orders.>.new")


async def test_inspect_consumer_pending_waiting_and_ack_floor(server: Server, nc: Any,
                                                              clock: VirtualClock) -> None:
    sub = await _orders(nc)
    t0 = clock.time()
    await pull(nc, "pull.1", subject="$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", batch=3)
    got = [await sub.next_msg(timeout=2) for _ in range(3)]
    await got[0].ack_sync()
    c = server.consumer("ORDERS", "c")
    assert (c.delivered_stream_seq, c.delivered_consumer_seq) == (3, 3)
    assert (c.ack_floor_stream_seq, c.ack_floor_consumer_seq) == (1, 1)
    assert (c.num_pending, c.num_ack_pending, c.num_redelivered) == (0, 2, 0)
    due = approx(t0 + 30)
    assert c.pending == [PendingAck(stream_seq=2, consumer_seq=2, deliveries=1, due=due),
                         PendingAck(stream_seq=3, consumer_seq=3, deliveries=1, due=due)]
    assert c.waiting == [] and c.redelivery_queue == []
    assert c.config["ack_wait"] == 30 * S and not c.paused

    await pull(nc, "pull.2", subject="$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", batch=5,
               expires=10 * S, max_bytes=4096)
    assert server.consumer("ORDERS", "c").waiting == [
        WaitingPull(reply="pull.2", batch=5, max_bytes=4096, no_wait=False, expires_after=10.0)]

    await clock.advance_async(31)  # the pull expired at 10 s, both ack waits ran out at 30 s
    assert status(await arrived(nc, sub))[0] == "408"
    c = server.consumer("ORDERS", "c")
    assert c.waiting == [] and c.redelivery_queue == [2, 3]
    assert [(p.stream_seq, p.deliveries, p.due) for p in c.pending] == [(2, 1, None),
                                                                          (3, 1, None)]
    await pull(nc, "pull.3", subject="$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", batch=1)
    again = await sub.next_msg(timeout=2)
    assert again.metadata.num_delivered == 2
    c = server.consumer("ORDERS", "c")
    assert c.pending[0] == PendingAck(stream_seq=2, consumer_seq=2, deliveries=2,
                                      due=approx(clock.time() + 30))
    assert c.redelivery_queue == [3] and c.num_redelivered == 1
    with pytest.raises(LookupError, match="no consumer 'nope'"):
        server.consumer("ORDERS", "nope")


async def test_inspect_connections(server: Server, nc: Any) -> None:
    named = await nats.connect(server.client_url, name="inspector")
    await named.subscribe("orders.>", queue="workers")
    await named.subscribe("audit")
    await named.flush()
    infos = {c.name: c for c in server.connections_info()}
    assert set(infos) == {"inspector", ""}
    mine = infos["inspector"]
    assert mine.lang == "python3" and mine.version and mine.host == "127.0.0.1"
    assert sorted(mine.subscriptions, key=lambda s: s.subject) == [
        SubscriptionSnapshot(subject="audit", queue="", sid="2"),
        SubscriptionSnapshot(subject="orders.>", queue="workers", sid="1")]
    assert infos[""].subscriptions == []
    await named.close()
    await nc.flush()
    assert [c.name for c in server.connections_info()] == [""]


async def test_inspect_a_push_consumer(server: Server, nc: Any, clock: VirtualClock) -> None:
    js = nc.jetstream()
    await js.add_stream(name="P", subjects=["p"], storage="memory")
    await js.publish("p", b"1")
    inbox = await nc.subscribe("push.in")
    out = await api(nc, "CONSUMER.CREATE.P.pc", {"stream_name": "P", "config": {
        "durable_name": "pc", "deliver_subject": "push.in", "ack_policy": "explicit",
        "ack_wait": 5 * S}})
    assert "error" not in out, out
    assert (await inbox.next_msg(timeout=2)).data == b"1"
    c = server.consumer("P", "pc")
    assert c.push_bound and c.waiting == [] and c.config["deliver_subject"] == "push.in"
    assert [(p.stream_seq, p.deliveries) for p in c.pending] == [(1, 1)]
    await clock.advance_async(5)
    assert (await arrived(nc, inbox)).metadata.num_delivered == 2
    assert server.consumer("P", "pc").pending[0].deliveries == 2


async def test_inspection_through_a_server_thread(tmp_path: Path) -> None:
    with ServerThread(clock="virtual", jetstream=True, store_dir=str(tmp_path / "js")) as srv:
        nc = await nats.connect(srv.client_url, name="threaded")
        sub = await _orders(nc)
        assert [s.name for s in srv.streams()] == ["LOGS", "ORDERS"]
        assert srv.stream("LOGS").config["storage"] == "file"
        assert [m.data for m in srv.messages("ORDERS", subject="orders.new")] == [b"o1", b"o2"]
        assert srv.message("ORDERS", 3).data == b"o3"
        t0 = srv.clock.time()
        await pull(nc, "pull.1", subject="$JS.API.CONSUMER.MSG.NEXT.ORDERS.c", batch=1)
        await sub.next_msg(timeout=2)
        c = srv.consumer("ORDERS", "c")
        assert c.pending == [PendingAck(stream_seq=1, consumer_seq=1, deliveries=1,
                                        due=approx(t0 + 30))]
        assert c.num_pending == 2
        conns = srv.connections_info()
        assert [(c.name, [s.subject for s in c.subscriptions if s.subject[0] != "_"])
                for c in conns] == [("threaded", ["pull.>"])]
        with pytest.raises(LookupError):
            srv.consumer("ORDERS", "nope")
        await nc.close()


# ============================================================================ reset


async def test_reset_empties_everything_and_keeps_connections(tmp_path: Path) -> None:
    clock = VirtualClock()
    store = tmp_path / "js"
    async with Server(port=0, jetstream=True, clock=clock, store_dir=str(store)) as server:
        events = Events()
        nc = await connect(server.client_url, events, allow_reconnect=False)
        js = nc.jetstream()
        for i in range(100):
            await js.add_stream(name=f"S{i}", subjects=[f"s{i}.>"],
                                storage="file" if i % 2 else "memory")
            await js.publish(f"s{i}.x", b"%d" % i)
        kv = await js.create_key_value(bucket="cfg")
        await kv.put("k", b"v")
        obj = await js.create_object_store(bucket="files")
        await obj.put("blob", b"x" * 5000)
        await js.add_consumer("S1", durable_name="c", ack_policy="explicit")
        server.faults.fail_requests("nobody.*", status=408, count=None)
        server.faults.drop_deliveries("S1", "c")
        assert status(await nc.request("nobody.home", b"", timeout=2))[0] == "408"
        await clock.advance_async(1000)
        assert len(server.streams()) == 102 and len(server.fault_log()) == 1
        assert any(store.rglob("*"))

        server.reset()

        assert server.streams() == []
        assert server.faults.rules == [] and server.fault_log() == []
        assert clock.monotonic() == 0 and clock.next_due(include_housekeeping=False) is None
        info = await js.account_info()
        assert (info.streams, info.consumers) == (0, 0)
        # The same client carries on: names are free again, state starts over.
        assert not events.disconnected.is_set()
        assert [c.cid for c in server.connections_info()] != []
        kv = await js.create_key_value(bucket="cfg")
        with pytest.raises(nats.js.errors.KeyNotFoundError):
            await kv.get("k")
        await js.add_stream(name="S1", subjects=["s1.>"], storage="file")
        assert (await js.publish("s1.x", b"again")).seq == 1
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("nobody.home", b"", timeout=2)  # the fault rule is gone

        server.reset(disconnect=True)
        await wait(events.closed)
        assert server.connections_info() == [] and server.streams() == []


async def test_reset_through_a_server_thread() -> None:
    with ServerThread(clock="virtual", jetstream=True) as srv:
        events = Events()
        nc = await connect(srv.client_url, events, allow_reconnect=False)
        js = nc.jetstream()
        await js.add_stream(name="T", subjects=["t"], storage="file")
        await js.publish("t", b"1")
        srv.faults.fail_requests("t", error=10076)
        await asyncio.to_thread(srv.clock.advance, 50)
        srv.reset()
        assert srv.streams() == [] and srv.faults.rules == [] and srv.clock.monotonic() == 0
        await js.add_stream(name="T", subjects=["t"])
        assert (await js.publish("t", b"2")).seq == 1
        srv.reset(disconnect=True)
        await wait(events.closed)
        assert srv.connections_info() == []


# ============================================================================ restart, crash


async def _durable_setup(js: Any) -> None:
    await js.add_stream(name="F", subjects=["f.>"], storage="file")
    await js.add_stream(name="M", subjects=["m.>"], storage="memory")
    for i in range(5):
        await js.publish("f.x", b"f%d" % i)
        await js.publish("m.x", b"m%d" % i)


@pytest.mark.parametrize("how", ["restart", "crash"])
async def test_restart_and_crash_keep_file_state_and_clients_reconnect(tmp_path: Path,
                                                                       how: str) -> None:
    clock = VirtualClock()
    async with Server(port=0, jetstream=True, clock=clock,
                      store_dir=str(tmp_path / "js")) as server:
        port = server.port
        events = Events()
        nc = await connect(server.client_url, events, reconnect_time_wait=0.05,
                           max_reconnect_attempts=-1)
        js = nc.jetstream()
        await _durable_setup(js)
        psub = await js.pull_subscribe("f.>", durable="worker", stream="F")
        for m in await psub.fetch(2, timeout=2):
            await m.ack_sync()
        await clock.advance_async(100)
        server.faults.fail_requests("nobody.*", status=408, count=None)

        await getattr(server, how)()
        await wait(events.reconnected)

        assert server.port == port and server.running
        assert [s.name for s in server.streams()] == ["F"]  # the memory stream is gone
        c = server.consumer("F", "worker")
        assert (c.ack_floor_stream_seq, c.num_pending) == (2, 3)
        assert clock.monotonic() == 100  # the clock carries on, and so do fault rules
        assert status(await nc.request("nobody.home", b"", timeout=2))[0] == "408"
        with pytest.raises(nats.js.errors.NotFoundError):
            await js.stream_info("M")
        # The client keeps working on the same port: publish, pull, ack.
        assert (await js.publish("f.x", b"after")).seq == 6
        psub = await js.pull_subscribe("f.>", durable="worker", stream="F")
        got = await psub.fetch(4, timeout=2)
        assert [m.data for m in got] == [b"f2", b"f3", b"f4", b"after"]
        await nc.close()


async def test_crash_loses_nothing_that_was_acked(tmp_path: Path) -> None:
    async with Server(port=0, jetstream=True, clock=VirtualClock(),
                      store_dir=str(tmp_path / "js")) as server:
        events = Events()
        nc = await connect(server.client_url, events, reconnect_time_wait=0.05,
                           max_reconnect_attempts=-1)
        js = nc.jetstream()
        await js.add_stream(name="F", subjects=["f.>"], storage="file")
        acked = []
        for i in range(200):
            ack = await js.publish(f"f.{i % 3}", b"payload-%d" % i)
            acked.append((ack.seq, b"payload-%d" % i))
        # Unacked publishes may or may not survive; every acked one must.
        for i in range(20):
            await nc.publish("f.late", b"late-%d" % i)
        await server.crash()
        await wait(events.reconnected)
        stored = {m.seq: m.data for m in server.messages("F", limit=10_000)}
        assert all(stored.get(seq) == data for seq, data in acked)
        last = server.stream("F").last_seq
        assert (await js.publish("f.after", b"z")).seq == last + 1
        await nc.close()


def test_restart_and_crash_through_a_server_thread() -> None:
    # No store_dir: file streams live in the server's private directory, kept across restarts.
    with ServerThread(clock="virtual", jetstream=True) as srv:
        port = srv.port
        with SyncNats(srv.client_url, reconnect_time_wait=0.05,
                      max_reconnect_attempts=-1) as client:
            js = client.nc.jetstream()
            client.run(_durable_setup(js))
            srv.restart()
            assert srv.port == port and [s.name for s in srv.streams()] == ["F"]
            assert client.run(js.publish("f.x", b"r")).seq == 6
            srv.crash()
            assert [m.data for m in srv.messages("F")][-1] == b"r"
            assert client.run(js.publish("f.x", b"c")).seq == 7
