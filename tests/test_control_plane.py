"""The ``$MINIJS`` control plane as a test in any language would use it: plain nats-py requests
with JSON bodies for the clock, reset, state, faults and restart; JSON errors with codes for
bad requests; no responders when the plane is off; only the control user under auth."""
from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server, ServerThread

from control_kit import S, Events, arrived, connect, nothing_arrived, pull, status, wait
from jsapi import pull_consumer


async def ctl(nc: Any, name: str, body: Any = None) -> dict:
    """One ``$MINIJS.<name>`` request; ``body`` is JSON-encoded unless it is bytes already."""
    if body is None:
        payload = b""
    elif isinstance(body, bytes):
        payload = body
    else:
        payload = json.dumps(body).encode()
    msg = await nc.request(f"$MINIJS.{name}", payload, timeout=5)
    return json.loads(msg.data)


def error(reply: dict) -> tuple[int, str]:
    assert set(reply) == {"error"}, reply
    return reply["error"]["code"], reply["error"]["description"]


@pytest.fixture
async def cserver(clock: VirtualClock, tmp_path: Path) -> Any:
    """A JetStream server with the control plane on, on a virtual clock."""
    async with Server(port=0, jetstream=True, control=True, clock=clock,
                      store_dir=str(tmp_path / "js")) as srv:
        yield srv


@pytest.fixture
async def cnc(cserver: Server) -> Any:
    client = await nats.connect(cserver.client_url, name="tester")
    yield client
    await client.close()


# ============================================================================ clock


async def test_clock_now_and_advance(cserver: Server, cnc: Any, clock: VirtualClock) -> None:
    now = await ctl(cnc, "CLOCK.NOW")
    assert now["virtual"] is True and now["elapsed"] == 0
    assert now["unix_nano"] == clock.time_ns() and now["time"].endswith("Z")

    sub = await pull_consumer(cnc, msgs=0)
    await pull(cnc, "pull.1", batch=1, expires=5 * S)
    out = await ctl(cnc, "CLOCK.ADVANCE", {"seconds": 4.999})
    assert (out["elapsed"], out["fired"]) == (4.999, 0)
    await nothing_arrived(cnc, sub)
    out = await ctl(cnc, "CLOCK.ADVANCE", {"seconds": 0.001})
    assert (out["elapsed"], out["fired"]) == (5, 1)
    # The reply comes after the effects: the 408 is already here.
    assert sub.pending_msgs == 1
    assert status(await sub.next_msg(timeout=1)) == ("408", "Request Timeout")
    later = await ctl(cnc, "CLOCK.NOW")
    assert later["unix_nano"] - now["unix_nano"] == 5 * S


@pytest.mark.parametrize("body, text", [
    ({}, 'give the time to move as {"seconds": N}'),
    ({"seconds": -1}, "a clock cannot go back"),
    ({"seconds": "30"}, "field 'seconds' must be int/float"),
    ({"seconds": True}, "field 'seconds' must be int/float"),
    ({"secs": 30}, "unknown field 'secs' (known: seconds)"),
    (b'{"seconds": 30', "invalid JSON"),
    (b"[30]", "the request body must be a JSON object"),
    (b'{"seconds": Infinity}', "seconds must be a finite number"),
    (b'{"seconds": NaN}', "seconds must be a finite number"),
])
async def test_clock_advance_rejects_bad_bodies(cserver: Server, cnc: Any, clock: VirtualClock,
                                                body: Any, text: str) -> None:
    code, description = error(await ctl(cnc, "CLOCK.ADVANCE", body))
    assert code == 400 and text in description
    assert clock.monotonic() == 0  # an error changes nothing


async def test_clock_advance_on_a_wall_clock_server_is_409() -> None:
    async with Server(port=0, control=True) as server:
        nc = await nats.connect(server.client_url)
        code, description = error(await ctl(nc, "CLOCK.ADVANCE", {"seconds": 1}))
        assert code == 409 and "--clock virtual" in description
        now = await ctl(nc, "CLOCK.NOW")
        assert now["virtual"] is False and now["elapsed"] >= 0
        # No JetStream on this server: no streams, and a stream's messages are not found.
        assert await ctl(nc, "STATE.STREAMS") == {"streams": []}
        code, description = error(await ctl(nc, "STATE.MESSAGES.S"))
        assert code == 404 and "JetStream is not enabled" in description
        await nc.close()


# ============================================================================ state


async def test_state_streams_messages_consumer_connections(cserver: Server, cnc: Any,
                                                           clock: VirtualClock) -> None:
    sub = await pull_consumer(cnc, msgs=3, ack_wait=30 * S)
    await cnc.jetstream().publish("s.other", b"x", headers={"K": "v"})
    await pull(cnc, "pull.1", batch=1)
    await sub.next_msg(timeout=2)

    [stream] = (await ctl(cnc, "STATE.STREAMS"))["streams"]
    assert (stream["name"], stream["messages"], stream["last_seq"]) == ("S", 4, 4)
    assert stream["subjects"] == {"s.m": 3, "s.other": 1} and stream["consumers"] == ["c"]

    msgs = (await ctl(cnc, "STATE.MESSAGES.S"))["messages"]
    assert [(m["seq"], m["subject"], base64.b64decode(m["data"])) for m in msgs] == [
        (1, "s.m", b"m0"), (2, "s.m", b"m1"), (3, "s.m", b"m2"), (4, "s.other", b"x")]
    assert b"K: v" in base64.b64decode(msgs[3]["headers"]) and msgs[0]["headers"] is None
    some = (await ctl(cnc, "STATE.MESSAGES.S", {"subject": "s.m", "start_seq": 2,
                                                 "limit": 1}))["messages"]
    assert [m["seq"] for m in some] == [2]

    c = await ctl(cnc, "STATE.CONSUMER.S.c")
    assert (c["stream"], c["name"], c["delivered_stream_seq"], c["num_pending"]) == (
        "S", "c", 1, 3)
    assert c["pending"] == [{"stream_seq": 1, "consumer_seq": 1, "deliveries": 1,
                             "due": pytest.approx(clock.time() + 30, abs=1e-6)}]
    assert c["config"]["ack_wait"] == 30 * S and c["waiting"] == []

    conns = (await ctl(cnc, "STATE.CONNECTIONS"))["connections"]
    [me] = [conn for conn in conns if conn["name"] == "tester"]
    assert "pull.>" in [s["subject"] for s in me["subscriptions"]]


@pytest.mark.parametrize("name, code, text", [
    ("NOPE", 404, "unknown control request $MINIJS.NOPE"),
    ("STATE.CONSUMER.S", 404, "unknown control request"),
    ("STATE.MESSAGES.NOPE", 404, "no stream 'NOPE'"),
    ("STATE.CONSUMER.NOPE.c", 404, "no stream 'NOPE'"),
    ("STATE.CONSUMER.S.nope", 404, "has no consumer 'nope'"),
])
async def test_state_errors(cserver: Server, cnc: Any, name: str, code: int,
                            text: str) -> None:
    await pull_consumer(cnc)
    got = error(await ctl(cnc, name))
    assert got[0] == code and text in got[1]


@pytest.mark.parametrize("name, body, text", [
    ("STATE.STREAMS", {"x": 1}, "unknown field 'x' (known: none)"),
    ("STATE.MESSAGES.S", {"limit": "3"}, "field 'limit' must be int"),
    ("STATE.MESSAGES.S", {"start_seq": 1.5}, "field 'start_seq' must be int"),
    ("STATE.MESSAGES.S", {"subject": "s.>.m"}, "invalid subject filter 's.>.m'"),
    ("RESET", {"disconnect": "yes"}, "field 'disconnect' must be bool"),
    ("FAULT.CLEAR", {"id": "1"}, "field 'id' must be int"),
    ("RESTART", {"crash": 1}, "field 'crash' must be bool"),
    ("FAULT.SLOW_CONSUMER", {}, "give the client to cut"),
])
async def test_bad_bodies_are_400_and_change_nothing(cserver: Server, cnc: Any, name: str,
                                                     body: Any, text: str) -> None:
    await pull_consumer(cnc)
    got = error(await ctl(cnc, name, body))
    assert got[0] == 400 and text in got[1]
    assert [s.name for s in cserver.streams()] == ["S"] and cserver.running


# ============================================================================ faults


async def test_fault_add_list_clear(cserver: Server, cnc: Any) -> None:
    sub = await pull_consumer(cnc, ack_wait=30 * S)
    rule = (await ctl(cnc, "FAULT.ADD", {"target": "deliveries", "action": "drop",
                                         "stream": "S", "consumer": "c"}))["rule"]
    assert (rule["target"], rule["action"], rule["stream"], rule["count"]) == (
        "deliveries", "drop", "S", 1)
    every = (await ctl(cnc, "FAULT.ADD", {"target": "requests", "action": "status",
                                          "subject": "svc", "status": 408,
                                          "count": None}))["rule"]
    assert every["count"] is None and every["description"] == "Request Timeout"

    await pull(cnc, "pull.1")
    await nothing_arrived(cnc, sub)
    answer = await cnc.request("svc", b"", timeout=2)
    assert status(answer) == ("408", "Request Timeout")

    listing = await ctl(cnc, "FAULT.LIST")
    assert [r["id"] for r in listing["rules"]] == [every["id"]]  # the drop rule is spent
    assert [(e["rule"], e["action"], e["subject"]) for e in listing["log"]] == [
        (rule["id"], "drop", "s.m"), (every["id"], "status", "svc")]

    code, text = error(await ctl(cnc, "FAULT.CLEAR", {"id": 999}))
    assert code == 404 and "no fault rule 999" in text
    assert await ctl(cnc, "FAULT.CLEAR", {"id": every["id"]}) == {"cleared": 1}
    await ctl(cnc, "FAULT.ADD", {"target": "requests", "action": "error", "subject": "s.m",
                                 "error": 10076})
    assert await ctl(cnc, "FAULT.CLEAR") == {"cleared": 1}
    assert (await ctl(cnc, "FAULT.LIST"))["rules"] == []


@pytest.mark.parametrize("rule, text", [
    ({"action": "drop"}, "needs target"),
    ({"target": "deliveries", "action": "drop", "stream": "NOPE", "consumer": "c"},
     "no stream 'NOPE'"),
    ({"target": "deliveries", "action": "drop", "stream": "S", "consumer": "nope"},
     "has no consumer 'nope'"),
    ({"target": "requests", "action": "status", "subject": "x", "status": 404},
     "status must be one of"),
    ({"target": "requests", "action": "status", "subject": "x", "status": "408"},
     "field 'status' must be int"),
    ({"target": "requests", "action": "status", "subject": "x", "status": 408, "every": 1},
     "unknown field 'every'"),
    ({"target": "requests", "action": "delay", "subject": "x", "delay": 0},
     "delay must be a positive"),
    ({"target": "requests", "action": "status", "subject": "x", "status": 408,
      "fraction": 2}, "fraction must be in"),
])
async def test_fault_add_rejects_bad_rules(cserver: Server, cnc: Any, rule: dict,
                                           text: str) -> None:
    await pull_consumer(cnc)
    code, description = error(await ctl(cnc, "FAULT.ADD", rule))
    assert code == 400 and text in description
    assert cserver.faults.rules == []


async def test_fault_rules_never_catch_the_control_plane(cserver: Server, cnc: Any) -> None:
    await ctl(cnc, "FAULT.ADD", {"target": "requests", "action": "status", "subject": ">",
                                 "status": 503, "count": None})
    await ctl(cnc, "FAULT.ADD", {"target": "requests", "action": "delay", "subject": ">",
                                 "delay": 60, "count": None})
    with pytest.raises(nats.errors.NoRespondersError):  # everything else is caught
        await cnc.request("$JS.API.INFO", b"", timeout=2)
    assert len((await ctl(cnc, "FAULT.LIST"))["rules"]) == 2
    assert await ctl(cnc, "FAULT.CLEAR") == {"cleared": 2}
    await cnc.request("$JS.API.INFO", b"", timeout=2)


async def test_fault_disconnect_and_slow_consumer(cserver: Server, cnc: Any) -> None:
    events = {name: Events() for name in ("victim", "slow", "other")}
    clients = {name: await connect(cserver.client_url, ev, name=name, allow_reconnect=False)
               for name, ev in events.items()}
    assert await ctl(cnc, "FAULT.DISCONNECT", {"client": "victim"}) == {"disconnected": 1}
    await wait(events["victim"].closed)
    assert await ctl(cnc, "FAULT.SLOW_CONSUMER", {"client": "slow"}) == {"slow_consumers": 1}
    await wait(events["slow"].closed)
    assert cserver.stats.slow_consumers == 1
    for body in ({"client": "ghost"}, {"client": 4242}):
        code, text = error(await ctl(cnc, "FAULT.DISCONNECT", body))
        assert code == 404 and "no connected client" in text
    code, _ = error(await ctl(cnc, "FAULT.SLOW_CONSUMER", {"client": "ghost"}))
    assert code == 404
    assert not events["other"].disconnected.is_set()
    log = (await ctl(cnc, "FAULT.LIST"))["log"]
    assert [e["action"] for e in log] == ["disconnect", "slow_consumer"]

    # Everyone, the requester included: the answer comes first.
    assert await ctl(clients["other"], "FAULT.DISCONNECT") == {"disconnected": 2}
    await wait(events["other"].closed)
    assert cserver.connections_info() == []


# ============================================================================ reset, restart


async def test_reset_over_the_wire(cserver: Server, cnc: Any, clock: VirtualClock) -> None:
    js = cnc.jetstream()
    await js.add_stream(name="MEM", subjects=["mem"], storage="memory")
    await js.add_stream(name="FILE", subjects=["file"], storage="file")
    kv = await js.create_key_value(bucket="cfg")
    await kv.put("k", b"v")
    await ctl(cnc, "FAULT.ADD", {"target": "requests", "action": "status", "subject": "x",
                                 "status": 408})
    await ctl(cnc, "CLOCK.ADVANCE", {"seconds": 600})

    assert await ctl(cnc, "RESET") == {"reset": True}
    assert (await ctl(cnc, "STATE.STREAMS"))["streams"] == []
    assert (await ctl(cnc, "FAULT.LIST")) == {"rules": [], "log": []}
    assert (await ctl(cnc, "CLOCK.NOW"))["elapsed"] == 0
    await js.add_stream(name="MEM", subjects=["mem"])  # the same client carries on
    assert (await js.publish("mem", b"1")).seq == 1

    events = Events()
    other = await connect(cserver.client_url, events, allow_reconnect=False)
    assert await ctl(other, "RESET", {"disconnect": True}) == {"reset": True}
    await wait(events.closed)
    assert cserver.connections_info() == [] and cserver.streams() == []


@pytest.mark.parametrize("crash", [False, True])
async def test_restart_over_the_wire(cserver: Server, crash: bool) -> None:
    events = Events()
    nc = await connect(cserver.client_url, events, reconnect_time_wait=0.05,
                       max_reconnect_attempts=-1)
    js = nc.jetstream()
    await js.add_stream(name="FILE", subjects=["file"], storage="file")
    await js.add_stream(name="MEM", subjects=["mem"], storage="memory")
    await js.publish("file", b"kept")
    port = cserver.port
    reply = await ctl(nc, "RESTART", {"crash": crash})
    assert reply == {"restarting": True, "crash": crash}
    await wait(events.reconnected)
    assert cserver.port == port
    streams = (await ctl(nc, "STATE.STREAMS"))["streams"]
    assert [(s["name"], s["messages"]) for s in streams] == [("FILE", 1)]
    assert (await js.publish("file", b"after")).seq == 2
    await nc.close()


# ============================================================================ who may use it


async def test_control_off_means_no_responders() -> None:
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        for name in ("CLOCK.NOW", "RESET", "STATE.STREAMS"):
            with pytest.raises(nats.errors.NoRespondersError):
                await nc.request(f"$MINIJS.{name}", b"", timeout=2)
        await nc.close()


async def test_with_auth_only_the_control_user_may_use_it() -> None:
    async with Server(port=0, control=True, clock="virtual", user="admin", password="pw",
                      control_user="admin") as server:
        nc = await nats.connect(server.client_url, user="admin", password="pw")
        assert (await ctl(nc, "CLOCK.ADVANCE", {"seconds": 3}))["elapsed"] == 3
        await nc.close()
    async with Server(port=0, control=True, clock="virtual", user="admin",
                      password="pw") as server:
        nc = await nats.connect(server.client_url, user="admin", password="pw")
        code, text = error(await ctl(nc, "CLOCK.ADVANCE", {"seconds": 3}))
        assert code == 403 and "control_user" in text
        assert server.clock.monotonic() == 0
        await nc.close()


async def test_control_plane_on_a_server_thread() -> None:
    with ServerThread(clock="virtual", jetstream=True, control=True) as srv:
        nc = await nats.connect(srv.client_url)
        sub = await pull_consumer(nc, ack_wait=30 * S)
        await pull(nc, "pull.1")
        await sub.next_msg(timeout=2)
        await pull(nc, "pull.2")
        assert (await ctl(nc, "CLOCK.ADVANCE", {"seconds": 31}))["elapsed"] == 31
        again = await arrived(nc, sub)
        assert again.metadata.num_delivered == 2
        assert srv.clock.monotonic() == 31
        await nc.close()
