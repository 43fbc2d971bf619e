"""Stream snapshot and restore, minijs to minijs, over the wire as the nats CLI does it."""
from __future__ import annotations

import asyncio
import os
import json
from typing import Any

import nats
import pytest
from nats.js.api import ConsumerConfig

from minijs import Server
from minijs.jetstream.api import snapshot as S
from minijs.protocol import snappy


async def take_snapshot(nc: Any, stream: str, **req: Any) -> tuple[dict, bytes, list[str]]:
    """Request a snapshot and receive it, acknowledging every chunk; returns the API reply,
    the bytes and the ack subjects seen."""
    inbox = nc.new_inbox()
    chunks: list[bytes] = []
    acks: list[str] = []
    done: asyncio.Future = asyncio.get_running_loop().create_future()

    async def on_chunk(m: Any) -> None:
        if not m.data:
            done.set_result((m.headers or {}).get("Status", ""))
            return
        chunks.append(m.data)
        if m.reply:  # a last, short chunk asks for no ack
            acks.append(m.reply)
            await nc.publish(m.reply, b"")
    await nc.subscribe(inbox, cb=on_chunk)
    body = {"deliver_subject": inbox, **req}
    r = await nc.request(f"$JS.API.STREAM.SNAPSHOT.{stream}", json.dumps(body).encode(),
                         timeout=2)
    status = await asyncio.wait_for(done, 5)
    assert status == ("204" if acks else "")
    return json.loads(r.data), b"".join(chunks), acks


async def restore(nc: Any, stream: str, config: dict, state: dict, data: bytes,
                  chunk: int = 1000) -> dict:
    r = await nc.request(f"$JS.API.STREAM.RESTORE.{stream}",
                         json.dumps({"config": config, "state": state}).encode(), timeout=2)
    reply = json.loads(r.data)
    assert reply["type"] == "io.nats.jetstream.api.v1.stream_restore_response", reply
    deliver = reply["deliver_subject"]
    assert deliver.startswith(f"$JS.SNAPSHOT.RESTORE.{stream}.")
    for i in range(0, len(data), chunk):
        ack = await nc.request(deliver, data[i:i + chunk], timeout=2)
        assert ack.data == b""
    final = await nc.request(deliver, b"", timeout=5)
    return json.loads(final.data)


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_snapshot_restore_round_trip(storage: str) -> None:
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="SRC", subjects=["src.>"], storage=storage,
                                allow_msg_ttl=True)
            for i in range(40):
                await js.publish(f"src.{i % 3}", b"x" * (i * 50),
                                 headers={"Nats-Msg-Id": f"id{i}", "K": str(i)})
            await js.delete_msg("SRC", 5)
            await js.publish("src.ttl", b"t", headers={"Nats-TTL": "1h"})
            await js.add_consumer("SRC", ConsumerConfig(durable_name="C", ack_policy="explicit"))
            sub = await js.pull_subscribe_bind("C", "SRC")
            for m in await sub.fetch(3, timeout=2):
                await m.ack()
            await sub.fetch(2, timeout=2)  # delivered, not acked
            before = {sm.seq: sm for sm in server.messages("SRC")}
            cons_before = server.consumer("SRC", "C")

            reply, data, acks = await take_snapshot(nc, "SRC", chunk_size=1024)
            assert reply["type"] == "io.nats.jetstream.api.v1.stream_snapshot_response"
            assert reply["state"]["messages"] == 40 and reply["config"]["name"] == "SRC"
            assert data.startswith(snappy.STREAM_ID)
            assert snappy.unframe(data).startswith(S.MAGIC)
            assert acks and acks[0].startswith("$JS.SNAPSHOT.ACK.SRC.")
            assert acks[0].endswith(".1024.1")

            await js.delete_stream("SRC")
            final = await restore(nc, "SRC", reply["config"], reply["state"], data)
            assert final["type"] == "io.nats.jetstream.api.v1.stream_create_response", final
            assert final["state"]["messages"] == 40
            assert final["state"]["first_seq"] == reply["state"]["first_seq"]
            assert final["state"]["last_seq"] == reply["state"]["last_seq"]
            after = {sm.seq: sm for sm in server.messages("SRC")}
            assert after == before
            cons_after = server.consumer("SRC", "C")
            for field in ("delivered_stream_seq", "delivered_consumer_seq", "ack_floor_stream_seq",
                          "ack_floor_consumer_seq", "num_pending", "num_ack_pending"):
                assert getattr(cons_after, field) == getattr(cons_before, field), field
            assert ([p.stream_seq for p in cons_after.pending]
                    == [p.stream_seq for p in cons_before.pending] == [4, 6])
            assert cons_after.config == cons_before.config
            # dedup survives: the same id is a duplicate
            ack = await js.publish("src.0", b"", headers={"Nats-Msg-Id": "id39"})
            assert ack.duplicate
        finally:
            await nc.close()


async def test_snapshot_without_consumers() -> None:
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"], storage="memory")
            await js.publish("s", b"1")
            await js.add_consumer("S", ConsumerConfig(durable_name="C"))
            reply, data, _ = await take_snapshot(nc, "S", no_consumers=True)
            await js.delete_stream("S")
            final = await restore(nc, "S", reply["config"], reply["state"], data)
            assert final["state"]["consumer_count"] == 0
            assert final["state"]["messages"] == 1
        finally:
            await nc.close()


async def test_restore_refuses_foreign_snapshot() -> None:
    """A nats-server snapshot (s2 stream): the first chunk's reply is the error, the restore
    ends and nothing is created."""
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        try:
            cfg = {"name": "N", "subjects": ["n"], "storage": "memory"}
            r = await nc.request("$JS.API.STREAM.RESTORE.N",
                                 json.dumps({"config": cfg}).encode(), timeout=2)
            deliver = json.loads(r.data)["deliver_subject"]
            ack = await nc.request(deliver, b"\xff\x06\x00\x00sNaPpY" + b"\x00" * 50,
                                   timeout=2)
            assert json.loads(ack.data) == {
                "type": "io.nats.jetstream.api.v1.stream_create_response",
                "error": {"code": 500, "err_code": 10062,
                          "description": "restore failed: " + S.NOT_MINIJS}}
            with pytest.raises(nats.errors.NoRespondersError):
                await nc.request(deliver, b"", timeout=2)
            with pytest.raises(nats.js.errors.NotFoundError):
                await nc.jetstream().stream_info("N")
        finally:
            await nc.close()


async def test_round_trip_of_a_purged_stream() -> None:
    """Sequences survive when nothing is left: a purged stream comes back at the same place."""
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="P", subjects=["p"])
            for _ in range(5):
                await js.publish("p", b"x")
            await js.purge_stream("P")
            reply, data, _ = await take_snapshot(nc, "P")
            await js.delete_stream("P")
            final = await restore(nc, "P", reply["config"], reply["state"], data)
            assert (final["state"]["first_seq"], final["state"]["last_seq"]) == (6, 5)
            assert (await js.publish("p", b"y")).seq == 6
        finally:
            await nc.close()


async def test_snapshot_no_flow_response_on_virtual_clock() -> None:
    async with Server(port=0, jetstream=True, clock="virtual") as server:
        nc = await nats.connect(server.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"], storage="memory")
            for i in range(20):
                await js.publish("s", os.urandom(1000))
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            body = {"deliver_subject": inbox, "chunk_size": 1024, "window_size": 2048}
            await nc.request("$JS.API.STREAM.SNAPSHOT.S", json.dumps(body).encode(), timeout=2)
            first = await sub.next_msg(timeout=2)
            second = await sub.next_msg(timeout=2)
            assert first.reply.endswith(".1024.1") and second.reply.endswith(".1024.2")
            await server.clock.advance_async(5)  # nobody acknowledges: the window stays full
            end = await sub.next_msg(timeout=2)
            assert end.data == b"" and end.headers.get("Status") == "408"
        finally:
            await nc.close()


def test_snappy_frame_round_trip_and_checks():
    data = bytes(range(256)) * 600  # more than one 64 KiB chunk
    framed = snappy.frame(data)
    assert framed.startswith(snappy.STREAM_ID) and snappy.unframe(framed) == data
    assert snappy.crc32c(b"123456789") == 0xE3069283
    broken = bytearray(framed)
    broken[-1] ^= 1
    with pytest.raises(ValueError):
        snappy.unframe(bytes(broken))
    with pytest.raises(ValueError):
        snappy.unframe(snappy.STREAM_ID + b"\x00\x05\x00\x00abcde")


def test_foreign_snapshot_detected_from_its_start():
    ours = S.MAGIC + b"rest"
    assert not S.looks_foreign(snappy.frame(ours)[:10])
    assert not S.looks_foreign(snappy.frame(ours)[:30])
    assert S.looks_foreign(snappy.STREAM_ID + b"\x00\x10\x00\x00")
    assert S.looks_foreign(b"garbage")
