"""The virtual clock fires due timers in order and only when advanced."""
from __future__ import annotations

import asyncio

import pytest

from minijs.clock import VirtualClock, WallClock


def test_advance_fires_in_order_with_due_time():
    clock = VirtualClock(start=1000.0)
    fired = []
    clock.call_later(2, lambda: fired.append(("b", clock.monotonic())))
    clock.call_later(1, lambda: fired.append(("a", clock.monotonic())))
    t = clock.call_later(1.5, lambda: fired.append(("x", clock.monotonic())))
    t.cancel()
    assert clock.advance(0.5) == 0 and fired == []
    assert clock.advance(2) == 2
    assert fired == [("a", 1.0), ("b", 2.0)]
    assert clock.time() == pytest.approx(1002.5)
    assert clock.time_ns() == 1002_500_000_000


def test_timers_scheduled_by_callbacks_fire_within_window():
    clock = VirtualClock()
    ticks = []

    def tick():
        ticks.append(clock.monotonic())
        if len(ticks) < 5:
            clock.call_later(1, tick)

    clock.call_later(1, tick)
    clock.advance(3.5)
    assert ticks == [1.0, 2.0, 3.0]
    assert clock.next_due() == pytest.approx(0.5)
    clock.advance(10)
    assert ticks == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert clock.pending() == 0


def test_cannot_go_back():
    with pytest.raises(ValueError):
        VirtualClock().advance(-1)


async def test_virtual_sleep_resolves_on_advance():
    clock = VirtualClock()
    task = asyncio.ensure_future(clock.sleep(30))
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(29)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(1)
    await asyncio.sleep(0)
    assert task.done()


async def test_wall_clock_timers():
    clock = WallClock()
    fut = asyncio.get_running_loop().create_future()
    clock.call_later(0.01, fut.set_result, "done")
    assert await asyncio.wait_for(fut, 1) == "done"
    assert clock.time_ns() > 0
