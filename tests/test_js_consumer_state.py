"""Durable consumer state: consumers of file streams are kept in the stream store's metadata
and come back after a restart on the same store directory. Under the virtual
clock, so ack-wait redelivery after the restart fires with no real waiting. The wire-level
comparison with nats-server is conformance/test_js_consumer_state.py.
"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.consumers.consumer import STATE_PREFIX
from minijs.server import Server

from jsapi import api

S = 1_000_000_000


async def create_consumer(nc: Any, stream: str, cname: str, **config: Any) -> dict:
    out = await api(nc, f"CONSUMER.CREATE.{stream}.{cname}",
                    {"stream_name": stream, "config": config})
    assert "error" not in out, out
    return out


def strip(info: dict) -> dict:
    """Consumer info without what a restart legitimately changes (times of last activity)."""
    out = dict(info)
    out.pop("ts", None)
    for k in ("delivered", "ack_floor"):
        out[k] = {kk: vv for kk, vv in out[k].items() if kk != "last_active"}
    return out


class Restartable:
    """One server at a time on the same store directory and virtual clock."""

    def __init__(self, store_dir: str, clock: VirtualClock) -> None:
        self.store_dir = store_dir
        self.clock = clock
        self.srv: Server | None = None
        self.nc: Any = None

    async def start(self) -> Any:
        self.srv = Server(port=0, jetstream=True, clock=self.clock, store_dir=self.store_dir)
        await self.srv.start()
        self.nc = await nats.connect(self.srv.client_url)
        return self.nc

    async def stop(self) -> None:
        if self.nc is not None:
            await self.nc.close()
            self.nc = None
        if self.srv is not None:
            await self.srv.stop()
            self.srv = None

    async def restart(self) -> Any:
        await self.stop()
        return await self.start()


@pytest.fixture
async def rs(tmp_path: Path, clock: VirtualClock) -> Any:
    r = Restartable(str(tmp_path / "sd"), clock)
    await r.start()
    yield r
    await r.stop()


async def setup_stream(nc: Any, name: str = "S", storage: str = "file", msgs: int = 5) -> None:
    out = await api(nc, f"STREAM.CREATE.{name}",
                    {"name": name, "subjects": [f"{name.lower()}.>"], "storage": storage})
    assert "error" not in out, out
    for i in range(msgs):
        await nc.request(f"{name.lower()}.{i % 2}", b"m%d" % i, timeout=5)


async def fetch(nc: Any, stream: str, consumer: str, body: bytes, n: int) -> list[Any]:
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", body, reply=inbox)
    out = [await sub.next_msg(timeout=2) for _ in range(n)]
    await sub.unsubscribe()
    return out


def meta(msg: Any) -> tuple[int, int, int]:
    """(delivery count, stream seq, consumer seq) from the ack subject."""
    t = msg.reply.split(".")
    return int(t[4]), int(t[5]), int(t[6])


async def test_durable_pull_state_survives_restart(rs: Restartable, clock: VirtualClock) -> None:
    nc = rs.nc
    await setup_stream(nc)
    await create_consumer(nc, "S", "d", durable_name="d", ack_policy="explicit", ack_wait=30 * S)
    msgs = await fetch(nc, "S", "d", b'{"batch": 3}', 3)
    await nc.request(msgs[1].reply, b"+ACK", timeout=2)
    await nc.request(msgs[0].reply, b"-NAK", timeout=2)  # queued: redelivered next
    again = await fetch(nc, "S", "d", b"1", 1)
    assert meta(again[0]) == (2, 1, 4)
    before = await api(nc, "CONSUMER.INFO.S.d")
    assert (before["num_ack_pending"], before["num_redelivered"]) == (2, 1)

    nc = await rs.restart()
    after = await api(nc, "CONSUMER.INFO.S.d")
    assert strip(after) == strip(before)
    assert "last_active" not in after["delivered"] and "last_active" not in after["ack_floor"]
    # New messages first; the unacked ones come back when their ack wait runs out.
    got = await fetch(nc, "S", "d", b'{"batch": 2}', 2)
    assert [meta(m) for m in got] == [(1, 4, 5), (1, 5, 6)]
    clock.advance(31)
    got = await fetch(nc, "S", "d", b'{"batch": 2}', 2)
    assert [meta(m) for m in got] == [(3, 1, 7), (2, 3, 8)]
    i = await api(nc, "CONSUMER.INFO.S.d")
    assert (i["num_ack_pending"], i["num_redelivered"], i["num_pending"]) == (4, 2, 0)
    for m in got:
        await nc.request(m.reply, b"", timeout=2)
    i = await api(nc, "CONSUMER.INFO.S.d")
    assert i["ack_floor"]["stream_seq"] == 3 and i["num_ack_pending"] == 2


async def test_first_check_after_restart_redelivers_overdue_acks(rs: Restartable,
                                                                 clock: VirtualClock) -> None:
    nc = rs.nc
    await setup_stream(nc, msgs=2)
    await create_consumer(nc, "S", "d", durable_name="d", ack_policy="explicit", ack_wait=5 * S)
    await fetch(nc, "S", "d", b'{"batch": 2}', 2)
    await rs.stop()
    clock.advance(10)  # both ack waits ran out while the server was down
    nc = await rs.start()
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.S.d", b'{"batch": 2}', reply=inbox)
    await nc.flush()
    assert (await api(nc, "CONSUMER.INFO.S.d"))["num_waiting"] == 1
    clock.advance(0.001)  # nats-server checks pending acks as the consumer starts
    got = [meta(await sub.next_msg(timeout=2)) for _ in range(2)]
    assert got == [(2, 1, 3), (2, 2, 4)]


async def test_ack_all_and_ack_none_positions_survive(rs: Restartable) -> None:
    nc = rs.nc
    await setup_stream(nc)
    await create_consumer(nc, "S", "all", durable_name="all", ack_policy="all")
    await create_consumer(nc, "S", "none", durable_name="none", ack_policy="none")
    await create_consumer(nc, "S", "new", durable_name="new", deliver_policy="new")
    got = await fetch(nc, "S", "all", b'{"batch": 3}', 3)
    await nc.request(got[1].reply, b"+ACK", timeout=2)
    await fetch(nc, "S", "none", b'{"batch": 3}', 3)
    await nc.request("s.x", b"later", timeout=2)
    before = {n: await api(nc, f"CONSUMER.INFO.S.{n}") for n in ("all", "none", "new")}
    nc = await rs.restart()
    for n, info in before.items():
        assert strip(await api(nc, f"CONSUMER.INFO.S.{n}")) == strip(info)
    assert before["new"]["num_pending"] == 1
    got = await fetch(nc, "S", "none", b"1", 1)
    assert meta(got[0]) == (1, 4, 4)


async def test_ephemerals_come_back_then_expire_mem_storage_does_not(
        rs: Restartable, clock: VirtualClock) -> None:
    nc = rs.nc
    await setup_stream(nc)
    await setup_stream(nc, "M", storage="memory")
    auto = await api(nc, "CONSUMER.CREATE.S", {"stream_name": "S", "config": {
        "ack_policy": "explicit", "inactive_threshold": 10 * S}})
    assert "name" not in auto["config"]
    await create_consumer(nc, "S", "pe", name="pe", deliver_subject="dlv",
                          inactive_threshold=2 * S)
    await create_consumer(nc, "S", "mem", durable_name="mem", mem_storage=True)
    await create_consumer(nc, "M", "m", durable_name="m")
    nc = await rs.restart()
    names = (await api(nc, "CONSUMER.NAMES.S"))["consumers"]
    assert names == sorted([auto["name"], "pe"])
    assert (await api(nc, "CONSUMER.NAMES.M"))["error"]["err_code"] == 10059
    info = await api(nc, f"CONSUMER.INFO.S.{auto['name']}")
    assert info["config"]["name"] == auto["name"]  # as nats-server shows it after a restart
    assert info["created"] == auto["created"]
    clock.advance(2.1)
    assert (await api(nc, "CONSUMER.NAMES.S"))["consumers"] == [auto["name"]]
    clock.advance(8)
    assert (await api(nc, "CONSUMER.NAMES.S"))["consumers"] == []


async def test_update_pause_and_delete_are_persisted(rs: Restartable) -> None:
    nc = rs.nc
    await setup_stream(nc)
    await create_consumer(nc, "S", "u", durable_name="u", ack_policy="explicit")
    await create_consumer(nc, "S", "u", durable_name="u", ack_policy="explicit",
                          description="changed", max_ack_pending=7)
    await create_consumer(nc, "S", "gone", durable_name="gone")
    await api(nc, "CONSUMER.PAUSE.S.u", {"pause_until": "2099-01-01T00:00:00Z"})
    assert (await api(nc, "CONSUMER.DELETE.S.gone"))["success"] is True
    before = await api(nc, "CONSUMER.INFO.S.u")
    nc = await rs.restart()
    assert (await api(nc, "CONSUMER.NAMES.S"))["consumers"] == ["u"]
    after = await api(nc, "CONSUMER.INFO.S.u")
    assert after["config"] == before["config"]
    assert after["config"]["description"] == "changed" and after["paused"] is True


async def test_state_is_committed_with_the_grouped_flush(rs: Restartable) -> None:
    nc = rs.nc
    await setup_stream(nc)
    await create_consumer(nc, "S", "d", durable_name="d", ack_policy="explicit")
    got = await fetch(nc, "S", "d", b'{"batch": 2}', 2)
    await nc.request(got[0].reply, b"+ACK", timeout=2)
    assert rs.srv is not None
    stream = rs.srv.jetstream.streams["S"]
    assert not stream.store.pending_writes  # already committed, no shutdown needed
    doc = json.loads(stream.store.get_meta(STATE_PREFIX + "d"))
    assert doc["state"]["dseq"] == 3 and doc["state"]["adflr"] == 1
    pending = doc["state"]["pending"]
    assert (pending["sseq"], pending["dseq"]) == ([2], [2])
    await api(nc, "STREAM.DELETE.S")
    await setup_stream(nc)  # a new stream of the same name starts without consumers
    assert (await api(nc, "CONSUMER.NAMES.S"))["consumers"] == []


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_ack_reply_only_after_the_state_commit(rs: Restartable, storage: str) -> None:
    """An ack sent as a request (ack_sync) on a durable consumer is answered only after the
    commit that carries its state: with the stream's commits held back no reply comes, and it
    comes with the next commit. A memory stream's consumer answers at once."""
    nc = rs.nc
    await setup_stream(nc, storage=storage, msgs=2)
    await create_consumer(nc, "S", "c", durable_name="c", ack_policy="explicit")
    m1, _ = await fetch(nc, "S", "c", b"2", 2)
    stream = rs.srv.jetstream.streams["S"]
    held: list[Any] = []
    flush = stream.flush
    stream.flush = lambda: held.append(1)  # type: ignore[method-assign]
    reply = asyncio.ensure_future(nc.request(m1.reply, b"", timeout=2))
    if storage == "memory":
        assert (await reply).data == b""
        return
    await asyncio.sleep(0.05)
    assert held and not reply.done()  # the state is buffered, the commit held: no reply yet
    stream.flush = flush  # type: ignore[method-assign]
    stream.flush()
    assert (await reply).data == b""
    doc = json.loads(stream.store.get_meta(STATE_PREFIX + "c"))
    assert doc["state"]["pending"]["sseq"] == [2]  # message 1 acked, message 2 still pending


async def test_state_is_written_at_most_every_interval_under_load(rs: Restartable,
                                                                  clock: VirtualClock) -> None:
    """Under load a consumer's state is written once per WRITE_INTERVAL of the server's clock
    (nats-server's consumer store flushes about ten times a second): a change right after a
    write waits for the interval, a graceful restart still writes it, an ack sent as a request
    is written (and answered) at the end of its turn, and a kill loses only the changes of the
    last interval, which come back as redeliveries."""
    from minijs.jetstream.consumers.state import WRITE_INTERVAL

    nc = rs.nc
    await setup_stream(nc, msgs=6)
    await create_consumer(nc, "S", "d", durable_name="d", ack_policy="explicit", ack_wait=30 * S)
    assert rs.srv is not None
    store = rs.srv.jetstream.streams["S"].store

    def saved() -> dict:
        return json.loads(store.get_meta(STATE_PREFIX + "d"))["state"]

    clock.advance(WRITE_INTERVAL)  # (creating the consumer wrote its state)
    got = await fetch(nc, "S", "d", b'{"batch": 4}', 4)  # the first change since: written
    assert saved()["pending"]["sseq"] == [1, 2, 3, 4]
    await nc.publish(got[0].reply, b"+ACK")
    info = await api(nc, "CONSUMER.INFO.S.d")  # (the ack was applied before this answer)
    assert info["ack_floor"]["stream_seq"] == 1
    assert saved()["pending"]["sseq"] == [1, 2, 3, 4]  # waits for the interval
    clock.advance(WRITE_INTERVAL)
    await api(nc, "CONSUMER.INFO.S.d")
    assert saved()["pending"]["sseq"] == [2, 3, 4] and saved()["adflr"] == 1

    await nc.publish(got[1].reply, b"+ACK")  # within the interval again
    await nc.request(got[2].reply, b"", timeout=2)  # ack_sync: answered after its write
    assert saved()["pending"]["sseq"] == [4]

    await nc.publish(got[3].reply, b"+ACK")  # deferred, then a graceful restart writes it
    await api(nc, "CONSUMER.INFO.S.d")
    assert saved()["pending"]["sseq"] == [4]
    nc = await rs.restart()
    after = await api(nc, "CONSUMER.INFO.S.d")
    assert (after["ack_floor"]["stream_seq"], after["num_ack_pending"]) == (4, 0)

    # A kill inside the interval loses its change: the delivery comes back.
    got = await fetch(nc, "S", "d", b'{"batch": 1}', 1)  # written at once (interval passed)
    clock.advance(WRITE_INTERVAL)
    await fetch(nc, "S", "d", b'{"batch": 1}', 1)
    await nc.publish(got[0].reply, b"+ACK")
    clock.advance(WRITE_INTERVAL / 2)
    await api(nc, "CONSUMER.INFO.S.d")
    await nc.close()
    rs.nc = None
    await rs.srv.crash()
    nc = rs.nc = await nats.connect(rs.srv.client_url)
    after = await api(nc, "CONSUMER.INFO.S.d")
    assert (after["delivered"]["stream_seq"], after["ack_floor"]["stream_seq"],
            after["num_ack_pending"]) == (6, 4, 2)


async def test_a_version_1_document_is_still_read(rs: Restartable) -> None:
    """A consumer saved by an earlier minijs (pending acks as [stream seq, consumer seq,
    timestamp] triples) comes back with its state; the next write is a version 2 document."""
    nc = rs.nc
    await setup_stream(nc)
    await create_consumer(nc, "S", "d", durable_name="d", ack_policy="explicit", ack_wait=30 * S)
    rs.clock.advance(1)  # (the fetch's change is written at once)
    await fetch(nc, "S", "d", b'{"batch": 3}', 3)
    assert rs.srv is not None
    store = rs.srv.jetstream.streams["S"].store
    doc = json.loads(store.get_meta(STATE_PREFIX + "d"))
    assert doc["v"] == 2
    cols = doc["state"]["pending"]
    doc["v"] = 1
    doc["state"]["pending"] = [list(t) for t in zip(cols["sseq"], cols["dseq"], cols["ts"])]
    doc["state"]["adflr"] = doc["state"]["asflr"] = 1  # as if message 1 had been acked
    doc["state"]["pending"] = doc["state"]["pending"][1:]
    before = await api(nc, "CONSUMER.INFO.S.d")
    await rs.stop()
    rs.srv = Server(port=0, jetstream=True, clock=rs.clock, store_dir=rs.store_dir)
    await rs.srv.start()  # recovered from the v2 document; then put the v1 one back
    await rs.srv.stop()
    # (the server is stopped: write the v1 document straight into its store)
    from minijs.jetstream.store.lmdbstore import LmdbStore
    path = next(Path(rs.store_dir).rglob("data.mdb")).parent
    with LmdbStore(path) as raw:
        raw.put_meta(STATE_PREFIX + "d", json.dumps(doc).encode())
        raw.flush()
    rs.srv = None
    nc = await rs.start()
    after = await api(nc, "CONSUMER.INFO.S.d")
    assert after["ack_floor"]["stream_seq"] == 1 and after["num_ack_pending"] == 2
    assert strip(after)["delivered"] == strip(before)["delivered"]
    got = await fetch(nc, "S", "d", b'{"batch": 1}', 1)
    assert meta(got[0]) == (1, 4, 4)
    assert json.loads(rs.srv.jetstream.streams["S"].store.get_meta(STATE_PREFIX + "d"))["v"] == 2
