"""Clocks: all runtime time comes from here, in integer nanoseconds.

``RealtimeClock`` follows the wall clock (monotonic, anchored at the epoch when created).
``SimulatedClock`` holds virtual time that only the event loop moves: when nothing is
runnable, the loop jumps it to the next timer. The runtime never reads ``time.time()``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000
#: Java's Long bounds, Flink's smallest and largest timestamps (watermarks, windows, "forever")
MIN_LONG = -(1 << 63)
MAX_LONG = (1 << 63) - 1


class Clock:
    """Interface of both clocks."""

    mode: str = ""

    def now(self) -> int:
        """Current time in nanoseconds since the epoch (virtual epoch when simulated)."""
        raise NotImplementedError

    def now_ms(self) -> int:
        """Current time in milliseconds (Flink's processing time)."""
        return self.now() // NS_PER_MS


class RealtimeClock(Clock):
    mode = "realtime"

    def __init__(self) -> None:
        self._offset = time.time_ns() - time.monotonic_ns()

    def now(self) -> int:
        return time.monotonic_ns() + self._offset

    def sleep_until(self, deadline: int, wakeup) -> None:
        """Block until ``deadline`` or until ``wakeup`` (a threading.Event) is set."""
        remaining = (deadline - self.now()) / NS_PER_S
        if remaining > 0:
            wakeup.wait(remaining)


class SimulatedClock(Clock):
    mode = "simulated"

    def __init__(self, start: int = 0) -> None:
        self._now = start

    def now(self) -> int:
        return self._now

    def advance_to(self, when: int) -> None:
        """Move virtual time forward (never back)."""
        if when > self._now:
            self._now = when


def create_clock(mode: str) -> Clock:
    if mode == "simulated":
        return SimulatedClock()
    if mode == "realtime":
        return RealtimeClock()
    raise ValueError(f"unknown clock mode {mode!r} (realtime, simulated)")


_local = threading.local()


def set_sleeper(sleeper: Callable[[float], None] | None, deferred: bool = False) -> Callable[[float], None] | None:
    """Install what ``sleep`` does in this thread; returns the previous one (runtime use).
    ``deferred``: the sleeper charges the time to a simulated task's step, which spends it after
    the step (``deferred_sleep`` says how much so far)."""
    previous = getattr(_local, "sleeper", None)
    _local.sleeper = sleeper
    _local.deferred = 0.0 if deferred else None
    return previous


def deferred_sleep() -> float:
    """Seconds user functions slept in this simulated step so far: the step's work, which the
    clock shows only after it (0 where sleeping takes its time at once)."""
    return getattr(_local, "deferred", None) or 0.0


def sleep(seconds: float) -> None:
    """Spend ``seconds`` inside a user function, on the run's clock.

    Under the realtime clock this is ``time.sleep``, except that in a task being cancelled it
    ends at once, raising ``InterruptedError`` (as Java's ``Thread.sleep`` of an interrupted
    task thread). Under the simulated clock the running task is busy for that much virtual
    time: it is not stepped again until the clock has advanced by ``seconds`` (other tasks go
    on), and its busy time counts it.
    """
    sleeper = getattr(_local, "sleeper", None)
    if sleeper is None:
        time.sleep(seconds)
    else:
        if getattr(_local, "deferred", None) is not None:
            _local.deferred += seconds
        sleeper(seconds)
