"""One clock for everything that waits or stamps.

The server never calls ``time.time()`` or ``loop.call_later()`` directly: it asks its clock. The
wall clock delegates to the running event loop; the virtual clock keeps its own timer heap and
only moves when a test calls :meth:`VirtualClock.advance`, firing every due timer in order, so
ack waits, expiries and heartbeats can be tested without real waiting.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Any, Callable, Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...

    def cancelled(self) -> bool: ...


class Clock(Protocol):
    """What the server needs from time."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps)."""

    def time_ns(self) -> int:
        """Wall-clock nanoseconds since the epoch (for message timestamps)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for deadlines)."""

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` after ``delay`` seconds."""

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> Timer:
        """Run ``callback(*args)`` when :meth:`monotonic` reaches ``when``."""

    async def sleep(self, delay: float) -> None:
        """Wait ``delay`` seconds of this clock's time."""


class WallClock:
    """Real time, with timers on the running asyncio loop."""

    def time(self) -> float:
        return time.time()

    def time_ns(self) -> int:
        return time.time_ns()

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback, *args)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> Timer:
        return asyncio.get_running_loop().call_at(when, callback, *args)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)


class VirtualTimer:
    """A timer on a :class:`VirtualClock`."""

    __slots__ = ("when", "callback", "args", "_cancelled")

    def __init__(self, when: float, callback: Callable[..., Any], args: tuple) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled


class VirtualClock:
    """Time that moves only when told to.

    ``advance(seconds)`` moves the clock forward, firing each due timer at its own due time, in
    due order (ties in scheduling order). Timers scheduled by a firing callback fire in the same
    call if they fall due within the window.
    """

    def __init__(self, start: float | None = None) -> None:
        self._epoch = time.time() if start is None else start
        self._now = 0.0  # seconds since the clock was created
        self._heap: list[tuple[float, int, VirtualTimer]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self._epoch + self._now

    def time_ns(self) -> int:
        return int(round((self._epoch + self._now) * 1e9))

    def monotonic(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> VirtualTimer:
        timer = VirtualTimer(when, callback, args)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> VirtualTimer:
        return self.call_at(self._now + max(delay, 0.0), callback, *args)

    async def sleep(self, delay: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.call_later(delay, _resolve, future)
        await future

    def pending(self) -> int:
        """How many live timers are scheduled."""
        return sum(1 for _, _, t in self._heap if not t._cancelled)

    def next_due(self) -> float | None:
        """Seconds until the next live timer, or None when none is scheduled."""
        while self._heap and self._heap[0][2]._cancelled:
            heapq.heappop(self._heap)
        return (self._heap[0][0] - self._now) if self._heap else None

    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds``; return how many timers fired."""
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        target = self._now + seconds
        fired = 0
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer._cancelled:
                continue
            self._now = max(self._now, when)
            timer._cancelled = True  # a fired timer is done; cancel() after is harmless
            timer.callback(*timer.args)
            fired += 1
        self._now = target
        return fired


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
