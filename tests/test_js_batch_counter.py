"""Atomic batches and counters inside minijs: batch timeouts on the virtual clock, staged
batches across a crash, and the counter arithmetic (``jetstream/batch.py``,
``jetstream/counter.py``)."""
from __future__ import annotations

import json
from pathlib import Path

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.streams import counter as C
from minijs.jetstream import errors as E
from minijs.jetstream import headers as H
from minijs.server import Server

from jsapi import api


def _hdrs(batch: str, seq: int, commit: str | None = None) -> dict[str, str]:
    h = {"Nats-Batch-Id": batch, "Nats-Batch-Sequence": str(seq)}
    if commit:
        h["Nats-Batch-Commit"] = commit
    return h


async def test_idle_batch_times_out_on_the_virtual_clock() -> None:
    clock = VirtualClock()
    async with Server(port=0, jetstream=True, clock=clock) as server:
        nc = await nats.connect(server.client_url)
        out = await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b.>"],
                                                "allow_atomic": True, "storage": "memory"})
        assert "error" not in out, out
        adv = await nc.subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.B")
        assert (await nc.request("b.1", b"a", headers=_hdrs("x", 1), timeout=2)).data == b""
        await clock.advance_async(9.9)
        # activity re-arms the 10 s timer
        assert (await nc.request("b.1", b"b", headers=_hdrs("x", 2), timeout=2)).data == b""
        await clock.advance_async(9.9)
        ack = await nc.request("b.1", b"c", headers=_hdrs("x", 3, "1"), timeout=2)
        assert json.loads(ack.data) == {"stream": "B", "seq": 3, "batch": "x", "count": 3}

        assert (await nc.request("b.1", b"a", headers=_hdrs("y", 1), timeout=2)).data == b""
        await clock.advance_async(10)
        event = json.loads((await adv.next_msg(timeout=2)).data)
        assert (event["batch"], event["reason"]) == ("y", "timeout")
        ack = await nc.request("b.1", b"c", headers=_hdrs("y", 2, "1"), timeout=2)
        assert json.loads(ack.data)["error"]["err_code"] == 10176
        assert server.jetstream.streams["B"].batches.batches == {}
        info = await api(nc, "STREAM.INFO.B")
        assert info["state"]["messages"] == 3
        await nc.close()


async def test_staged_batch_does_not_survive_a_crash(tmp_path: Path) -> None:
    async with Server(port=0, jetstream=True, store_dir=str(tmp_path)) as server:
        nc = await nats.connect(server.client_url)
        out = await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b.>"],
                                                "allow_atomic": True})
        assert "error" not in out, out
        await nc.request("b.1", b"a", headers=_hdrs("x", 1), timeout=2)
        await nc.request("b.1", b"b", headers=_hdrs("x", 2), timeout=2)
        await nc.close()
        await server.crash()
        nc = await nats.connect(server.client_url)
        ack = await nc.request("b.1", b"c", headers=_hdrs("x", 3, "1"), timeout=2)
        assert json.loads(ack.data)["error"]["err_code"] == 10176
        info = await api(nc, "STREAM.INFO.B")
        assert info["state"]["messages"] == 0
        await nc.close()


@pytest.mark.parametrize("text, value", [
    ("1", 1), ("+5", 5), ("-10", -10), ("0", 0), ("-0", 0),
    ("123456789012345678901234567890", 123456789012345678901234567890),
    ("abc", None), ("1.5", None), ("1_000", None), ("", None), ("+", None), ("٣", None),
    (" 1", None), ("0x1", None),
])
def test_parse_incr_is_go_big_int_base_10(text: str, value: int | None) -> None:
    assert C.parse_incr(text) == value


def test_counter_apply_sourced_rewrites_incr_and_sources() -> None:
    total = C.Total.load((H.build([("Nats-Counter-Sources", '{"A":{"a.x":"5"}}')]),
                          b'{"val":"5"}'))
    hdr = H.build([(H.INCR, "3"), (H.STREAM_SOURCE, "A 2 > > a.x abcd")])
    new_hdr, data = C.apply(total, "g.x", hdr, b'{"val":"8"}', 3, 1 << 20)
    assert data == b'{"val":"8"}'
    h = H.parse(new_hdr)
    assert h[H.INCR] == "3" and h[C.COUNTER_SOURCES] == '{"A":{"a.x":"8"}}'


def test_counter_broken_last_value() -> None:
    with pytest.raises(E.ApiError) as info:
        C.Total.load((None, b"not json"))
    assert info.value.err_code == 10172
    assert C.Total.load((None, b'{"val":"x"}')).value == 0
    assert C.Total.load((None, b'{"VAL":"7"}')).value == 7
