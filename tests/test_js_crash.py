"""Durability through the real server process: a minijs server (the CLI, ``-js -sd DIR``) is
killed with SIGKILL while clients publish into a file stream; after a restart on the same
directory every message that got a pub ack is there with the same sequence and content.
Memory streams are gone after the restart, as in nats-server.
"""
from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path

import nats
import pytest

from minijs_process import MinijsProcess

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


def content(i: int) -> tuple[str, bytes, dict | None]:
    headers = {"X-N": str(i)} if i % 3 == 0 else None
    return f"crash.{i % 7}", (f"payload-{i}-" * (i % 11 + 1)).encode(), headers


async def _publish_until_killed(server: MinijsProcess, acked: dict[int, int], kill_after: int) -> None:
    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    await js.add_stream(name="CRASH", subjects=["crash.>"], storage="file")
    await js.add_stream(name="GONE", subjects=["gone.>"], storage="memory")
    await js.publish("gone.x", b"volatile")
    killed = asyncio.Event()

    async def worker(start: int) -> None:
        i = start
        while not killed.is_set():
            subject, data, headers = content(i)
            try:
                ack = await js.publish(subject, data, headers=headers)
            except Exception:
                return
            acked[ack.seq] = i
            if len(acked) >= kill_after and not killed.is_set():
                killed.set()
                server.kill9()
                return
            i += 1000

    # Eight publishers in flight at once, so the kill lands between grouped commits.
    await asyncio.gather(*(worker(k * 1_000_000) for k in range(8)))
    try:
        await nc.close()
    except Exception:
        pass


def test_sigkill_loses_no_acked_message(tmp_path: Path) -> None:
    store_dir = tmp_path / "sd"
    acked: dict[int, int] = {}
    server = MinijsProcess(store_dir)
    try:
        asyncio.run(_publish_until_killed(server, acked, kill_after=1500))
    finally:
        server.stop()
    assert len(acked) >= 1500

    async def verify() -> None:
        restarted = MinijsProcess(store_dir)
        try:
            nc = await nats.connect(restarted.url, allow_reconnect=False)
            names = json.loads((await nc.request("$JS.API.STREAM.NAMES", b"", timeout=5)).data)
            assert names["streams"] == ["CRASH"]  # the memory stream is gone
            info = json.loads((await nc.request("$JS.API.STREAM.INFO.CRASH", b"", timeout=5)).data)
            assert info["state"]["last_seq"] >= max(acked)
            for seq, i in sorted(acked.items()):
                reply = await nc.request("$JS.API.STREAM.MSG.GET.CRASH",
                                         json.dumps({"seq": seq}).encode(), timeout=5)
                msg = json.loads(reply.data)["message"]
                subject, data, headers = content(i)
                assert msg["subject"] == subject
                assert base64.b64decode(msg.get("data", "")) == data
                if headers:
                    assert b"X-N: %d" % i in base64.b64decode(msg["hdrs"])
            # And the stream carries on after the crash.
            ack = await nc.jetstream().publish("crash.after", b"z")
            assert ack.seq == info["state"]["last_seq"] + 1
            await nc.close()
        finally:
            restarted.stop()

    asyncio.run(verify())
