"""The cooperative, single-threaded event loop of a process.

It runs ready callbacks (component message handlers, task mailbox steps) in FIFO order and
timers in (deadline, creation) order. When nothing is ready it waits for the next timer:
a simulated clock jumps there at once, a realtime clock sleeps. Given the same callbacks, a
simulated run is a deterministic sequence.

Invariants: callbacks never run concurrently; a callback scheduled with ``call_soon`` runs
after every callback already ready; timers with equal deadlines fire in creation order.
"""

from __future__ import annotations

import heapq
import threading
from collections import deque
from typing import Any, Callable

from kernel.clock import Clock, SimulatedClock


class TimerHandle:
    """A scheduled callback; ``cancel()`` prevents it from running. A daemon timer (periodic
    background work such as heartbeats and metric sampling) does not keep ``run`` going."""

    __slots__ = ("when", "callback", "args", "cancelled", "daemon", "_loop")

    def __init__(self, when: int, callback: Callable[..., Any], args: tuple, daemon: bool = False,
                 loop: EventLoop | None = None) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False
        self.daemon = daemon
        self._loop = loop  # set while a non-daemon timer is pending

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self._done()

    def _done(self) -> None:
        if self._loop is not None:
            self._loop._live -= 1
            self._loop = None


class EventLoop:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._ready: deque[tuple[Callable[..., Any], tuple]] = deque()
        self._timers: list[tuple[int, int, TimerHandle]] = []
        self._timer_seq = 0
        self._stopping = False
        self._external: deque[tuple[Callable[..., Any], tuple]] = deque()
        self._wakeup = threading.Event()
        self._simulated = isinstance(clock, SimulatedClock)
        self._live = 0  # pending non-daemon timers

    # -- scheduling -------------------------------------------------------------------------

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` after the callbacks already ready."""
        self._ready.append((callback, args))

    def call_at(self, when: int, callback: Callable[..., Any], *args: Any, daemon: bool = False) -> TimerHandle:
        """Run ``callback(*args)`` once the clock reaches ``when`` (ns)."""
        if daemon:
            handle = TimerHandle(when, callback, args, True)
        else:
            handle = TimerHandle(when, callback, args, False, self)
            self._live += 1
        self._timer_seq += 1
        heapq.heappush(self._timers, (when, self._timer_seq, handle))
        return handle

    def call_later(self, delay: int, callback: Callable[..., Any], *args: Any, daemon: bool = False) -> TimerHandle:
        """Run ``callback(*args)`` after ``delay`` nanoseconds of clock time."""
        return self.call_at(self.clock.now() + max(0, delay), callback, *args, daemon=daemon)

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any) -> None:
        """Schedule from another thread (signal handlers, I/O threads); wakes the loop."""
        self._external.append((callback, args))
        self._wakeup.set()

    def stop(self) -> None:
        """Make ``run`` return after the current callback."""
        self._stopping = True
        self._wakeup.set()

    def has_pending(self, daemon: bool = True) -> bool:
        """Whether anything is left to run (``daemon=False``: anything but daemon timers)."""
        if self._ready or self._external:
            return True
        if not daemon:
            return self._live > 0
        return any(not t[2].cancelled for t in self._timers)

    # -- running ----------------------------------------------------------------------------

    def run(self, daemons: bool = False) -> None:
        """Run until ``stop()`` is called or nothing is left to run but daemon timers (or,
        with ``daemons``, nothing at all)."""
        self._stopping = False
        ready = self._ready
        timers = self._timers
        clock = self.clock
        while not self._stopping:
            if self._external:
                while self._external:
                    ready.append(self._external.popleft())
            if timers:
                now = clock.now()
                while timers and timers[0][0] <= now:
                    handle = heapq.heappop(timers)[2]
                    if not handle.cancelled:
                        handle._done()
                        ready.append((handle.callback, handle.args))
            if ready:
                for _ in range(len(ready)):
                    callback, args = ready.popleft()
                    callback(*args)
                    if self._stopping:
                        return
                continue
            while timers and timers[0][2].cancelled:
                heapq.heappop(timers)
            if not timers or (not daemons and self._live == 0 and not self._external):
                return
            deadline = timers[0][0]
            if self._simulated:
                clock.advance_to(deadline)  # type: ignore[attr-defined]
            else:
                self._wakeup.clear()
                if not self._external and not self._stopping:
                    clock.sleep_until(deadline, self._wakeup)  # type: ignore[attr-defined]
