"""CONSUMER.RESET inside minijs: pending acks are forgotten (no redelivery when their ack wait
would have run out), a push consumer continues from the reset sequence, and the reset state
is what a restart recovers. Wire replies against nats-server: conformance/test_js_consumer_reset.py."""
from __future__ import annotations

from pathlib import Path

import nats
import pytest

from minijs.clock import VirtualClock
from minijs.server import Server

from jsapi import api

S = 1_000_000_000


async def test_reset_forgets_pending_and_push_continues(clock: VirtualClock,
                                                        tmp_path: Path) -> None:
    sd = str(tmp_path / "sd")
    async with Server(port=0, jetstream=True, clock=clock, store_dir=sd) as srv:
        nc = await nats.connect(srv.client_url)
        await api(nc, "STREAM.CREATE.R", {"name": "R", "subjects": ["r.>"]})
        for i in range(5):
            await nc.request(f"r.{i}", b"m%d" % i, timeout=5)
        sub = await nc.subscribe("dl")
        out = await api(nc, "CONSUMER.CREATE.R.p", {"stream_name": "R", "config": {
            "durable_name": "p", "deliver_subject": "dl", "ack_policy": "explicit",
            "ack_wait": 10 * S}})
        assert "error" not in out, out
        first = [await sub.next_msg(timeout=2) for _ in range(5)]
        assert [m.data for m in first] == [b"m0", b"m1", b"m2", b"m3", b"m4"]
        out = await api(nc, "CONSUMER.RESET.R.p", {"seq": 4})
        assert out["reset_seq"] == 4 and out["num_ack_pending"] == 0
        again = [await sub.next_msg(timeout=2) for _ in range(2)]
        assert [(m.data, m.reply.split(".")[4:7]) for m in again] == [
            (b"m3", ["1", "4", "1"]), (b"m4", ["1", "5", "2"])]
        await nc.request(again[0].reply, b"", timeout=2)
        clock.advance(11)  # only m4 (still pending) comes back; the forgotten ones do not
        m = await sub.next_msg(timeout=2)
        assert (m.data, m.reply.split(".")[4]) == (b"m4", "2")
        with pytest.raises(nats.errors.TimeoutError):
            await sub.next_msg(timeout=0.1)
        before = await api(nc, "CONSUMER.INFO.R.p")
        await nc.close()
    async with Server(port=0, jetstream=True, clock=clock, store_dir=sd) as srv:
        nc = await nats.connect(srv.client_url)
        after = await api(nc, "CONSUMER.INFO.R.p")
        for k in ("delivered", "ack_floor"):
            before[k].pop("last_active", None)
        assert (after["delivered"], after["ack_floor"], after["num_ack_pending"]) == (
            before["delivered"], before["ack_floor"], 1)
        await nc.close()
