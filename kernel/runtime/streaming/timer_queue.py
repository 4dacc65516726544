"""The queue of one kind of timers of an operator: timers bucketed by timestamp.

A timer is unique per (timestamp, key, namespace). Timers fire in timestamp order; the timers
of one timestamp fire in the order they were registered (a timer deleted and registered again
goes to the end of its timestamp). Flink leaves the order of timers with equal timestamps open
— its heap backend and its RocksDB backend fire them differently — so this order, which is
deterministic for a given sequence of registrations, is rill's documented choice
(ARCHITECTURE.md, Speed): one bucket per timestamp in a dict, the distinct timestamps in a
binary heap (``heapq``, in C), so registering, deleting and firing a timer is a dict operation
and only a new timestamp is pushed on the heap.

:class:`TimerQueue` holds timers that may be deleted or registered twice (an operator's timer
service); :class:`DistinctTimerQueue` timers registered once each and never deleted (the
aligned window operator: one timer per window and time), with lists as buckets.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from typing import Any, Iterable


class TimerQueue:
    __slots__ = ("times", "buckets", "_size", "_stale")

    def __init__(self) -> None:
        #: the timestamps with timers (and, until they are popped, some without: ``_stale``)
        self.times: list[int] = []
        self.buckets: dict[int, dict[tuple[Any, Any], None]] = {}
        self._size = 0
        self._stale = 0  # timestamps in ``times`` whose bucket was emptied by deletions

    def __len__(self) -> int:
        return self._size

    def head_time(self) -> int | None:
        """The timestamp of the next timer, None when there is none."""
        times, buckets = self.times, self.buckets
        while times and times[0] not in buckets:
            heappop(times)
            self._stale -= 1
        return times[0] if times else None

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Register a timer; False when it is registered already."""
        bucket = self.buckets.get(timestamp)
        if bucket is None:
            self.buckets[timestamp] = {(key, namespace): None}
            heappush(self.times, timestamp)
        elif (key, namespace) in bucket:
            return False
        else:
            bucket[(key, namespace)] = None
        self._size += 1
        return True

    def remove(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Delete a timer; False when it is not registered."""
        bucket = self.buckets.get(timestamp)
        if bucket is None or (key, namespace) not in bucket:
            return False
        del bucket[(key, namespace)]
        self._size -= 1
        if not bucket:
            del self.buckets[timestamp]
            self._stale += 1
            if self._stale > 64 and 2 * self._stale > len(self.times):
                self.times = list(self.buckets)
                heapify(self.times)
                self._stale = 0
        return True

    def take_buckets(self, limit: int) -> list[tuple[int, Iterable[tuple[Any, Any]]]]:
        """Take the timers up to ``limit``, (timestamp, its timers' (key, namespace)) in firing order."""
        times, buckets = self.times, self.buckets
        due = []
        while times and times[0] <= limit:
            timestamp = heappop(times)
            bucket = buckets.pop(timestamp, None)
            if bucket is None:
                self._stale -= 1
                continue
            due.append((timestamp, bucket))
            self._size -= len(bucket)
        return due

    def view(self) -> list[tuple[int, list[tuple[Any, Any]]]]:
        """The timers as they are now, (timestamp, [(key, namespace), ...]) per timestamp (a
        copy of each bucket, in C): :func:`in_firing_order` lists them."""
        return [(timestamp, list(bucket)) for timestamp, bucket in self.buckets.items()]


class DistinctTimerQueue:
    """Timers registered once each (:meth:`add`) and never deleted."""

    __slots__ = ("times", "buckets")

    def __init__(self) -> None:
        self.times: list[int] = []
        self.buckets: dict[int, list[tuple[Any, Any]]] = {}

    def __len__(self) -> int:
        return sum(map(len, self.buckets.values()))

    def head_time(self) -> int | None:
        return self.times[0] if self.times else None

    def add(self, timestamp: int, key: Any, namespace: Any) -> None:
        bucket = self.buckets.get(timestamp)
        if bucket is None:
            self.buckets[timestamp] = [(key, namespace)]
            heappush(self.times, timestamp)
        else:
            bucket.append((key, namespace))

    def take_buckets(self, limit: int) -> list[tuple[int, list[tuple[Any, Any]]]]:
        """As :meth:`TimerQueue.take_buckets`."""
        times, buckets = self.times, self.buckets
        due = []
        while times and times[0] <= limit:
            timestamp = heappop(times)
            due.append((timestamp, buckets.pop(timestamp)))
        return due

    def view(self) -> list[tuple[int, list[tuple[Any, Any]]]]:
        """As :meth:`TimerQueue.view`."""
        return [(timestamp, bucket.copy()) for timestamp, bucket in self.buckets.items()]


def in_firing_order(view: list[tuple[int, list[tuple[Any, Any]]]]) -> list[tuple[int, Any, Any]]:
    """(timestamp, key, namespace) of every timer of a queue's :meth:`~TimerQueue.view`, in
    firing order: registered again in this order they fire as they would have."""
    return [(timestamp, key, namespace) for timestamp, bucket in sorted(view, key=_timestamp)
            for key, namespace in bucket]


def _timestamp(bucket: tuple[int, list]) -> int:
    return bucket[0]
