"""Streams inside minijs: timers under the virtual clock, recovery from the store directory,
and the engine's bookkeeping. Wire-level behaviour against nats-server is in conformance/.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server

from jsapi import api


async def create(nc: Any, name: str, **cfg: Any) -> dict:
    cfg.setdefault("subjects", [f"{name.lower()}.>"])
    out = await api(nc, f"STREAM.CREATE.{name}", {"name": name, **cfg})
    assert "error" not in out, out
    return out


async def state(nc: Any, name: str) -> dict:
    return (await api(nc, f"STREAM.INFO.{name}"))["state"]


@pytest.mark.parametrize("storage", ["memory", "file"])
async def test_max_age_expires_on_the_virtual_clock(nc: Any, clock: VirtualClock, storage: str) -> None:
    await create(nc, "AGE", storage=storage, max_age=2_000_000_000)
    js = nc.jetstream()
    for i in range(3):
        await js.publish(f"age.{i}", b"x")
    clock.advance(1.0)
    await js.publish("age.late", b"y")
    assert (await state(nc, "AGE"))["messages"] == 4
    clock.advance(1.1)  # the first three are now older than 2 s
    st = await state(nc, "AGE")
    assert (st["messages"], st["first_seq"], st["last_seq"]) == (1, 4, 4)
    clock.advance(1.0)
    st = await state(nc, "AGE")
    assert (st["messages"], st["first_seq"]) == (0, 5)


async def test_msg_ttl_and_never(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "TTL", allow_msg_ttl=True, storage="memory", max_age=10_000_000_000)
    js = nc.jetstream()
    await js.publish("ttl.a", b"1", headers={"Nats-TTL": "1s"})
    await js.publish("ttl.b", b"2", headers={"Nats-TTL": "never"})
    await js.publish("ttl.c", b"3")
    clock.advance(1.5)
    assert (await state(nc, "TTL"))["messages"] == 2
    clock.advance(10)  # max_age removes ttl.c; "never" is exempt from max_age too
    st = await state(nc, "TTL")
    assert (st["messages"], st["first_seq"]) == (1, 2)


async def test_subject_delete_marker_after_max_age(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "SDM", storage="memory", max_age=1_000_000_000,
                 subject_delete_marker_ttl=5_000_000_000)
    js = nc.jetstream()
    await js.publish("sdm.k", b"v")
    clock.advance(1.5)
    marker = await api(nc, "STREAM.MSG.GET.SDM", {"last_by_subj": "sdm.k"})
    msg = marker["message"]
    assert msg["seq"] == 2 and "data" not in msg
    import base64
    hdrs = base64.b64decode(msg["hdrs"])
    assert hdrs == b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 5s\r\nNats-Rollup: sub\r\n\r\n"
    clock.advance(6)  # the marker itself expires, without a marker of its own
    st = await state(nc, "SDM")
    assert (st["messages"], st["last_seq"]) == (0, 2)


async def test_duplicate_window_ages_out(nc: Any, clock: VirtualClock) -> None:
    await create(nc, "DUP", storage="memory", duplicate_window=1_000_000_000)
    js = nc.jetstream()
    a = await js.publish("dup.x", b"1", headers={"Nats-Msg-Id": "m"})
    b = await js.publish("dup.x", b"1", headers={"Nats-Msg-Id": "m"})
    assert (a.seq, a.duplicate, b.seq, b.duplicate) == (1, None, 1, True)
    clock.advance(1.1)
    c = await js.publish("dup.x", b"1", headers={"Nats-Msg-Id": "m"})
    assert (c.seq, c.duplicate) == (2, None)


async def test_file_streams_recover_memory_streams_do_not(tmp_path: Path) -> None:
    store_dir = str(tmp_path / "sd")
    async with Server(port=0, jetstream=True, store_dir=store_dir) as srv:
        nc = await nats.connect(srv.client_url)
        await create(nc, "FILE", storage="file", description="kept", max_msgs_per_subject=2)
        await create(nc, "MEM", storage="memory")
        js = nc.jetstream()
        for i in range(5):
            await js.publish(f"file.{i % 2}", f"p{i}".encode(), headers={"Nats-Msg-Id": f"id{i}"})
            await js.publish("mem.x", b"m")
        await api(nc, "STREAM.MSG.DELETE.FILE", {"seq": 4})
        before = await api(nc, "STREAM.INFO.FILE")
        await nc.close()
    async with Server(port=0, jetstream=True, store_dir=store_dir) as srv:
        nc = await nats.connect(srv.client_url)
        names = await api(nc, "STREAM.NAMES")
        assert names["streams"] == ["FILE"]
        after = await api(nc, "STREAM.INFO.FILE")
        assert after["config"] == before["config"] and after["created"] == before["created"]
        assert after["state"] == before["state"]
        js = nc.jetstream()
        dup = await js.publish("file.0", b"again", headers={"Nats-Msg-Id": "id4"})
        assert (dup.seq, dup.duplicate) == (5, True)
        got = await api(nc, "STREAM.MSG.GET.FILE", {"last_by_subj": "file.0"})
        assert got["message"]["seq"] == 5
        nxt = await js.publish("file.1", b"new")
        assert nxt.seq == 6
        await nc.close()


async def test_file_stream_without_store_dir_uses_a_temp_dir_removed_at_stop() -> None:
    srv = Server(port=0, jetstream=True)
    await srv.start()
    nc = await nats.connect(srv.client_url)
    await create(nc, "TMP", storage="file")
    await nc.jetstream().publish("tmp.a", b"x")
    temp = srv.jetstream._temp_dir
    assert temp is not None and Path(temp).is_dir()
    await nc.close()
    await srv.stop()
    assert not Path(temp).exists()


async def test_account_info_counts_usage(nc: Any) -> None:
    await create(nc, "U1", storage="memory")
    await create(nc, "U2", storage="file")
    js = nc.jetstream()
    await js.publish("u1.a", b"12345")
    await js.publish("u2.a", b"12345")
    info = await api(nc, "INFO")
    assert (info["memory"], info["storage"], info["streams"]) == (16 + 4 + 5, 30 + 4 + 5, 2)


async def test_pipelined_file_publishes_share_commits(nc: Any, server: Server) -> None:
    await create(nc, "PIPE", storage="file")
    stream = server.jetstream.streams["PIPE"]
    flushes = stream.store.flushes
    acks = []
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox + ".*")
    for i in range(200):
        await nc.publish("pipe.x", b"d", reply=f"{inbox}.{i}")
    for _ in range(200):
        acks.append(json.loads((await sub.next_msg(timeout=5)).data)["seq"])
    assert sorted(acks) == list(range(1, 201))
    assert stream.store.flushes - flushes < 200  # grouped: far fewer commits than messages


async def test_internal_error_does_not_kill_the_connection(nc: Any, server: Server,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    await create(nc, "BOOM", storage="memory")

    def boom(*a: Any, **k: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(server.jetstream.streams["BOOM"].store, "store_msg", boom)
    with pytest.raises(nats.js.errors.APIError) as e:
        await nc.jetstream().publish("boom.x", b"1")
    assert e.value.err_code == 10077
    assert nc.is_connected
    assert (await api(nc, "STREAM.INFO.BOOM"))["state"]["messages"] == 0
