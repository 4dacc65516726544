"""The event bus: the runtime emits, observers receive batches off the runtime's thread.

``bus.emit`` *is* ``list.append`` of the pending batch: emitting costs one Struct creation and
one append on the runtime's thread, nothing else. A flusher thread takes the pending events
every ``flush_interval`` seconds (and on ``flush()``/``close()``), numbers them in emission
order (``seq``) and hands them to every observer as an :class:`EventBatch`.

Observers are called on the flusher thread, one batch at a time, in order; an observer that
raises is reported by ``close()`` and receives no further batches, the others go on.
"""

from __future__ import annotations

import atexit
import threading
import time
from dataclasses import dataclass
from typing import Protocol

import msgspec

from kernel.events import Event

_set_seq = msgspec.structs.force_setattr
_live: set[EventBus] = set()


def drain_buses() -> list[tuple[str, BaseException]]:
    """Wait for every closed bus of this process that is still delivering (readers call this
    so they see what this process recorded; also run at exit). Returns the observer errors of
    the buses it waited for, as (run id, error)."""
    errors = []
    for bus in list(_live):
        if bus._closed:
            bus.join()
            errors.extend((bus.run_id, exc) for _, exc in bus.errors)
    return errors


atexit.register(drain_buses)


@dataclass(frozen=True)
class EventBatch:
    run_id: str
    first_seq: int
    events: list[Event]


class EventObserver(Protocol):
    def events_emitted(self, batch: EventBatch) -> None:
        """A batch of events, in sequence order (called on the flusher thread)."""

    def close(self, status: str) -> None:
        """The run ended with ``status``; flush and release resources."""


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
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self.errors: list[tuple[EventObserver, BaseException]] = []
        self._failed: set[int] = set()
        self._status = ""

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
            self.flush()
            took = min(time.perf_counter() - started, self.flush_interval / 2)
        self._finish()

    def flush(self) -> int:
        """Deliver everything emitted so far; returns the number of events delivered."""
        with self._lock:
            pending = self._pending
            count = len(pending)
            if not count:
                return 0
            events = pending[:count]
            del pending[:count]  # appends racing with this land after ``count``
            first = self._next_seq
            seq = first
            for event in events:
                _set_seq(event, "seq", seq)
                seq += 1
            self._next_seq = seq
            batch = EventBatch(self.run_id, first, events)
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
        waits for pending buses before it exits, and readers of the log wait via
        :func:`drain_buses`.
        """
        self._status = status
        self._closed = True
        if self._thread is None:
            self._finish()
        else:
            self._wake.set()
            if wait:
                self.join()

    def join(self) -> None:
        """Wait until everything emitted is delivered and the observers are closed."""
        if self._thread is not None:
            self._thread.join()

    def _finish(self) -> None:
        self.flush()
        for observer in self.observers:
            try:
                observer.close(self._status)
            except BaseException as exc:
                self.errors.append((observer, exc))
        _live.discard(self)
