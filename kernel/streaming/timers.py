"""Per-key timers of one operator (Flink's InternalTimerService).

Timers are unique per (key, namespace, timestamp). Event-time timers fire when a watermark
reaches them, in timestamp order, before the watermark is forwarded; processing-time timers
fire from a task mail when the processing clock reaches them (one wake-up scheduled at a time,
for the earliest). Deleting a timer removes it from the set; its heap entry is skipped when
reached, or dropped earlier when such entries make up most of the heap.

In BATCH execution (Flink's ``BatchExecutionInternalTimeService``) processing time does not
advance: processing-time timers are not scheduled, and all of them fire when the final
watermark arrives, right after the event-time timers; timers registered while they fire are
ignored (the service is quiesced, so a timer re-registering itself cannot loop forever).
"""

from __future__ import annotations

import heapq
from typing import Any, Callable

from kernel.clock import MAX_LONG, MIN_LONG
from kernel.streaming.state import KeyedStateBackend

Fire = Callable[[int, Any, Any], None]  # (timestamp, key, namespace)


class _TimerQueue:
    def __init__(self) -> None:
        self.heap: list[tuple[int, int, Any, Any]] = []
        self.live: set[tuple[int, Any, Any]] = set()
        self.seq = 0

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        entry = (timestamp, key, namespace)
        if entry in self.live:
            return False
        self.live.add(entry)
        self.seq += 1
        heapq.heappush(self.heap, (timestamp, self.seq, key, namespace))
        return True

    def delete(self, timestamp: int, key: Any, namespace: Any) -> None:
        live = self.live
        live.discard((timestamp, key, namespace))
        if len(self.heap) > 2 * len(live) + 64:
            self._compact()

    def _compact(self) -> None:
        """Drop the entries of deleted timers; of a timer deleted and registered again, keep
        the entry that would fire (the first one), so the firing order does not change."""
        first: dict[tuple[int, Any, Any], int] = {}
        for timestamp, seq, key, namespace in self.heap:
            entry = (timestamp, key, namespace)
            if entry in self.live and seq < first.get(entry, seq + 1):
                first[entry] = seq
        self.heap = [(timestamp, seq, key, namespace) for (timestamp, key, namespace), seq in first.items()]
        heapq.heapify(self.heap)

    def pop_due(self, limit: int) -> tuple[int, Any, Any] | None:
        heap, live = self.heap, self.live
        while heap and heap[0][0] <= limit:
            timestamp, _, key, namespace = heapq.heappop(heap)
            entry = (timestamp, key, namespace)
            if entry in live:
                live.discard(entry)
                return entry
        return None

    def earliest(self) -> int | None:
        heap, live = self.heap, self.live
        while heap and (heap[0][0], heap[0][2], heap[0][3]) not in live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def __len__(self) -> int:
        return len(self.live)


class InternalTimerService:
    def __init__(self, backend: KeyedStateBackend, on_event_time: Fire, on_processing_time: Fire,
                 schedule: Callable[[int, Callable[[], None]], Any], now_ms: Callable[[], int],
                 batch: bool = False) -> None:
        self.backend = backend
        self.batch = batch
        self._on_event_time = on_event_time
        self._on_processing_time = on_processing_time
        self._schedule = schedule
        self._now_ms = now_ms
        self.event_timers = _TimerQueue()
        self.processing_timers = _TimerQueue()
        self.current_watermark = MIN_LONG
        self._wakeup: int | None = None  # when the scheduled wake-up fires
        self._wakeup_handle: Any = None
        self._wakeups = 0  # numbers the wake-ups: one superseded by an earlier one does nothing
        self.fired = 0

    # -- registration (for the current key) ---------------------------------------------------

    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        if self.batch and self.current_watermark == MAX_LONG:
            return
        self.event_timers.add(timestamp, self.backend.current_key, namespace)

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.event_timers.delete(timestamp, self.backend.current_key, namespace)

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        if self.batch and self.current_watermark == MAX_LONG:
            return
        if self.processing_timers.add(timestamp, self.backend.current_key, namespace) and not self.batch:
            if self._wakeup is None or timestamp < self._wakeup:
                self._wake_at(timestamp)

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.processing_timers.delete(timestamp, self.backend.current_key, namespace)

    # -- firing -------------------------------------------------------------------------------

    def advance_watermark(self, watermark: int) -> None:
        """Fire every event-time timer <= ``watermark`` in timestamp order (in BATCH, at the
        final watermark, every processing-time timer after them)."""
        self.current_watermark = watermark
        self.fired += self._drain(self.event_timers, watermark, self._on_event_time)
        if self.batch and watermark == MAX_LONG:
            self._drain(self.processing_timers, MAX_LONG, self._on_processing_time)

    def _drain(self, queue: _TimerQueue, limit: int, fire: Fire) -> int:
        backend = self.backend
        fired = 0
        while True:
            due = queue.pop_due(limit)
            if due is None:
                return fired
            timestamp, key, namespace = due
            backend.current_key = key
            fired += 1
            fire(timestamp, key, namespace)

    def _wake_at(self, timestamp: int) -> None:
        if self._wakeup_handle is not None:
            self._wakeup_handle.cancel()
        self._wakeups += 1
        number = self._wakeups
        self._wakeup = timestamp
        self._wakeup_handle = self._schedule(timestamp, lambda: self._fire_processing_time(number))

    def _fire_processing_time(self, number: int) -> None:
        if number != self._wakeups:
            return  # superseded (it fired before it could be cancelled)
        self._wakeup = self._wakeup_handle = None
        self.fire_processing_time(self._now_ms())
        earliest = self.processing_timers.earliest()
        if earliest is not None:
            self._wake_at(earliest)

    def fire_processing_time(self, now: int) -> None:
        """Fire every processing-time timer <= ``now`` in timestamp order."""
        self.fired += self._drain(self.processing_timers, now, self._on_processing_time)

    def pending(self) -> int:
        return len(self.event_timers) + len(self.processing_timers)
