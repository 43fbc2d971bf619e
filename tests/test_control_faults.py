"""Fault injection as a user drives it with nats-py: dropped and delayed consumer deliveries,
requests and publishes answered with statuses or API errors, delayed requests, seeded
fractions, disconnects, slow consumers, and the fault log. Rules are checked when added."""
from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.control.faults import FaultError, FaultEvent
from minijs.control.snapshots import PendingAck
from minijs.log import Logger
from minijs.server import Server, ServerThread

from control_kit import NEXT, S, Events, arrived, connect, nothing_arrived, pull, status, wait
from jsapi import pull_consumer


# ============================================================================ deliveries


async def test_dropped_delivery_comes_back_after_ack_wait_then_max_deliver(
        server: Server, nc: Any, clock: VirtualClock) -> None:
    sub = await pull_consumer(nc, ack_wait=30 * S, max_deliver=2)
    advisories = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.c")
    rule = server.faults.drop_deliveries("S", "c")

    await pull(nc, "pull.1")
    await nothing_arrived(nc, sub)  # lost on the way
    c = server.consumer("S", "c")
    assert c.pending == [PendingAck(stream_seq=1, consumer_seq=1, deliveries=1,
                                    due=pytest.approx(clock.time() + 30, abs=1e-6))]
    assert c.waiting == []  # the consumer believes it delivered
    [event] = server.fault_log()
    assert (event.rule, event.action, event.subject) == (rule.id, "drop", "s.m")
    assert event.detail.startswith("delivery $JS.ACK.S.c.1.1.1.")
    assert server.faults.rules == []  # count=1 is spent

    await pull(nc, "pull.2")
    await clock.advance_async(31)
    again = await arrived(nc, sub)
    assert (again.data, again.metadata.num_delivered) == (b"m0", 2)
    assert server.consumer("S", "c").pending[0].deliveries == 2

    await clock.advance_async(31)  # not acked again: due a third delivery, max_deliver is 2
    await nothing_arrived(nc, advisories)  # (nats-server 2.15.1 waits for the next request)
    assert server.consumer("S", "c").redelivery_queue == [1]
    await pull(nc, "pull.3")  # it gives the message up
    advisory = json.loads((await arrived(nc, advisories)).data)
    assert (advisory["stream_seq"], advisory["deliveries"]) == (1, 2)
    c = server.consumer("S", "c")
    assert (c.pending, c.num_ack_pending, c.ack_floor_stream_seq) == ([], 0, 0)
    assert [m.data for m in server.messages("S")] == [b"m0"]  # the message stays


async def test_delayed_delivery_arrives_later_on_the_server_clock(
        server: Server, nc: Any, clock: VirtualClock) -> None:
    sub = await pull_consumer(nc, msgs=2, ack_wait=30 * S)
    server.faults.delay_deliveries("S", "c", 5)
    await pull(nc, "pull.1", batch=2)
    second = await sub.next_msg(timeout=2)  # only the first delivery is held back
    assert second.data == b"m1"
    await clock.advance_async(4.999)
    await nothing_arrived(nc, sub)
    await clock.advance_async(0.001)
    first = await arrived(nc, sub)
    assert (first.data, first.metadata.num_delivered) == (b"m0", 1)
    assert [e.action for e in server.fault_log()] == ["delay"]


# ============================================================================ requests


async def test_pull_requests_answered_408_and_409(server: Server, nc: Any) -> None:
    await pull_consumer(nc)
    js = nc.jetstream()
    psub = await js.pull_subscribe_bind("c", stream="S")

    server.faults.fail_requests(NEXT, status=408)
    answer = await nc.request(NEXT, b'{"batch": 1}', timeout=2)
    assert status(answer) == ("408", "Request Timeout")
    server.faults.fail_requests(NEXT, status=408)
    with pytest.raises(nats.errors.TimeoutError):  # nats-py treats 408 as "nothing yet"
        await psub.fetch(1, timeout=0.2)

    server.faults.fail_requests(NEXT, status=409, description="Exceeded MaxWaiting")
    answer = await nc.request(NEXT, b'{"batch": 1}', timeout=2)
    assert status(answer) == ("409", "Exceeded MaxWaiting")
    server.faults.fail_requests(NEXT, status=409)
    with pytest.raises(nats.errors.TimeoutError):
        await psub.fetch(1, timeout=0.2)

    assert [(e.action, e.subject, e.detail) for e in server.fault_log()] == [
        ("status", NEXT, "408 Request Timeout"), ("status", NEXT, "408 Request Timeout"),
        ("status", NEXT, "409 Exceeded MaxWaiting"), ("status", NEXT, "409 Consumer Deleted")]
    # None of those requests reached the consumer: the message is still there to fetch.
    [msg] = await psub.fetch(1, timeout=2)
    assert (msg.data, msg.metadata.num_delivered) == (b"m0", 1)


async def test_pull_request_answered_503_makes_fetch_raise(server: Server, nc: Any) -> None:
    await pull_consumer(nc)
    psub = await nc.jetstream().pull_subscribe_bind("c", stream="S")
    server.faults.fail_requests(NEXT, status=503)
    with pytest.raises(nats.js.errors.ServiceUnavailableError):
        await psub.fetch(1, timeout=2)


async def test_publish_answered_with_an_api_error(server: Server, nc: Any) -> None:
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"], storage="memory")
    server.faults.fail_requests("s.*", error=10076)
    with pytest.raises(nats.js.errors.APIError) as err:
        await js.publish("s.m", b"lost")
    assert (err.value.code, err.value.err_code) == (503, 10076)
    assert err.value.description == "JetStream not enabled"
    server.faults.fail_requests("s.m", error=10071, description="wrong last sequence: 7")
    with pytest.raises(nats.js.errors.BadRequestError) as err:
        await js.publish("s.m", b"lost")
    assert (err.value.err_code, err.value.description) == (10071, "wrong last sequence: 7")
    assert server.stream("S").messages == 0  # the publishes never reached the stream
    assert (await js.publish("s.m", b"kept")).seq == 1  # both rules are spent


async def test_api_request_answered_503_no_responders(server: Server, nc: Any) -> None:
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"], storage="memory")
    server.faults.fail_requests("$JS.API.STREAM.INFO.S", status=503, count=2)
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request("$JS.API.STREAM.INFO.S", b"", timeout=2)
    with pytest.raises(nats.js.errors.ServiceUnavailableError):  # nats-py's JS translation
        await js.stream_info("S")
    assert (await js.stream_info("S")).config.name == "S"
    server.faults.fail_requests("s.m", status=503)
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await js.publish("s.m", b"x")


async def test_delayed_requests_are_answered_later(server: Server, nc: Any,
                                                   clock: VirtualClock) -> None:
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"], storage="memory")
    replies = await nc.subscribe("r.*")
    server.faults.delay_requests("$JS.API.STREAM.INFO.*", 10, count=None)
    await nc.publish("$JS.API.STREAM.INFO.S", b"", reply="r.1")
    await nc.flush()
    await clock.advance_async(4)
    await nc.publish("$JS.API.STREAM.INFO.S", b"", reply="r.2")
    await nc.flush()
    await clock.advance_async(5.999)
    await nothing_arrived(nc, replies)
    await clock.advance_async(0.001)  # the first is handed on, and not delayed again
    first = await arrived(nc, replies)
    assert first.subject == "r.1" and json.loads(first.data)["config"]["name"] == "S"
    await nothing_arrived(nc, replies)
    await clock.advance_async(4)
    assert (await arrived(nc, replies)).subject == "r.2"
    # A delayed publish into a stream is stored when it is handed on.
    server.faults.clear()
    server.faults.delay_requests("s.m", 2)
    await nc.publish("s.m", b"late", reply="r.3")
    await nothing_arrived(nc, replies)
    assert server.stream("S").messages == 0
    await clock.advance_async(2)
    ack = await arrived(nc, replies)
    assert ack.subject == "r.3" and json.loads(ack.data) == {"stream": "S", "seq": 1}


async def _dropped_by_seed(tmp_path: Path, seed: int) -> list[int]:
    """Stream sequences a ``fraction=0.5`` drop rule with ``seed`` drops from 20 deliveries
    (on a fresh server); the others must arrive."""
    async with Server(port=0, jetstream=True, clock=VirtualClock()) as server:
        nc = await nats.connect(server.client_url)
        sub = await pull_consumer(nc, msgs=20)
        server.faults.drop_deliveries("S", "c", count=None, fraction=0.5, seed=seed)
        await pull(nc, "pull.1", batch=20)
        assert server.consumer("S", "c").delivered_stream_seq == 20
        received = []
        while sub.pending_msgs:
            received.append((await sub.next_msg(timeout=1)).metadata.sequence.stream)
        dropped = [int(e.detail.split(".")[5]) for e in server.fault_log()]
        assert sorted(received + dropped) == list(range(1, 21))
        await nc.close()
        return dropped


async def test_seeded_fraction_drops_the_same_deliveries_every_run(tmp_path: Path) -> None:
    first = await _dropped_by_seed(tmp_path, 42)
    assert 0 < len(first) < 20
    assert await _dropped_by_seed(tmp_path, 42) == first
    assert await _dropped_by_seed(tmp_path, 7) != first


async def test_seeded_fraction_of_requests(server: Server, nc: Any) -> None:
    async def answered() -> list[str]:
        server.faults.clear()
        server.faults.fail_requests("svc", status=408, count=None, fraction=0.3, seed=5)
        out = []
        for i in range(30):
            msg = await nc.request("svc", b"%d" % i, timeout=2)
            out.append(status(msg)[0] or "ok")
        return out

    async def echo(msg: Any) -> None:
        await msg.respond(b"ok")

    await nc.subscribe("svc", cb=echo)
    first = await answered()
    assert "408" in first and "ok" in first
    assert await answered() == first


# ============================================================================ rules are checked


async def test_bad_rules_are_rejected_and_change_nothing(server: Server, nc: Any) -> None:
    await pull_consumer(nc)
    faults = server.faults
    with pytest.raises(FaultError, match="no stream 'NOPE'"):
        faults.drop_deliveries("NOPE", "c")
    with pytest.raises(FaultError, match="stream 'S' has no consumer 'nope'"):
        faults.delay_deliveries("S", "nope", 1)
    with pytest.raises(FaultError, match="status must be one of"):
        faults.fail_requests("s.m", status=404)
    with pytest.raises(FaultError, match="exactly one of"):
        faults.fail_requests("s.m")
    with pytest.raises(FaultError, match="exactly one of"):
        faults.fail_requests("s.m", status=408, error=10076)
    with pytest.raises(FaultError, match="no JetStream API error with err_code 99999"):
        faults.fail_requests("s.m", error=99999)
    with pytest.raises(FaultError, match="give description="):
        faults.fail_requests("s.m", error=10071)
    with pytest.raises(FaultError, match="invalid subject"):
        faults.fail_requests("s..m", status=408)
    with pytest.raises(FaultError, match="count must be a positive integer"):
        faults.fail_requests("s.m", status=408, count=0)
    with pytest.raises(FaultError, match="fraction must be in"):
        faults.drop_deliveries("S", "c", fraction=1.5)
    with pytest.raises(FaultError, match="delay must be a positive"):
        faults.delay_requests("s.m", 0)
    with pytest.raises(FaultError, match="unknown fault rule field 'when'"):
        faults.add(target="requests", action="status", subject="s.m", status=408, when=3)
    with pytest.raises(FaultError, match="target must be"):
        faults.add(target="everything", action="drop")
    with pytest.raises(FaultError, match="deliveries can be drop or delay"):
        faults.add(target="deliveries", action="status", stream="S", consumer="c")
    with pytest.raises(FaultError, match="no connected client 'ghost'"):
        faults.disconnect("ghost")
    assert faults.rules == [] and server.fault_log() == [] and server.fault_hook is None


# ============================================================================ connections


async def test_disconnect_one_client_by_name_then_everyone(server: Server, nc: Any) -> None:
    victim_events, other_events = Events(), Events()
    victim = await connect(server.client_url, victim_events, name="victim",
                           allow_reconnect=False)
    assert victim.is_connected
    other = await connect(server.client_url, other_events, name="bystander",
                          allow_reconnect=False)
    assert server.faults.disconnect("victim") == 1
    await wait(victim_events.closed)
    assert victim.is_closed and not other_events.disconnected.is_set()
    await other.request("$JS.API.INFO", b"", timeout=2)  # the others carry on
    [event] = server.fault_log()
    assert event.action == "disconnect" and "'victim'" in event.detail

    assert server.faults.disconnect() == 2  # everyone: the bystander and the fixture's client
    await wait(other_events.closed)
    assert server.connections_info() == []


async def test_disconnected_client_with_reconnect_comes_back(server: Server) -> None:
    events = Events()
    client = await connect(server.client_url, events, name="resilient",
                           reconnect_time_wait=0.05)
    cid = next(c.cid for c in server.connections_info() if c.name == "resilient")
    assert server.faults.disconnect(cid) == 1  # by client id
    await wait(events.reconnected)
    assert [c.name for c in server.connections_info()] == ["resilient"]
    await client.request("$JS.API.INFO", b"", timeout=2)
    await client.close()


async def test_slow_consumer_cut(server: Server, nc: Any) -> None:
    events = Events()
    slow = await connect(server.client_url, events, name="slow", allow_reconnect=False)
    await slow.subscribe("firehose")
    assert server.faults.slow_consumer("slow") == 1
    await wait(events.closed)
    assert server.stats.slow_consumers == 1
    assert [e.action for e in server.fault_log()] == ["slow_consumer"]
    assert [c.name for c in server.connections_info()] == [""]  # the fixture's client stays
    await nc.publish("firehose", b"x")
    await nc.flush()


# ============================================================================ the log


async def test_every_fault_is_logged_at_info_and_recorded(tmp_path: Path) -> None:
    out = io.StringIO()
    clock = VirtualClock()
    async with Server(port=0, clock=clock, logger=Logger(out)) as server:
        nc = await nats.connect(server.client_url)
        rule = server.faults.fail_requests("svc.*", status=408, count=None)
        await clock.advance_async(12)
        assert status(await nc.request("svc.a", b"", timeout=2))[0] == "408"
        assert status(await nc.request("svc.b", b"", timeout=2))[0] == "408"
        assert server.fault_log() == [
            FaultEvent(rule=rule.id, action="status", subject="svc.a",
                       detail="408 Request Timeout", at=clock.time()),
            FaultEvent(rule=rule.id, action="status", subject="svc.b",
                       detail="408 Request Timeout", at=clock.time())]
        assert rule.fired == 2
        assert server.faults.remove(rule) and not server.faults.remove(rule)
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("svc.a", b"", timeout=2)
        await nc.close()
    lines = out.getvalue().splitlines()
    assert any(line.endswith("[INF] minijs fault #1 added: answer 408 Request Timeout "
                             "messages on svc.* (every one)") for line in lines)
    assert [line.split("[INF] ", 1)[1] for line in lines if "minijs fault #1:" in line] == [
        "minijs fault #1: status svc.a 408 Request Timeout",
        "minijs fault #1: status svc.b 408 Request Timeout"]


async def test_faults_through_a_server_thread() -> None:
    with ServerThread(clock="virtual", jetstream=True) as srv:
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        rule = srv.faults.drop_deliveries("S", "c")
        assert [r.id for r in srv.faults.rules] == [rule.id]
        await pull(nc, "pull.1")
        await nothing_arrived(nc, sub)
        await pull(nc, "pull.2")
        await asyncio.to_thread(srv.clock.advance, 31)
        assert (await arrived(nc, sub)).metadata.num_delivered == 2
        assert [e.action for e in srv.fault_log()] == ["drop"]
        with pytest.raises(FaultError, match="no stream 'NOPE'"):
            srv.faults.drop_deliveries("NOPE", "c")
        other = srv.faults.fail_requests("svc", status=408)
        before = srv.faults.rules  # a copy taken on the server's loop
        srv.faults.clear()
        assert [r.id for r in before] == [other.id]
        assert srv.faults.rules == [] and len(srv.fault_log()) == 1
        await nc.close()
