"""The error of the clocks: a clock asked for something it cannot do (advancing real time, a
virtual clock whose server is not running). Its own module so that the wall clock
(:mod:`minijs.clock`) and the virtual ones (:mod:`minijs.virtualclock`, loaded only when one
is made) share it without importing each other."""
from __future__ import annotations


class ClockError(RuntimeError):
    """A clock was asked for something it cannot do (e.g. advancing real time)."""
