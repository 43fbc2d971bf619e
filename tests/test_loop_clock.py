"""The test's event loop on server time (minijs.loopclock): sleeps, wait_for timeouts, nats-py's
fetch, request and reconnect waits and the server's timers on one virtual time, which jumps to
the next due timer of either side when the loop is idle."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.api import ConsumerConfig

from minijs.clock import ClockError
from minijs.loopclock import LoopClock, installed_clock
from minijs.server import Server, ServerThread


def _now() -> float:
    return asyncio.get_running_loop().time()


async def test_an_hour_a_redelivery_after_ten_minutes_and_a_25_hour_ttl(tmp_path: Path) -> None:
    """The issue's "done when": a test that sleeps an hour, waits on 30-second fetches for a
    message redelivered after a 10-minute ack wait, and checks a 25-hour TTL. On minijs it
    takes the real time of its work (about a tenth of a second; see scripts/bench_time.py)."""
    async with Server(port=0, jetstream=True, loop_clock=True,
                      store_dir=str(tmp_path / "js")) as server:
        nc = await nats.connect(server.client_url)
        js = nc.jetstream()
        await js.add_stream(name="JOBS", subjects=["jobs.>"], allow_msg_ttl=True)
        await js.publish("jobs.1", b"work")
        await js.publish("jobs.ttl", b"short-lived", headers={"Nats-TTL": "25h"})
        sub = await js.pull_subscribe("jobs.1", "worker", config=ConsumerConfig(ack_wait=600))

        start = _now()
        await asyncio.sleep(3600)
        assert _now() - start == pytest.approx(3600)

        (first,) = await sub.fetch(1, timeout=30)  # delivered, never acked
        delivered_at = _now()
        polls = 0
        while True:
            try:
                (again,) = await sub.fetch(1, timeout=30)
                break
            except nats.errors.TimeoutError:
                polls += 1
        assert again.metadata.num_delivered == 2
        assert _now() - delivered_at == pytest.approx(600, abs=0.5)
        assert polls in (19, 20)  # fetches of 30 s that ran out before the redelivery
        await again.ack_sync()

        assert (await js.stream_info("JOBS")).state.messages == 2
        await asyncio.sleep(25 * 3600 - 3600 - 600 - 1)
        assert (await js.get_msg("JOBS", 2)).data == b"short-lived"
        await asyncio.sleep(2)
        assert (await js.stream_info("JOBS")).state.messages == 1
        await nc.close()


async def test_wait_for_and_request_timeouts_run_on_server_time() -> None:
    async with Server(port=0, loop_clock=True) as server:
        nc = await nats.connect(server.client_url)
        async def never_answer(msg: Any) -> None:
            pass

        await nc.subscribe("silent", cb=never_answer)
        real, start = time.monotonic(), _now()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=120)
        assert _now() - start == pytest.approx(120)
        start = _now()
        with pytest.raises(nats.errors.TimeoutError):
            await nc.request("silent", b"?", timeout=45)
        assert _now() - start == pytest.approx(45, abs=0.01)
        # time.monotonic() follows the loop in it (nats-py measures deadlines with it) ...
        assert time.monotonic() - real >= 165
        await nc.close()
    # ... and real time in a thread of its own.
    assert await asyncio.to_thread(time.monotonic) - real < 60


async def test_client_reconnect_wait_runs_on_server_time(tmp_path: Path) -> None:
    async with Server(port=0, jetstream=True, loop_clock=True,
                      store_dir=str(tmp_path / "js")) as server:
        reconnected = asyncio.Event()

        async def on_reconnect() -> None:
            reconnected.set()

        nc = await nats.connect(server.client_url, reconnect_time_wait=30,
                                reconnected_cb=on_reconnect)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        await js.publish("s", b"kept")
        start = _now()
        await server.restart()
        await reconnected.wait()
        # nats-py waits reconnect_time_wait before trying the same server again
        assert 30 <= _now() - start < 31
        assert (await js.stream_info("S")).state.messages == 1
        await nc.close()


async def test_virtual_loop_clock_moves_only_on_advance() -> None:
    async with Server(port=0, clock="virtual", loop_clock=True) as server:
        clock = server.clock
        assert isinstance(clock, LoopClock) and not clock.auto
        fired: list[float] = []
        server.clock.call_later(5, lambda: fired.append(clock.monotonic()))
        sleeper = asyncio.create_task(asyncio.sleep(10))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not sleeper.done() and not fired
        start = _now()
        assert await clock.advance_async(6) == 1  # one server timer fired, at its instant
        assert fired == [pytest.approx(5)] and not sleeper.done()
        assert _now() - start == pytest.approx(6)
        await clock.advance_async(4)
        await asyncio.sleep(0)
        assert sleeper.done()


async def test_servers_in_one_loop_share_its_clock() -> None:
    async with Server(port=0, loop_clock=True) as a, Server(port=0, loop_clock=True) as b:
        assert a.clock is b.clock is installed_clock(asyncio.get_running_loop())
        ticks: list[str] = []
        a.clock.call_later(60, ticks.append, "a")
        b.clock.call_later(30, ticks.append, "b")
        await asyncio.sleep(61)
        assert ticks == ["b", "a"]


async def test_executor_jobs_run_in_real_time_without_jumps() -> None:
    async with Server(port=0, loop_clock=True):
        start = _now()
        # While the thread works, the loop does not jump to its next timer (the server's PINGs
        # and JetStream's timers are minutes away): virtual time follows real time.
        await asyncio.to_thread(time.sleep, 0.05)
        assert 0.04 <= _now() - start < 5


def test_thread_hosted_servers_cannot_share_the_test_loop() -> None:
    with pytest.raises(ClockError, match="minijs_async_server"):
        ServerThread(loop_clock=True)
    with pytest.raises(ClockError, match="clock='auto'"):
        Server(clock="wall", loop_clock=True)


async def test_advance_from_the_loop_and_the_fixture_marker() -> None:
    async with Server(port=0, loop_clock=True) as server:
        clock = server.clock
        seen: list[float] = []
        clock.call_later(100, lambda: seen.append(clock.monotonic()))
        t0 = clock.monotonic()
        assert clock.advance(150) == 1  # a sync advance fires the server's timers at once
        assert seen == [pytest.approx(t0 + 100)] and clock.monotonic() == pytest.approx(t0 + 150)


@pytest.mark.minijs(clock="auto", loop_clock=True)
async def test_fixture_marker_puts_the_test_loop_on_server_time(minijs_async_server: Any
                                                                ) -> None:
    assert installed_clock(asyncio.get_running_loop()) is minijs_async_server.clock
    nc = await nats.connect(minijs_async_server.client_url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s"], max_age=90)
    await js.publish("s", b"x")
    await asyncio.sleep(91)
    assert (await js.stream_info("S")).state.messages == 0
    await nc.close()
