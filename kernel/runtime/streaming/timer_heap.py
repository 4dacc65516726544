"""The queue of one kind of timers of an operator, as Flink's heap state backend keeps it
(``HeapPriorityQueueSet`` of ``TimerHeapInternalTimer``).

A timer is unique per (timestamp, key, namespace). Timers are ordered by timestamp only, so
which of several timers with the same timestamp fires first is decided by where each sits in
the binary heap — the order a job's output shows when many keys' windows end at the same time.
This heap repeats Flink's exactly: an array from index 1, a new timer added at the end and sifted
up, the head polled by moving the last timer into its place and sifting it down then up (the
smaller child chosen, the first one on a tie; a timer moves only past a strictly later one), a
removed timer's place filled the same way at once. Restoring the timers in array order rebuilds
the same heap.

:func:`push` and :func:`pop` are the same heap for a user that never deletes a timer nor
registers one twice (the aligned window operator: one timer per window and time): tuples whose
first field is the timestamp, no set, no positions kept; :class:`DistinctTimerHeap` is such a
heap as a queue the timer service fires.
"""

from __future__ import annotations

from typing import Any, Iterator

#: a timer in the heap: [timestamp, key, namespace, index in the heap]
Timer = list


class TimerHeap:
    __slots__ = ("heap", "timers")

    def __init__(self) -> None:
        self.heap: list[Any] = [None]  # heap[1] is the head
        self.timers: dict[tuple[int, Any, Any], Timer] = {}  # the set: (timestamp, key, namespace) -> timer

    def __len__(self) -> int:
        return len(self.heap) - 1

    def head_time(self) -> int | None:
        """The timestamp of the next timer, None when there is none."""
        heap = self.heap
        return heap[1][0] if len(heap) > 1 else None

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Register a timer; False when it is registered already."""
        identity = (timestamp, key, namespace)
        timers = self.timers
        if identity in timers:
            return False
        heap = self.heap
        timer = timers[identity] = [timestamp, key, namespace, len(heap)]
        heap.append(timer)
        self._sift_up(timer[3])
        return True

    def remove(self, timestamp: int, key: Any, namespace: Any) -> bool:
        """Delete a timer; False when it is not registered."""
        timer = self.timers.pop((timestamp, key, namespace), None)
        if timer is None:
            return False
        self._remove_at(timer[3])
        return True

    def take_due(self, limit: int) -> list[Timer]:
        """Take the timers up to ``limit``, in the order polled."""
        heap, poll = self.heap, self.poll
        due = []
        while len(heap) > 1 and heap[1][0] <= limit:
            due.append(poll())
        return due

    def poll(self) -> Timer:
        """Take the head timer (the heap must not be empty): the last timer takes its place and
        sifts down (at the head there is nothing to sift up to)."""
        heap = self.heap
        head = heap[1]
        last = heap.pop()
        if last is not head:
            heap[1] = last
            self._sift_down(1)
        del self.timers[(head[0], head[1], head[2])]
        return head

    def _remove_at(self, index: int) -> Timer:
        heap = self.heap
        removed = heap[index]
        last = heap.pop()
        if last is not removed:
            heap[index] = last
            last[3] = index
            self._sift_down(index)
            if heap[index] is last:
                self._sift_up(index)
        return removed

    def _sift_up(self, index: int) -> None:
        heap = self.heap
        timer = heap[index]
        timestamp = timer[0]
        parent = index >> 1
        while parent and timestamp < heap[parent][0]:
            moved = heap[index] = heap[parent]
            moved[3] = index
            index, parent = parent, parent >> 1
        heap[index] = timer
        timer[3] = index

    def _sift_down(self, index: int) -> None:
        """Move the timer at ``index`` down past every child strictly earlier than it, to the
        earlier child each time (the first on a tie)."""
        heap = self.heap
        size = len(heap) - 1
        timer = heap[index]
        timestamp = timer[0]
        child = index << 1
        while child < size:  # both children there
            smaller = heap[child]
            second = heap[child + 1]
            if second[0] < smaller[0]:
                child += 1
                smaller = second
            if smaller[0] >= timestamp:
                break
            heap[index] = smaller
            smaller[3] = index
            index = child
            child <<= 1
        else:
            if child == size:  # a first child only
                smaller = heap[child]
                if smaller[0] < timestamp:
                    heap[index] = smaller
                    smaller[3] = index
                    index = child
        heap[index] = timer
        timer[3] = index

    def __iter__(self) -> Iterator[Timer]:
        """The timers in array order (adding them in this order to an empty heap rebuilds it)."""
        return iter(self.heap[1:])


class DistinctTimerHeap:
    """Timers registered once each and never deleted, as tuples (timestamp, key, namespace,
    None) in ``heap``, added with :func:`push`."""

    __slots__ = ("heap",)

    def __init__(self) -> None:
        self.heap: list[Any] = [None]

    def take_due(self, limit: int) -> list[tuple]:
        """Take the timers up to ``limit``, in the order polled."""
        heap = self.heap
        due = []
        while len(heap) > 1 and heap[1][0] <= limit:
            due.append(pop(heap))
        return due


def push(heap: list, timer: tuple) -> None:
    """Add ``timer`` (its timestamp first) to ``heap`` (a list whose item 0 is unused)."""
    timestamp = timer[0]
    index = len(heap)
    heap.append(timer)
    parent = index >> 1
    while parent and timestamp < heap[parent][0]:
        heap[index] = heap[parent]
        index, parent = parent, parent >> 1
    heap[index] = timer


def pop(heap: list) -> tuple:
    """Take the head of ``heap`` (not empty), as :meth:`TimerHeap.poll` does."""
    head = heap[1]
    last = heap.pop()
    if last is not head:
        size = len(heap) - 1
        timestamp = last[0]
        index, child = 1, 2
        while child < size:  # both children there
            smaller = heap[child]
            second = heap[child + 1]
            if second[0] < smaller[0]:
                child += 1
                smaller = second
            if smaller[0] >= timestamp:
                break
            heap[index] = smaller
            index = child
            child <<= 1
        else:
            if child == size and heap[child][0] < timestamp:  # a first child only
                heap[index] = heap[child]
                index = child
        heap[index] = last
    return head
