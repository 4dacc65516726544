"""The event bus: the runtime emits, observers receive batches off the runtime's thread.

``bus.emit`` *is* ``list.append`` of the pending batch: emitting costs one Struct creation and
one append on the runtime's thread, nothing else. A flusher thread takes the pending events
every ``flush_interval`` seconds (and on ``flush()``/``close()``), numbers them in emission
order (``seq``) and hands them to every observer as an :class:`EventBatch`.

Observers are called on the flusher thread, one batch at a time, in order; an observer that
raises is reported by ``close()`` and receives no further batches, the others go on.

A batch of the periodic flush or of the run's end is ``deferrable``: the observer must keep it
durably but may put off storing it where readers look (the event log's writer keeps it in the
run's segment and stores it in the log later); a batch of an explicit ``flush()`` is stored now,
with everything put off before it (a flush with no new events delivers an empty batch for
that). ``flush(deferrable=True)`` delivers on the caller's thread: a run's first events are
durable before its user code runs. What observers put off is finished by their ``settle``
(optional), once per bus: here, when someone waits for the run's events (``join``, readers
through :func:`drain_buses`), or, when nobody did within ``SETTLE_GRACE`` seconds of the run's
end (the process lives on), on the flusher thread. A process that exits leaves it to the next
reader: nothing outlives it, and its exit never waits for it.
"""

from __future__ import annotations

import functools
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import msgspec

from kernel.events import Event

_set_seq = msgspec.structs.force_setattr
_live: set[EventBus] = set()
#: seconds a closed bus waits for a ``join`` or the process's exit before its flusher settles
SETTLE_GRACE = 1.0


def drain_buses(settle: bool = True) -> list[tuple[str, BaseException]]:
    """Wait for every closed bus of this process until it delivered everything, and either
    (``settle``) for what its observers put off, done here — readers call this so they see what
    this process recorded — or only for what its flusher thread is settling already.
    Returns the observer errors not returned before, as (run id, error)."""
    closed = [bus for bus in list(_live) if bus._closed]
    for bus in closed:
        bus.join(settle=False)
    for bus in closed:
        if settle:
            bus.settle()
        elif bus._settling:
            bus._settled.wait()
    errors = []
    for bus in closed:
        errors.extend((bus.run_id, exc) for _, exc in bus.errors[bus._errors_returned:])
        bus._errors_returned = len(bus.errors)
    return errors


# At exit, before the interpreter's atexit callbacks: DuckDB's own (registered when it was first
# imported, by the flusher thread during the run, so after this module's) make it refuse to scan
# Python objects from other threads than the main one, and the runs' last batches are written
# (and a settle already under way finished) by their flusher threads. Threads' exit callbacks
# run before any of them (concurrent.futures waits for its workers there too).
threading._register_atexit(functools.partial(drain_buses, settle=False))  # type: ignore[attr-defined]


@dataclass(frozen=True)
class EventBatch:
    run_id: str
    first_seq: int
    events: list[Event]
    #: the observer may put off storing it (periodic and final flushes; not an explicit ``flush()``,
    #: whose batch may be empty: store now what was put off)
    deferrable: bool = False


class EventObserver(Protocol):
    def events_emitted(self, batch: EventBatch) -> None:
        """A batch of events, in sequence order (called on the flusher thread, or on the
        caller's of ``flush``)."""

    def close(self, status: str) -> None:
        """The run ended with ``status``; flush and release resources."""

    # optional: def settle(self) -> None — finish what the observer put off (store deferred
    # batches), on the thread that calls it


def _discard(event: Event) -> None:
    """``emit`` of a bus without observers."""


class EventBus:
    def __init__(
        self,
        run_id: str,
        observers: list[EventObserver] = (),  # type: ignore[assignment]
        flush_interval: float = 1.0,
        debug: bool = False,
    ) -> None:
        self.run_id = run_id
        self.observers = list(observers)
        self.flush_interval = flush_interval
        #: emitters check this before creating events of level "debug"
        self.debug = debug
        self._pending: list[Event] = []
        #: emit(event): record one event (``list.append`` of the pending batch)
        self.emit = self._pending.append
        self._next_seq = 0
        #: a deferrable batch was delivered since the last explicit flush
        self._put_off = False
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.errors: list[tuple[EventObserver, BaseException]] = []
        self._failed: set[int] = set()
        self._errors_returned = 0  # by drain_buses
        self._status = ""
        self._delivered = threading.Event()  # everything delivered, observers closed
        self._settle_lock = threading.Lock()
        self._settling = False
        self._settle_asked = threading.Event()
        self._settled = threading.Event()

    @property
    def emitted(self) -> int:
        """Events numbered so far (delivered or being delivered)."""
        return self._next_seq

    def start(self) -> None:
        if not self.observers:  # nobody would ever take them: events are not kept
            self.emit = _discard
            return
        if self._thread is None:
            _live.add(self)
            self._thread = threading.Thread(target=self._run, name=f"rill-eventbus-{self.run_id}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        # An event is safe once the flush that took it has finished, so a flush starts
        # early by the time the previous one took: what a crash loses stays within one
        # flush interval.
        took = 0.0
        while not self._closed:
            self._wake.wait(max(0.0, self.flush_interval - took))
            self._wake.clear()
            started = time.perf_counter()
            self._flush(deferrable=True)
            took = min(time.perf_counter() - started, self.flush_interval / 2)
        self._finish()
        if not self._settle_asked.wait(SETTLE_GRACE):
            self.settle()

    def flush(self, deferrable: bool = False) -> int:
        """Deliver everything emitted so far on this thread, to be stored now (with what was
        put off before) or, ``deferrable``, kept durably; returns the number of events
        delivered."""
        return self._flush(deferrable)

    def _flush(self, deferrable: bool) -> int:
        with self._lock:
            pending = self._pending
            count = len(pending)
            if not count and (deferrable or not self._put_off):
                return 0
            self._put_off = deferrable
            events = pending[:count]
            del pending[:count]  # appends racing with this land after ``count``
            first = self._next_seq
            seq = first
            for event in events:
                _set_seq(event, "seq", seq)
                seq += 1
            self._next_seq = seq
            batch = EventBatch(self.run_id, first, events, deferrable)
            for observer in self.observers:
                if id(observer) in self._failed:
                    continue
                try:
                    observer.events_emitted(batch)
                except BaseException as exc:  # an observer must never take the runtime down
                    self._failed.add(id(observer))
                    self.errors.append((observer, exc))
            return count

    def close(self, status: str, wait: bool = False) -> None:
        """No more events: the flusher delivers the rest and closes every observer.

        Returns at once (ingest stays off the runtime's thread) unless ``wait``; the process
        waits for pending buses before it exits (and hands over what the observers put off),
        and readers of the log wait via :func:`drain_buses`.
        """
        self._status = status
        self._closed = True
        if self._thread is None:
            self._finish()
        else:
            self._wake.set()
            if wait:
                self.join()

    def join(self, settle: bool = True) -> None:
        """Wait until everything emitted is delivered and the observers are closed, and
        (``settle``) for what they put off, finished here."""
        if self._thread is not None:
            self._delivered.wait()
        if settle:
            self.settle()

    def settle(self) -> None:
        """Let every observer finish what it put off, here, once the bus is closed and
        delivered everything; waits when another thread does it."""
        if not self._delivered.is_set():
            return
        with self._settle_lock:
            first, self._settling = not self._settling, True
        self._settle_asked.set()
        if not first:
            self._settled.wait()
            return
        try:
            for observer in self.observers:
                settle = getattr(observer, "settle", None)
                if settle is None or id(observer) in self._failed:
                    continue
                try:
                    settle()
                except BaseException as exc:
                    self.errors.append((observer, exc))
        finally:
            self._settled.set()
            _live.discard(self)

    def _finish(self) -> None:
        self._flush(deferrable=True)
        for observer in self.observers:
            try:
                observer.close(self._status)
            except BaseException as exc:
                self.errors.append((observer, exc))
        self._delivered.set()
