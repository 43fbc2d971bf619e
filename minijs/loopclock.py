"""The test's event loop on server time: one virtual time for the loop and the servers in it.

A :class:`LoopClock` is a virtual clock that is also the time of the asyncio event loop it is
installed on. Everything in that loop then waits on the same virtual time: ``asyncio.sleep``,
``asyncio.wait_for`` and ``asyncio.timeout``, a client's request, fetch and connect timeouts,
its reconnect waits and pings, and every timer of every server in the loop. With ``auto``
(the default), when the loop has nothing to do (no callback ready, no socket readable, no
executor job running), time jumps to the next due timer of either side: a test that sleeps an
hour takes as long as the work it does. Without ``auto`` (``clock="virtual"``), time moves only
during :meth:`LoopClock.advance` / :meth:`LoopClock.advance_async`.

How it is done (and why not the ``looptime`` package): the loop's ``time()`` is read from the
clock, and the loop's selector is wrapped so that a wait with nothing to do becomes a jump.
``looptime`` does the same two things, but its pytest plugin patches every pytest-asyncio loop
of every test session it is installed in, switches the fake time on for the test function only
(not for fixtures, where a server is started and stopped) starting from zero, and knows nothing
of the server's own timers; a server needs its timers, the housekeeping ones that must not
cause jumps, and the seeded order of timers due at one instant, on the same time as the loop.

Invariants:

* the loop's time is ``base + clock.monotonic()``, ``base`` being the loop's real time when
  the clock was installed: it never goes back, and once installed a loop stays on this clock
  until it is closed (its timers, and a client's, are scheduled on it);
* time moves when the loop is idle (after ``IDLE_POLLS`` turns that found nothing to do), on
  an advance, by a nanosecond for each turn that runs callbacks without I/O (so a float
  deadline's 1e-11 s remainder runs out, as it would in real time), and while executor jobs
  (``run_in_executor``, ``asyncio.to_thread``) run: then virtual time follows real time, as
  the threads' work takes real time;
* ``time.monotonic()`` called in a loop on server time is the loop's time (nats-py measures
  its fetch deadlines and reconnect waits with it); elsewhere it is real time;
* a jump goes to the earliest of the loop's next timer and the servers' next timer (not a
  housekeeping one), never further; server timers due at the jump's instant fire first, in
  their seeded order, then the loop's;
* anything outside the loop (another thread, another process, the real network) is not
  waited for: it sees the loop's time race ahead while the loop is idle. Servers on their own
  thread (``ServerThread``, the ``minijs_server`` fixture) cannot share the test's loop time.
"""
from __future__ import annotations

import asyncio
import heapq
import math
import time
from typing import Any, Callable

from asyncio.events import _get_running_loop

from minijs.clockerror import ClockError
from minijs.virtualclock import _NS, VirtualClock, _ns, _settle_turns

#: Loop turns that must find nothing to do before time jumps (callbacks that schedule further
#: callbacks keep the loop busy on their own; these turns let the sockets' peers answer).
IDLE_POLLS = 3
#: A last real-time wait for I/O before each jump (seconds; none by default): bytes a peer in
#: this process wrote to a loopback socket are readable at once, as the kernel delivers them in
#: the writer's own system call. The selector waits in whole milliseconds, so a grace costs at
#: least 1 ms per jump (an hour of a client's and a server's 2-minute pings is 60 jumps).
IDLE_GRACE = 0.0
#: Housekeeping timers (periodic store syncs) fire at most once per this much real time.
HOUSEKEEPING_PACE = 1.0
#: While executor jobs run, the loop waits in real-time steps of at most this (seconds).
EXECUTOR_STEP = 0.005

#: The attribute of a loop on server time that holds its clock (one attribute look-up tells
#: ``time.monotonic`` whether the running loop is on server time).
_CLOCK_ATTR = "_minijs_loop_clock"


def installed_clock(loop: asyncio.AbstractEventLoop) -> "LoopClock | None":
    """The clock ``loop`` runs on, if it was put on server time."""
    return getattr(loop, _CLOCK_ATTR, None)


def running_loop_clock(clock: "LoopClock") -> "LoopClock":
    """The clock of the running loop for a server (or cluster) built with ``clock``: the
    loop's own when another server put it on server time already, else ``clock``, installed
    on the loop now."""
    loop = asyncio.get_running_loop()
    current = installed_clock(loop)
    if current is None:
        clock.install(loop)
        return clock
    return current


# ---------------------------------------------------------------------- time.monotonic

_real_monotonic = time.monotonic
_real_monotonic_ns = time.monotonic_ns


def _monotonic() -> float:
    """``time.monotonic()``: the loop's time in a thread whose running loop is on server time
    (nats-py measures its fetch deadlines and reconnect waits with it), real time elsewhere."""
    loop = _get_running_loop()
    if loop is not None and getattr(loop, _CLOCK_ATTR, None) is not None:
        return loop.time()
    return _real_monotonic()


def _monotonic_ns() -> int:
    loop = _get_running_loop()
    if loop is not None and getattr(loop, _CLOCK_ATTR, None) is not None:
        return int(loop.time() * _NS)
    return _real_monotonic_ns()


def _patch_monotonic() -> None:
    """Make ``time.monotonic`` follow the loop's time in loops on server time (for code that
    looks it up at each call, ``time.monotonic()``; a name bound earlier with ``from time
    import monotonic`` keeps real time). Done once, with the first loop put on server time;
    other threads and loops keep real time, at the cost of one look-up per call."""
    if time.monotonic is not _monotonic:
        time.monotonic = _monotonic
        time.monotonic_ns = _monotonic_ns


class LoopClock(VirtualClock):
    """A virtual clock that is the time of the event loop it is installed on (see the module
    docstring). ``auto=True`` jumps to the next due timer when the loop is idle."""

    virtual = True

    def __init__(self, start: float | None = None, *, auto: bool = True,
                 idle_grace: float = IDLE_GRACE) -> None:
        super().__init__(start)
        self.auto = auto
        self.idle_grace = idle_grace
        self.jumps = 0  # how many times an idle loop moved time (for tests and benchmarks)
        self._host: asyncio.AbstractEventLoop | None = None
        self._base = 0.0
        self._select: Callable[[float | None], list] | None = None
        self._idle = 0
        self._limit: int | None = None  # without auto: an advance lets time jump up to here
        self._executor_jobs: set[asyncio.Future] = set()
        self._pump_due = False
        self._fire_target = 0  # where the pump takes time (ns)
        self._fired = 0  # server timers fired so far
        self._last_housekeeping = _real_monotonic()

    # ------------------------------------------------------------------ installation

    @classmethod
    def on_loop(cls, loop: asyncio.AbstractEventLoop | None = None, *, auto: bool = True
                ) -> "LoopClock":
        """The clock of ``loop`` (the running loop by default), installed now if it has none."""
        loop = loop or asyncio.get_running_loop()
        clock = installed_clock(loop)
        if clock is None:
            clock = cls(auto=auto)
            clock.install(loop)
        return clock

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Put ``loop`` on this clock's time (idempotent for the same loop)."""
        if self._host is loop:
            return
        if self._host is not None:
            raise ClockError("this LoopClock already runs another event loop's time")
        other = installed_clock(loop)
        if other is not None:
            raise ClockError("this event loop already runs on another LoopClock; servers in "
                             "one loop share its clock: LoopClock.on_loop(loop)")
        selector = getattr(loop, "_selector", None)
        if selector is None or not isinstance(loop, asyncio.BaseEventLoop):
            raise ClockError(
                f"loop_clock needs asyncio's own event loop; {type(loop).__module__}."
                f"{type(loop).__name__} cannot be put on server time (with uvloop, run the "
                "test on asyncio's loop, or use clock='auto' without loop_clock)")
        self._host = loop
        self._base = loop.time()
        base, clock = self._base, self
        loop.time = lambda: base + clock._now / _NS  # type: ignore[method-assign]
        self._select = selector.select
        selector.select = self._select_or_jump
        run_in_executor = loop.run_in_executor

        def tracked(executor: Any, func: Callable[..., Any], *args: Any) -> asyncio.Future:
            future = run_in_executor(executor, func, *args)
            clock._executor_jobs.add(future)
            future.add_done_callback(clock._executor_jobs.discard)
            return future

        # (typeshed's run_in_executor is generic over func's arguments; tracked passes them on)
        loop.run_in_executor = tracked  # type: ignore[assignment]
        setattr(loop, _CLOCK_ATTR, self)
        _patch_monotonic()

    def bind(self, loop: asyncio.AbstractEventLoop, settle: Callable[[], None] | None = None
             ) -> None:
        self.install(loop)
        super().bind(loop, settle)

    def unbind(self) -> None:
        """The server stopped: forget its settle hook. The loop stays on this clock (its
        timers are scheduled on it)."""
        self._settle = None
        self._lock = None

    def reset(self) -> None:
        """Drop every server timer. Time does not go back: the loop's own timers (the test's,
        a client's) are scheduled on it."""
        for _, _, timer in self._heap:
            timer._cancelled = True
        self._heap.clear()
        self._generation += 1

    # ------------------------------------------------------------------ moving time

    def _select_or_jump(self, timeout: float | None) -> list:
        select = self._select
        assert select is not None
        ready = select(0)
        if ready:
            self._idle = 0
            return ready
        if timeout == 0:
            # Callbacks or due timers, and no I/O: the turn takes a nanosecond, as real time
            # would move on. Code that computes what is left of a deadline in floats may be
            # left with 1e-11 s, which an event loop at 10^5 s cannot add to its time: without
            # this it would wait "1e-11 s" forever.
            self._idle = 0
            if self.auto or (self._limit is not None and self._limit > self._now):
                self._move_to(self._now + 1)
            return ready
        if self._executor_jobs:
            return self._follow_real_time(timeout)
        target = self._jump_target(timeout)
        if target is None:  # nothing may move time: wait for I/O (or another thread)
            self._idle = 0
            return select(None)
        self._idle += 1
        if self._idle < IDLE_POLLS:
            return []
        self._idle = 0
        if self.idle_grace > 0:
            ready = select(self.idle_grace)
            if ready:
                return ready
        self.jumps += 1
        self._move_to(target)
        return []

    def _jump_target(self, timeout: float | None) -> int | None:
        now = self._now
        target = now + math.ceil(timeout * _NS) if timeout is not None else None
        due = self._next_due_ns()
        if due is not None and (target is None or due < target):
            target = max(due, now)
        if not self.auto:
            limit = self._limit
            if limit is None or limit <= now:
                return None
            if target is None or target > limit:
                target = limit
        return target

    def _next_due_ns(self) -> int | None:
        """When the next server timer that may cause a jump is due (housekeeping ones fire
        when time passes them, but never cause a jump)."""
        heap = self._heap
        while heap and heap[0][2]._cancelled:
            heapq.heappop(heap)
        if not heap:
            return None
        when, _, timer = heap[0]
        if not timer.housekeeping:
            return when
        due = [w for w, _, t in heap if not t._cancelled and not t.housekeeping]
        return min(due) if due else None

    def _follow_real_time(self, timeout: float | None) -> list:
        """Executor jobs run: wait for I/O in real time and let virtual time follow (never
        past the next timer)."""
        select = self._select
        assert select is not None
        step = EXECUTOR_STEP if timeout is None else min(timeout, EXECUTOR_STEP)
        t0 = time.perf_counter()
        ready = select(step)
        passed = _ns(time.perf_counter() - t0)
        target = self._jump_target(timeout)
        new = self._now + passed
        if target is not None:
            new = min(new, target)
        elif not self.auto:
            return ready
        if new > self._now:
            self._move_to(new)
        return ready

    def _move_to(self, target: int) -> None:
        """Time is ``target`` now (the loop's timers due by then run in this turn); the server
        timers due by then fire first, at the start of the turn."""
        heap = self._heap
        if heap and heap[0][0] <= target:
            self._fire_target = max(self._fire_target, target)
            if not self._pump_due:
                self._pump_due = True
                assert self._host is not None
                self._host.call_soon(self._pump)
            # The loop's own timers must not run before the server timers due earlier or at
            # the same instant: time reaches ``target`` in the pump.
            return
        self._now = max(self._now, target)

    def _pump(self) -> None:
        self._pump_due = False
        fired = self._fire_until(max(self._fire_target, self._now))
        if fired and self._settle is not None:
            self._settle()

    # ------------------------------------------------------------------ advances

    def advance(self, seconds: float) -> int:
        """Move time forward by ``seconds`` at once: the server timers due by then fire now,
        the loop's own timers on its next turn (they are all overdue). From a coroutine,
        ``await advance_async(seconds)`` (or ``asyncio.sleep``) lets each fire at its own
        instant."""
        return super().advance(seconds)

    async def _advance_locked(self, seconds: float) -> int:
        """Sleep ``seconds`` of loop time: every timer of the loop and the servers due meanwhile
        fires at its instant (without ``auto`` too: time may jump up to the end of the
        advance)."""
        target = self._now + _ns(seconds)
        fired = self._fired_count()
        previous = self._limit
        self._limit = target if previous is None else max(previous, target)
        try:
            while self._now < target:
                await asyncio.sleep((target - self._now) / _NS)
        finally:
            self._limit = previous
        if self._settle is not None:
            self._settle()
        await _settle_turns()
        return self._fired_count() - fired

    def _fired_count(self) -> int:
        return self._fired

    def _fire_until(self, target: int, limit: int = 0) -> int:
        """Fire the server timers due by ``target``, each at its instant. A housekeeping timer
        (a periodic store sync, whose work no client can see) fires at most once per
        ``HOUSEKEEPING_PACE`` of real time; until then it waits for a later jump: when a day
        of virtual time passes in a second, syncing every 2 virtual minutes would cost more
        real time than everything else."""
        fired = 0
        heap = self._heap
        waiting: list[Any] = []
        while heap and heap[0][0] <= target:
            entry = heapq.heappop(heap)
            when, _, timer = entry
            if timer._cancelled:
                continue
            if timer.housekeeping:
                real = _real_monotonic()
                if real - self._last_housekeeping < HOUSEKEEPING_PACE:
                    waiting.append(entry)
                    continue
                self._last_housekeeping = real
            self._now = max(self._now, when)
            timer._cancelled = True
            timer.callback(*timer.args)
            fired += 1
            if limit and fired >= limit:
                break
        else:
            self._now = max(self._now, target)
        for when, order, timer in waiting:
            heapq.heappush(heap, (max(when, self._now + 1), order, timer))
        self._fired += fired
        return fired


def loop_clock_for(clock: Any) -> tuple["LoopClock", bool]:
    """The clock of a ``Server(loop_clock=True)`` (or a cluster's) and whether it jumps by itself: the running
    loop's, if one runs (and already has one), else a new :class:`~minijs.loopclock.LoopClock`
    installed when the server starts."""
    if isinstance(clock, LoopClock):
        return clock, clock.auto
    if clock not in (None, "auto", "virtual"):
        raise ClockError(
            f"loop_clock=True puts the event loop on the server's virtual time: use "
            f"clock='auto' (time jumps when the loop is idle) or clock='virtual' (it moves on "
            f"advance() only), not {clock!r}")
    auto = clock != "virtual"
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    existing = installed_clock(loop) if loop is not None else None
    if existing is not None:
        return existing, existing.auto
    return LoopClock(auto=auto), auto
