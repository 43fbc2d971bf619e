"""Virtual time: :class:`VirtualClock`, which moves only when told to, and :class:`AutoClock`,
which also moves by itself when the server is idle (the clocks of :mod:`minijs.clock` that a
test asks for; the wall clock needs none of this module).

* :class:`VirtualClock` keeps its own timer heap and moves only when told to
  (:meth:`VirtualClock.advance`), firing every due timer in order, so ack waits, expiries,
  heartbeats and pull timeouts can be tested without real waiting.
* :class:`AutoClock` is a virtual clock that also moves by itself: when the server has been
  idle for a short real-time grace and a timer is due later, time jumps to that timer, so a test
  that simply waits for a redelivery or an expiry finishes at once.

Invariants of the virtual clocks:

* time is kept in integer nanoseconds, so ``advance(0.1)`` three times reaches exactly the
  timer scheduled at ``0.3`` s, and a timer due at ``t`` fires on an advance to exactly ``t``;
* timers fire in due order; timers due at the same instant fire in an order drawn from the
  seeded source a server hands the clock (:meth:`VirtualClock.draw_ties_from`; nats-server's
  timers are goroutines, which promise no order), in scheduling order on a clock no server
  seeded; a timer scheduled by a firing callback fires in the same advance when it falls due
  within it;
* once a server binds the clock to its event loop, timers fire only on that loop:
  :meth:`VirtualClock.advance` called from another thread hands the work to the loop and
  returns after the due timers have fired and their effects (messages, statuses, advisories)
  have been written to the sockets; :meth:`VirtualClock.advance_async` does the same for a
  coroutine on any loop, and :meth:`VirtualClock.reset` too runs on that loop;
* advances on the loop run one at a time, in the order they were asked for, so concurrent
  ``advance(10)`` calls from two threads move time by 20 s; a :meth:`VirtualClock.reset`
  while an advance is under way ends that advance (time stays at zero);
* ``housekeeping`` timers (periodic store syncs) fire when time passes them but never make an
  :class:`AutoClock` jump.
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from typing import Any, Callable

from minijs.clockerror import ClockError

_NS = 1_000_000_000


class VirtualTimer:
    """A timer on a :class:`VirtualClock`."""

    __slots__ = ("when", "callback", "args", "housekeeping", "_cancelled")

    def __init__(self, when: int, callback: Callable[..., Any], args: tuple,
                 housekeeping: bool) -> None:
        self.when = when  # nanoseconds since the clock's start
        self.callback = callback
        self.args = args
        self.housekeeping = housekeeping
        self._cancelled = False

    def cancel(self) -> None:
        self._cancelled = True

    def cancelled(self) -> bool:
        return self._cancelled


def _ns(seconds: float) -> int:
    return int(round(seconds * _NS))


class VirtualClock:
    """Time that moves only when told to.

    ``advance(seconds)`` moves the clock forward, firing each due timer at its own due time, in
    due order (ties in an order drawn from :meth:`draw_ties_from`'s source, else in scheduling
    order). Timers scheduled by a firing callback fire in the same call if they fall due within
    the window.
    """

    virtual = True

    def __init__(self, start: float | None = None) -> None:
        self._epoch_ns = time.time_ns() if start is None else _ns(start)
        self._now = 0  # nanoseconds since the clock was created
        self._heap: list[tuple[int, int, VirtualTimer]] = []
        self._seq = itertools.count()
        self._order: Callable[[], int] = self._seq.__next__  # a timer's place among its ties
        self._ties_seeded = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._settle: Callable[[], None] | None = None
        self._generation = 0  # bumped by reset(): an advance under way stops there
        self._lock: asyncio.Lock | None = None  # one advance at a time on the loop

    # ------------------------------------------------------------------ reading

    def time(self) -> float:
        return (self._epoch_ns + self._now) / _NS

    def time_ns(self) -> int:
        return self._epoch_ns + self._now

    def monotonic(self) -> float:
        return self._now / _NS

    # ------------------------------------------------------------------ timers

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,
                housekeeping: bool = False) -> VirtualTimer:
        return self._schedule(_ns(when), callback, args, housekeeping)

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,
                   housekeeping: bool = False) -> VirtualTimer:
        return self._schedule(self._now + max(_ns(delay), 0), callback, args, housekeeping)

    def _schedule(self, when: int, callback: Callable[..., Any], args: tuple,
                  housekeeping: bool) -> VirtualTimer:
        timer = VirtualTimer(when, callback, args, housekeeping)
        heapq.heappush(self._heap, (when, self._order(), timer))
        self._scheduled()
        return timer

    def _scheduled(self) -> None:
        """A timer was added (the auto clock wakes up to consider a jump)."""

    def draw_ties_from(self, source: Any) -> None:
        """Order timers due at the same instant by draws from ``source`` (a
        :class:`~minijs.randomness.RandomSource`; a server hands its own, the stream
        ``timers``): the same seed, the same order. The first source given is kept (servers
        sharing one clock share its order)."""
        if self._ties_seeded:
            return
        self._ties_seeded = True
        bits, seq = source.getrandbits, self._seq

        def order() -> int:
            return (bits(24) << 40) | next(seq)

        self._order = order

    async def sleep(self, delay: float) -> None:
        future = asyncio.get_running_loop().create_future()
        self.call_later(delay, _resolve, future)
        await future

    def pending(self) -> int:
        """How many live timers are scheduled (safe to read from any thread)."""
        return sum(1 for _, _, t in list(self._heap) if not t._cancelled)

    def next_due(self, *, include_housekeeping: bool = True) -> float | None:
        """Seconds until the next live timer, or None when none is scheduled. Safe to read from
        any thread (only the loop that owns the timers prunes them)."""
        heap = self._heap
        if self._loop_thread is None or threading.get_ident() == self._loop_thread:
            while heap and heap[0][2]._cancelled:
                heapq.heappop(heap)
            if not heap:
                return None
            if include_housekeeping:
                return (heap[0][0] - self._now) / _NS
        due = [w for w, _, t in list(heap)
               if not t._cancelled and (include_housekeeping or not t.housekeeping)]
        return (min(due) - self._now) / _NS if due else None

    # ------------------------------------------------------------------ binding to a server

    def bind(self, loop: asyncio.AbstractEventLoop, settle: Callable[[], None] | None = None
             ) -> None:
        """Fire timers on ``loop`` from now on; ``settle()`` writes out what firing produced
        (the server commits JetStream writes and flushes every connection)."""
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._settle = settle
        self._lock = None

    def unbind(self) -> None:
        self._loop = None
        self._loop_thread = None
        self._settle = None
        self._lock = None

    def reset(self) -> None:
        """Back to the start: time zero, no timers (a server reset calls this). Like
        :meth:`advance`, safe from any thread once bound: it runs on the server's loop."""
        loop = self._loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            if loop.is_closed() or not loop.is_running():
                raise ClockError("the server using this clock is not running")

            async def on_loop() -> None:
                self.reset()

            asyncio.run_coroutine_threadsafe(on_loop(), loop).result()
            return
        for _, _, timer in self._heap:
            timer._cancelled = True
        self._heap.clear()
        self._now = 0
        self._generation += 1

    # ------------------------------------------------------------------ moving time

    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds``; return how many timers fired.

        From the server's own loop this fires the timers at once (effects that the server
        schedules for later in the same turn follow when the caller yields; prefer
        ``await advance_async()`` there). From any other thread it runs on the server's loop and
        returns once the effects are written.
        """
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            fired = self._fire_until(self._now + _ns(seconds))
            if self._settle is not None:
                self._settle()
            return fired
        if loop.is_closed() or not loop.is_running():
            raise ClockError("the server using this clock is not running")
        return asyncio.run_coroutine_threadsafe(self._advance_on_loop(seconds), loop).result()

    async def advance_async(self, seconds: float) -> int:
        """Move time forward by ``seconds`` from a coroutine on any event loop; returns when the
        due timers have fired and their effects are written."""
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        loop = self._loop
        running = asyncio.get_running_loop()
        if loop is None or loop is running:
            return await self._advance_on_loop(seconds)
        future = asyncio.run_coroutine_threadsafe(self._advance_on_loop(seconds), loop)
        return await asyncio.wrap_future(future)

    def _advance_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _advance_on_loop(self, seconds: float) -> int:
        # Advances queue up: two at once (two threads, an auto jump and a test) would otherwise
        # interleave at their settle turns and move time by less than their sum.
        async with self._advance_lock():
            return await self._advance_locked(seconds)

    async def _advance_locked(self, seconds: float) -> int:
        generation = self._generation
        target = self._now + _ns(seconds)
        fired = 0
        while True:
            fired += self._fire_until(target, limit=1)
            # Let what the timer scheduled for "soon" run (commits, flushes, wake-ups) before
            # the next timer fires, as it would have in real time.
            await _settle_turns()
            if self._generation != generation:
                return fired  # reset meanwhile: time starts again from zero
            heap = self._heap
            while heap and heap[0][2]._cancelled:
                heapq.heappop(heap)
            if not heap or heap[0][0] > target:
                break
        self._now = max(self._now, target)
        if self._settle is not None:
            self._settle()
        await _settle_turns()
        return fired

    def _fire_until(self, target: int, limit: int = 0) -> int:
        fired = 0
        heap = self._heap
        while heap and heap[0][0] <= target:
            when, _, timer = heapq.heappop(heap)
            if timer._cancelled:
                continue
            self._now = max(self._now, when)
            timer._cancelled = True  # a fired timer is done; cancel() after is harmless
            timer.callback(*timer.args)
            fired += 1
            if limit and fired >= limit:
                return fired
        self._now = max(self._now, target)
        return fired


class AutoClock(VirtualClock):
    """A virtual clock that jumps to the next due timer whenever the server has been idle for
    ``grace`` seconds of real time (no client input, nothing fired), so tests that wait for a
    timer-driven event finish at once. ``advance()`` still works as on :class:`VirtualClock`.
    """

    def __init__(self, start: float | None = None, grace: float = 0.02) -> None:
        super().__init__(start)
        self.grace = grace
        self._last_activity = time.monotonic()
        self._task: asyncio.Task | None = None
        self._wake: asyncio.Event | None = None

    def note_activity(self) -> None:
        """The server just handled client input: postpone any jump by one grace period."""
        self._last_activity = time.monotonic()

    def _scheduled(self) -> None:
        wake = self._wake
        if wake is not None and not wake.is_set():
            wake.set()

    def bind(self, loop: asyncio.AbstractEventLoop, settle: Callable[[], None] | None = None
             ) -> None:
        super().bind(loop, settle)
        self._wake = asyncio.Event()
        self._task = loop.create_task(self._run())

    def unbind(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._wake = None
        super().unbind()

    async def _run(self) -> None:
        wake = self._wake
        assert wake is not None
        while True:
            due = self.next_due(include_housekeeping=False)
            if due is None:
                wake.clear()
                await wake.wait()
                continue
            idle = time.monotonic() - self._last_activity
            if idle < self.grace:
                await asyncio.sleep(self.grace - idle)
                continue
            async with self._advance_lock():
                due = self.next_due(include_housekeeping=False)  # again, now it is our turn
                if due is not None:
                    await self._advance_locked(max(due, 0.0))
            self._last_activity = time.monotonic()


async def _settle_turns() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


def _resolve(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)
