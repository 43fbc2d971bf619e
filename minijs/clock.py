"""One clock for everything that waits or stamps.

The server never calls ``time.time()`` or ``loop.call_later()`` directly: it asks its clock.

* :class:`WallClock` is real time, with timers on the running asyncio loop.
* :class:`~minijs.virtualclock.VirtualClock` keeps its own timer heap and moves only when told
  to (:meth:`~minijs.virtualclock.VirtualClock.advance`), firing every due timer in order, so
  ack waits, expiries, heartbeats and pull timeouts can be tested without real waiting.
* :class:`~minijs.virtualclock.AutoClock` is a virtual clock that also moves by itself: when the
  server has been idle for a short real-time grace and a timer is due later, time jumps to that
  timer, so a test that simply waits for a redelivery or an expiry finishes at once.

The virtual clocks, and the invariants they keep, live in :mod:`minijs.virtualclock`, loaded
by the first virtual clock made; ``from minijs.clock import VirtualClock`` (or ``AutoClock``)
loads it too.

Connection keep-alive and authentication deadlines are not on this clock: they follow real
time, so moving virtual time never disconnects a live client.
"""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from minijs.clockerror import ClockError as ClockError  # (raised by every clock)

if TYPE_CHECKING:
    from minijs.virtualclock import AutoClock, VirtualClock, VirtualTimer


class Timer(Protocol):
    def cancel(self) -> None: ...

    def cancelled(self) -> bool: ...


class Clock(Protocol):
    """What the server needs from time."""

    #: True for clocks that only move when told to (or by themselves when idle).
    virtual: bool

    def time(self) -> float:
        """Wall-clock seconds since the epoch (for timestamps)."""

    def time_ns(self) -> int:
        """Wall-clock nanoseconds since the epoch (for message timestamps)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for deadlines)."""

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,
                   housekeeping: bool = False) -> Timer:
        """Run ``callback(*args)`` after ``delay`` seconds."""

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,
                housekeeping: bool = False) -> Timer:
        """Run ``callback(*args)`` when :meth:`monotonic` reaches ``when``."""

    async def sleep(self, delay: float) -> None:
        """Wait ``delay`` seconds of this clock's time."""


_time_ns = time.time_ns


class WallClock:
    """Real time, with timers on the running asyncio loop."""

    virtual = False

    def time(self) -> float:
        return time.time()

    #: wall-clock nanoseconds since the epoch (``time.time_ns`` itself: read on every publish)
    time_ns = staticmethod(_time_ns)

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,
                   housekeeping: bool = False) -> Timer:
        return asyncio.get_running_loop().call_later(max(delay, 0.0), callback, *args)

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,
                housekeeping: bool = False) -> Timer:
        return asyncio.get_running_loop().call_at(when, callback, *args)

    async def sleep(self, delay: float) -> None:
        await asyncio.sleep(delay)

    def advance(self, seconds: float) -> int:
        raise ClockError(
            "this server runs on the wall clock, which cannot be advanced; start it with a "
            "virtual clock: Server(clock=VirtualClock()), ServerThread(clock='virtual'), "
            "@pytest.mark.minijs(clock='virtual') or `minijs --clock virtual`")

    async def advance_async(self, seconds: float) -> int:
        return self.advance(seconds)


#: The real clock connection keep-alives and auth deadlines use whatever the server's clock is.
REAL_CLOCK = WallClock()


def make_clock(spec: "Clock | str | None") -> "Clock":
    """A clock from a fixture marker or a command-line value: ``None``/``"wall"`` (real time),
    ``"virtual"``, ``"auto"``, or a clock instance."""
    if spec is None or spec == "wall":
        return WallClock()
    if isinstance(spec, str):
        if spec == "virtual":
            from minijs.virtualclock import VirtualClock

            return VirtualClock()
        if spec == "auto":
            from minijs.virtualclock import AutoClock

            return AutoClock()
        raise ClockError(f"unknown clock {spec!r}: use 'wall', 'virtual' or 'auto'")
    return spec


_VIRTUAL = frozenset({"VirtualClock", "AutoClock", "VirtualTimer"})


def __getattr__(name: str) -> Any:
    if name not in _VIRTUAL:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from minijs import virtualclock

    value = getattr(virtualclock, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _VIRTUAL)
