"""The queues of an async operator: which completed element may leave next.

Both hold record entries (an input whose coroutine runs or ran) and watermarks, and count
the records against the operator's capacity until they leave (watermarks take no capacity,
as in PyFlink's queues).

* :class:`OrderedStreamElementQueue`: first in, first out; only a completed head leaves, so
  results leave in input order and watermarks where they came.
* :class:`UnorderedStreamElementQueue`: entries are grouped into *segments* split at
  watermarks; within a segment completed entries leave in completion order, segments strictly
  one after the other, a watermark alone in its own segment. So no result crosses a watermark
  in either direction (Flink's and PyFlink's ``UnorderedStreamElementQueue``).
"""

from __future__ import annotations

from collections import deque
from typing import Any


class RecordEntry:
    """One input and, once its coroutine completed, the results it emits (with its timestamp)."""

    __slots__ = ("value", "timestamp", "results", "segment")

    def __init__(self, value: Any, timestamp: int | None) -> None:
        self.value = value
        self.timestamp = timestamp
        self.results: list | None = None
        self.segment: _Segment | None = None

    @property
    def done(self) -> bool:
        return self.results is not None


class WatermarkEntry:
    __slots__ = ("timestamp",)

    done = True

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp


class StreamElementQueue:
    def __init__(self) -> None:
        #: records in the queue (in flight, or completed and not yet emitted)
        self.records = 0

    def put_record(self, entry: RecordEntry) -> None:
        raise NotImplementedError

    def put_watermark(self, timestamp: int) -> None:
        raise NotImplementedError

    def completed(self, entry: RecordEntry) -> None:
        """``entry`` got its results."""
        raise NotImplementedError

    def pop_completed(self) -> RecordEntry | WatermarkEntry | None:
        """The next element that may leave, or None."""
        raise NotImplementedError

    def is_empty(self) -> bool:
        raise NotImplementedError


class OrderedStreamElementQueue(StreamElementQueue):
    def __init__(self) -> None:
        super().__init__()
        self._queue: deque[RecordEntry | WatermarkEntry] = deque()

    def put_record(self, entry: RecordEntry) -> None:
        self._queue.append(entry)
        self.records += 1

    def put_watermark(self, timestamp: int) -> None:
        self._queue.append(WatermarkEntry(timestamp))

    def completed(self, entry: RecordEntry) -> None:
        """Nothing to move: the head is checked when popping."""

    def pop_completed(self) -> RecordEntry | WatermarkEntry | None:
        queue = self._queue
        if not queue or not queue[0].done:
            return None
        entry = queue.popleft()
        if type(entry) is RecordEntry:
            self.records -= 1
        return entry

    def is_empty(self) -> bool:
        return not self._queue


class _Segment:
    __slots__ = ("incomplete", "completed")

    def __init__(self) -> None:
        self.incomplete: set[int] = set()  # ids of the entries still running
        self.completed: deque[RecordEntry | WatermarkEntry] = deque()

    def is_empty(self) -> bool:
        return not self.incomplete and not self.completed


class UnorderedStreamElementQueue(StreamElementQueue):
    def __init__(self) -> None:
        super().__init__()
        self._segments: deque[_Segment] = deque()

    def put_record(self, entry: RecordEntry) -> None:
        if not self._segments:
            self._segments.append(_Segment())
        segment = self._segments[-1]
        entry.segment = segment
        segment.incomplete.add(id(entry))
        self.records += 1

    def put_watermark(self, timestamp: int) -> None:
        segments = self._segments
        if segments and segments[-1].is_empty():
            watermark_segment = segments[-1]  # reuse a drained segment (or the one after a watermark)
        else:
            watermark_segment = _Segment()
            segments.append(watermark_segment)
        watermark_segment.completed.append(WatermarkEntry(timestamp))
        segments.append(_Segment())

    def completed(self, entry: RecordEntry) -> None:
        segment = entry.segment
        segment.incomplete.discard(id(entry))
        segment.completed.append(entry)

    def pop_completed(self) -> RecordEntry | WatermarkEntry | None:
        segments = self._segments
        while segments:
            head = segments[0]
            if head.completed:
                entry = head.completed.popleft()
                if type(entry) is RecordEntry:
                    self.records -= 1
                    entry.segment = None
                return entry
            if head.is_empty() and len(segments) > 1:
                segments.popleft()
                continue
            return None
        return None

    def is_empty(self) -> bool:
        return all(segment.is_empty() for segment in self._segments)
