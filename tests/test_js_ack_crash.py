"""Durability of acks through the real server process: a minijs server (the CLI, ``-js -sd
DIR``) is killed with SIGKILL while workers ``ack_sync`` messages of a durable pull consumer on
a file stream; after a restart on the same directory every ack that was confirmed (its empty
reply received) is still there: the consumer never delivers those messages again, and it does
deliver every other one.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import nats
import nats.errors
import pytest
from nats.js.api import ConsumerConfig

from minijs_process import MinijsProcess

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

MESSAGES = 5000
ACK_WAIT = 3  # seconds: after the restart, unacked deliveries come back this soon


async def _ack_until_killed(server: MinijsProcess, confirmed: set[int], kill_after: int) -> None:
    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    await js.add_stream(name="ACKS", subjects=["acks.>"], storage="file")
    for i in range(MESSAGES):
        await nc.publish(f"acks.{i % 5}", b"m%d" % i)
    await nc.flush()
    while (await js.stream_info("ACKS")).state.messages < MESSAGES:
        await asyncio.sleep(0.05)
    await js.add_consumer("ACKS", ConsumerConfig(durable_name="work", ack_policy="explicit",
                                                 ack_wait=ACK_WAIT, max_ack_pending=-1))
    # 2000 deliveries left unacked: the consumer state written with each batch of acks is
    # large, so a kill right after a confirmation would catch a state not yet committed.
    hog = await js.pull_subscribe_bind("work", "ACKS")
    await hog.fetch(2000, timeout=5)
    killed = asyncio.Event()

    async def confirm(msg: nats.aio.msg.Msg) -> None:
        try:
            await nc.request(msg.reply, b"", timeout=5)  # what msg.ack_sync() does
        except Exception:
            return
        confirmed.add(msg.metadata.sequence.stream)
        if len(confirmed) >= kill_after and not killed.is_set():
            killed.set()
            server.kill9()

    async def worker() -> None:
        sub = await js.pull_subscribe_bind("work", "ACKS")
        while not killed.is_set():
            try:
                msgs = await sub.fetch(100, timeout=2)
            except Exception:
                return
            # A hundred acks in flight at once: the kill lands between grouped commits.
            await asyncio.gather(*(confirm(m) for m in msgs))

    await asyncio.gather(*(worker() for _ in range(6)))
    try:
        await nc.close()
    except Exception:
        pass


async def _drain_after_restart(server: MinijsProcess) -> list[int]:
    """Every message the restarted consumer delivers (acked at once), until it has nothing
    left: neither new messages nor unacked ones coming back after their ack wait."""
    nc = await nats.connect(server.url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    sub = await js.pull_subscribe_bind("work", "ACKS")
    delivered: list[int] = []
    while True:
        try:
            msgs = await sub.fetch(500, timeout=1)
        except nats.errors.TimeoutError:
            info = await js.consumer_info("ACKS", "work")
            if info.num_pending == 0 and info.num_ack_pending == 0:
                break
            continue
        for m in msgs:
            delivered.append(m.metadata.sequence.stream)
            await m.ack_sync()
    await nc.close()
    return delivered


def test_sigkill_loses_no_confirmed_ack(tmp_path: Path) -> None:
    store_dir = tmp_path / "sd"
    confirmed: set[int] = set()
    server = MinijsProcess(store_dir)
    try:
        asyncio.run(_ack_until_killed(server, confirmed, kill_after=1000))
    finally:
        server.stop()
    assert len(confirmed) >= 1000
    restarted = MinijsProcess(store_dir)
    try:
        again = asyncio.run(_drain_after_restart(restarted))
    finally:
        restarted.stop()
    assert not confirmed & set(again), sorted(confirmed & set(again))[:20]
    # Everything not acked before the kill came (back): at least all never-confirmed ones
    # minus those whose ack took effect just before the kill without its reply getting out.
    assert len(set(again)) == len(again)
    assert set(again) | confirmed <= set(range(1, MESSAGES + 1))
    assert len(again) >= MESSAGES - len(confirmed) - 600
