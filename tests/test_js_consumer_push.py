"""Push consumers inside minijs under the virtual clock: idle heartbeats, the flow-control stall,
rate limiting, ack-wait redelivery, inactive-threshold cleanup (push and pull) and pause all
fire with no real waiting. Wire behaviour against nats-server is in
conformance/test_js_consumer_push*.py and test_js_consumer_ordered.py.
"""
from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone
from typing import Any


from minijs.clock import VirtualClock
from minijs.server import Server

from jsapi import api

S = 1_000_000_000


async def settle(nc: Any) -> None:
    await nc.flush()
    await asyncio.sleep(0.01)


async def stream(nc: Any, msgs: int = 0, body: bytes = b"m%d", **cfg: Any) -> None:
    out = await api(nc, "STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "storage": "memory",
                                            **cfg})
    assert "error" not in out, out
    for i in range(msgs):
        await nc.request("s.m", body % i if b"%d" in body else body, timeout=5)


async def consumer(nc: Any, name: str = "c", **config: Any) -> dict:
    if name:
        config.setdefault("durable_name", name)
        out = await api(nc, f"CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": config})
    else:
        out = await api(nc, "CONSUMER.CREATE.S", {"stream_name": "S", "config": config})
    assert "error" not in out, out
    return out


async def info(nc: Any, name: str = "c") -> dict:
    return await api(nc, f"CONSUMER.INFO.S.{name}")


def drain(sub: Any) -> list[Any]:
    out = []
    while not sub._pending_queue.empty():
        out.append(sub._pending_queue.get_nowait())
    return out


def is_hb(m: Any) -> bool:
    return bool(m.headers) and m.headers.get("Status") == "100" and not m.reply


async def test_push_bound_follows_interest(nc: Any, clock: VirtualClock) -> None:
    await stream(nc, msgs=2)
    await consumer(nc, deliver_subject="dl.c", ack_policy="explicit")
    assert "push_bound" not in await info(nc)
    wild = await nc.subscribe("dl.*")
    await settle(nc)
    assert "push_bound" not in await info(nc) and not drain(wild)
    sub = await nc.subscribe("dl.c")
    await settle(nc)
    assert (await info(nc))["push_bound"] is True
    assert [m.data for m in drain(sub)] == [b"m0", b"m1"]
    await sub.unsubscribe()
    await settle(nc)
    assert "push_bound" not in await info(nc)


async def test_idle_heartbeats_on_virtual_clock(nc: Any, clock: VirtualClock) -> None:
    await stream(nc, msgs=1)
    await consumer(nc, deliver_subject="dl.c", idle_heartbeat=2 * S)
    sub = await nc.subscribe("dl.c")
    await settle(nc)
    assert [m.data for m in drain(sub)] == [b"m0"]
    clock.advance(1.9)
    await settle(nc)
    assert drain(sub) == []
    clock.advance(0.2)
    await settle(nc)
    [hb] = drain(sub)
    assert is_hb(hb) and hb.headers == {"Status": "100", "Description": "Idle Heartbeat",
                                        "Nats-Last-Consumer": "1", "Nats-Last-Stream": "1"}
    await nc.request("s.m", b"x", timeout=2)  # a delivery restarts the idle interval
    await settle(nc)
    assert [m.data for m in drain(sub)] == [b"x"]
    clock.advance(1.5)
    await settle(nc)
    assert drain(sub) == []
    clock.advance(0.6)
    await settle(nc)
    [hb] = drain(sub)
    assert hb.headers["Nats-Last-Consumer"] == "2"


async def test_no_heartbeats_without_interest(nc: Any, server: Server,
                                              clock: VirtualClock) -> None:
    await stream(nc)
    await consumer(nc, deliver_subject="dl.c", idle_heartbeat=S)
    wild = await nc.subscribe("dl.>")
    await settle(nc)
    clock.advance(3.5)
    await settle(nc)
    assert drain(wild) == []


async def test_flow_control_stall_and_release(nc: Any, clock: VirtualClock) -> None:
    """A 2 MiB window: FC request after 1 MiB outstanding, delivery stops past 2 MiB, the
    heartbeat reports the stall, the reply releases the rest."""
    await stream(nc, msgs=25, body=b"x" * 102400)
    await consumer(nc, deliver_subject="dl.c", flow_control=True, idle_heartbeat=S)
    sub = await nc.subscribe("dl.c", pending_bytes_limit=64 * 1024 * 1024)
    # 2 MiB through the client takes a while on a loaded machine: wait for the window to fill
    # (real time is only the transfer; the server's timers stay on the virtual clock).
    got: list[Any] = []
    for _ in range(500):
        await settle(nc)
        got += drain(sub)
        if len([m for m in got if m.data]) >= 21:
            break
    await settle(nc)
    got += drain(sub)
    fc = [m for m in got if m.headers and m.headers.get("Description") == "FlowControl Request"]
    data = [m for m in got if m.data]
    assert len(data) == 21 and len(fc) == 1 and got[11] is fc[0]
    assert fc[0].reply.startswith("$JS.FC.S.c.") and len(fc[0].reply) == len("$JS.FC.S.c.") + 4
    clock.advance(1.1)
    await settle(nc)
    [hb] = drain(sub)
    assert hb.headers["Nats-Consumer-Stalled"] == fc[0].reply
    assert (hb.headers["Nats-Last-Consumer"], hb.headers["Nats-Last-Stream"]) == ("21", "21")
    await nc.publish("$JS.FC.S.c.zzzz", b"")  # stale id: ignored
    await settle(nc)
    assert drain(sub) == []
    await nc.publish(fc[0].reply, b"")
    rest: list[Any] = []
    for _ in range(500):
        await settle(nc)
        rest += [m for m in drain(sub) if m.data]
        if len(rest) >= 4:
            break
    assert len(rest) == 4


async def test_rate_limit_paces_on_clock(nc: Any, clock: VirtualClock) -> None:
    """Bucket of rate_limit_bps/8 bytes a second, burst = the stream's max_msg_size."""
    await stream(nc, msgs=4, body=b"y" * 400, max_msg_size=1000)
    await consumer(nc, deliver_subject="dl.c", rate_limit_bps=8000)  # 1000 bytes/s
    sub = await nc.subscribe("dl.c")
    await settle(nc)
    assert len(drain(sub)) == 2  # ~450 bytes each with subject and ack reply
    clock.advance(0.2)
    await settle(nc)
    assert drain(sub) == []
    clock.advance(0.4)
    await settle(nc)
    assert len(drain(sub)) == 1
    clock.advance(1)
    await settle(nc)
    assert len(drain(sub)) == 1


async def test_push_ack_wait_redelivery_on_clock(nc: Any, clock: VirtualClock) -> None:
    await stream(nc, msgs=1)
    await consumer(nc, deliver_subject="dl.c", ack_policy="explicit", ack_wait=10 * S)
    sub = await nc.subscribe("dl.c")
    await settle(nc)
    [m] = drain(sub)
    assert m.metadata.num_delivered == 1
    clock.advance(10.1)
    await settle(nc)
    [r] = drain(sub)
    assert (r.data, r.metadata.num_delivered, r.metadata.sequence.consumer) == (b"m0", 2, 2)


async def test_max_ack_pending_gates_push(nc: Any, clock: VirtualClock) -> None:
    await stream(nc, msgs=4)
    await consumer(nc, deliver_subject="dl.c", ack_policy="explicit", max_ack_pending=1)
    sub = await nc.subscribe("dl.c")
    await settle(nc)
    [m] = drain(sub)
    await m.ack_sync()
    await settle(nc)
    assert [x.data for x in drain(sub)] == [b"m1"]


async def test_ephemeral_push_removed_after_threshold(nc: Any, server: Server,
                                                      clock: VirtualClock) -> None:
    await stream(nc)
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.DELETED.>")
    out = await consumer(nc, name="", deliver_subject="dl.e")
    name = out["name"]
    assert out["config"]["inactive_threshold"] == 5 * S
    sub = await nc.subscribe("dl.e")
    await settle(nc)
    clock.advance(60)  # bound: stays
    await settle(nc)
    assert (await info(nc, name))["push_bound"] is True
    await sub.unsubscribe()
    await settle(nc)
    clock.advance(4.9)
    await settle(nc)
    assert "error" not in await info(nc, name)
    clock.advance(0.2)
    await settle(nc)
    assert (await info(nc, name))["error"]["err_code"] == 10014
    [a] = drain(adv)
    assert json.loads(a.data)["consumer"] == name
    assert server.jetstream.streams["S"].consumers == {}


async def test_interest_returning_cancels_removal(nc: Any, clock: VirtualClock) -> None:
    await stream(nc)
    out = await consumer(nc, name="", deliver_subject="dl.r")
    clock.advance(4)
    sub = await nc.subscribe("dl.r")
    await settle(nc)
    clock.advance(10)
    await settle(nc)
    assert "error" not in await info(nc, out["name"])
    await sub.unsubscribe()


async def test_pull_ephemeral_removed_without_requests(nc: Any, clock: VirtualClock) -> None:
    await stream(nc)
    out = await consumer(nc, name="", ack_policy="explicit", inactive_threshold=2 * S)
    name = out["name"]
    inbox = await nc.subscribe("pull.>")
    clock.advance(1.5)
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}",
                     b'{"batch": 1, "expires": 10000000000}', reply="pull.1")
    await settle(nc)
    clock.advance(3)  # a request is waiting: kept
    await settle(nc)
    assert "error" not in await info(nc, name)
    clock.advance(5)
    await settle(nc)
    assert "error" not in await info(nc, name)
    # The request expires at 11.5 s (408); the last request is long past, so the next check
    # (at most one threshold later) deletes the consumer.
    clock.advance(2.1)
    await settle(nc)
    assert [m.headers["Status"] for m in drain(inbox)] == ["408"]
    assert (await info(nc, name))["error"]["err_code"] == 10014


async def test_pull_requests_and_acks_keep_ephemeral(nc: Any, clock: VirtualClock) -> None:
    await stream(nc, msgs=3)
    out = await consumer(nc, name="", ack_policy="explicit", inactive_threshold=2 * S,
                         ack_wait=30 * S)
    name = out["name"]
    await nc.subscribe("pull.>")
    for i in range(3):
        clock.advance(1.5)
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}", b"", reply=f"pull.{i}")
        await settle(nc)
    assert (await info(nc, name))["num_ack_pending"] == 3
    clock.advance(10)  # acks still expected (ack wait 30 s): kept
    await settle(nc)
    assert "error" not in await info(nc, name)
    clock.advance(23)  # last ack deadline (34.5 s) + threshold passed
    await settle(nc)
    assert (await info(nc, name))["error"]["err_code"] == 10014


async def test_pull_ack_alone_keeps_ephemeral(nc: Any, clock: VirtualClock) -> None:
    # The ack (1.9 s) is the last activity: the check at 2 s waits until 3.9 s. Its deadline
    # (ack wait 1 s) does not keep the consumer: without the ack it would go at 2.1 s.
    await stream(nc, msgs=1)
    out = await consumer(nc, name="", ack_policy="explicit", inactive_threshold=2 * S,
                         ack_wait=1 * S)
    name = out["name"]
    inbox = await nc.subscribe("pull.>")
    clock.advance(0.1)
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.{name}", b"", reply="pull.0")
    await settle(nc)
    [msg] = drain(inbox)
    clock.advance(1.8)
    await nc.publish(msg.reply, b"+ACK")
    await settle(nc)
    assert (await info(nc, name))["num_ack_pending"] == 0
    clock.advance(1.1)  # 3.0 s: the ack at 1.9 s is recent activity
    await settle(nc)
    assert "error" not in await info(nc, name)
    clock.advance(1.0)  # 4.0 s: two seconds without activity
    await settle(nc)
    assert (await info(nc, name))["error"]["err_code"] == 10014


async def test_durable_without_threshold_is_kept(nc: Any, clock: VirtualClock) -> None:
    await stream(nc)
    await consumer(nc, deliver_subject="dl.d")
    await consumer(nc, name="p", ack_policy="explicit")
    clock.advance(100)
    await settle(nc)
    assert "error" not in await info(nc) and "error" not in await info(nc, "p")


async def test_pause_until_resumes_on_clock(nc: Any, clock: VirtualClock) -> None:
    await stream(nc)
    await consumer(nc, deliver_subject="dl.p")
    sub = await nc.subscribe("dl.p")
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.PAUSE.>")
    until = datetime.fromtimestamp(clock.time() + 30, timezone.utc)
    text = until.isoformat().replace("+00:00", "Z")
    out = await api(nc, "CONSUMER.PAUSE.S.c", {"pause_until": text})
    assert out["paused"] is True and 29 * S < out["pause_remaining"] <= 30 * S + 1000
    await nc.request("s.m", b"held", timeout=2)
    await settle(nc)
    assert drain(sub) == []
    i = await info(nc)
    assert i["paused"] is True and i["num_pending"] == 1
    clock.advance(30.1)
    await settle(nc)
    assert [m.data for m in drain(sub)] == [b"held"]
    ads = [json.loads(m.data) for m in drain(adv)]
    assert [a["paused"] for a in ads] == [True, False]
    assert "paused" not in await info(nc)


async def test_stream_delete_advises_consumers(nc: Any, clock: VirtualClock) -> None:
    await stream(nc)
    await consumer(nc, name="a", deliver_subject="dl.a")
    await consumer(nc, name="b", ack_policy="explicit")
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.>")
    await api(nc, "STREAM.DELETE.S")
    await settle(nc)
    subjects = [m.subject for m in drain(adv) if "API" not in m.subject]
    assert subjects == ["$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.a",
                        "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.b",
                        "$JS.EVENT.ADVISORY.STREAM.DELETED.S"]
