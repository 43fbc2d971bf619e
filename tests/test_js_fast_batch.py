"""Fast batch publishing inside minijs (``jetstream/fastbatch.py``): the idle timeout on the
virtual clock, batches dropped when ``allow_batched`` is turned off, the reply parser."""
from __future__ import annotations

import json

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.jetstream.streams import fastbatch as F
from minijs.server import Server

from jsapi import api


async def test_idle_fast_batch_is_dropped_on_the_virtual_clock() -> None:
    clock = VirtualClock()
    async with Server(port=0, jetstream=True, clock=clock) as server:
        nc = await nats.connect(server.client_url)
        out = await api(nc, "STREAM.CREATE.B", {"name": "B", "subjects": ["b.>"],
                                                "allow_batched": True, "storage": "memory"})
        assert "error" not in out, out
        sub = await nc.subscribe("fi.>")

        async def send(batch: str, seq: int, op: int) -> dict:
            await nc.publish("b.1", b"x", reply=f"fi.{batch}.10.fail.{seq}.{op}.$FI")
            return json.loads((await sub.next_msg(timeout=2)).data)

        assert await send("x", 1, F.OP_START) == {"type": "ack", "seq": 0, "msgs": 10}
        await clock.advance_async(9.9)
        # activity re-arms the 10 s timer (an append answers nothing before 10 messages)
        await nc.publish("b.1", b"x", reply="fi.x.10.fail.2.1.$FI")
        await nc.flush()
        await clock.advance_async(9.9)
        assert await send("x", 3, F.OP_COMMIT) == {"stream": "B", "seq": 3, "batch": "x",
                                                    "count": 3}
        assert await send("y", 1, F.OP_START) == {"type": "ack", "seq": 0, "msgs": 10}
        await clock.advance_async(10)
        stream = server.jetstream.streams["B"]
        assert stream.fast_batches.batches == {}
        out = await send("y", 2, F.OP_COMMIT)
        assert out["error"]["err_code"] == 10208
        await nc.close()


async def test_turning_allow_batched_off_drops_batches() -> None:
    async with Server(port=0, jetstream=True) as server:
        nc = await nats.connect(server.client_url)
        cfg = {"name": "B", "subjects": ["b.>"], "storage": "memory", "allow_batched": True}
        assert "error" not in await api(nc, "STREAM.CREATE.B", cfg)
        sub = await nc.subscribe("fi.>")
        await nc.publish("b.1", b"x", reply="fi.x.10.fail.1.0.$FI")
        assert json.loads((await sub.next_msg(timeout=2)).data)["type"] == "ack"
        stream = server.jetstream.streams["B"]
        assert list(stream.fast_batches.batches) == ["x"]
        cfg["allow_batched"] = False
        assert "error" not in await api(nc, "STREAM.UPDATE.B", cfg)
        assert stream.fast_batches.batches == {}
        await nc.publish("b.1", b"x", reply="fi.x.10.fail.2.2.$FI")
        out = json.loads((await sub.next_msg(timeout=2)).data)
        assert out["error"]["err_code"] == 10205
        await nc.close()


@pytest.mark.parametrize("reply, parsed", [
    ("p.id.10.fail.1.0.$FI", ("id", 1, 10, False, 0)),
    ("a.b.c.id.7.ok.2.2.$FI", ("id", 2, 7, True, 2)),
    ("p..0.ok.3.3.$FI", ("", 3, 10, True, 3)),
    ("p.id.x.fail.1.0.$FI", ("id", 1, 10, False, 0)),
    ("p.id.99999999.fail.1.4.$FI", ("id", 1, 0xFFFF, False, 4)),
    ("id.10.fail.1.0.$FI", None),
    ("x.$FI", None),
    ("p.id.10.fail.1.5.$FI", None),
    ("p.id.10.fail.0.0.$FI", None),
    ("p.id.10.fail.18446744073709551615.1.$FI", None),
    ("p.id.10.fail.2.0.$FI", None),
    ("p.id.10.fail.1.1.$FI", None),
    ("p.id.10.fail.1.3.$FI", None),
    ("p.id.10.Fail.1.0.$FI", None),
    ("p.id.10.fail.+1.0.$FI", None),
])
def test_parse_reply(reply: str, parsed: tuple | None) -> None:
    p = F.parse_reply(reply)
    assert (None if p is None else (p.id, p.seq, p.flow, p.gap_ok, p.op)) == parsed
