"""The cooperative, single-threaded event loop of a process.

It runs ready callbacks (component message handlers, task mailbox steps) in FIFO order and
timers in (deadline, creation) order. When nothing is ready it waits for the next timer:
a simulated clock jumps there at once, a realtime clock sleeps. Given the same callbacks, a
simulated run is a deterministic sequence.

Invariants: callbacks never run concurrently; a callback scheduled with ``call_soon`` runs
after every callback already ready; timers with equal deadlines fire in creation order; a
callback scheduled with ``call_at_rest`` runs once nothing is ready or due any more at the
current time (simulated: after everything else at this instant, whatever it triggered).
Cancelled timers leave the timer heap when their deadline comes, or earlier when they make up
most of it (the heap is rebuilt): what the loop holds is bounded by what is pending.
Work running outside the loop (an I/O thread that will call back with
``call_soon_threadsafe``) keeps ``run`` going while announced with ``io_started`` and not yet
``io_finished``: the loop then waits for it as for a timer.

A loop belongs to one thread, the one running it (until it first runs, the one that created
it, unless created ``bound=False``). Other threads may schedule on it too: ``call_soon`` and
``call_at`` from another thread hand the callback or the timer over through the thread-safe
queue (the loop takes it at its next step), and cancelling a timer from another thread only
marks it (the loop forgets it when it meets it). ``io_started``/``io_finished`` and
:class:`TimerGroup` belong to the loop's thread.
"""

from __future__ import annotations

import heapq
import threading
from _thread import get_ident
from collections import deque
from typing import Any, Callable

from kernel.clock import Clock, SimulatedClock


class TimerHandle:
    """A scheduled callback; ``cancel()`` prevents it from running. A daemon timer (periodic
    background work such as heartbeats and metric sampling) does not keep ``run`` going.
    ``done`` once it fired or was cancelled (whoever keeps handles to cancel them later can
    forget those)."""

    __slots__ = ("when", "callback", "args", "cancelled", "done", "daemon", "_loop")

    def __init__(self, when: int, callback: Callable[..., Any], args: tuple, daemon: bool) -> None:
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False
        self.done = False
        self.daemon = daemon
        self._loop: EventLoop | None = None  # while in the loop's heap and not accounted for as done

    def cancel(self) -> None:
        if self.done:
            return
        self.cancelled = True
        loop = self._loop
        if loop is not None and get_ident() == loop._thread:
            self._done()
            loop._timer_cancelled()
        else:  # another thread (or not in the heap yet): the loop forgets it when it meets it
            self.done = True

    def _done(self) -> None:
        self.done = True
        if not self.daemon:
            self._loop._live -= 1
        self._loop = None


class TimerGroup:
    """The handles of the timers an owner (a component, a task) cancels when it stops. Those
    done (fired or cancelled) are forgotten as new ones come, so the group holds about as many
    handles as are pending, however long the owner lives."""

    __slots__ = ("_handles", "_limit")

    def __init__(self) -> None:
        self._handles: list[TimerHandle] = []
        self._limit = 64

    def add(self, handle: TimerHandle) -> TimerHandle:
        handles = self._handles
        handles.append(handle)
        if len(handles) > self._limit:
            self._handles = [h for h in handles if not h.done]
            self._limit = max(64, 2 * len(self._handles))
        return handle

    def cancel_all(self) -> None:
        handles, self._handles = self._handles, []
        for handle in handles:
            handle.cancel()

    def __len__(self) -> int:
        return len(self._handles)


class EventLoop:
    def __init__(self, clock: Clock, bound: bool = True) -> None:
        self.clock = clock
        #: the thread the loop belongs to (``bound=False``: none until it runs)
        self._thread: int | None = get_ident() if bound else None
        self._ready: deque[tuple[Callable[..., Any], tuple]] = deque()
        self._at_rest: list[tuple[Callable[..., Any], tuple]] = []
        self._timers: list[tuple[int, int, TimerHandle]] = []
        self._timer_seq = 0
        self._stopping = False
        self._external: deque[tuple[Callable[..., Any], tuple]] = deque()
        self._wakeup = threading.Event()
        self._simulated = isinstance(clock, SimulatedClock)
        self._live = 0  # pending non-daemon timers
        self._cancelled = 0  # cancelled timers still in the heap
        self._io = 0  # work announced by io_started, running outside the loop
        self._waiting = False  # blocked waiting for a timer or another thread
        #: rounds of ready callbacks run so far (how far the loop got, for observers in other threads)
        self.rounds = 0

    # -- scheduling -------------------------------------------------------------------------

    def in_thread(self) -> bool:
        """Whether the caller runs in the loop's thread."""
        return get_ident() == self._thread

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` after the callbacks already ready."""
        if get_ident() == self._thread:
            self._ready.append((callback, args))
        else:
            self.call_soon_threadsafe(callback, *args)

    def call_at_rest(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` once nothing is ready or due now any more (the loop's
        thread only): after everything else at this instant of a simulated clock."""
        self._at_rest.append((callback, args))

    def call_in_thread(self, callback: Callable[..., Any], *args: Any) -> None:
        """Run ``callback(*args)`` in the loop's thread: at once when called there, else as
        soon as the loop takes it from the thread-safe queue."""
        if get_ident() == self._thread:
            callback(*args)
        else:
            self.call_soon_threadsafe(callback, *args)

    def call_at(self, when: int, callback: Callable[..., Any], *args: Any, daemon: bool = False) -> TimerHandle:
        """Run ``callback(*args)`` once the clock reaches ``when`` (ns)."""
        handle = TimerHandle(when, callback, args, daemon)
        if get_ident() == self._thread:
            self._push(handle)
        else:
            self.call_soon_threadsafe(self._push, handle)
        return handle

    def _push(self, handle: TimerHandle) -> None:
        if handle.cancelled:
            return
        handle._loop = self
        if not handle.daemon:
            self._live += 1
        self._timer_seq += 1
        heapq.heappush(self._timers, (handle.when, self._timer_seq, handle))

    def _forget(self, handle: TimerHandle) -> None:
        """A cancelled timer leaves the heap."""
        if handle._loop is not None:  # cancelled from another thread: not accounted for yet
            handle._done()
        else:
            self._cancelled -= 1

    def call_later(self, delay: int, callback: Callable[..., Any], *args: Any, daemon: bool = False) -> TimerHandle:
        """Run ``callback(*args)`` after ``delay`` nanoseconds of clock time."""
        return self.call_at(self.clock.now() + max(0, delay), callback, *args, daemon=daemon)

    def _timer_cancelled(self) -> None:
        self._cancelled += 1
        timers = self._timers
        if self._cancelled > 64 and 2 * self._cancelled > len(timers):
            kept = []
            for entry in timers:
                if not entry[2].cancelled:
                    kept.append(entry)
                elif entry[2]._loop is not None:
                    entry[2]._done()
            timers[:] = kept  # in place: ``run`` holds the list
            heapq.heapify(timers)
            self._cancelled = 0

    def call_soon_threadsafe(self, callback: Callable[..., Any], *args: Any) -> None:
        """Schedule from another thread (signal handlers, I/O threads); wakes the loop."""
        self._external.append((callback, args))
        self._wakeup.set()

    def io_started(self) -> None:
        """Work outside the loop began (it will call back with ``call_soon_threadsafe``):
        ``run`` waits for it rather than returning."""
        self._io += 1

    def io_finished(self, count: int = 1) -> None:
        """``count`` pieces of work announced by ``io_started`` ended."""
        self._io -= count

    def stop(self) -> None:
        """Make ``run`` return after the current callback."""
        self._stopping = True
        self._wakeup.set()

    def quiescent(self, io: int = 0) -> bool:
        """Waiting with nothing to run but daemon timers and at most ``io`` pieces of announced
        work: it runs nothing more unless another thread hands it something (read from any thread)."""
        return (self._waiting and not self._ready and not self._at_rest and not self._external and self._live == 0
                and self._io <= io)

    def has_pending(self, daemon: bool = True, io: int = 0) -> bool:
        """Whether anything is left to run (``daemon=False``: anything but daemon timers;
        announced work counts beyond ``io`` pieces)."""
        if self._ready or self._at_rest or self._external or self._io > io:
            return True
        if not daemon:
            return self._live > 0
        return any(not t[2].cancelled for t in self._timers)

    # -- running ----------------------------------------------------------------------------

    def run(self, daemons: bool = False) -> None:
        """Run until ``stop()`` is called or nothing is left to run but daemon timers (or,
        with ``daemons``, nothing at all); while announced I/O runs, daemon timers count."""
        self._stopping = False
        self._thread = get_ident()
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
                    if handle.cancelled:
                        self._forget(handle)
                    else:
                        handle._done()
                        ready.append((handle.callback, handle.args))
            if ready:
                self.rounds += 1
                for _ in range(len(ready)):
                    callback, args = ready.popleft()
                    callback(*args)
                    if self._stopping:
                        return
                continue
            if self._at_rest:
                ready.extend(self._at_rest)
                self._at_rest.clear()
                continue
            while timers and timers[0][2].cancelled:
                self._forget(heapq.heappop(timers)[2])
            if self._io and not self._simulated:
                self._wakeup.clear()
                if not self._external and not self._stopping:
                    self._waiting = True
                    if timers:
                        clock.sleep_until(timers[0][0], self._wakeup)  # type: ignore[attr-defined]
                    else:
                        self._wakeup.wait()
                    self._waiting = False
                continue
            if not timers or (not daemons and self._live == 0 and not self._external):
                return
            deadline = timers[0][0]
            if self._simulated:
                clock.advance_to(deadline)  # type: ignore[attr-defined]
            else:
                self._wakeup.clear()
                if not self._external and not self._stopping:
                    self._waiting = True
                    clock.sleep_until(deadline, self._wakeup)  # type: ignore[attr-defined]
                    self._waiting = False
